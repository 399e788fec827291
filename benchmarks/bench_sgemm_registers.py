"""Register-tiled SGEMM 4096^2: the last step of notebooks/09_tiled_matmul.ipynb, timed.

The kernel's source is read from the notebook's `%%gpukernel` cell (one source of truth), then
compiled by gpunb and by numba-cuda (the same text: it is plain numba.cuda dialect); cuBLAS
through cupy.matmul is the CuPy column, a reference. Issue 15's target: >= 25 TFLOP/s FP32 on
an H100. TFLOP/s = 2 n^3 / device time.
"""

from __future__ import annotations

import json

import numpy as np

from benchmarks.bench_sgemm import _check, _cublas, _elapsed_ms, _tflops
from benchmarks.common import (
    REPO,
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

NOTEBOOK = REPO / "notebooks" / "09_tiled_matmul.ipynb"
TARGET_TFLOPS = 25.0


def kernel_source() -> str:
    """The notebook cell that defines matmul_registers, without its %%gpukernel line."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    text = next("".join(c["source"]) for c in cells
                if c["cell_type"] == "code" and "def matmul_registers" in "".join(c["source"]))
    return text.split("\n", 1)[1] if text.startswith("%%gpukernel") else text


def _build(lib: str):
    if lib == "gpunb":
        import gpunb
        from gpunb import cuda, float32

        gpunb.set_target("cuda")
    else:
        from numba import cuda, float32
    namespace = {"cuda": cuda, "float32": float32}
    exec(compile(kernel_source(), "<09_tiled_matmul.ipynb: matmul_registers>", "exec"), namespace)
    return cuda, cuda.jit(namespace["matmul_registers"]), namespace


def _jit(lib: str, a, b, iters: int, repeats: int) -> Cell:
    cuda, kernel, ns = _build(lib)
    n = a.shape[0]
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), np.float32)
    grid = (n // ns["BN"], n // ns["BM"])
    ms = gpu_event_ms(lambda: kernel[grid, (16, 16)](d_c, d_a, d_b), cuda.event(), cuda.event(),
                      _elapsed_ms, iters, repeats)
    _check(d_c.copy_to_host(), a, b, lib)
    return cell(_tflops(ms, n), "{:.2f} TFLOP/s", f"{ms:.2f} ms per launch")


def run(opts: Options) -> list[Row]:
    n = 1024 if opts.quick else 4096
    iters, repeats = (2, 3) if opts.quick else (3, 7)
    figure = f"SGEMM {n}^2, register tiles (nb 09)"
    anchor = f">= {TARGET_TFLOPS:.0f} TFLOP/s on an H100 (issue 15)"
    no_gpu = gpu_missing()
    if no_gpu:
        return [Row(figure, "TFLOP/s", na(no_gpu), na(no_gpu), na(no_gpu), anchor, "n/a")]
    rng = np.random.default_rng(5)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    gp = attempt(lambda: _jit("gpunb", a, b, iters, repeats))
    nb = attempt(lambda: _jit("numba", a, b, iters, repeats),
                 missing_module("numba.cuda", "numba-cuda"))
    cp = attempt(lambda: _cublas(a, b, iters, repeats), missing_module("cupy", "cupy-cuda12x"))
    if gp.value is None:
        verdict = "n/a"
    elif gp.value >= TARGET_TFLOPS:
        verdict = f"met: {gp.value:.1f} TFLOP/s"
    else:
        verdict = f"MISSED: {100 * gp.value / TARGET_TFLOPS:.0f}% of target"
    return [Row(figure, "TFLOP/s", gp, nb, cp, anchor, verdict,
                ("128x128 block tile, 8x8 register tile per thread, BK=8, 256 threads; the "
                 "notebook's own source for both JITs; CuPy column is cuBLAS, a reference",))]
