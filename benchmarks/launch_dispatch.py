"""The host cost of `kernel[grid, block](args)` up to the driver call, on any machine.

    python -m benchmarks.launch_dispatch

The CUDA target's launch path runs as on a GPU - the same specialisation, argument kinds,
native launcher and machine code - with the driver stood in by the tests' simulated one
(tests/runtime/fake_cuda_driver.py) and libcuda's cuLaunchKernel by a machine-code function that
returns 0 at once: what is timed is gpunb's part of a launch (on a GPU add the driver's ~2 us).
Rows: the 3- and 4-argument launches through a configuration (bench_launch's and
profile_launch's), the machine code alone, a launch a recorder records (gpunb.profile's path),
one a subscriber observes (the Python path, publishing), and the first launch of a recorder's
block (a launcher bound again). Each figure is the best of several loops of many calls.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.profile_launch import best_us


def _stand_in_driver() -> None:
    """The simulated driver, and a cuLaunchKernel-shaped function returning 0."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "tests", "runtime"))
    from fake_cuda_driver import FakeDriver

    from gpunb.backends.cuda import driver, launch
    from gpunb.backends.native_launch.builtins import CompiledFunction

    launch.driver_calls.trampolines = None  # no trampoline into a libcuda that is not there
    driver.state = driver.DriverState(cu=FakeDriver())
    code = ("define i32 @no_launch(i64 %f, i32 %gx, i32 %gy, i32 %gz, i32 %bx, i32 %by, "
            "i32 %bz, i32 %shared, i64 %stream, i64 %params, i64 %extra) {\n  ret i32 0\n}\n")
    function = CompiledFunction(code, "no_launch", "no_launch", fastcall=False)
    launch.driver_launch_address = lambda: function.address
    _keep.append(function)


_keep: list = []


def main() -> int:
    import llvmlite.binding  # noqa: F401 - native launchers are built once llvmlite is loaded

    import gpunb
    from benchmarks.kernelsrc import load_kernels
    from benchmarks.profile_launch import saxpy
    from gpunb import cuda

    _stand_in_driver()
    gpunb.set_target("cuda")
    scale3 = load_kernels("gpunb", Path(tempfile.mkdtemp(prefix="gpunb-bench-"))).scale3
    four = cuda.jit(saxpy)
    x = cuda.to_device(np.ones(1024, np.float32))
    y = cuda.to_device(np.ones(1024, np.float32))
    out = cuda.device_array(1024, np.float32)
    a = np.float32(2.0)
    three, config = scale3[1, 32], four[4, 256]
    blocks, threads = 1, 32  # variables: the tuple is built at each call
    for _ in range(4):
        three(out, x, a)
        config(out, x, y, a)
    if config.launcher is None or three.launcher is None:
        print("no native launcher was bound: the figures would not be the fast path's")
        return 1
    native = config.launcher.native.builtin
    args = (out, x, y, a)
    rows = [
        ("scale3[1, 32](out, x, a)  (3 args)", best_us(lambda: scale3[1, 32](out, x, a))),
        # variables make a new tuple each call: the configuration cache compares its items
        ("scale3[blocks, threads](out, x, a)  (3 args)",
         best_us(lambda: scale3[blocks, threads](out, x, a))),
        ("config(out, x, a), config reused (3 args)", best_us(lambda: three(out, x, a))),
        ("config(out, x, y, a), config reused (4 args)", best_us(lambda: config(out, x, y, a))),
        ("machine code alone (4 args)", best_us(lambda: native(args))),
    ]
    with gpunb.events.record_launches([]) as recorder:
        config(out, x, y, a)
        rows.append(("a recorded launch (4 args)", best_us(lambda: config(out, x, y, a),
                                                            calls=500)))
        recorder.log.clear()
    with gpunb.events.subscribe("launch_after", lambda event: None):
        rows.append(("a launch a subscriber observes (4 args)",
                     best_us(lambda: config(out, x, y, a), calls=500)))

    rows += _torch_rows(three)

    def first_in_block() -> float:
        with gpunb.events.record_launches([]):
            started = time.perf_counter()
            config(out, x, y, a)
            return (time.perf_counter() - started) * 1e6

    config(out, x, y, a)
    firsts = sorted(first_in_block() for _ in range(41))
    rows.append(("first launch in a recorder's block (median)", firsts[20]))
    width = max(len(name) for name, _ in rows)
    print("launch dispatch, CUDA launch path on a stand-in driver")
    for name, us in rows:
        print(f"  {name:<{width}}  {us:7.2f} us")
    return 0


def _torch_rows(three) -> list:
    """scale3's configuration on torch tensors beside the same on gpunb's or numpy's arrays:
    CUDA tensors on the CUDA launch path (where torch has a GPU: torch allocates, the stand-in
    launch function takes the pointers), CPU tensors on the CPU target (the launch runs the
    kernel's 32 threads there: the numpy row is the comparison)."""
    try:
        import torch
    except ImportError:
        return [("torch tensors", float("nan"))]
    import gpunb

    a, rows = np.float32(2.0), []
    if torch.cuda.is_available():
        out, x = torch.zeros(1024, device="cuda"), torch.ones(1024, device="cuda")
        for _ in range(4):
            three(out, x, a)
        native = three.launcher is not None and three.launcher.native.plan.kinds[0][0] == \
            "tensor"
        rows.append((f"config(out, x, a) on torch CUDA tensors{'' if native else ' (no native)'}",
                     best_us(lambda: three(out, x, a))))
    gpunb.set_target("cpu")
    try:
        on_cpu = three.dispatcher[1, 32]
        arrays = {"numpy arrays": (np.zeros(32, np.float32), np.ones(32, np.float32)),
                  "torch CPU tensors": (torch.zeros(32), torch.ones(32))}
        for label, (out, x) in arrays.items():
            for _ in range(4):
                on_cpu(out, x, a)
            rows.append((f"CPU target: config(out, x, a) on {label}",
                         best_us(lambda out=out, x=x: on_cpu(out, x, a), calls=500)))
    finally:
        gpunb.set_target("cuda")
    return rows


if __name__ == "__main__":
    sys.exit(main())
