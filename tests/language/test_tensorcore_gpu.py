"""On a GPU: the tensor-core kernels give the CPU target's results (within the documented
float32 accumulation bound; integers and layouts exactly), the profile counts their FLOPs and
measures the tensor-core roof, and inline PTX runs."""

from __future__ import annotations

import numpy as np
import pytest
from tensorcore_support import reference

from benchmarks import tensorcore_kernels as tk
from gpunb import cuda

pytestmark = pytest.mark.gpu


def _on(target: str, launch):
    import gpunb

    gpunb.set_target(target)
    try:
        return launch()
    finally:
        gpunb.set_target(None)


@pytest.mark.parametrize("which", ["wmma", "mma"])
def test_gemm_kernels_agree_with_the_cpu_target(which):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)

    def run(target):
        c = np.zeros((256, 256), np.float32)
        make = tk.make_wmma_gemm if which == "wmma" else tk.make_mma_gemm
        tk.launch(make(np.float16, async_copies=target == "cuda"), c, a, b)
        return c

    cpu, gpu = _on("cpu", lambda: run("cpu")), _on("cuda", lambda: run("cuda"))
    _, bound = reference(a, b, np.zeros((256, 256), np.float32), "f16", "f16")
    assert (np.abs(cpu - gpu) <= 2 * bound).all()


def test_profile_counts_tensor_flops_and_measures_the_tensor_roof():
    import gpunb

    n = 1024
    rng = np.random.default_rng(1)
    a = cuda.to_device(rng.standard_normal((n, n)).astype(np.float16))
    b = cuda.to_device(rng.standard_normal((n, n)).astype(np.float16))
    c = cuda.device_array((n, n), np.float32)
    kernel = tk.make_mma_gemm(np.float16)
    tk.launch(kernel, c, a, b)
    with gpunb.profile() as prof:
        tk.launch(kernel, c, a, b)
    record = prof.launches[-1]
    assert record.flops == 2 * n ** 3 and record.gflops > 1000
    assert prof.peak_tensor_gflops > 4 * prof.peak_gflops  # tensor cores beat FP32 FMAs
    assert prof.peak_source["tensor_gflops"].startswith("measured")


def test_inline_ptx_runs():
    @cuda.jit
    def lanes(out, x):
        i = cuda.grid(1)
        lane = cuda.inline_ptx("mov.u32 %0, %%laneid;", "=r")
        lo, hi = cuda.inline_ptx("mov.b64 {%0, %1}, %2;", "=r,=r,l", x[i])
        out[i, 0] = lane
        out[i, 1] = lo
        out[i, 2] = hi

    x = (np.arange(64, dtype=np.uint64) << np.uint64(32)) + np.arange(64, dtype=np.uint64) * 3
    out = np.zeros((64, 3), np.uint64)
    _on("cuda", lambda: lanes[1, 64](out, x))
    assert (out[:, 0] == np.arange(64) % 32).all()
    assert (out[:, 1] == np.arange(64) * 3).all() and (out[:, 2] == np.arange(64)).all()
