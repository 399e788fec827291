"""A WMMA fragment refers to storage in the frame of the function that made it: one returned
from a device function would point into a frame that is gone. On a GPU the callee is a real
call where it is not inlined (always with debug=True: the next call reuses its local memory),
while the CPU target inlines calls and gives the right numbers - so it is a compile error at the
`return`, naming the fix. Passing a fragment *in* (by reference) is how to share one."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.cuda import wmma


@cuda.jit(device=True)
def _make_filled(v):
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, v)
    return acc  # <-


def _returns_a_fragment(c):
    first = _make_filled(3.0)
    _make_filled(4.0)  # debug=True on a GPU: lands in the frame `first` points into
    wmma.store_matrix_sync(c, first, wmma.mem_row_major)


@cuda.jit(device=True)
def _make_pair(v):
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, v)
    return v, acc  # <-


def _returns_a_tuple_holding_one(c):
    _, first = _make_pair(3.0)
    wmma.store_matrix_sync(c, first, wmma.mem_row_major)


@cuda.jit(device=True)
def _fill(acc, v):
    wmma.fill_fragment(acc, v)


def _passes_one_in(c):
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    _fill(acc, 2.0)
    wmma.store_matrix_sync(c, acc, wmma.mem_row_major)


def _marked_line(func) -> int:
    lines, first = inspect.getsourcelines(func.py_func)
    return first + next(k for k, line in enumerate(lines) if "# <-" in line)


@pytest.mark.parametrize("kernel, callee", [(_returns_a_fragment, _make_filled),
                                            (_returns_a_tuple_holding_one, _make_pair)])
@pytest.mark.parametrize("target", ["cuda", "cpu"])
def test_a_fragment_cannot_be_returned(kernel, callee, target):
    with pytest.raises(CompileError) as info:
        if target == "cuda":
            cuda.compile_ptx(kernel, "void(float32[:, ::1])", cc=(8, 0), debug=True, opt=False)
        else:
            cuda.jit(kernel, target="cpu")[1, 32](np.zeros((16, 16), np.float32))
    error = info.value
    assert "cannot return a wmma fragment" in str(error) and "pass it in" in error.hint
    assert error.loc is not None and error.loc.line == _marked_line(callee)


def test_a_fragment_passed_in_is_filled_by_the_callee():
    c = np.zeros((16, 16), np.float32)
    cuda.jit(_passes_one_in, target="cpu")[1, 32](c)
    np.testing.assert_array_equal(c, np.full((16, 16), 2.0, np.float32))
