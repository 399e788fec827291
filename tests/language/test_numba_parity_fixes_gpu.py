"""On a GPU, the kernel-language behaviours the hunt for numba differences fixed on the CPU
target (their CPU tests sit beside the features): record-array field views (packed, so
unaligned), device functions falling off the end (numba's Optional), namedtuples built in
kernels, np.abs of a complex, np.sign / floor_divide / shifts, Python's max/min/sum of an array
and the else of `while True`. Each compares with numba's njit of the same source."""

from __future__ import annotations

from collections import namedtuple
from types import FunctionType

import numba
import numpy as np
import pytest

import gpunb
from gpunb import cuda

pytestmark = pytest.mark.gpu

FIELDS = np.dtype([("a", np.int8), ("b", np.float64), ("c", np.float32, (2, 3))])  # packed
Pair = namedtuple("Pair", "first second")  # (numba.njit does not apply defaults)


@pytest.fixture(autouse=True)
def _cuda():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


def _field_views(recs, out):
    for i in range(recs.shape[0]):
        out[i] = recs.b[i] + recs.c[i, 1, 2] + recs.a[i]
        recs.b[i] = i * 10


def test_record_field_views():
    recs = np.zeros(5, FIELDS)
    recs["a"], recs["b"] = 1, np.arange(5)
    recs["c"][:, 1, 2] = 0.5
    expected_recs, expected = recs.copy(), np.zeros(5)
    numba.njit(_field_views)(expected_recs, expected)
    out = np.zeros(5)
    cuda.jit(_field_views)[1, 1](recs, out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(recs["b"], expected_recs["b"])


def _falls_off(x):
    if x > 0.0:
        return x * 2.0


def _uses(out, x):  # pick: bound per test
    for i in range(x.size):
        r = pick(x[i])  # noqa: F821
        out[i, 0] = -1.0 if r is None else r
        if x[i] > 0.0:
            out[i, 1] = pick(x[i]) + 1.0  # noqa: F821


def test_an_implicit_none_return_is_an_optional():
    x = np.array([2.5, -1.0, 0.5])
    expected, found = np.zeros((3, 2)), np.zeros((3, 2))
    numba.njit(FunctionType(_uses.__code__, {"pick": numba.njit(_falls_off)}))(expected, x)
    cuda.jit(FunctionType(_uses.__code__, {"pick": cuda.jit(device=True)(_falls_off)}))[1, 1](
        found, x)
    np.testing.assert_array_equal(found, expected)


def _builds(out, a):
    p = Pair(a[0], 7)
    q = Pair(second=a[1], first=2.0)
    out[0] = p.first + p.second
    out[1] = q.first * q.second


def _ufuncs_and_builtins(out, a, i, z):
    out[0] = np.abs(z[0])
    out[1] = np.sign(a[1])
    out[2] = np.floor_divide(i[0], 3)
    out[3] = np.left_shift(i[1], 2)
    out[4] = max(a)
    out[5] = min(a)
    out[6] = sum(a)
    k = 0
    while True:
        k += 1
        if k > 3:
            break
    else:
        k = 100
    out[7] = k


@pytest.mark.parametrize("fn, args", [
    (_builds, (np.array([1.5, 4.0]),)),
    (_ufuncs_and_builtins, (np.array([np.nan, -2.5, 3.0]), np.array([-7, 5]),
                            np.array([3 - 4j]))),
], ids=["namedtuples", "ufuncs-builtins-while"])
def test_like_numba(fn, args):
    expected, found = np.zeros(8), np.zeros(8)
    numba.njit(fn)(expected, *args)
    cuda.jit(fn)[1, 1](found, *args)
    np.testing.assert_array_equal(found, expected)
