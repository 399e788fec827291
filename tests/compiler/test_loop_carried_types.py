"""A variable's type at the top of a loop body is known only after the loop's back edges are:
numba unifies a loop-carried bool with the int assigned further down, so float(c) of it types."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def test_loop_carried_bool_widens_before_its_use_is_checked():
    @cuda.jit
    def kernel(out, c):
        for _ in range(3):
            out[1] = float(c)  # c is int64 here, as in numba: bool at entry, int64 round the loop
            c -= True
        out[0] = c

    out = np.zeros(2)
    kernel[1, 1](out, True)
    assert out.tolist() == [-2.0, -1.0]


def test_an_error_in_a_loop_body_that_does_not_go_away_is_still_reported_at_its_line():
    @cuda.jit
    def kernel(out, c):
        for _ in range(3):
            out[1] = float(c)  # c stays a bool: numba refuses float() of a bool
            c = not c
        out[0] = c

    with pytest.raises(CompileError, match="float\\(\\) takes a number, not a bool") as info:
        kernel[1, 1](np.zeros(2), True)
    assert "out[1] = float(c)" in str(info.value)


def test_rounding_an_integer_goes_through_float_as_in_numba():
    @cuda.jit
    def kernel(out, x, small):
        out[0] = round(x)
        out[1] = round(small)

    out = np.zeros(2, np.int64)
    kernel[1, 1](out, np.int64(2**62 + 1), np.int16(-7))
    assert out.tolist() == [2**62, -7]  # numba: float64(2**62 + 1) is 2**62


def test_an_error_in_a_loop_is_reported_before_what_its_skipped_statement_causes_later():
    @cuda.jit
    def kernel(out, c):
        for _ in range(3):
            x = float(c)  # the error; x is never defined
        out[0] = x + 1

    with pytest.raises(CompileError, match="float\\(\\) takes a number, not a bool") as info:
        kernel[1, 1](np.zeros(1), True)
    assert "x = float(c)" in str(info.value)
