"""Arithmetic and promotion corner cases ported from numba-cuda's kernel tests (test_idiv,
test_operator, test_casting, test_boolean, test_powi) with only the import changed. Expected
values are numpy's or the ones numba-cuda's tests assert (numba's typing rules: int32 + int32 is
int64, int // 0 is 0 without debug, ~bool is bool as in numpy)."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

from gpunb import cuda
from gpunb.cuda import float32, float64, int32, void


@cuda.jit(void(float32[:, :], int32, int32))
def div_inplace(grid, l_x, l_y):
    for x in range(l_x):
        for y in range(l_y):
            grid[x, y] /= 2.0


@cuda.jit(void(float64[:, :], int32, int32))
def div_inplace_double(grid, l_x, l_y):
    for x in range(l_x):
        for y in range(l_y):
            grid[x, y] /= 2.0


@pytest.mark.parametrize("kernel,dtype", [(div_inplace, np.float32),
                                          (div_inplace_double, np.float64)])
def test_inplace_div(target, kernel, dtype):  # test_idiv
    grid = np.ones((2, 2), dtype=dtype)
    kernel[1, 1](grid, 2, 2)
    assert grid.dtype == dtype and np.all(grid == 0.5)


def _operator_kernel(op):
    @cuda.jit
    def foo(a, b):
        i = 0
        a[i] = op(a[i], b[i])

    return foo


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.floordiv, operator.mod, operator.pow])
def test_operator_module(target, op):  # test_operator.operator_template
    a, b = np.array([7.5]), np.array([-2.0])
    res = a.copy()
    _operator_kernel(op)[1, 1](res, b)
    np.testing.assert_equal(res, op(a, b))


@cuda.jit
def int_divmod(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = a[i] // b[i]
        out[i, 1] = a[i] % b[i]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float32, np.float64])
def test_floordiv_and_mod_follow_python_signs(target, dtype):
    a = np.array([7, -7, 7, -7, 0, 5, -1], dtype)
    b = np.array([2, 2, -2, -2, 3, -3, 4], dtype)
    out = np.zeros((a.size, 2), dtype)
    int_divmod[1, 8](out, a, b)
    np.testing.assert_array_equal(out[:, 0], a // b)
    np.testing.assert_array_equal(out[:, 1], a % b)


@cuda.jit
def int_div_by_zero(r, x, y):
    r[0] = y[0] // x[0]
    r[1] = y[0] % x[0]
    r[2] = y[1]


def test_integer_division_by_zero_continues(target):  # test_exception (error_model numpy)
    r = np.full(3, 9, np.int64)
    int_div_by_zero[1, 1](r, np.zeros(1, np.int64), np.array([5, 6], np.int64))
    assert r.tolist() == [0, 0, 6]


@cuda.jit
def float_div_by_zero(r, x, y):
    r[0] = y[0] / x[0]
    r[1] = y[0]


def test_float_division_by_zero_gives_inf(target):  # test_exception.test_no_zero_division_error
    r = np.zeros(2)
    float_div_by_zero[1, 1](r, np.zeros(1), np.ones(1))
    assert np.isinf(r[0]) and r[1] == 1.0


@cuda.jit
def powers(out, x, n):
    out[0] = x[0] ** n[0]
    out[1] = x[0] ** -2
    out[2] = 2 ** n[0]
    out[3] = x[0] ** 0.5
    out[4] = n[0] ** 2
    out[5] = (-x[0]) ** 3
    out[6] = x[0] ** n[1]


def test_powers_with_int_negative_and_float_exponents(target):  # test_powi
    out = np.zeros(7)
    powers[1, 1](out, np.array([3.0]), np.array([3, -2], np.int64))
    np.testing.assert_allclose(out, [27, 1 / 9, 8, 3 ** 0.5, 9, -27, 1 / 9])


@cuda.jit
def int_pow_negative(out, a, n):
    for i in range(a.size):
        out[i] = a[i] ** n[i]


def test_int_to_negative_int_power_is_numbas_integer_result(target):
    # numba: int ** int is an int64; a negative exponent gives 0 unless the base is 1 or -1
    a = np.array([2, 1, -1, -1, 3], np.int64)
    n = np.array([-2, -5, -3, -4, 2], np.int64)
    out = np.full(5, 7, np.int64)
    int_pow_negative[1, 1](out, a, n)
    assert out.tolist() == [0, 1, -1, 1, 9]


@cuda.jit
def mixed_signedness(out, a, b):
    out[0] = a[0] + b[0]
    out[1] = a[0] * b[0]
    out[2] = a[0] - b[0]


def test_int32_with_uint32_promotes_to_int64(target):
    out = np.zeros(3, np.int64)
    mixed_signedness[1, 1](out, np.array([-5], np.int32), np.array([3], np.uint32))
    assert out.tolist() == [-2, -15, -8]


@cuda.jit
def uint64_with_int64(out, a, b):
    out[0] = a[0] + b[0]


def test_uint64_with_int64_promotes_to_float64(target):
    out = np.zeros(1)
    uint64_with_int64[1, 1](out, np.array([2 ** 63], np.uint64), np.array([-1], np.int64))
    assert out[0] == float(2 ** 63 - 1)


@cuda.jit
def small_int_sums(out, a):
    x = a[0]
    x += np.int32(1)
    out[0] = x
    y = np.int8(127)
    y += np.int8(1)
    out[1] = y
    out[2] = np.uint8(250) + np.uint8(10)


def test_small_int_arithmetic_widens_to_64_bits(target):
    out = np.zeros(3, np.int64)
    small_int_sums[1, 1](out, np.array([2 ** 31 - 1], np.int32))
    assert out.tolist() == [2 ** 31, 128, 260]


@cuda.jit
def bool_arithmetic(out, a, b):
    out[0] = a[0] + b[0]
    out[1] = a[0] * 5
    out[2] = -a[0]
    out[3] = ~a[0]
    out[4] = ~b[0]
    out[5] = a[0] & b[0]
    out[6] = a[0] ^ b[0]


def test_bool_arithmetic_and_invert(target):  # numba's BitwiseInvert: ~bool -> bool
    out = np.full(7, 42, np.int64)
    bool_arithmetic[1, 1](out, np.array([True]), np.array([False]))
    assert out.tolist() == [1, 5, -1, 0, 1, 0, 1]


@cuda.jit
def invert_bool_into_bool_array(out, m):
    i = cuda.grid(1)
    if i < m.size:
        out[i] = ~m[i]


def test_invert_bool_array_element_matches_numpy(target):
    m = np.array([True, False, True])
    out = np.zeros(3, np.bool_)
    invert_bool_into_bool_array[1, 4](out, m)
    np.testing.assert_array_equal(out, ~m)


@cuda.jit
def unary_small_unsigned(out, u8, i8):
    out[0] = ~u8[0]
    out[1] = -u8[0]
    out[2] = ~i8[0]
    out[3] = +u8[0]


def test_unary_operators_on_small_ints_widen_like_numba(target):
    """numba-cuda negates and inverts at the operand's width, then widens (int_negate_impl:
    "negate before upcasting, for unsigned numbers"): ~uint8(1) is 254, -uint8(1) is 255;
    ~int8(1) is -2, sign-extended."""
    out = np.zeros(4, np.uint64)
    unary_small_unsigned[1, 1](out, np.array([1], np.uint8), np.array([1], np.int8))
    assert out.tolist() == [254, 255, 2 ** 64 - 2, 1]


@cuda.jit
def to_ints(out, x):
    out[0] = np.int8(x[0])
    out[1] = np.int16(x[0])
    out[2] = np.int32(x[0])
    out[3] = np.int64(x[0])
    out[4] = int(x[0])


@pytest.mark.parametrize("fromty", [np.float32, np.float64])
@pytest.mark.parametrize("value", [12.3, -12.3])
def test_float_to_int_truncates(target, fromty, value):  # test_casting.test_float_to_int
    out = np.zeros(5, np.int64)
    to_ints[1, 1](out, np.array([value], fromty))
    assert out.tolist() == [int(value)] * 5


@cuda.jit
def to_floats(out, x):
    out[0] = np.float32(x[0]) / np.float32(2)
    out[1] = np.float64(x[0]) / np.float64(2)
    out[2] = float(x[0])


@pytest.mark.parametrize("fromty", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                    np.uint32, np.uint64])
def test_int_to_float(target, fromty):  # test_casting.test_int_to_float
    out = np.zeros(3)
    to_floats[1, 1](out, np.array([12], fromty))
    assert out.tolist() == [6.0, 6.0, 12.0]


@cuda.jit
def wraparound_casts(out, x):
    out[0] = np.int16(70000)
    out[1] = np.uint32(-1)
    out[2] = np.uint8(x[0])
    out[3] = np.int8(x[1])


def test_integer_casts_wrap(target):
    out = np.zeros(4, np.int64)
    wraparound_casts[1, 1](out, np.array([-1, 200], np.int64))
    assert out.tolist() == [70000 - 65536, 2 ** 32 - 1, 255, -56]


@cuda.jit
def weak_float_literals(out, x):
    out[0] = x[0] * 2.0
    out[1] = x[0] + 1e-8
    out[2] = x[0] / 3


def test_float_literals_keep_float32(target):
    out = np.zeros(3, np.float32)
    weak_float_literals[1, 1](out, np.array([1.0], np.float32))
    f = np.float32(1.0)
    assert out.tolist() == [f * np.float32(2.0), f + np.float32(1e-8), f / np.float32(3)]


@cuda.jit
def rounding(out, x):
    out[0] = round(x[0])
    out[1] = round(x[1])
    out[2] = round(x[0], 1)
    out[3] = abs(-3)
    out[4] = min(x[0], 2)
    out[5] = max(1, 2, 3)
    out[6] = float(3)
    out[7] = round(x[2])
    out[8] = math.floor(-2.5)
    out[9] = math.ceil(x[2])


def test_round_abs_min_max(target):
    out = np.zeros(10)
    rounding[1, 1](out, np.array([2.5, 3.5, -2.5]))
    assert out.tolist() == [2, 4, 2.5, 3, 2, 3, 3, -2, -3, -2]


@cuda.jit
def nan_min_max(out, a, b):
    out[0] = min(a[0], b[0])
    out[1] = max(a[0], b[0])
    out[2] = max(np.nan, 1.0)
    out[3] = min(1.0, np.nan)


def test_min_max_of_mixed_signedness_and_nan(target):
    out = np.zeros(4)
    nan_min_max[1, 1](out, np.array([-1], np.int32), np.array([4294967295], np.uint32))
    assert out[0] == -1 and out[1] == 4294967295
    assert math.isnan(out[2]) and out[3] == 1.0  # Python's min/max: the first when unordered


@cuda.jit
def print_bools(x, m):
    print("x =", x[0], m[0], m[1], ~m[0])


def test_print_shows_booleans_as_true_false(capfd):  # numba-cuda's bool_print_impl
    import gpunb

    gpunb.set_target("cpu")
    try:
        print_bools[1, 1](np.array([3]), np.array([True, False]))
    finally:
        gpunb.set_target(None)
    assert capfd.readouterr().out.splitlines() == ["x = 3 True False False"]


def test_print_bools_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(print_bools, "void(int64[::1], boolean[::1])")
    assert "vprintf" in ptx
    ptxas(ptx)


@cuda.jit
def operator_misc(out, a, b):
    out[0] = operator.lt(a[0], b[0])
    out[1] = operator.neg(a[0])
    out[2] = operator.not_(a[0])
    out[3] = operator.iadd(a[0], 2)
    out[4] = operator.invert(np.int32(5))
    out[5] = operator.ge(b[0], 2.5)
    out[6] = operator.truth(b[0])
    out[7] = operator.xor(7, 2)


def test_operator_comparisons_and_unary(target):
    out = np.zeros(8)
    operator_misc[1, 1](out, np.array([3.0]), np.array([2.5]))
    assert out.tolist() == [0, -3, 0, 5, -6, 1, 1, 5]


def test_operator_module_ptx(ptxas):
    ptxas(cuda.compile_ptx(operator_misc, "void(float64[::1], float64[::1], float64[::1])")[0])
