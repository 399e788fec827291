# Cases adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_ufuncs.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""numpy ufuncs in kernels with an output array (np.sin(x, out)), comparisons, logical and
bitwise ufuncs, maximum/minimum on scalars and arrays; numpy computes the expected values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import CompileError, LaunchError

SOURCES: dict = {}


def usecase(ufunc: np.ufunc):
    """def fn(a0, ..., out): np.<ufunc>(a0, ..., out), one kernel per ufunc (as upstream)."""
    found = SOURCES.get(ufunc)
    if found is None:
        args = ", ".join(f"a{k}" for k in range(ufunc.nargs))
        namespace: dict = {}
        exec(f"def fn({args}):\n    np.{ufunc.__name__}({args})\n", {"np": np}, namespace)
        found = SOURCES[ufunc] = cuda.jit(namespace["fn"])
    return found


REAL = [np.float32(0.5), np.array([-0.5, 0.0, np.nan, 0.5], "f4"),
        np.asfortranarray(np.linspace(0, 1).reshape(5, -1))]
COMPLEX = [np.array([-0.5 - 0.5j, 0.0, 0.5 + 0.5j, complex(np.nan, 1)], "c16")]
INTS = [np.array([-1, 0, 1], "i8"), np.array([0, 1, 255], np.uint8)]


def check(ufunc: np.ufunc, inputs: list) -> int:
    checked = 0
    for x in inputs:
        args = (x,) * ufunc.nin
        if ufunc.nin == 2 and np.ndim(x) == 1:  # two different operands, one reversed
            args = (x, x[::-1].copy())
        expected = np.zeros(np.shape(x) or (1,), dtype=np.asarray(x).dtype)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ufunc(*args, out=expected)
        got = np.zeros_like(expected)
        usecase(ufunc)[1, 1](*args, got)
        np.testing.assert_array_almost_equal(got, expected, decimal=5,
                                             err_msg=f"{ufunc.__name__}{args}")
        checked += 1
    return checked


@pytest.mark.parametrize("ufunc", [np.sin, np.arctan, np.tanh, np.log, np.log2, np.sqrt])
def test_math_on_real_and_complex(target, ufunc):
    assert check(ufunc, REAL + COMPLEX) == len(REAL + COMPLEX)


@pytest.mark.parametrize("ufunc", [np.arctan2, np.hypot, np.deg2rad, np.rad2deg, np.fmax,
                                   np.fmin])
def test_real_only_ufuncs(target, ufunc):
    assert check(ufunc, REAL[:2]) == 2


@pytest.mark.parametrize("ufunc", [np.greater, np.less_equal, np.not_equal, np.logical_xor,
                                   np.logical_not, np.maximum, np.minimum, np.add,
                                   np.absolute])
@pytest.mark.slow
def test_ufuncs_on_every_kind(target, ufunc):
    inputs = REAL[1:2] + INTS + COMPLEX
    assert check(ufunc, inputs) == len(inputs)


@pytest.mark.parametrize("ufunc", [np.bitwise_xor, np.invert])
def test_bitwise(target, ufunc):
    assert check(ufunc, INTS) == len(INTS)


@pytest.mark.parametrize("comparison", [np.greater_equal, np.less, np.not_equal])
def test_signed_unsigned_comparisons_compare_values(target, comparison):
    # numpy >= 1.25 has 'qQ->?' / 'Qq->?' loops: -1 is below every uint64 (not 2**64 - 1)
    a = np.array([-1, -1, 0, 0, 1, 1, -(2**62)], dtype=np.int64)
    b = np.array([0, 1, 0, 1, 0, 1, 2**63 + 5], dtype=np.uint64)
    for x, y in ((a, b), (b, a)):
        got = np.zeros(x.shape, np.bool_)
        usecase(comparison)[1, 1](x, y, got)
        np.testing.assert_array_equal(got, comparison(x, y))


def test_scalar_comparison_and_logic_in_expressions(target):
    @cuda.jit
    def k(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = (np.greater(a[i], b[i]) + 2 * np.logical_xor(a[i], b[i]) +
                      4 * np.maximum(a[i], b[i]))

    a = np.array([-1, 5, 2, 0], np.int64)
    b = np.array([0, 2**63, 2, 7], np.uint64)
    out = np.zeros(4, np.float64)
    k[1, 4](a, b, out)
    expected = (np.greater(a, b) + 2 * np.logical_xor(a, b) +
                4 * np.maximum(a, b).astype(np.float64))
    np.testing.assert_array_equal(out, expected)


def test_broadcasting_and_out_keyword(target):
    @cuda.jit
    def k(row, column, out):
        np.add(row, column, out=out)
        np.multiply(out, 2.0, out)

    row = np.arange(4, dtype=np.float32)
    column = np.arange(3, dtype=np.float32).reshape(3, 1)
    out = np.zeros((3, 4), np.float32)
    k[1, 1](row, column, out)
    np.testing.assert_array_equal(out, (row + column) * 2)


def test_returns_its_output(target):
    @cuda.jit
    def k(a, out, total):
        r = np.sqrt(a, out)
        total[0] = r[0] + r[1]

    a = np.array([4.0, 9.0])
    out, total = np.zeros(2), np.zeros(1)
    k[1, 1](a, out, total)
    assert out.tolist() == [2.0, 3.0] and total[0] == 5.0


def test_shapes_that_do_not_broadcast_raise_valueerror(target):
    @cuda.jit
    def k(a, out):
        np.sin(a, out)

    with pytest.raises(ValueError, match="could not be broadcast"):
        k[1, 1](np.zeros(3), np.zeros((2, 4)))
    with pytest.raises(LaunchError):
        k[1, 1](np.zeros(3), np.zeros(2))


def test_bad_calls_are_compile_errors():
    @cuda.jit
    def no_out(a):
        np.sin(a)

    @cuda.jit
    def float_bitwise(a, out):
        np.bitwise_and(a, a, out)

    @cuda.jit
    def too_few_dims(a, out):
        np.cos(a, out)

    @cuda.jit
    def two_outputs(a, out):
        np.add(a, a, out, out=out)

    with pytest.raises(CompileError, match="needs an output array"):
        no_out[1, 1](np.zeros(3))
    with pytest.raises(CompileError, match="no loop for"):
        float_bitwise[1, 1](np.zeros(3), np.zeros(3))
    with pytest.raises(CompileError, match="does not broadcast"):
        too_few_dims[1, 1](np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(CompileError, match="both as an argument and as out="):
        two_outputs[1, 1](np.zeros(2), np.zeros(2))


def test_output_must_accept_the_result():
    @cuda.jit
    def into_int(a, out):
        np.sin(a, out)  # float64 into int64 is not a same_kind cast: numpy refuses too

    with pytest.raises(CompileError, match="no loop for"):
        into_int[1, 1](np.zeros(2), np.zeros(2, np.int64))


def test_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(usecase(np.maximum).py_func,
                              "void(float32[:, ::1], float32[::1], float64[:, ::1])")
    ptxas(ptx)


def _scalar_absolute(out, x, z):
    out[0] = np.abs(x[0])
    out[1] = np.absolute(z[0])
    out[2] = np.abs(z[1])


@pytest.mark.parametrize("ctype", [np.complex64, np.complex128])
def test_absolute_of_a_complex_scalar(target, ctype):
    # np.abs(z) of a complex scalar said "numpy.absolute() needs real numbers" (its scalar form
    # went to math's fabs); numba gives |z| by numpy's 'F->f' loop
    from numba import njit

    x, z = np.array([-3.0]), np.array([3 - 4j, -1e200 + 1e200j], ctype)
    expected, found = np.zeros(3), np.zeros(3)
    njit(_scalar_absolute)(expected, x, z)
    cuda.jit(_scalar_absolute)[1, 1](found, x, z)
    np.testing.assert_allclose(found, expected, rtol=1e-6)
    np.testing.assert_allclose(found[:2], [3.0, 5.0])


def _real_ops(out, a, i):
    for k in range(a.size):
        out[k, 0] = np.sign(a[k])
        out[k, 1] = np.signbit(a[k])
        out[k, 2] = np.floor_divide(a[k], 2.0)
        out[k, 3] = np.sign(i[k])
        out[k, 4] = np.floor_divide(i[k], 3)
        out[k, 5] = np.left_shift(i[k], 2)
        out[k, 6] = np.right_shift(i[k], 1)
    np.sign(a, out[:, 7])
    np.floor_divide(i, 3, out[:, 8])


def test_sign_signbit_floor_divide_and_shifts(target):
    # "cannot call sign from GPU code": numba-cuda's ufunc table has them (scalars and arrays)
    from numba import njit

    a = np.array([-2.5, -0.0, 0.0, 3.0, np.nan, 7.0])
    i = np.array([-7, 0, 5, 9, -1, 2], np.int64)
    expected, found = np.zeros((6, 9)), np.zeros((6, 9))
    njit(_real_ops)(expected, a, i)
    cuda.jit(_real_ops)[1, 1](found, a, i)
    np.testing.assert_array_equal(found, expected)
    assert found[:, 0].tolist()[:4] == [-1, 0, 0, 1] and np.isnan(found[4, 0])


def test_sign_and_shifts_ptx(ptxas):
    from gpunb.foundation.types import float64, int64

    ptx, _ = cuda.compile_ptx(_real_ops, (float64[:, ::1], float64[::1], int64[::1]))
    ptxas(ptx)


def _composed(out, a, b, e, z, w):
    for i in range(a.size):
        out[0, i] = np.logaddexp(a[i], b[i])
        out[1, i] = np.logaddexp2(a[i], b[i])
        out[2, i] = np.reciprocal(a[i])
        out[3, i] = np.ldexp(a[i], e[i])
        out[4, i] = np.float_power(abs(a[i]), b[i])
    np.reciprocal(z, w)  # the array form, complex (Smith's 1/z)


def test_logaddexp_ldexp_reciprocal_float_power(target):
    # 'cannot call logaddexp from GPU code': numba-cuda's ufunc table has them; numpy's results
    # at the edges (equal infinities, a NaN, exponents past the range, huge complex numbers)
    a = np.array([1.0, -np.inf, np.inf, np.nan, 3.0, -2.0, 0.0])
    b = np.array([1.0, -np.inf, np.inf, 1.0, -40.0, 5.0, -0.5])
    e = np.array([1, 3, -2, 5, 2000, -5000, 0], np.int64)
    z = np.array([1 + 1j, -2j, 3.0, 1e300 + 1e300j])
    found, w = np.zeros((5, 7)), np.zeros_like(z)
    cuda.jit(_composed)[1, 1](found, a, b, e, z, w)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = np.stack([np.logaddexp(a, b), np.logaddexp2(a, b), np.reciprocal(a),
                             np.ldexp(a, e), np.float_power(abs(a), b)])
    np.testing.assert_allclose(found, expected, rtol=1e-14)
    np.testing.assert_allclose(w, np.reciprocal(z), rtol=1e-14)


def _logaddexps(out, x, y):
    np.logaddexp(x, y, out[0])
    np.logaddexp2(x, y, out[1])


def test_logaddexp_in_float32(target):
    a = np.array([1.0, -np.inf, 80.0, np.nan, -100.0], np.float32)
    b = np.array([1.0, -np.inf, 85.0, 1.0, -101.0], np.float32)
    found = np.zeros((2, 5), np.float32)
    cuda.jit(_logaddexps)[1, 1](found, a, b)
    with np.errstate(all="ignore"):
        expected = np.stack([np.logaddexp(a, b), np.logaddexp2(a, b)])
    np.testing.assert_allclose(found, expected, rtol=1e-6)


def test_composed_ufuncs_ptx(ptxas):
    from gpunb.foundation.types import complex128, float64, int64

    ptx, _ = cuda.compile_ptx(_composed, (float64[:, ::1], float64[::1], float64[::1],
                                          int64[::1], complex128[::1], complex128[::1]))
    ptxas(ptx)


def _inplace(o, x, m):
    o += 1
    o[1:3] += x[:2]
    o[0:2] *= 2.0
    o //= 1.5
    m[1, :] -= x  # a row, x broadcast along it
    m **= 2
    acc = cuda.local.array(3, np.int64)
    for i in range(3):
        acc[i] = i + 1
    acc <<= 2  # an integer operator on a local array
    acc |= 1
    for i in range(3):
        o[i] += acc[i]


def test_inplace_array_operators(target):
    # numba-cuda registers numpy's in-place array operators (np.add(a, x, a)...): gpunb said
    # "whole-array arithmetic is not available inside kernels"
    from numba import njit

    x = np.array([10.0, 20.0, 30.0])
    o, m = np.zeros(4), np.arange(6.0).reshape(2, 3)
    o2, m2 = o.copy(), m.copy()
    cuda.jit(_inplace)[1, 1](o, x, m)
    njit(_njit_inplace)(o2, x, m2)
    np.testing.assert_array_equal(o, o2)
    np.testing.assert_array_equal(m, m2)


def _njit_inplace(o, x, m):  # _inplace for the CPU JIT, whose local array is a numpy array
    o += 1
    o[1:3] += x[:2]
    o[0:2] *= 2.0
    o //= 1.5
    m[1, :] -= x
    m **= 2
    acc = np.empty(3, np.int64)
    for i in range(3):
        acc[i] = i + 1
    acc <<= 2
    acc |= 1
    for i in range(3):
        o[i] += acc[i]


def test_inplace_operator_that_would_need_an_unsafe_cast_is_a_compile_error():
    def adds_a_float_to_ints(a):
        a += 1.5

    with pytest.raises(CompileError) as info:
        cuda.jit(adds_a_float_to_ints)[1, 1](np.zeros(3, np.int64))
    assert "^" in str(info.value) and "int64" in str(info.value)


def test_inplace_array_operators_ptx(ptxas):
    from gpunb.foundation.types import float64

    ptx, _ = cuda.compile_ptx(_inplace, (float64[::1], float64[::1], float64[:, ::1]))
    ptxas(ptx)
