"""numpy's datetime64 and timedelta64 in kernels, numba's CPU JIT as the oracle: arithmetic and
comparisons across units, NaT propagation, numba's typing errors; arrays and scalars as kernel
arguments, vectorize and guvectorize over datetime dtypes (numba-cuda's test_datetime)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from gpunb import CompileError, cuda, guvectorize, vectorize
from gpunb.cuda.np.numpy_support import from_dtype

numba = pytest.importorskip("numba")

NAT_D = np.datetime64("NaT", "D")


def _values(kind: str, unit: str, n: int = 12):
    rng = np.random.default_rng(7)
    counts = rng.integers(-20000, 20000, n)
    out = counts.astype(f"{kind}8[{unit}]")
    out[3] = np.array("NaT", dtype=f"{kind}8[{unit}]")
    return out


def _run_binary(op, a, b, out_dtype):
    def body(x, y, out):  # a loop numba's CPU JIT runs too
        for i in range(out.size):
            out[i] = op(x[i], y[i])

    kernel = cuda.jit(body)
    got = np.zeros(a.size, dtype=out_dtype)
    kernel[1, 1](a, b, got)
    expected = np.zeros(a.size, dtype=out_dtype)
    numba.njit(body)(a, b, expected)
    return got, expected


CASES = [
    (operator.sub, ("M", "D"), ("M", "D")),
    (operator.sub, ("M", "D"), ("M", "h")),
    (operator.sub, ("M", "s"), ("m", "ms")),
    (operator.add, ("M", "W"), ("m", "D")),
    (operator.add, ("m", "h"), ("M", "m")),
    (operator.add, ("m", "D"), ("m", "us")),
    (operator.sub, ("m", "Y"), ("m", "M")),
    (operator.truediv, ("m", "s"), ("m", "ms")),
    (operator.truediv, ("m", "h"), ("m", "D")),
    (operator.eq, ("M", "D"), ("M", "s")),
    (operator.ne, ("m", "D"), ("m", "h")),
    (operator.lt, ("M", "h"), ("M", "D")),
    (operator.ge, ("m", "s"), ("m", "s")),
]


@pytest.mark.parametrize("op,left,right", CASES,
                         ids=[f"{o.__name__}-{a[1]}{a[0]}-{b[1]}{b[0]}" for o, a, b in CASES])
def test_datetime_arithmetic_matches_numba(target, op, left, right):
    a, b = _values(*left), _values(*right)
    b[5] = np.array("NaT", dtype=b.dtype)
    result = numba.njit(lambda x, y: op(x, y))(a[0], b[0])
    out_dtype = np.asarray(result).dtype
    got, expected = _run_binary(op, a, b, out_dtype)
    np.testing.assert_array_equal(got.view(np.int64) if got.dtype.kind in "mM" else got,
                                  expected.view(np.int64) if got.dtype.kind in "mM" else
                                  expected)


@pytest.mark.parametrize("number", [3, -2, 2.5, 0, 0.0])
def test_timedelta_with_numbers_matches_numba(target, number):
    def body(x, n, out):
        for i in range(x.size):
            out[0, i] = x[i] * n
            out[1, i] = n * x[i]
            out[2, i] = x[i] / n
            out[3, i] = x[i] // n
            out[4, i] = -x[i]
            out[5, i] = abs(x[i]) if x[i] > x[0] else +x[i]

    x = _values("m", "s")
    got = np.zeros((6, x.size), dtype=x.dtype)
    expected = np.zeros_like(got)
    cuda.jit(body)[1, 1](x, number, got)
    numba.njit(body)(x, number, expected)
    np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))


def test_scalars_and_nat_arguments(target):
    @cuda.jit
    def kernel(dates, target_date, delta, matches, shifted):
        i = cuda.grid(1)
        if i < dates.size:
            matches[i] = dates[i] == target_date
            shifted[i] = dates[i] - delta

    dates = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    matches = np.zeros(dates.size, np.bool_)
    shifted = np.zeros_like(dates)
    kernel[1, 512](dates, dates[5], dates[6] - dates[5], matches, shifted)
    assert matches.nonzero()[0].tolist() == [5]
    np.testing.assert_array_equal(shifted, dates - (dates[6] - dates[5]))
    kernel[1, 512](dates, NAT_D, np.timedelta64("NaT", "D"), matches, shifted)
    assert not matches.any() and np.isnat(shifted).all()


def test_vectorize_and_guvectorize_over_datetimes(target):
    datetime_t = from_dtype(np.dtype("datetime64[D]"))
    timedelta_t = from_dtype(np.dtype("timedelta64[D]"))
    assert str(datetime_t) == "datetime64[D]" and str(timedelta_t) == "timedelta64[D]"

    @vectorize([(datetime_t, datetime_t)], target="cuda")
    def timediff(start, end):
        return end - start

    @guvectorize([(datetime_t, datetime_t, timedelta_t[:])], "(),()->()", target="cuda")
    def timediff_gu(start, end, out):
        out[0] = end - start

    start = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    end = start + np.arange(start.size)
    for fn in (timediff, timediff_gu):
        got = fn(start, end)
        assert got.dtype == np.dtype("timedelta64[D]")
        np.testing.assert_array_equal(got, end - start)


def test_device_arrays_of_datetimes_view_as_int64(target):
    arr = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    darr = cuda.to_device(arr)
    viewed = darr.view(np.int64)
    np.testing.assert_array_equal(viewed.copy_to_host(), arr.view(np.int64))
    assert viewed.gpu_data == darr.gpu_data


@pytest.mark.parametrize("body,message", [
    (lambda d, e: d + e, "unsupported operand"),  # datetime + datetime
    (lambda d, e: d * 2, "unsupported operand"),  # datetime * number
    (lambda d, e: (d - e) % (d - e), "unsupported operand"),  # timedelta % timedelta
])
def test_numba_refuses_what_gpunb_refuses(body, message):
    dt = from_dtype(np.dtype("datetime64[D]"))
    with pytest.raises(CompileError, match=message):
        cuda.compile_ptx(body, (dt, dt), device=True)
    with pytest.raises(numba.core.errors.TypingError):
        numba.njit((numba.types.NPDatetime("D"),) * 2)(body)


def test_calendar_units_are_refused_clearly():
    def body(d, e):
        return d - e

    with pytest.raises(CompileError, match="calendar arithmetic"):
        cuda.compile_ptx(body, (from_dtype(np.dtype("M8[M]")), from_dtype(np.dtype("M8[D]"))),
                         device=True)


SHIFT = np.timedelta64(3, "D")


def test_global_constants(target):
    @cuda.jit
    def kernel(x, out):
        out[0] = x + SHIFT
        out[1] = x - SHIFT

    out = np.zeros(2, "M8[D]")
    kernel[1, 1](np.datetime64(5, "D"), out)
    assert out.tolist() == [np.datetime64(8, "D").item(), np.datetime64(2, "D").item()]


def test_min_max_and_isnat_match_numba(target):
    def body(d, td, out_d, out_td, flags):
        for i in range(d.size - 1):
            out_d[0, i] = max(d[i], d[i + 1])  # NaT first stays; NaT second is passed over
            out_d[1, i] = min(d[i], d[i + 1])
            out_td[0, i] = max(td[i], td[i + 1], td[0])
            out_td[1, i] = min((td[i + 1], td[i]))
            flags[i] = np.isnat(d[i]) or np.isnat(td[i])

    d = _values("M", "D")
    td = _values("m", "h")
    td[6] = np.array("NaT", dtype=td.dtype)
    results = []
    for fn in (cuda.jit(body), numba.njit(body)):
        outs = (np.zeros((2, d.size), d.dtype), np.zeros((2, td.size), td.dtype),
                np.zeros(d.size, np.bool_))
        (fn[1, 1] if fn.__class__.__module__.startswith("gpunb") else fn)(d, td, *outs)
        results.append(outs)
    for got, expected in zip(*results, strict=True):
        np.testing.assert_array_equal(got.view(np.int64) if got.dtype.kind in "mM" else got,
                                      expected.view(np.int64) if got.dtype.kind in "mM" else
                                      expected)


def test_min_of_datetime_and_timedelta_is_refused():
    dt = from_dtype(np.dtype("datetime64[D]"))
    td = from_dtype(np.dtype("timedelta64[D]"))
    with pytest.raises(CompileError, match="cannot compare"):
        cuda.compile_ptx(lambda a, b: min(a, b), (dt, td), device=True)
    with pytest.raises(CompileError, match="np.isnat"):
        cuda.compile_ptx(lambda a, b: np.isnat(a + b), (from_dtype(np.dtype(np.int64)),) * 2,
                         device=True)
