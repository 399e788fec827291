"""Slice objects known at compile time in kernels - a global `S = slice(1, 5)` or `slice(...)`
of constants - as array and tuple indices (reads, views, slice stores) and through their
start/stop/step, compared with numba's njit running the same function. numba also takes slice
objects whose bounds are run-time values; gpunb refuses those with a CompileError saying to
index with the bounds themselves."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from gpunb import CompileError, cuda

S = slice(1, 5)
BACKWARDS = slice(None, None, -2)
HALF = slice(0.5, 2)
T = (1.0, 2.0, 3.0, 4.0)


def _slices(out, a, m):
    out[0] = a[S].sum()
    v = a[BACKWARDS]
    out[1] = v[0]
    s = slice(2, None)
    out[2] = a[s][0]
    m[S, 1] = 7.0  # a slice store through a global slice object
    m[slice(0, 1), :] = 3.0
    out[3] = T[S][0] + T[s][-1]
    out[4] = len(a[BACKWARDS])
    step = slice(2, 7, 2)
    out[5] = S.start + step.stop + step.step


def test_slice_objects_index_as_in_njit(target):
    a = np.arange(10.0)
    expected_out, expected_m = np.zeros(6), np.zeros((6, 3))
    njit(_slices)(expected_out, a, expected_m)
    out, m = np.zeros(6), np.zeros((6, 3))
    cuda.jit(_slices)[1, 1](out, a, m)
    assert out.tolist() == expected_out.tolist() == [10.0, 9.0, 2.0, 6.0, 5.0, 10.0]
    assert m.tolist() == expected_m.tolist()


def test_a_global_slice_compiles_for_the_gpu(ptxas):
    def window(out, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[S][i]

    ptx, _ = cuda.compile_ptx(window, "void(float32[::1], float32[::1])", cc=(8, 0))
    ptxas(ptx, "sm_80")


def _dynamic(out, a, i):
    out[0] = a[slice(i, 4)].sum()


def _fractional(out, a):
    out[0] = a[HALF].sum()


def _zero_step(out, a):
    out[0] = a[slice(0, 5, 0)].sum()


def _keywords(out, a):
    out[0] = a[slice(start=1)].sum()


@pytest.mark.parametrize("fn, args, message, column", [
    (_dynamic, (1,), "a slice object's bounds must be known at compile time", 21),
    (_fractional, (), "slice bounds must be integers or None, got 0.5", 15),
    (_zero_step, (), "slice step cannot be zero", 27),
    (_keywords, (), "slice() takes 1 to 3 positional arguments", 15),
])
def test_slice_objects_gpunb_cannot_compile_say_why(target, fn, args, message, column):
    with pytest.raises(CompileError) as info:
        cuda.jit(fn)[1, 1](np.zeros(1), np.arange(10.0), *args)
    assert message in str(info.value)
    assert info.value.loc.col == column, str(info.value)
