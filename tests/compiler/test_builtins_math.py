"""The math module in kernels (libdevice on CUDA, the host's libm on the CPU target) for float32
and float64, within a few ulps of numpy; integer arguments computed in float64; Python builtins
abs, min, max, int, float, bool, round, len, divmod, pow."""

import math

import numpy as np
import pytest

from gpunb import cuda

# name -> (function used in the kernel row, numpy/Python reference, input range)
UNARY = {
    "acos": (np.arccos, (-0.99, 0.99)), "asin": (np.arcsin, (-0.99, 0.99)),
    "atan": (np.arctan, (-5, 5)), "acosh": (np.arccosh, (1, 10)),
    "asinh": (np.arcsinh, (-5, 5)), "atanh": (np.arctanh, (-0.99, 0.99)),
    "cos": (np.cos, (-10, 10)), "sin": (np.sin, (-10, 10)), "tan": (np.tan, (-1.5, 1.5)),
    "cosh": (np.cosh, (-5, 5)), "sinh": (np.sinh, (-5, 5)), "tanh": (np.tanh, (-5, 5)),
    "exp": (np.exp, (-10, 10)), "expm1": (np.expm1, (-1, 1)), "exp2": (np.exp2, (-10, 10)),
    "log": (np.log, (0.01, 100)), "log10": (np.log10, (0.01, 100)),
    "log1p": (np.log1p, (-0.5, 10)), "log2": (np.log2, (0.01, 100)),
    "sqrt": (np.sqrt, (0, 100)), "erf": (np.vectorize(math.erf), (-3, 3)),
    "erfc": (np.vectorize(math.erfc), (-3, 3)), "gamma": (np.vectorize(math.gamma), (0.1, 8)),
    "lgamma": (np.vectorize(math.lgamma), (0.1, 20)), "fabs": (np.fabs, (-5, 5)),
    "cbrt": (np.cbrt, (-8, 8)), "degrees": (np.degrees, (-7, 7)),
    "radians": (np.radians, (-400, 400)),
}
UNARY_NAMES = list(UNARY)


@cuda.jit
def unary_math(out, x):
    i = cuda.grid(1)
    if i < x.shape[1]:
        out[0, i] = math.acos(x[0, i])
        out[1, i] = math.asin(x[1, i])
        out[2, i] = math.atan(x[2, i])
        out[3, i] = math.acosh(x[3, i])
        out[4, i] = math.asinh(x[4, i])
        out[5, i] = math.atanh(x[5, i])
        out[6, i] = math.cos(x[6, i])
        out[7, i] = math.sin(x[7, i])
        out[8, i] = math.tan(x[8, i])
        out[9, i] = math.cosh(x[9, i])
        out[10, i] = math.sinh(x[10, i])
        out[11, i] = math.tanh(x[11, i])
        out[12, i] = math.exp(x[12, i])
        out[13, i] = math.expm1(x[13, i])
        out[14, i] = math.exp2(x[14, i])
        out[15, i] = math.log(x[15, i])
        out[16, i] = math.log10(x[16, i])
        out[17, i] = math.log1p(x[17, i])
        out[18, i] = math.log2(x[18, i])
        out[19, i] = math.sqrt(x[19, i])
        out[20, i] = math.erf(x[20, i])
        out[21, i] = math.erfc(x[21, i])
        out[22, i] = math.gamma(x[22, i])
        out[23, i] = math.lgamma(x[23, i])
        out[24, i] = math.fabs(x[24, i])
        out[25, i] = math.cbrt(x[25, i])
        out[26, i] = math.degrees(x[26, i])
        out[27, i] = math.radians(x[27, i])


@cuda.jit
def binary_math(out, x, y):
    i = cuda.grid(1)
    if i < x.size:
        out[0, i] = math.atan2(x[i], y[i])
        out[1, i] = math.copysign(x[i], y[i])
        out[2, i] = math.fmod(x[i], y[i])
        out[3, i] = math.hypot(x[i], y[i])
        out[4, i] = math.pow(abs(x[i]), y[i])
        out[5, i] = math.remainder(x[i], y[i])
        out[6, i] = math.ldexp(x[i], 3)
        m, e = math.frexp(x[i])
        out[7, i] = m
        out[8, i] = e
        frac, whole = math.modf(x[i])
        out[9, i] = frac
        out[10, i] = whole


@cuda.jit
def rounding(out_i, out_f, x):
    i = cuda.grid(1)
    if i < x.size:
        out_i[i, 0] = math.floor(x[i])
        out_i[i, 1] = math.ceil(x[i])
        out_i[i, 2] = math.trunc(x[i])
        out_i[i, 3] = round(x[i])  # Python: round half to even, an int
        out_i[i, 4] = int(x[i])
        out_f[i, 0] = round(x[i], 1)
        out_f[i, 1] = round(x[i], 0)
        out_f[i, 2] = np.floor(x[i])  # numpy's floor returns a float


@cuda.jit
def predicates(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = math.isnan(x[i])
        out[i, 1] = math.isinf(x[i])
        out[i, 2] = math.isfinite(x[i])


@cuda.jit
def int_args(out, n):
    i = cuda.grid(1)
    if i < n.size:
        out[i, 0] = math.sqrt(n[i])  # integers are computed in float64, as numba does
        out[i, 1] = math.exp(n[i] / 10)
        out[i, 2] = math.isnan(n[i])
        out[i, 3] = math.pi * n[i] + math.e + math.tau


@cuda.jit
def py_builtins(out_i, out_f, a, f):
    i = cuda.grid(1)
    if i < a.size:
        out_i[i, 0] = abs(a[i])
        out_i[i, 1] = min(a[i], 3)
        out_i[i, 2] = max(a[i], -3, 5 - a[i])
        out_i[i, 3] = len(a)
        out_i[i, 4] = len((1, 2, 3))
        q, r = divmod(a[i], 4)
        out_i[i, 5] = q * 100 + r
        out_i[i, 6] = pow(a[i], 2)
        out_i[i, 7] = bool(a[i])
        out_i[i, 8] = int(f[i])
        out_i[i, 9] = min((a[i], 7, -2))
        out_f[i, 0] = abs(f[i])
        out_f[i, 1] = float(a[i])
        out_f[i, 2] = min(f[i], a[i])
        out_f[i, 3] = max(f[i], 0.5)
        out_f[i, 4] = abs(complex(f[i], 2.0))
        out_f[i, 5] = pow(f[i], 3)


# ---- tests ----------------------------------------------------------------------------------

RTOL = {np.float32: 4e-6, np.float64: 2e-14}
LOOSE = {"gamma": 64, "lgamma": 64, "erfc": 16, "acosh": 8, "atanh": 8, "tan": 8, "cbrt": 4,
         "expm1": 4, "log1p": 4, "acos": 4, "asin": 4}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_unary_math(target, dtype):
    rng = np.random.default_rng(21)
    n = 200
    x = np.empty((len(UNARY), n), dtype)
    for k, name in enumerate(UNARY_NAMES):
        lo, hi = UNARY[name][1]
        x[k] = rng.uniform(lo, hi, n)
    out = np.zeros_like(x)
    unary_math[(n + 63) // 64, 64](out, x)
    for k, name in enumerate(UNARY_NAMES):
        ref = UNARY[name][0](x[k].astype(np.float64))
        rtol = RTOL[dtype] * LOOSE.get(name, 1)
        atol = 4 * float(np.finfo(dtype).eps) * LOOSE.get(name, 1)
        np.testing.assert_allclose(out[k], ref, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_binary_math(target, dtype):
    rng = np.random.default_rng(22)
    n = 200
    x = rng.uniform(-10, 10, n).astype(dtype)
    y = rng.uniform(-4, 4, n).astype(dtype)
    y[np.abs(y) < 0.1] = 0.5
    x[:4] = [0.5, -2.5, 8.0, -0.0]
    out = np.zeros((11, n), dtype)
    binary_math[(n + 63) // 64, 64](out, x, y)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    rtol = RTOL[dtype] * 4
    np.testing.assert_allclose(out[0], np.arctan2(x64, y64), rtol=rtol, atol=1e-6)
    np.testing.assert_array_equal(out[1], np.copysign(x, y))
    np.testing.assert_array_equal(out[2], np.fmod(x, y))
    np.testing.assert_allclose(out[3], np.hypot(x64, y64), rtol=rtol)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(out[4], np.abs(x64) ** y64, rtol=rtol * 4)
    np.testing.assert_allclose(out[5], [math.remainder(a, b) for a, b in zip(x64, y64,
                                                                            strict=True)],
                               rtol=rtol, atol=1e-5)
    np.testing.assert_array_equal(out[6], np.ldexp(x, 3))
    m, e = np.frexp(x)
    np.testing.assert_array_equal(out[7], m)
    np.testing.assert_array_equal(out[8], e)
    frac, whole = np.modf(x)
    np.testing.assert_array_equal(out[9], frac)
    np.testing.assert_array_equal(out[10], whole)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_rounding(target, dtype):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 2.7, 3.25, -3.75, 0.0, 1e6 + 0.5], dtype)
    out_i = np.zeros((x.size, 5), np.int64)
    out_f = np.zeros((x.size, 3), dtype)
    rounding[1, 16](out_i, out_f, x)
    xs = [float(v) for v in x]
    assert out_i[:, 0].tolist() == [math.floor(v) for v in xs]
    assert out_i[:, 1].tolist() == [math.ceil(v) for v in xs]
    assert out_i[:, 2].tolist() == [math.trunc(v) for v in xs]
    assert out_i[:, 3].tolist() == [round(v) for v in xs]
    assert out_i[:, 4].tolist() == [int(v) for v in xs]
    np.testing.assert_allclose(out_f[:, 0], np.round(x, 1), rtol=1e-6)
    np.testing.assert_array_equal(out_f[:, 1], np.round(x, 0))
    np.testing.assert_array_equal(out_f[:, 2], np.floor(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_predicates(target, dtype):
    x = np.array([0.0, -1.5, np.nan, np.inf, -np.inf, 1e30], dtype)
    out = np.zeros((x.size, 3), np.bool_)
    predicates[1, 8](out, x)
    np.testing.assert_array_equal(out[:, 0], np.isnan(x))
    np.testing.assert_array_equal(out[:, 1], np.isinf(x))
    np.testing.assert_array_equal(out[:, 2], np.isfinite(x))


def test_integer_arguments_and_constants(target):
    n = np.array([0, 1, 4, 10, 99], np.int32)
    out = np.zeros((5, 4), np.float64)
    int_args[1, 8](out, n)
    np.testing.assert_allclose(out[:, 0], np.sqrt(n.astype(np.float64)), rtol=1e-15)
    np.testing.assert_allclose(out[:, 1], np.exp(n / 10), rtol=1e-14)
    assert not out[:, 2].any()
    np.testing.assert_allclose(out[:, 3], math.pi * n + math.e + math.tau, rtol=1e-15)


@cuda.jit
def f32_math(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.exp(x[i]) * 2.0 + math.sqrt(x[i]) - math.log(x[i] + 1.0) + abs(x[i])


def test_float32_math_stays_float32():
    ptx, _ = cuda.compile_ptx(f32_math, "void(float32[::1], float32[::1])")
    ptx_f64, _ = cuda.compile_ptx(f32_math, "void(float64[::1], float64[::1])")
    # float32 arguments use libdevice's float variants and weak literals: no double precision
    assert ".f64" not in ptx
    assert "sqrt.rn.f32" in ptx and "abs.f32" in ptx
    assert "sqrt.rn.f64" in ptx_f64


def test_python_builtins(target):
    a = np.array([-7, -1, 0, 2, 9], np.int64)
    f = np.array([-2.5, 0.25, 3.75, -0.0, 8.5], np.float64)
    out_i = np.zeros((5, 10), np.int64)
    out_f = np.zeros((5, 6), np.float64)
    py_builtins[1, 8](out_i, out_f, a, f)
    for k in range(5):
        x, y = int(a[k]), float(f[k])
        q, r = divmod(x, 4)
        assert out_i[k].tolist() == [abs(x), min(x, 3), max(x, -3, 5 - x), 5, 3, q * 100 + r,
                                     x ** 2, int(bool(x)), int(y), min(x, 7, -2)], k
        expected_f = [abs(y), float(x), min(y, x), max(y, 0.5), abs(complex(y, 2.0)), y ** 3]
        np.testing.assert_allclose(out_f[k], expected_f, rtol=1e-15)


def test_abs_int_min_wraps(target):
    a = np.array([np.iinfo(np.int64).min, -5], np.int64)
    out_i = np.zeros((2, 10), np.int64)
    out_f = np.zeros((2, 6), np.float64)
    py_builtins[1, 2](out_i, out_f, a, np.zeros(2))
    assert out_i[:, 0].tolist() == [np.iinfo(np.int64).min, 5]


PTX_CASES = [
    (unary_math, "void(float32[:, ::1], float32[:, ::1])"),
    (unary_math, "void(float64[:, ::1], float64[:, ::1])"),
    (binary_math, "void(float32[:, ::1], float32[::1], float32[::1])"),
    (binary_math, "void(float64[:, ::1], float64[::1], float64[::1])"),
    (rounding, "void(int64[:, ::1], float32[:, ::1], float32[::1])"),
    (predicates, "void(boolean[:, ::1], float64[::1])"),
    (f32_math, "void(float32[::1], float32[::1])"),
    (int_args, "void(float64[:, ::1], int32[::1])"),
    (py_builtins, "void(int64[:, ::1], float64[:, ::1], int64[::1], float64[::1])"),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[f"{k.__name__}-{s}" for k, s in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    check_ptx(kernel, sig)
