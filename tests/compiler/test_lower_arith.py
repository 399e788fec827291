"""Integer and float arithmetic in kernels, compared with Python/numpy (exact for integers).

Python semantics for // % **, wraparound, shifts, bit ops, numba's promotion rules, weak float
literals (`x * 2.0` stays float32).
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpunb import cuda

HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])

INT_LIMITS = {np.int32: (-(2**31), 2**31 - 1), np.int64: (-(2**63), 2**63 - 1),
              np.uint32: (0, 2**32 - 1), np.uint64: (0, 2**64 - 1)}


def wrap(value: int, dtype) -> int:
    """A Python int wrapped into the range of an integer dtype (two's complement)."""
    info = np.iinfo(dtype)
    bits = info.bits
    value &= (1 << bits) - 1
    if info.min < 0 and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def as_array(values, dtype) -> np.ndarray:
    return np.array([wrap(v, dtype) for v in values], dtype=dtype)


# ---- kernels (module level: compiled once per argument types, shared by tests) ---------------

@cuda.jit
def int_binops(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x // y
        out[i, 4] = x % y
        out[i, 5] = x & y
        out[i, 6] = x | y
        out[i, 7] = x ^ y
        out[i, 8] = -x
        out[i, 9] = ~x


@cuda.jit
def int_pow(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] ** b[i]


@cuda.jit
def int_pow_const(out, a):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        out[i, 0] = x ** 0
        out[i, 1] = x ** 1
        out[i, 2] = x ** 2
        out[i, 3] = x ** 3
        out[i, 4] = x ** 7


@cuda.jit
def shifts(out, a, s):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = a[i] << s[i]
        out[i, 1] = a[i] >> s[i]


@cuda.jit
def store_same(out, a, b):
    # int32 * int32 is computed in int64 (numba's rule) and wraps when stored into int32
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = a[i] * b[i]
        out[i, 1] = a[i] + b[i]
        out[i, 2] = a[i] - b[i]


@cuda.jit
def float_binops(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = x // y
        out[i, 5] = x % y
        out[i, 6] = -x
        out[i, 7] = +x


@cuda.jit
def float_pow(out, a, b, n):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        out[i, 0] = x ** b[i]
        out[i, 1] = x ** 2
        out[i, 2] = x ** 0.5
        out[i, 3] = x ** n
        out[i, 4] = x ** 3


@cuda.jit
def mixed(out_f, a_i32, b_f32, c_u64, d_i64, flag):
    i = cuda.grid(1)
    if i < a_i32.size:
        out_f[i, 0] = a_i32[i] + b_f32[i]  # int32 + float32 -> float64
        out_f[i, 1] = a_i32[i] / a_i32[i]  # int / int -> float64 true division
        out_f[i, 2] = c_u64[i] + d_i64[i]  # uint64 + int64 -> int64, wrapping (numba)
        out_f[i, 3] = flag + flag  # bool + bool -> int
        out_f[i, 4] = d_i64[i] < c_u64[i]  # mixed-sign comparison by value
        out_f[i, 5] = -flag


@cuda.jit
def weak_literals(out, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i] * 2.0 + 0.1
        w = 1.5 - v / 3.0
        out[i] = w if w > 0.25 else -w


@cuda.jit
def float_to_int_truncation(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = int(x[i])
        out[i, 1] = x[i]  # implicit float -> int store truncates toward zero


@cuda.jit
def unsigned_small(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = a[i] + b[i]
        out[i, 1] = a[i] - b[i]
        out[i, 2] = a[i] * b[i]


# ---- integer semantics ----------------------------------------------------------------------

def _py_int_binops(x: int, y: int, dtype):
    """Expected int_binops row, computed with Python ints and wrapped to the result type.
    Unary - and ~ happen at the operand's own width, then widen (numba-cuda's
    int_negate_impl / int_invert_impl: "negate before upcasting")."""
    res = np.int64 if dtype in (np.int32, np.int64) else np.uint64
    q = x // y if y else 0
    r = x % y if y else 0
    if res is np.int64 and (x, y) == (-(2**63), -1):
        q = 0  # numba's int_divmod_signed: INT64_MIN // -1 gives 0 (and % gives 0)
    vals = [x + y, x - y, x * y, q, r, x & y, x | y, x ^ y]
    vals += [int(wrap(-x, dtype)), int(wrap(~x, dtype))]
    return [wrap(v, res) for v in vals], res


def _check_int_binops(pairs, dtype):
    xs = [p[0] for p in pairs]
    ys = [p[1] for p in pairs]
    a, b = as_array(xs, dtype), as_array(ys, dtype)
    res = np.int64 if dtype in (np.int32, np.int64) else np.uint64
    out = np.zeros((len(pairs), 10), res)
    int_binops[max(1, -(-len(pairs) // 64)), 64](out, a, b)
    for k, (x, y) in enumerate(pairs):
        expected, _ = _py_int_binops(int(a[k]), int(b[k]), dtype)
        assert out[k].tolist() == expected, (x, y, dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_int_binops_edges(target, dtype):
    lo, hi = INT_LIMITS[dtype]
    values = [lo, lo + 1, -7, -3, -1, 0, 1, 2, 3, 7, 100, hi - 1, hi]
    values = [v for v in values if lo <= v <= hi]
    divisors = [v for v in values if v != 0]
    pairs = [(x, y) for x in values for y in divisors
             if not (x == lo and y == -1 and dtype in (np.int32, np.int64))]
    _check_int_binops(pairs, dtype)


def test_floordiv_mod_negative_operands_python_semantics(target):
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (1, -5), (-1, 5), (0, -3)]
    _check_int_binops(pairs, np.int64)
    out = np.zeros((len(pairs), 10), np.int64)
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    int_binops[1, 32](out, a, b)
    assert out[:, 3].tolist() == [3, -4, -4, 3, 2, -2, -1, -1, 0]
    assert out[:, 4].tolist() == [1, 1, -1, -1, 0, 0, -4, 4, 0]


def test_int_division_by_zero_gives_zero(target):
    # documented gpunb behaviour (operators.py): no undefined behaviour, 0 for // and %
    a = np.array([5, -5, 0], np.int64)
    b = np.zeros(3, np.int64)
    out = np.zeros((3, 10), np.int64)
    int_binops[1, 32](out, a, b)
    assert out[:, 3].tolist() == [0, 0, 0]
    assert out[:, 4].tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_min_floordiv_minus_one_does_not_crash(run_script, dtype):
    # INT_MIN // -1 overflows: LLVM's sdiv is undefined there and traps on x86 hosts; numba's
    # int_divmod_signed returns 0 (the int32 case is computed in int64: no overflow)
    proc = run_script(f"""
        import numpy as np, gpunb
        from gpunb import cuda
        gpunb.set_target("cpu")

        @cuda.jit
        def k(out, a, b):
            i = cuda.grid(1)
            out[i, 0] = a[i] // b[i]
            out[i, 1] = a[i] % b[i]

        a = np.array([np.iinfo(np.{dtype.__name__}).min] * 2, np.{dtype.__name__})
        b = np.array([-1, 1], np.{dtype.__name__})
        out = np.zeros((2, 2), np.int64)
        k[1, 2](out, a, b)
        print(out.tolist())
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lo = int(np.iinfo(dtype).min)
    first = 0 if dtype == np.int64 else -lo
    assert proc.stdout.strip() == str([[first, 0], [lo, 0]])


_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)


@HYP
@given(pairs=st.lists(st.tuples(_int32, _int32.filter(bool)), min_size=1, max_size=64))
def test_hypothesis_int32_semantics(target, pairs):
    _check_int_binops(pairs, np.int32)


@HYP
@given(pairs=st.lists(st.tuples(_int64, _int64.filter(bool)), min_size=1, max_size=64))
def test_hypothesis_int64_semantics(target, pairs):
    _check_int_binops(pairs + [(-(2**63), -1)], np.int64)


@HYP
@given(pairs=st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(1, 2**64 - 1)),
                      min_size=1, max_size=64))
def test_hypothesis_uint64_semantics(target, pairs):
    _check_int_binops(pairs, np.uint64)


@HYP
@given(pairs=st.lists(st.tuples(_int64, st.integers(0, 63)), min_size=1, max_size=64),
       narrow=st.booleans())
def test_hypothesis_shifts(target, pairs, narrow):
    dtype = np.int32 if narrow else np.int64
    a = as_array([p[0] for p in pairs], dtype)
    s = np.array([p[1] for p in pairs], dtype)
    out = np.zeros((len(pairs), 2), np.int64)
    shifts[1, 64](out, a, s)
    for k in range(len(pairs)):
        x, n = int(a[k]), int(s[k])
        assert out[k].tolist() == [wrap(x << n, np.int64), x >> n], (x, n)


def test_unsigned_right_shift_is_logical(target):
    a = np.array([2**64 - 1, 2**63, 12345], np.uint64)
    s = np.array([1, 63, 3], np.uint64)
    out = np.zeros((3, 2), np.uint64)
    shifts[1, 32](out, a, s)
    assert out[:, 1].tolist() == [(2**64 - 1) >> 1, 1, 12345 >> 3]
    assert out[:, 0].tolist() == [wrap((2**64 - 1) << 1, np.uint64), 0, 12345 << 3]


def ptx_shift(x: int, n: int, dtype, count_dtype) -> tuple[int, int]:
    """x << n and x >> n as PTX computes them after numba's promotion to 64 bits: the count is
    unsigned (a negative one is huge) and clamped to 64, giving 0 or the sign fill."""
    signed = np.iinfo(dtype).min < 0
    n = wrap(n, count_dtype) % 2**64
    if n >= 64:
        return 0, (-1 if signed and x < 0 else 0)
    wide = np.int64 if signed else np.uint64
    return wrap(x << n, wide), x >> n


SHIFT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", SHIFT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("count_dtype", [np.int64, np.uint8, np.int32],
                         ids=lambda d: np.dtype(d).name)
def test_shift_count_at_least_the_width_clamps_like_ptx(target, dtype, count_dtype):
    """Counts >= 64 (and negative ones) give what the H100 gives: << 0, >> 0 or -1 (sign fill),
    the same on every target (a bare LLVM shift is poison there; x86 would mask the count)."""
    info = np.iinfo(dtype)
    xs = [1, info.max, info.min, -8 if info.min < 0 else 8, 0]
    counts = [0, 1, 7, 63, 64, 65, 70, 127, 200, 255, -1, -64]
    cinfo = np.iinfo(count_dtype)
    counts = [c for c in counts if cinfo.min <= c <= cinfo.max]
    pairs = [(x, c) for x in xs for c in counts]
    a = np.array([p[0] for p in pairs], dtype)
    s = np.array([p[1] for p in pairs], count_dtype)
    out_dtype = np.int64 if info.min < 0 else np.uint64
    out = np.zeros((len(pairs), 2), out_dtype)
    shifts[1, len(pairs)](out, a, s)
    expected = [list(ptx_shift(x, c, dtype, count_dtype)) for x, c in pairs]
    assert [[wrap(v, out_dtype) for v in row] for row in expected] == out.tolist()


def test_shift_audit_case_matches_h100(target):
    a = np.array([1, -8, 1, -8], np.int64)
    s = np.array([64, 64, 70, 70], np.int64)
    out = np.zeros((4, 2), np.int64)
    shifts[1, 4](out, a, s)
    assert out.tolist() == [[0, 0], [0, -1], [0, 0], [0, -1]]


@HYP
@given(pairs=st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(0, 70)),
                      min_size=1, max_size=64),
       wide=st.booleans())
def test_hypothesis_int_pow(target, pairs, wide):
    dtype = np.int64 if wide else np.int32
    a = as_array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    out = np.zeros(len(pairs), np.int64)
    int_pow[1, 64](out, a, b)
    assert out.tolist() == [wrap(int(x) ** int(y), np.int64) for x, y in zip(a, b, strict=True)]


def test_int_pow_constant_exponents(target):
    a = np.array([-3, -1, 0, 1, 2, 5, 3_000_000_000], np.int64)
    out = np.zeros((a.size, 5), np.int64)
    int_pow_const[1, 32](out, a)
    for k, x in enumerate(a.tolist()):
        assert out[k].tolist() == [wrap(x ** e, np.int64) for e in (0, 1, 2, 3, 7)]


def test_int_pow_negative_exponent(target):
    # numba's integer power: 1 ** -n == 1, (-1) ** -n == +-1, otherwise 0
    a = np.array([1, -1, -1, 2, -3], np.int64)
    b = np.array([-5, -3, -2, -1, -2], np.int64)
    out = np.zeros(5, np.int64)
    int_pow[1, 32](out, a, b)
    assert out.tolist() == [1, -1, 1, 0, 0]


@cuda.jit
def int_pow_negative_literals(out, f, a):
    out[0] = 2 ** -1
    x = 2
    out[1] = x ** -1
    out[2] = a[0] ** -2
    out[3] = (-1) ** -3
    f[0] = 2.0 ** -1
    f[1] = a[0] ** -1.0


def test_int_pow_negative_literal_is_integer_power(target):
    """numba keeps int ** int an integer: 2 ** -1 is 0 in a kernel (Python gives 0.5); a float
    operand makes it a float power."""
    out = np.zeros(4, np.int64)
    f = np.zeros(2)
    int_pow_negative_literals[1, 1](out, f, np.array([2], np.int64))
    assert out.tolist() == [0, 0, 0, -1]
    assert f.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32])
def test_store_wraps_like_numpy(target, dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 200, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, 200, endpoint=True).astype(dtype)
    b[:4] = info.max
    a[:4] = [info.max, info.min, info.max, info.min]
    out = np.zeros((200, 3), dtype)
    store_same[4, 64](out, a, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out[:, 0], a * b)
        np.testing.assert_array_equal(out[:, 1], a + b)
        np.testing.assert_array_equal(out[:, 2], a - b)


def test_small_unsigned_promote_to_uint64(target):
    a = np.array([250, 3, 0], np.uint8)
    b = np.array([10, 5, 1], np.uint8)
    out = np.zeros((3, 3), np.uint64)
    unsigned_small[1, 32](out, a, b)
    assert out[:, 0].tolist() == [260, 8, 1]
    assert out[:, 1].tolist() == [240, wrap(3 - 5, np.uint64), wrap(-1, np.uint64)]
    assert out[:, 2].tolist() == [2500, 15, 0]


# ---- float semantics ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_binops(target, dtype):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal(300) * 10).astype(dtype)
    b = (rng.standard_normal(300) * 3).astype(dtype)
    b[np.abs(b) < 0.1] = 0.5
    a[:4] = [7.5, -7.5, 7.5, -7.5]
    b[:4] = [2.0, 2.0, -2.0, -2.0]
    out = np.zeros((300, 8), dtype)
    float_binops[5, 64](out, a, b)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a - b)
    np.testing.assert_array_equal(out[:, 2], a * b)
    np.testing.assert_array_equal(out[:, 3], a / b)
    np.testing.assert_array_equal(out[:, 4], np.floor_divide(a, b))  # Python's algorithm
    np.testing.assert_array_equal(out[:, 5], np.mod(a, b))
    np.testing.assert_array_equal(out[:, 6], -a)
    np.testing.assert_array_equal(out[:, 7], a)
    # Python float semantics of // and % with negative operands
    assert out[:4, 4].tolist() == [7.5 // 2.0, -7.5 // 2.0, 7.5 // -2.0, -7.5 // -2.0]
    assert out[:4, 5].tolist() == [7.5 % 2.0, -7.5 % 2.0, 7.5 % -2.0, -7.5 % -2.0]


_finite = st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)
_divisor = st.one_of(st.floats(-1e6, 1e6, allow_nan=False).filter(lambda v: v != 0),
                     st.sampled_from([0.1, -0.1, 0.3, 1e-300, -7.0]))


@HYP
@given(pairs=st.lists(st.tuples(_finite, _divisor), min_size=1, max_size=64))
# found on an H100: NVPTX's frem is x - trunc(x / y) * y, inexact for tiny divisors
@example(pairs=[(1.0, 6.368749903529564e-305), (-3.5, 1e-300), (1e12, 3e-308)])
def test_hypothesis_float64_floordiv_mod(target, pairs):
    a = np.array([p[0] for p in pairs], np.float64)
    b = np.array([p[1] for p in pairs], np.float64)
    out = np.zeros((len(pairs), 8), np.float64)
    float_binops[1, 64](out, a, b)
    for k, (x, y) in enumerate(pairs):
        q, r = x // y, x % y
        assert out[k, 4] == q and math.copysign(1, out[k, 4]) == math.copysign(1, q), (x, y)
        assert out[k, 5] == r and math.copysign(1, out[k, 5]) == math.copysign(1, r), (x, y)


def test_float_floordiv_is_pythons(target):
    # floor(1.0 / 0.1) would be 10.0; Python (and numba) give 9.0, consistent with 1.0 % 0.1
    a = np.array([1.0, 0.7, -1.0, 1e308, 5.0], np.float64)
    b = np.array([0.1, 0.1, 0.1, 1e-308, -0.3], np.float64)
    out = np.zeros((5, 8), np.float64)
    float_binops[1, 8](out, a, b)
    assert out[:, 4].tolist() == [x // y for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert out[:, 5].tolist() == [x % y for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    a32, b32 = a[:3].astype(np.float32), b[:3].astype(np.float32)
    out32 = np.zeros((3, 8), np.float32)
    float_binops[1, 8](out32, a32, b32)
    np.testing.assert_array_equal(out32[:, 4], np.floor_divide(a32, b32))
    np.testing.assert_array_equal(out32[:, 5], np.mod(a32, b32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_mod_signed_zero(target, dtype):
    # Python: a zero remainder has the divisor's sign; floor division of zero keeps x / y's sign
    a = np.array([0.0, -0.0, 6.0, -6.0, 0.0], dtype)
    b = np.array([-3.0, 3.0, -3.0, 3.0, 3.0], dtype)
    out = np.zeros((5, 8), dtype)
    float_binops[1, 8](out, a, b)
    expected_mod = [float(x) % float(y) for x, y in zip(a, b, strict=True)]
    expected_div = [float(x) // float(y) for x, y in zip(a, b, strict=True)]
    assert out[:, 5].tolist() == expected_mod
    assert np.signbit(out[:, 5]).tolist() == [math.copysign(1, v) < 0 for v in expected_mod]
    assert np.signbit(out[:, 4]).tolist() == [math.copysign(1, v) < 0 for v in expected_div]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_pow(target, dtype):
    rng = np.random.default_rng(3)
    a = rng.uniform(0.1, 4, 100).astype(dtype)
    b = rng.uniform(-2, 2, 100).astype(dtype)
    out = np.zeros((100, 5), dtype)
    float_pow[2, 64](out, a, b, 5)
    rtol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out[:, 0], a ** b, rtol=rtol)
    np.testing.assert_allclose(out[:, 1], a * a, rtol=rtol)
    np.testing.assert_allclose(out[:, 2], np.sqrt(a), rtol=rtol)
    np.testing.assert_allclose(out[:, 3], a.astype(np.float64) ** 5, rtol=rtol * 4)
    np.testing.assert_allclose(out[:, 4], a.astype(np.float64) ** 3, rtol=rtol * 4)


def test_numba_promotion_rules(target):
    a = np.array([3, -4], np.int32)
    b = np.array([0.5, 0.25], np.float32)
    c = np.array([2**64 - 1, 5], np.uint64)
    d = np.array([-1, 7], np.int64)
    out = np.zeros((2, 6), np.float64)
    mixed[1, 2](out, a, b, c, d, True)
    assert out[:, 0].tolist() == [3.5, -3.75]
    assert out[:, 1].tolist() == [1.0, 1.0]
    assert out[:, 2].tolist() == [-2.0, 12.0]  # numba's choose_result_int: signed
    assert out[:, 3].tolist() == [2.0, 2.0]
    assert out[:, 4].tolist() == [1.0, 0.0]  # -1 < 2**64-1 and not 7 < 5
    assert out[:, 5].tolist() == [-1.0, -1.0]


def test_weak_float_literal_results(target):
    x = np.linspace(-2, 2, 77).astype(np.float32)
    out = np.zeros_like(x)
    weak_literals[2, 64](out, x)
    f = np.float32
    v = x * f(2.0) + f(0.1)
    w = f(1.5) - v / f(3.0)
    expected = np.where(w > f(0.25), w, -w)
    # computed entirely in float32: bit-exact with numpy's float32 arithmetic
    np.testing.assert_array_equal(out, expected)


def test_weak_float_literal_types(target):
    x = np.ones(4, np.float32)
    weak_literals[1, 4](np.zeros_like(x), x)
    text = weak_literals.inspect_types()
    assert "v: float32" in text and "w: float32" in text
    ptx = weak_literals.inspect_ptx()
    assert ".f64" not in ptx, "x * 2.0 must stay float32 (no float64 conversion)"
    assert "div.rn.f32" in ptx and ("add.rn.f32" in ptx or "fma.rn.f32" in ptx)


def _axpy_acc(out, a, b):
    acc = out[0]
    for k in range(a.size):
        acc += a[k] * b[k]
    out[0] = acc


def test_multiply_add_contracts_to_fma_on_the_gpu_unless_asked_otherwise():
    """numba-cuda's NVVM fuses a * b + c into fma by default; so does gpunb's PTX."""
    sig = "void(float32[::1], float32[::1], float32[::1])"
    ptx, _ = cuda.compile_ptx(_axpy_acc, sig)
    assert "fma.rn.f32" in ptx and "mul.rn.f32" not in ptx


def test_float_to_int_truncates_toward_zero(target):
    x = np.array([2.7, -2.7, 0.5, -0.5, 1e9], np.float64)
    out = np.zeros((5, 2), np.int64)
    float_to_int_truncation[1, 8](out, x)
    assert out[:, 0].tolist() == [math.trunc(v) for v in x]
    assert out[:, 1].tolist() == [math.trunc(v) for v in x]


PTX_CASES = [
    (int_binops, "void(int64[:, ::1], int32[::1], int32[::1])"),
    (int_binops, "void(uint64[:, ::1], uint64[::1], uint64[::1])"),
    (int_pow, "void(int64[::1], int64[::1], int64[::1])"),
    (int_pow_const, "void(int64[:, ::1], int64[::1])"),
    (shifts, "void(int64[:, ::1], int32[::1], int32[::1])"),
    (shifts, "void(uint64[:, ::1], uint8[::1], int64[::1])"),
    (store_same, "void(int8[:, ::1], int8[::1], int8[::1])"),
    (float_binops, "void(float32[:, ::1], float32[::1], float32[::1])"),
    (float_binops, "void(float64[:, ::1], float64[::1], float64[::1])"),
    (float_pow, "void(float32[:, ::1], float32[::1], float32[::1], int64)"),
    (mixed, "void(float64[:, ::1], int32[::1], float32[::1], uint64[::1], int64[::1], boolean)"),
    (weak_literals, "void(float32[::1], float32[::1])"),
    (float_to_int_truncation, "void(int64[:, ::1], float64[::1])"),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[f"{k.__name__}-{s}" for k, s in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    check_ptx(kernel, sig)
