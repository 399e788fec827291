"""fastmath=True as numba-cuda reads it: float32 tanh is the hardware's tanh.approx.f32 (sm_75
and later, not without fastmath), and with debug=True a float division by zero gives inf/nan
instead of raising ZeroDivisionError (an integer one still raises)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpunb import cuda, float32, int32


def _tanh_kernel(r, x):
    r[0] = math.tanh(x)


def test_fast_tanhf_is_the_hardware_approximation():
    fast, _ = cuda.compile_ptx(_tanh_kernel, (float32[::1], float32), fastmath=True)
    precise, _ = cuda.compile_ptx(_tanh_kernel, (float32[::1], float32))
    old_arch, _ = cuda.compile_ptx(_tanh_kernel, (float32[::1], float32), fastmath=True,
                                   cc=(7, 0))
    assert "tanh.approx.f32 " in fast
    assert "tanh.approx.f32 " not in precise and "tanh.approx.f32 " not in old_arch


def test_fast_tanhf_runs_on_the_cpu_target(target):
    r = np.zeros(1, np.float32)
    cuda.jit(fastmath=True)(_tanh_kernel)[1, 1](r, np.float32(0.5))
    assert r[0] == pytest.approx(math.tanh(0.5), rel=1e-5)


def test_fastmath_float_division_by_zero_does_not_raise_in_debug(target):
    def divide(r, x, y):
        r[0] = x / y

    sig = (float32[::1], float32, float32)
    r = np.zeros(1, np.float32)
    with pytest.raises(ZeroDivisionError):
        cuda.jit(sig, debug=True, opt=False)(divide)[1, 1](r, 10.0, 0.0)
    cuda.jit(sig, fastmath=True, debug=True, opt=False)(divide)[1, 1](r, 10.0, 0.0)
    assert r[0] == np.inf

    def int_divide(r, x, y):
        r[0] = x // y

    with pytest.raises(ZeroDivisionError):
        cuda.jit((int32[::1], int32, int32), fastmath=True, debug=True, opt=False)(
            int_divide)[1, 1](np.zeros(1, np.int32), 1, 0)
