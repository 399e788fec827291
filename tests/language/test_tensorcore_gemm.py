"""The tensor-core GEMM kernels of benchmarks/bench_tensorcore.py: right on every target at a
small size (the CPU target copies tiles without cp.async, which is PTX), and their PTX (with
cp.async through inline PTX) accepted by ptxas."""

from __future__ import annotations

import numpy as np
import pytest
from tensorcore_support import NP_TYPES, reference

from benchmarks import tensorcore_kernels as tk
from gpunb import cuda

pytestmark = pytest.mark.slow  # dozens of kernels compiled for two targets


def _operands(n: int, dtype):
    rng = np.random.default_rng(9)
    return (rng.standard_normal((n, n)).astype(np.float32).astype(dtype),
            rng.standard_normal((n, n)).astype(np.float32).astype(dtype))


def _check(c, a, b):
    expected, bound = reference(a, b, np.zeros(c.shape, np.float32), "f32", "f32")
    assert (np.abs(c - expected) <= bound).all()


@pytest.mark.parametrize("dtype", [np.float16, NP_TYPES["bf16"]])
def test_wmma_gemm(target, dtype):
    a, b = _operands(256, dtype)
    c = np.zeros((256, 256), np.float32)
    tk.launch(tk.make_wmma_gemm(dtype, async_copies=target == "cuda"), c, a, b)
    _check(c, a, b)


@pytest.mark.parametrize("stages, bn", [(3, 128), (4, 256)])
def test_mma_gemm(target, stages, bn):
    a, b = _operands(256, np.float16)
    c = np.zeros((256, 256), np.float32)
    kernel = tk.make_mma_gemm(np.float16, async_copies=target == "cuda", stages=stages, bn=bn)
    tk.launch(kernel, c, a, b)
    _check(c, a, b)


def test_gemm_ptx_accepted_by_ptxas(ptxas):
    for dtype, name in ((np.float16, "float16"), (NP_TYPES["bf16"], "bfloat16")):
        sig = f"void(float32[:, ::1], {name}[:, ::1], {name}[:, ::1])"
        ptx, _ = cuda.compile_ptx(tk.make_mma_gemm(dtype), sig, cc=(8, 0))
        assert "cp.async.cg.shared.global" in ptx and "ldmatrix" in ptx
        ptxas(ptx, "sm_80")
        ptx, _ = cuda.compile_ptx(tk.make_wmma_gemm(dtype), sig, cc=(9, 0))
        assert "cp.async.cg.shared.global" in ptx and "wmma.mma" in ptx
        ptxas(ptx, "sm_90")
