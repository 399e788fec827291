"""libdevice's reflect answers on the CUDA target (backends/cuda/target.py): square roots inside
libdevice functions round correctly (__CUDA_PREC_SQRT = 1, NVVM's default and numba-cuda's), so
float32 math.hypot matches numpy as numba-cuda's test_math_hypot requires; with fastmath they
are approximate (-prec-sqrt=0), as numba-cuda's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpunb import cuda, float32, float64


def _hypot(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = math.hypot(a[i], b[i])


def test_libdevice_square_roots_round_unless_fastmath():
    sig = (float32[::1], float32[::1], float32[::1])
    for _ in range(2):  # the answer is told to LLVM per compile: alternate both ways
        precise = cuda.jit(sig)(_hypot).inspect_asm(sig)
        assert "sqrt.rn.f32" in precise and "sqrt.approx" not in precise
        fast = cuda.jit(sig, fastmath=True)(_hypot).inspect_asm(sig)
        assert "sqrt.approx.ftz.f32" in fast and "sqrt.rn" not in fast


def test_fastmath_keeps_its_approximate_sqrt():
    def root(x, out):
        out[0] = math.sqrt(x[0])

    sig = (float32[::1], float32[::1])
    assert "sqrt.approx.ftz.f32" in cuda.jit(sig, fastmath=True)(root).inspect_asm(sig)
    assert "sqrt.rn.f32" in cuda.jit(sig)(root).inspect_asm(sig)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, nbtype", [(np.float32, float32), (np.float64, float64)])
def test_hypot_matches_numpy_on_a_gpu(dtype, nbtype):
    import gpunb

    gpunb.set_target("cuda")
    try:
        a = np.linspace(0, 1, 50).astype(dtype)
        out = np.zeros_like(a)
        cuda.jit((nbtype[::1], nbtype[::1], nbtype[::1]))(_hypot)[1, 64](a, a, out)
        np.testing.assert_allclose(np.hypot(a, a), out, rtol=1e-7)
    finally:
        gpunb.set_target(None)
