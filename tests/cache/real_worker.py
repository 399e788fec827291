"""Subprocess worker: launch kernels through the cache protocol with the real compiler (CPU target).

    python real_worker.py MODULE_DIR MODULE:KERNEL[:FACTOR] ...

For each kernel: fingerprint, lookup, compile on a miss (and store), run on x = arange(16), print
one JSON line {kernel, kind, source, reason, detail, out, key}. Run in fresh processes, this is the
"new process" of the issue's scenarios; the module directory holds the user's files.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time


def run_one(spec: str) -> dict:
    import numpy as np

    from gpunb import cache
    from gpunb import specialize as spz
    from gpunb.runtime.launch import ArgPacker
    from gpunb.runtime.typeof import typeof

    module_name, kernel_name = spec.split(":")[:2]
    kern = getattr(importlib.import_module(module_name), kernel_name)
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    argtypes = tuple(typeof(a) for a in (out, x))
    signature = ", ".join(map(str, argtypes))
    fingerprint = cache.collect(kern)
    kc = cache.default_cache()
    started = time.perf_counter()
    artifact, pending = kc.lookup(kernel_name, fingerprint, signature, kern.options, "cpu",
                                  cache.host_arch())
    if artifact is None:
        spec_ = spz.build_specialization(kern, argtypes, "cpu")
        artifact = spec_.artifact
        event = kc.store(pending, artifact, fingerprint, spec_.compile_ms)
    else:
        event = pending.event
    launcher = spz._cpu_launcher(kern, artifact)
    params, writeback = ArgPacker(artifact.param_slots, "cpu", kernel_name).pack((out, x),
                                                                               argtypes)
    launcher(1, 16, 0, 0, params)
    for fn in writeback or ():
        fn()
    return {"kernel": kernel_name, "kind": event.kind, "source": event.source,
            "reason": event.reason, "detail": event.detail, "out": out.tolist(),
            "key": event.key, "ms": (time.perf_counter() - started) * 1000.0}


def main(argv: list[str]) -> int:
    sys.path.insert(0, argv[0])
    os.environ.setdefault("GPUNB_TARGET", "cpu")
    import gpunb

    gpunb.set_target("cpu")
    for spec in argv[1:]:
        print(json.dumps(run_one(spec)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
