"""Subprocess worker: launch kernels through the cache protocol with the real compiler (CPU target).

    python real_worker.py [--cuda] MODULE_DIR MODULE:KERNEL ...

For each kernel: specialise through the real dispatcher (fingerprint, lookup, compile on a miss and
store, or load), run on x = arange(16), print one JSON line {kernel, kind, source, reason,
detail, out, key, ms}. Run in fresh processes, this is
the "new process" of the issue's scenarios; the module directory holds the user's files. With
--cuda the kernel runs on the GPU: a hit loads the cached cubin through the driver, and `ms` is
the time from fingerprint to a launchable kernel (the CUDA context is created before the clock).
"""

from __future__ import annotations

import importlib
import json
import sys
import time


def run_one(spec: str, target: str = "cpu") -> dict:
    import numpy as np

    from gpunb.runtime.typeof import typeof

    module_name, kernel_name = spec.split(":")[:2]
    kern = getattr(importlib.import_module(module_name), kernel_name)
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    argtypes = tuple(typeof(a) for a in (out, x))
    if target == "cuda":
        from gpunb.backends.cuda import driver

        driver.current_device()  # context creation: not timed
    started = time.perf_counter()
    # fingerprint, lookup, compile or load
    specialization = kern.specialization_for(argtypes, target)
    ready_ms = (time.perf_counter() - started) * 1000.0
    kern[1, 16](out, x)
    event = specialization.cache_event
    artifact = specialization.artifact
    return {"kernel": kernel_name, "kind": event.kind, "source": event.source,
            "reason": event.reason, "why": event.why, "outcome": event.outcome,
            "detail": event.detail, "out": out.tolist(),
            "key": event.key, "ms": ready_ms, "cubin": artifact.binary[:4].hex(),
            "lookup_ms": event.time_ms}


def main(argv: list[str]) -> int:
    target = "cpu"
    if argv and argv[0] == "--cuda":
        target, argv = "cuda", argv[1:]
    sys.path.insert(0, argv[0])
    import gpunb

    gpunb.set_target(target)
    for spec in argv[1:]:
        print(json.dumps(run_one(spec, target)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
