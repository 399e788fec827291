"""The CPU target's debugger: what it costs, and what a launch without it pays (nothing).

Rows, all measured in this process on the CPU target:
1. a 3-argument launch of a kernel without breakpoints (scale3, 1 block of 32 threads: the
   launch-overhead kernel) beside the same kernel's debug variant launched with nothing armed.
   The plain kernel's code and launch path are those of a build without the debugger (its
   specialisation loads as LoadedCpuKernel, the native launcher binds as before): its figure is
   the launch overhead, the debug variant's is what compiling the hooks in costs per launch.
2. saxpy over 1M threads, plain (work-group loops) beside its debug variant run to the end
   without stopping (coroutines, a line check per statement): the price of the debug variant.
3. one debugger round trip: `continue` from a stop to the next thread's stop at the same line
   (the hook, the stop published, the command taken), median over a block of threads.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import Options, Row, cell, median, na, per_call_seconds

_NONE = na("not measured: gpunb's own feature (numba-cuda's simulator is its ancestor)")


def _launch_row(workdir: Path, quick: bool) -> Row:
    import gpunb
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda
    from gpunb.backends.cpu.executor import LoadedCpuKernel

    gpunb.set_target("cpu")
    kernels = load_kernels("gpunb", workdir)
    plain = kernels.scale3
    variant = cuda.jit(plain.py_func, debugger=True)
    x, out, a = np.ones(32, np.float32), np.zeros(32, np.float32), np.float32(2.0)
    calls, repeats = (200, 3) if quick else (5000, 9)
    notes = []

    def measure(kernel) -> float:
        launch = kernel[1, 32]
        for _ in range(3):
            launch(out, x, a)  # compile, then bind the native launcher
        return per_call_seconds(lambda: launch(out, x, a), lambda: None, calls, repeats)

    samples = {"plain": [], "variant": []}
    for _ in range(3):  # alternate, so both see the same load on a shared machine
        samples["plain"].append(measure(plain))
        samples["variant"].append(measure(variant))
    loaded = next(iter(plain.specializations.values())).program.loaded
    if type(loaded) is not LoadedCpuKernel:
        notes.append("the plain kernel did not load as LoadedCpuKernel: it pays for the debugger")
    p, v = min(samples["plain"]) * 1e6, min(samples["variant"]) * 1e6
    return Row("launch w/o breakpoints, 3 args (cpu)", "us",
               cell(p, "{:.2f} us", "plain kernel; the debugger adds nothing to its path"),
               _NONE, na("CPU target only"), f"debug variant, quiet: {v:.2f} us",
               f"variant costs +{v - p:.2f} us", tuple(notes))


def _variant_row(quick: bool) -> Row:
    import gpunb
    from gpunb import cuda

    gpunb.set_target("cpu")
    n = 1 << (16 if quick else 20)

    def saxpy(out, x, y, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    plain, variant = cuda.jit(saxpy), cuda.jit(saxpy, debugger=True)
    x, y = np.ones(n, np.float32), np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    blocks = (n + 255) // 256

    def best(kernel) -> float:
        kernel[blocks, 256](out, x, y, np.float32(2))
        times = []
        for _ in range(2 if quick else 5):
            started = time.perf_counter()
            kernel[blocks, 256](out, x, y, np.float32(2))
            times.append(time.perf_counter() - started)
        return min(times) * 1e3

    p, v = best(plain), best(variant)
    assert np.array_equal(out, 2 * x + y), "debug variant: wrong result"
    return Row(f"saxpy {n >> 20 or n}{'M' if n >= 1 << 20 else ''} (cpu), no stop", "ms",
               cell(p, "{:.2f} ms", "plain: work-group loops"), _NONE, na("CPU target only"),
               f"debug variant: {v:.2f} ms", f"{v / p:.1f}x while debugging")


def _round_trip_row(quick: bool) -> Row:
    import gpunb
    from gpunb import cuda

    gpunb.set_target("cpu")

    def fill(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = i

    kernel = cuda.jit(fill)
    line = fill.__code__.co_firstlineno + 3
    out = np.zeros(256, np.int64)
    session = gpunb.debug(kernel[1, 256], out, breaks=[line])
    times = []
    for _ in range(20 if quick else 200):
        started = time.perf_counter()
        session.continue_()
        times.append(time.perf_counter() - started)
    session.run_to_end()
    session.result()
    ms = median(times) * 1e3
    return Row("debugger: continue to next stop", "ms", cell(ms, "{:.3f} ms", "median"),
               _NONE, na("CPU target only"), "-", "informative")


def run(opts: Options) -> list[Row]:
    if opts.suite != "cpu":
        return []
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for measure in (lambda: _launch_row(Path(tmp), opts.quick),
                        lambda: _variant_row(opts.quick), lambda: _round_trip_row(opts.quick)):
            try:
                rows.append(measure())
            except Exception as exc:  # noqa: BLE001 - a failed figure is reported, not hidden
                failed = na(f"error: {type(exc).__name__}: {str(exc)[:300]}")
                rows.append(Row("debugger figure", "", failed, _NONE, _NONE, "-", "failed"))
        return rows
