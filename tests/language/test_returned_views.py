"""Device functions that return array views (numba does): a row, a slice, a transposed view of
an argument or of shared memory, on every return path with numba's layout unification, an
Optional view; a view of the function's own cuda.local.array is a CompileError (that memory
is gone when the call returns)."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda, float32
from gpunb.foundation import types


@cuda.jit(device=True)
def row(a, i):
    return a[i]


@cuda.jit(device=True)
def tail(v, k):
    return v[k:]


@cuda.jit(device=True)
def row_or_column(a, i, by_row):
    if by_row:
        return a[i]  # C-contiguous
    return a[:, i]  # strided: the result is an 'A' array, as numba unifies them


@cuda.jit(device=True)
def first_two_if(a, keep):
    if keep:
        return a[0:2]  # else None: an Optional view


@cuda.jit(device=True)
def shared_half(s, upper):
    return s[16:] if upper else s[:16]


@cuda.jit
def views(out, a):
    i = cuda.grid(1)
    s = cuda.shared.array(32, float32)
    s[i] = i
    cuda.syncthreads()
    if i < a.shape[1]:
        r = row(a, i)
        out[i, 0] = r[0] + tail(r, 1)[0] + tail(r, 1).size
        v = row_or_column(a, i, i % 2 == 0)
        out[i, 1] = v[0] + v[1]
        m = first_two_if(a, i)
        out[i, 2] = -1.0 if m is None else m[1, 0]
        out[i, 3] = shared_half(s, i % 2 == 1)[i]
        out[i, 4] = row(a.T, i)[2]


def _expected(a: np.ndarray) -> np.ndarray:
    out = np.zeros((a.shape[1], 5))
    for i in range(a.shape[1]):
        out[i, 0] = a[i, 0] + a[i, 1] + (a.shape[1] - 1)
        v = a[i] if i % 2 == 0 else a[:, i]
        out[i, 1] = v[0] + v[1]
        out[i, 2] = -1.0 if i == 0 else a[1, 0]
        out[i, 3] = i + 16 if i % 2 == 1 else i
        out[i, 4] = a[2, i]
    return out


def test_device_functions_return_views(target):
    a = np.arange(16.0).reshape(4, 4)
    out = np.zeros((4, 5))
    views[1, 32](out, a)
    np.testing.assert_array_equal(out, _expected(a))


def test_returned_views_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(views.py_func, (types.float64[:, ::1], types.float64[:, ::1]),
                              cc=(8, 0))
    ptxas(ptx)


@cuda.jit(device=True)
def local_tail():
    mine = cuda.local.array(4, float32)
    mine[1] = 1.0
    alias = mine
    return alias[1:]


@cuda.jit
def uses_a_dead_local(out):
    out[0] = local_tail()[0]


def test_returning_a_view_of_a_local_array_is_a_compile_error(target):
    with pytest.raises(CompileError, match=r"cannot return a view of its own cuda.local.array "
                                           r"\(line \d+\)") as info:
        uses_a_dead_local[1, 1](np.zeros(1, np.float32))
    assert "^" in str(info.value) and "pass it in" in str(info.value)
