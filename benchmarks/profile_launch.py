"""Where a launch's microseconds go: the dispatcher's fast path taken apart, step by step.

    python -m benchmarks.profile_launch            # on a GPU machine (CPU target: --cpu)

Each figure is the best of several loops of many calls (the floor, robust to a busy host). The
steps add up to roughly the whole launch; the bare driver calls are the anchors.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from gpunb import cuda

_sync = [lambda: None]


def best_us(fn, calls: int = 2000, loops: int = 15) -> float:
    """Host time per call: bursts short enough that the GPU's launch queue never fills (a full
    queue would time the GPU, not the launch), synchronised between bursts, outside the clock."""
    best = float("inf")
    for _ in range(loops):
        _sync[0]()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def main(argv: list[str]) -> int:
    import gpunb
    from gpunb.cache.fingerprint import still_valid
    from gpunb.runtime.typeof import type_key

    target = "cpu" if "--cpu" in argv else "cuda"
    gpunb.set_target(target)
    kernel = cuda.jit(saxpy)
    n = 1024
    x = cuda.to_device(np.ones(n, np.float32))
    y = cuda.to_device(np.ones(n, np.float32))
    out = cuda.device_array(n, np.float32)
    a = np.float32(2.0)
    args = (out, x, y, a)
    kernel[4, 256](*args)
    if target == "cuda":
        from gpunb.backends.cuda import driver

        _sync[0] = driver.synchronize
    spec = next(iter(kernel.specializations.values()))
    key = tuple([type_key(v) for v in args])
    config = kernel[4, 256]
    params, _ = spec.packer.pack(args, spec.argtypes)
    config(*args)
    config(*args)  # a configuration's native launcher is bound after its first launches
    native = config.launcher.native.builtin if config.launcher is not None else None

    def bind_python():  # the Launcher the Python path binds where none can be reused
        return spec.bind(config, key, args, version=kernel.version.value, native=False)

    python_launcher = bind_python()
    rows = [
        ("kernel[4, 256](out, x, y, a)", best_us(lambda: kernel[4, 256](out, x, y, a))),
        ("config(out, x, y, a), config reused", best_us(lambda: config(out, x, y, a))),
        ("kernel[4, 256] (config lookup)", best_us(lambda: kernel[4, 256])),
        ("type keys (4 args)", best_us(lambda: tuple([type_key(v) for v in args]))),
        (f"specialisation lookup (keys, dict, {len(spec.watch)} watch entries)",
         best_us(lambda: kernel.specialization_for_launch(args))),
        (f"still_valid ({len(spec.watch)} watch entries)",
         best_us(lambda: still_valid(spec.watch))),
        ("pack", best_us(lambda: spec.packer.pack(args, spec.argtypes))),
        ("program.launch (validate + launch)",
         best_us(lambda: spec.launch(4, 256, 0, 0, params))),
        ("Python-packing launcher: run (pack .. program.launch)",
         best_us(lambda: python_launcher.run(args))),
        ("binding a Python-packing launcher", best_us(bind_python)),
    ]
    if native is not None:
        # the native launcher alone: thread, version, watch list, kinds, packing, and on a GPU
        # the cuLaunchKernel call; on the CPU target it stops after packing (the grid runs
        # after)
        what = "checks + pack + cuLaunchKernel" if target == "cuda" else "checks + pack"
        rows.append((f"native launcher alone ({what})", best_us(lambda: native(args))))
    rows.append(("launch path", "native launcher" if native is not None else
                 "Python (no native launcher: llvmlite not loaded, or turned off)"))
    # the fast path tests nothing about listeners; a subscriber (a profiler) costs two events
    # per launch, on the Python path
    with gpunb.events.subscribe(["launch_before", "launch_after"], lambda event: None):
        rows.append(("kernel[4, 256](...) with a launch subscriber",
                     best_us(lambda: kernel[4, 256](out, x, y, a))))
    if target == "cuda":
        from gpunb.backends.cuda import driver

        cu = driver.cuda_driver()
        function = spec.program.function
        import ctypes

        from gpunb.backends.cuda import launch

        fptr = int(function.handle)
        # the same driver entry point through cuda.bindings, ctypes and gpunb's native
        # trampoline (backends/native_launch/trampoline.py), to show why the Python path's
        # launches go through the last
        # (measured on an H100 host, 2026-11-23: bindings 3.68 us, CDLL 5.00, PyDLL 4.91)
        argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        c_raw = ctypes.CDLL("libcuda.so.1").cuLaunchKernel  # releases the GIL per call
        raw = ctypes.PyDLL("libcuda.so.1").cuLaunchKernel  # keeps it
        for fn in (c_raw, raw):
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        rows += [
            ("bare cuLaunchKernel, cuda.bindings", best_us(
                lambda: cu.cuLaunchKernel(function.handle, 4, 1, 1, 256, 1, 1, 0, 0, params, 0))),
            ("bare cuLaunchKernel, ctypes CDLL", best_us(
                lambda: c_raw(fptr, 4, 1, 1, 256, 1, 1, 0, 0, params, None))),
            ("bare cuLaunchKernel, ctypes PyDLL", best_us(
                lambda: raw(fptr, 4, 1, 1, 256, 1, 1, 0, 0, params, None))),
        ]
        if launch.driver_calls.prepare():
            trampoline = launch.driver_calls.trampolines[0].call
            rows.append(("bare cuLaunchKernel, native trampoline", best_us(
                lambda: trampoline(fptr, 4, 1, 1, 256, 1, 1, 0, 0, params))))
        rows.append(("Python-path launches go through", "native trampoline"
                     if launch.driver_calls.trampolines else "cuda.bindings"))
        driver.synchronize()
    width = max(len(name) for name, _ in rows)
    print(f"launch profile, {target} target")
    for name, us in rows:
        print(f"  {name:<{width}}  {us:7.2f} us" if isinstance(us, float) else
              f"  {name:<{width}}  {us}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
