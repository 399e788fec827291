"""cmath and complex `**` in kernels, on complex64 and complex128, against Python's cmath.

The algorithms are numba's cmathimpl (CPython's), so complex128 results agree to a few ulps of
|result|; complex64 ones to a few float32 ulps of the exact (double) value. Special values at
infinities and NaNs are compared with numba bit for bit in tests/compiler/test_numba_typing_cases.
"""

import cmath

import numpy as np
import pytest

from gpunb import cuda

NAMES = ["tan", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sqrt", "log",
         "log10", "exp", "sin", "cos", "sinh", "cosh"]


@cuda.jit
def cmath_all(out, z):
    i = cuda.grid(1)
    if i < z.size:
        w = z[i]
        out[i, 0] = cmath.tan(w)
        out[i, 1] = cmath.tanh(w)
        out[i, 2] = cmath.asin(w)
        out[i, 3] = cmath.acos(w)
        out[i, 4] = cmath.atan(w)
        out[i, 5] = cmath.asinh(w)
        out[i, 6] = cmath.acosh(w)
        out[i, 7] = cmath.atanh(w)
        out[i, 8] = cmath.sqrt(w)
        out[i, 9] = cmath.log(w)
        out[i, 10] = cmath.log10(w)
        out[i, 11] = cmath.exp(w)
        out[i, 12] = cmath.sin(w)
        out[i, 13] = cmath.cos(w)
        out[i, 14] = cmath.sinh(w)
        out[i, 15] = cmath.cosh(w)


@cuda.jit
def cmath_predicates(out, parts, z):
    i = cuda.grid(1)
    if i < z.size:
        w = z[i]
        out[i, 0] = cmath.isnan(w)
        out[i, 1] = cmath.isinf(w)
        out[i, 2] = cmath.isfinite(w)
        r, phi = cmath.polar(w)
        parts[i, 0] = r
        parts[i, 1] = phi
        parts[i, 2] = cmath.phase(w)
        back = cmath.rect(r, phi)
        parts[i, 3] = back.real
        parts[i, 4] = back.imag


# real parts cross the branch cuts and the thresholds of the algorithms: |z| ~ 1, huge, tiny
COMPONENTS = [0.3, -0.3, 1.0, -1.0, 2.5, -2.5, 1e-8, 0.0, 7.0, -30.0, 1e20, -1e30, 1e-30]
POINTS = np.array([complex(a, b) for a in COMPONENTS for b in COMPONENTS])

# (dtype, ulps): complex64 is compared with the double result of its (exact) float32 input
PRECISIONS = [(np.complex128, 4), (np.complex64, 4)]


def ulps_off(got: complex, want: complex, eps: float) -> float:
    """Distance in units of eps * |want| (componentwise errors relative to the magnitude)."""
    return abs(got - want) / (abs(want) * eps) if want else abs(got)


@pytest.mark.parametrize("dtype,ulps", PRECISIONS, ids=["complex128", "complex64"])
def test_cmath_matches_python(target, dtype, ulps):
    z = POINTS.astype(dtype)
    out = np.zeros((z.size, len(NAMES)), dtype)
    cmath_all[1, z.size](out, z)
    eps = float(np.finfo(out.real.dtype).eps)
    ulps = ulps if target == "cpu" else 4 * ulps  # libdevice's real functions, not libm's
    worst = {}
    for j, name in enumerate(NAMES):
        for i, w in enumerate(z):
            try:
                want = getattr(cmath, name)(complex(w))
            except (ValueError, OverflowError):
                continue  # Python raises where the kernel gives inf/nan
            if not (np.isfinite(want.real) and np.isfinite(want.imag)):
                continue
            if dtype == np.complex64 and not np.isfinite(np.complex64(want)):
                continue
            off = ulps_off(complex(out[i, j]), want, eps)
            if not off <= worst.get(name, (0,))[0]:
                worst[name] = (off, complex(w), complex(out[i, j]), want)
    bad = {n: w for n, w in worst.items() if not w[0] <= ulps}
    assert not bad, bad


def test_cmath_audit_point(target):
    z = np.array([0.3 + 0.2j])
    out = np.zeros((1, len(NAMES)), np.complex128)
    cmath_all[1, 1](out, z)
    np.testing.assert_allclose(out[0], [getattr(cmath, n)(z[0]) for n in NAMES], rtol=1e-14)


def test_cmath_predicates_polar_rect(target):
    z = np.array([1 + 2j, -3 - 0.5j, complex(np.nan, 1), complex(1, np.inf), complex(-np.inf, 0),
                  0j])
    out = np.zeros((z.size, 3), np.bool_)
    parts = np.zeros((z.size, 5))
    cmath_predicates[1, z.size](out, parts, z)
    for i, w in enumerate(z):
        w = complex(w)
        assert out[i].tolist() == [cmath.isnan(w), cmath.isinf(w), cmath.isfinite(w)], w
        if cmath.isfinite(w):
            r, phi = cmath.polar(w)
            back = cmath.rect(r, phi)
            np.testing.assert_allclose(parts[i], [r, phi, cmath.phase(w), back.real, back.imag],
                                       rtol=1e-15, atol=1e-15)


# ---- complex ** ---------------------------------------------------------------------------------


@cuda.jit
def complex_powers(out, z, w, n):
    i = cuda.grid(1)
    if i < z.size:
        a = z[i]
        out[i, 0] = a ** 2
        out[i, 1] = a ** 3
        out[i, 2] = a ** -2
        out[i, 3] = a ** 0.5
        out[i, 4] = 2.0 ** a
        out[i, 5] = a ** w[i]
        out[i, 6] = a ** n[i]
        out[i, 7] = a ** 1j
        b = a
        b **= 2.0
        out[i, 8] = b


def python_powers(a: complex, w: complex, n: int) -> list:
    def pw(x, y):
        try:
            return x ** y
        except ZeroDivisionError:
            return None  # Python raises; the kernel gives inf/nan

    return [pw(a, 2), pw(a, 3), pw(a, -2), pw(a, 0.5), pw(2.0, a), pw(a, w), pw(a, n),
            pw(a, 1j), pw(a, 2.0)]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_power_matches_python(target, dtype):
    """z ** k for integral k with |k| <= 100 is by squaring (z ** 2 is z * z, exact), anything
    else in polar form: CPython's complex_pow, which numba's numba_cpow also uses."""
    rng = np.random.default_rng(7)
    z = np.concatenate([rng.normal(size=20) + 1j * rng.normal(size=20),
                        [0, 1, -1, 1j, 3.5, 1e-3 + 2j]])
    w = np.concatenate([rng.normal(size=10) + 1j * rng.normal(size=10),
                        [3, -2, 0, 101, 100, -100, 2.5, 1j, 0.5, 4, 2, 0, 1, -1, 3, 0]])
    n = rng.integers(-12, 12, size=z.size)
    z, w = z.astype(dtype), w.astype(dtype)
    out = np.zeros((z.size, 9), dtype)
    complex_powers[1, z.size](out, z, w, n)
    eps = float(np.finfo(out.real.dtype).eps)
    for i in range(z.size):
        for j, want in enumerate(python_powers(complex(z[i]), complex(w[i]), int(n[i]))):
            if want is None:
                continue
            # |w| ~ 100 in polar form amplifies the rounding of log|z| and arg z by ~100:
            # visible in complex64 on the CPU, and in both on CUDA (libdevice, not libm)
            large = j == 5 and (dtype == np.complex64 or target != "cpu")
            ulps = 64 if large else 4
            ulps = ulps if target == "cpu" else 4 * ulps
            assert ulps_off(complex(out[i, j]), want, eps) <= ulps, (j, z[i], w[i], n[i])


def test_complex_power_audit_point(target):
    z = np.array([1 + 1j, 2 - 1j])
    out = np.zeros(3, np.complex128)

    @cuda.jit
    def power(out, z):
        out[0] = z[0] ** 2
        out[1] = z[0] ** 0.5
        out[2] = z[0] ** z[1]

    power[1, 1](out, z)
    np.testing.assert_allclose(out, [z[0] ** 2, z[0] ** 0.5, z[0] ** z[1]], rtol=1e-15)


PTX_CASES = [
    (cmath_all, "void(complex128[:, ::1], complex128[::1])"),
    (cmath_all, "void(complex64[:, ::1], complex64[::1])"),
    (cmath_predicates, "void(boolean[:, ::1], float64[:, ::1], complex128[::1])"),
    (cmath_predicates, "void(boolean[:, ::1], float32[:, ::1], complex64[::1])"),
    (complex_powers, "void(complex128[:, ::1], complex128[::1], complex128[::1], int64[::1])"),
    (complex_powers, "void(complex64[:, ::1], complex64[::1], complex64[::1], int32[::1])"),
]


@pytest.mark.parametrize("cc", [(9, 0), (8, 0)], ids=["sm_90", "sm_80"])
@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[f"{k.__name__}-{s}" for k, s in PTX_CASES])
def test_ptx(ptxas, kernel, sig, cc):
    ptx, _ = cuda.compile_ptx(kernel, sig, cc=cc)
    ptxas(ptx, f"sm_{cc[0]}{cc[1]}")


@cuda.jit
def log_with_base(out, z, base):
    i = cuda.grid(1)
    if i < z.size:
        out[i] = cmath.log(z[i], base[i])


@pytest.mark.parametrize("dtype,ulps", PRECISIONS, ids=["complex128", "complex64"])
def test_cmath_log_with_a_base(target, dtype, ulps):
    z = POINTS[::7].astype(dtype)
    base = np.array([2.0, 10.0, 0.5 + 1j, -3.0, 1e-3j] * len(z), dtype)[:len(z)]
    out = np.zeros(len(z), dtype)
    log_with_base[1, len(z)](out, z, base)
    eps = np.finfo(np.float64 if dtype is np.complex128 else np.float32).eps
    for got, w, b in zip(out, z, base, strict=True):
        want = cmath.log(complex(w), complex(b))
        if complex(got) == want:  # infinities (log of 0) compare equal, not by distance
            continue
        assert ulps_off(complex(got), want, eps) <= 4 * ulps, (w, b, got, want)


def test_complex_types_name_their_float():
    from gpunb.foundation import types as t

    assert t.complex64.underlying_float == t.float32
    assert t.complex128.underlying_float == t.float64


@cuda.jit
def component_views(a, r):
    cuda.atomic.add(a.imag, 0, 1)  # numba-cuda's test_atomic_on_imag
    cuda.atomic.add(a.real, 1, 2)
    re, im = a.real, a.imag
    r[0] = re[2] + im[2] + r.real[0]
    im[3] = -1.0


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_real_and_imag_of_complex_arrays_are_views(target, dtype):
    a = np.zeros(4, dtype)
    a[2] = 3 + 4j
    r = np.ones(1)
    component_views[1, 1](a, r)
    np.testing.assert_array_equal(a, np.array([1j, 2, 3 + 4j, -1j], dtype))
    assert r[0] == 8.0


def test_component_views_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(component_views.py_func, "void(complex64[::1], float64[::1])")
    ptxas(ptx)


@cuda.jit
def divide(x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] / y[i]


def test_complex_division_is_pythons_algorithm(target):
    # CPython's (and numba's) scaled division: no overflow of |y|**2, an infinite divisor gives 0
    inf = float("inf")
    x = np.array([1j, 1 + 2j, 3e200 + 1j, 1e-300 + 1e-300j, 2 - 1j], np.complex128)
    y = np.array([complex(0, -inf), 3 - 4j, 1e200 + 1e200j, 1e-300 + 2e-300j, complex(inf, 5)],
                 np.complex128)
    out = np.zeros(len(x), np.complex128)
    divide[1, len(x)](x, y, out)
    for got, a, b in zip(out, x, y, strict=True):
        want = complex(a) / complex(b)
        assert got == want or abs(got - want) <= 4e-16 * abs(want), (a, b, got, want)
