"""`flag is True` / `flag is not False` in kernels compare two booleans' values, as numba does
(numba-cuda's test_issue5623_equal_statements_in_same_bb); numba's CPU JIT is the oracle. `is`
between other values (numbers) stays an error: GPU code tests only None and booleans with it."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda, int64

numba = pytest.importorskip("numba")


def _body(pred, stack):
    i = 0
    if pred is True:
        stack[i] = 1
        i += 1
        stack[i] = 1
    if pred is not False:
        stack[0] += 10
    flipped = not pred
    if (pred is pred) and pred is not flipped:
        stack[1] += 100


@pytest.mark.parametrize("pred", [True, False])
def test_is_between_booleans_matches_numba(target, pred):
    got, expected = np.array([0, 666]), np.array([0, 666])
    cuda.jit(_body)[1, 1](pred, got)
    numba.njit(_body)(pred, expected)
    np.testing.assert_array_equal(got, expected)


def test_is_between_numbers_is_refused():
    with pytest.raises(CompileError, match="only tests for None"):
        cuda.compile_ptx(lambda x: x is 3, (int64,), device=True)  # noqa: F632
