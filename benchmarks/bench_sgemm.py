"""Shared-memory tiled SGEMM 4096^2: numba-cuda's documentation kernel, the same source for both.

`fast_matmul` from numba-cuda's docs (benchmarks/kernelsrc.py keeps it unchanged apart from the
import) compiled by gpunb and by numba-cuda; cuBLAS through cupy.matmul is shown in the CuPy
column as the hardware's reference, not as a target. TFLOP/s = 2 n^3 / device time.
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
)


def _tflops(ms: float, n: int) -> float:
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def _elapsed_ms(start, end) -> float:
    return start.elapsed_time(end)  # numba.cuda's and gpunb's events both have it


def _check(c: np.ndarray, a: np.ndarray, b: np.ndarray, who: str) -> None:
    rows = slice(0, 4)  # a few rows against float64 numpy: enough to catch a wrong kernel
    want = a[rows].astype(np.float64) @ b.astype(np.float64)
    if not np.allclose(c[rows], want, rtol=1e-3, atol=1e-2):
        raise AssertionError(f"{who}: wrong result")


def _jit(lib: str, workdir: Path, a, b, iters: int, repeats: int) -> Cell:
    from benchmarks.kernelsrc import load_kernels

    if lib == "gpunb":
        import gpunb
        from gpunb import cuda

        gpunb.set_target("cuda")
    else:
        from numba import cuda
    kernels = load_kernels(lib, workdir)
    n, tpb = a.shape[0], kernels.TPB
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), np.float32)
    grid = ((n + tpb - 1) // tpb, (n + tpb - 1) // tpb)  # as the doc example computes it
    ms = gpu_event_ms(lambda: kernels.fast_matmul[grid, (tpb, tpb)](d_a, d_b, d_c),
                      cuda.event(), cuda.event(), _elapsed_ms, iters, repeats)
    _check(d_c.copy_to_host(), a, b, lib)
    return cell(_tflops(ms, n), "{:.2f} TFLOP/s", f"{ms:.2f} ms per launch")


def _cublas(a, b, iters: int, repeats: int) -> Cell:
    import cupy as cp

    d_a, d_b = cp.asarray(a), cp.asarray(b)
    d_c = cp.empty_like(d_a)
    ms = gpu_event_ms(lambda: cp.matmul(d_a, d_b, out=d_c), cp.cuda.Event(), cp.cuda.Event(),
                      cp.cuda.get_elapsed_time, iters, repeats)
    _check(d_c.get(), a, b, "cupy.matmul")
    return cell(_tflops(ms, a.shape[0]), "{:.2f} TFLOP/s", "cuBLAS via cupy.matmul (reference)")


def run(opts: Options) -> list[Row]:
    n = 1024 if opts.quick else 4096
    iters, repeats = (2, 3) if opts.quick else (3, 7)
    figure = f"SGEMM {n}^2, numba doc kernel"
    no_gpu = gpu_missing()
    if no_gpu:
        return [Row(figure, "TFLOP/s", na(no_gpu), na(no_gpu), na(no_gpu),
                    ">= numba-cuda; DESIGN 7.07", "n/a")]
    rng = np.random.default_rng(5)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    with tempfile.TemporaryDirectory(prefix="gpunb-bench-") as tmp:
        workdir = Path(tmp)
        gp = attempt(lambda: _jit("gpunb", workdir, a, b, iters, repeats))
        nb = attempt(lambda: _jit("numba", workdir, a, b, iters, repeats),
                     missing_module("numba.cuda", "numba-cuda"))
    cp = attempt(lambda: _cublas(a, b, iters, repeats), missing_module("cupy", "cupy-cuda12x"))
    if gp.value is None or nb.value is None:
        verdict = "n/a"
    elif gp.value >= nb.value:
        verdict = f"met: {gp.value / nb.value:.2f}x numba-cuda"
    else:
        verdict = f"MISSED: {100 * gp.value / nb.value:.0f}% of numba-cuda"
    return [Row(figure, "TFLOP/s", gp, nb, cp, ">= numba-cuda (same run)", verdict,
                ("shared-memory tiled matmul from numba-cuda's docs, TPB=16, float32, same source "
                 "for both JITs; DESIGN: numba-cuda 7.07 TFLOP/s, cuBLAS 51.7; CuPy column is "
                 "cuBLAS (cupy.matmul), a reference, not a target",))]
