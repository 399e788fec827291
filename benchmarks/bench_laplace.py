"""Grid-sync Laplace: numba-cuda's doc example (one launch, a grid barrier per time step).

The same source for both JITs (benchmarks/kernelsrc.py); the figure is device time per time step
from events around one `forall(len(data))` launch of `timesteps` steps. CuPy has no grid sync in
its Python kernels. The target is to be no slower than numba-cuda in the same run.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import (
    Cell,
    Options,
    Row,
    attempt,
    cell,
    gpu_event_ms,
    gpu_missing,
    missing_module,
    na,
    verdict_at_most,
)

SIZE = 1001  # as the doc example


def _data() -> np.ndarray:
    data = np.zeros(SIZE)
    data[500] = 10000
    return data


def _reference(data: np.ndarray, steps: int, k: float) -> np.ndarray:
    a, b = data.copy(), np.empty_like(data)
    for _ in range(steps):
        b[0] = a[0] + k * (a[1] - 2 * a[0])
        b[-1] = a[-1] + k * (a[-2] - 2 * a[-1])
        b[1:-1] = a[1:-1] + k * (a[:-2] - 2 * a[1:-1] + a[2:])
        a, b = b, a
    return a


def _elapsed_ms(start, end) -> float:
    return start.elapsed_time(end)


def _run(lib: str, workdir: Path, steps: int, repeats: int) -> Cell:
    from benchmarks.kernelsrc import load_kernels

    if lib == "gpunb":
        import gpunb
        from gpunb import cuda

        gpunb.set_target("cuda")
    else:
        from numba import cuda
    kernel = load_kernels(lib, workdir).solve_heat_equation
    data = _data()
    buf_0 = cuda.to_device(data)
    buf_1 = cuda.device_array_like(buf_0)

    def launch():
        buf_0.copy_to_device(data)
        kernel.forall(len(data))(buf_0, buf_1, steps, 0.25)

    ms = gpu_event_ms(launch, cuda.event(), cuda.event(), _elapsed_ms, 1, repeats)
    # an even number of steps leaves the result in buf_0
    got = (buf_0 if steps % 2 == 0 else buf_1).copy_to_host()
    if not np.allclose(got, _reference(data, steps, 0.25), rtol=1e-9, atol=1e-9):
        raise AssertionError(f"{lib}: wrong result")
    per_step_us = ms * 1e3 / steps
    return cell(per_step_us, "{:.2f} us/step", f"{ms:.2f} ms for {steps} steps")


def run(opts: Options) -> list[Row]:
    steps = 1000 if opts.quick else 10000
    repeats = 3 if opts.quick else 7
    figure = "grid-sync Laplace, numba doc example"
    no_gpu = gpu_missing()
    if no_gpu:
        return [Row(figure, "us/step", na(no_gpu), na(no_gpu), na("no grid sync in CuPy"),
                    "<= numba-cuda (same run)", "n/a")]
    with tempfile.TemporaryDirectory(prefix="gpunb-bench-") as tmp:
        workdir = Path(tmp)
        gp = attempt(lambda: _run("gpunb", workdir, steps, repeats))
        nb = attempt(lambda: _run("numba", workdir, steps, repeats),
                     missing_module("numba.cuda", "numba-cuda"))
    verdict = "n/a" if nb.value is None else verdict_at_most(gp.value, nb.value, "us/step")
    return [Row(figure, "us/step", gp, nb, na("no grid sync in CuPy's Python kernels"),
                "<= numba-cuda (same run)", verdict,
                (f"{SIZE} points, {steps} time steps in one cooperative launch; device time from "
                 "events (includes the 8 KB host-to-device reset copy)",))]
