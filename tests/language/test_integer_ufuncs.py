"""np.gcd, np.lcm, math.gcd, np.divmod (scalar, and array form with two outputs) and np.spacing
in kernels, against numba's njit on the same inputs (numba is the reference)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numba import njit

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError, LaunchError

I64_MIN = np.iinfo(np.int64).min
INT_PAIRS = [(12, 18), (-12, 18), (12, -18), (0, 7), (0, 0), (1, 1), (I64_MIN, 0),
             (2**40, 6), (-(2**31), 3), (7, 1)]


def _gcd_lcm(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[0, i] = np.gcd(a[i], b[i])
        out[1, i] = np.lcm(a[i], b[i])
        out[2, i] = math.gcd(a[i], b[i])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.uint64])
def test_gcd_lcm_match_numba(target, dtype):
    pairs = [(a, b) for a, b in INT_PAIRS if np.can_cast(np.min_scalar_type(a), dtype) and
             np.can_cast(np.min_scalar_type(b), dtype) or dtype == np.int64]
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    out = np.zeros((3, len(a)), dtype)
    cuda.jit(_gcd_lcm)[1, 32](out, a, b)
    ref = njit(lambda x, y: (np.gcd(x, y), np.lcm(x, y), math.gcd(x, y)))
    for k in range(len(a)):
        assert tuple(out[:, k]) == tuple(dtype(v) for v in ref(a[k], b[k])), (a[k], b[k])


def test_scalar_result_types_follow_numba(target):
    @cuda.jit
    def kinds(out, x, y, u, v):
        out[0] = np.gcd(x, y)  # int32, int32 -> int32
        out[1] = math.gcd(u, v)  # uint8, int8 -> int64 (numba's first matching case)
        out[2] = np.gcd(u, v)  # numpy's loop: int16

    x, y, u, v = np.int32(12), np.int32(-18), np.uint8(200), np.int8(-6)
    out = np.zeros(3, np.int64)
    kinds[1, 1](out, x, y, u, v)
    assert list(out) == [6, 2, 2]
    from gpunb.compiler.builtins.ufunc_math import MathGcd
    from gpunb.compiler.promotion import best_match
    from gpunb.foundation import types as t

    assert MathGcd.CASES[best_match((t.uint8, t.int8), MathGcd.CASES)][0] == t.int64
    assert MathGcd.CASES[best_match((t.int32, t.int32), MathGcd.CASES)][0] == t.int32


def _divmods(q, r, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        qq, rr = np.divmod(x[i], y[i])
        out[0, i] = qq
        out[1, i] = rr
    if i == 0:
        np.divmod(x, y, q, r)  # the array form: one output array per result


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64, np.float32])
def test_divmod_matches_numba(target, dtype):
    if np.dtype(dtype).kind == "f":
        x = np.array([7.5, -7.5, 7.0, -7.0, np.inf, 7.5, np.nan, 0.0], dtype)
        y = np.array([2.0, 2.0, 0.0, -0.0, 2.0, np.inf, 1.0, -3.0], dtype)
    else:
        x = np.array([7, -7, 7, -7, 0, 7, 100, -1], dtype)
        y = np.array([2, 2, -2, -2, 3, 0, 7, 1], dtype)
    q, r, out = np.zeros_like(x), np.zeros_like(x), np.zeros((2, len(x)), dtype)
    cuda.jit(_divmods)[1, 32](q, r, x, y, out)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ref = njit(lambda a, b: np.divmod(a, b))
        want = np.array([ref(a, b) for a, b in zip(x, y, strict=True)], dtype).T
        # numba's float divmod departs from numpy's (and from its own np.floor_divide) for an
        # infinite dividend, x // inf of a negative x and the sign of a zero remainder;
        # gpunb's np.divmod is its np.floor_divide and np.remainder, numpy's there
        numpy_edges = np.array(np.divmod(x, y), dtype)
    edge = ~np.isfinite(x) | ~np.isfinite(y) | (x == 0)
    np.testing.assert_array_equal(out[:, ~edge], want[:, ~edge])
    np.testing.assert_array_equal(out[:, edge], numpy_edges[:, edge])
    np.testing.assert_array_equal(np.stack([q, r]), out)  # the array form: the same


def test_divmod_out_keyword_and_broadcast(target):
    @cuda.jit
    def halves(q, r, x):
        np.divmod(x, 2, out=(q, r))

    x = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    q, r = np.zeros_like(x), np.zeros_like(x)
    halves[1, 1](q, r, x)
    wq, wr = np.divmod(x, 2)
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(r, wr)


def test_spacing_matches_numba(target):
    @cuda.jit
    def spacings(out64, out32, x64, x32, n):
        i = cuda.grid(1)
        if i < x64.size:
            out64[i] = np.spacing(x64[i])
            out32[i] = np.spacing(x32[i])
        if i == 0:
            out64[x64.size] = np.spacing(n)  # an integer: numpy's float64 loop

    values = [1.0, -1.0, 0.0, -0.0, 1e-310, np.inf, -np.inf, np.nan, 3.5e38, 1e300,
              np.finfo(np.float64).max]
    x64 = np.array(values, np.float64)
    with np.errstate(all="ignore"):
        x32 = x64.astype(np.float32)
    out64, out32 = np.zeros(len(x64) + 1), np.zeros(len(x32), np.float32)
    spacings[1, 32](out64, out32, x64, x32, 3)
    ref = njit(lambda v: np.spacing(v))
    want64 = [ref(v) for v in x64] + [ref(3)]
    want32 = [ref(v) for v in x32]
    np.testing.assert_array_equal(out64, np.array(want64))
    np.testing.assert_array_equal(out32, np.array(want32, np.float32))


def test_gcd_and_spacing_array_forms(target):
    @cuda.jit
    def arrays(g, s, a, f):
        np.gcd(a, 6, g)
        np.spacing(f, s)

    a = np.arange(-4, 8, dtype=np.int64)
    f = np.linspace(-2, 2, 12)
    g, s = np.zeros_like(a), np.zeros_like(f)
    arrays[1, 1](g, s, a, f)
    np.testing.assert_array_equal(g, njit(lambda v: np.gcd(v, 6))(a))
    np.testing.assert_array_equal(s, njit(lambda v: np.spacing(v))(f))


def test_bad_calls_are_clear_compile_errors():
    gpunb.set_target("cpu")
    try:
        def gcd_of_floats(out, x):
            out[0] = np.gcd(x, x)

        def one_output(q, x):
            np.divmod(x, 2, q)

        def math_gcd_float(out, x):
            out[0] = math.gcd(x, 2)

        cases = [(gcd_of_floats, (np.zeros(1), 1.5), "np.gcd() has no loop for (float64"),
                 (one_output, (np.zeros(3), np.ones(3)), "give an output array for each"),
                 (math_gcd_float, (np.zeros(1), 1.5), "math.gcd() takes two integers")]
        for fn, args, text in cases:
            with pytest.raises(CompileError) as info:
                cuda.jit(fn)[1, 1](*args)
            assert text in str(info.value), str(info.value)
            assert info.value.loc is not None and info.value.loc.line > 0
    finally:
        gpunb.set_target(None)


def test_outputs_of_different_shapes_raise_valueerror():
    gpunb.set_target("cpu")
    try:
        @cuda.jit
        def split(q, r, x):
            np.divmod(x, 3, q, r)

        with pytest.raises((ValueError, LaunchError), match="different shapes"):
            split[1, 1](np.zeros(4), np.zeros(3), np.ones(4))
    finally:
        gpunb.set_target(None)


def test_ptx_is_accepted_by_ptxas(ptxas):
    from gpunb.foundation.types import float32, float64, int32, int64, uint8

    ptx, _ = cuda.compile_ptx(_gcd_lcm, (int64[:, ::1], int64[::1], int64[::1]))
    ptxas(ptx)
    ptx, _ = cuda.compile_ptx(_gcd_lcm, (uint8[:, ::1], uint8[::1], uint8[::1]))
    ptxas(ptx)
    for ty in (int32, float32, float64):
        ptx, _ = cuda.compile_ptx(_divmods, (ty[::1], ty[::1], ty[::1], ty[::1], ty[:, ::1]))
        ptxas(ptx)


@pytest.mark.gpu
def test_on_the_gpu():
    gpunb.set_target("cuda")
    try:
        test_gcd_lcm_match_numba("cuda", np.int64)
        test_divmod_matches_numba("cuda", np.float64)
        test_divmod_matches_numba("cuda", np.int32)
        test_spacing_matches_numba("cuda")
    finally:
        gpunb.set_target(None)
