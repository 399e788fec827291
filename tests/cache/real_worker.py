"""Subprocess worker: launch kernels through the cache protocol with the real compiler (CPU target).

    python real_worker.py [--cuda] MODULE_DIR MODULE:KERNEL ...

For each kernel: fingerprint, lookup, compile on a miss (and store), run on x = arange(16), print
one JSON line {kernel, kind, source, reason, detail, out, key, ms}. Run in fresh processes, this is
the "new process" of the issue's scenarios; the module directory holds the user's files. With
--cuda the kernel runs on the GPU: a hit loads the cached cubin through the driver, and `ms` is
the time from fingerprint to a launchable kernel (the CUDA context is created before the clock).
"""

from __future__ import annotations

import importlib
import json
import sys
import time


def _cuda_launcher(kern, artifact, argtypes, fresh: bool):
    from gpunb import specialize as spz
    from gpunb.runtime import driver

    if fresh:
        typed = spz.infer(kern, argtypes, dict(kern.options))
        return spz._build_cuda(kern, typed, dict(kern.options))
    module = driver.load_module(artifact.binary)
    function = module.get_function(artifact.symbol)
    return artifact, spz._cuda_launcher(kern.__name__, artifact, module, function,
                                        driver.current_device())


def run_one(spec: str, target: str = "cpu") -> dict:
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
    if target == "cuda":
        from gpunb.runtime import driver

        cc = driver.current_device().compute_capability  # context creation: not timed
        arch = f"sm_{cc[0]}{cc[1]}"
    else:
        arch = cache.host_arch()
    started = time.perf_counter()
    fingerprint = cache.collect(kern)
    fingerprinted = time.perf_counter()
    kc = cache.default_cache()
    artifact, pending = kc.lookup(kernel_name, fingerprint, signature, kern.options, target, arch)
    looked_up = time.perf_counter()
    if target == "cuda":
        fresh = artifact is None
        artifact, launcher = _cuda_launcher(kern, artifact, argtypes, fresh)
        if fresh:
            event = kc.store(pending, artifact, fingerprint, 0.0)
    elif artifact is None:
        spec_ = spz.build_specialization(kern, argtypes, "cpu")
        artifact = spec_.artifact
        event = kc.store(pending, artifact, fingerprint, spec_.compile_ms)
    if pending.event is not None:
        event = pending.event
    ready_ms = (time.perf_counter() - started) * 1000.0
    if target == "cpu":
        launcher = spz._cpu_launcher(kern, artifact)
    params, writeback = ArgPacker(artifact.param_slots, target, kernel_name).pack((out, x),
                                                                                argtypes)
    launcher(1, 16, 0, 0, params)
    for fn in writeback or ():
        fn()
    return {"kernel": kernel_name, "kind": event.kind, "source": event.source,
            "reason": event.reason, "detail": event.detail, "out": out.tolist(),
            "key": event.key, "ms": ready_ms, "cubin": artifact.binary[:4].hex(),
            "collect_ms": (fingerprinted - started) * 1000.0,
            "lookup_ms": (looked_up - fingerprinted) * 1000.0}


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
