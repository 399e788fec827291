"""isinstance() in kernels: decided at compile time from the argument's type, pruning the other
branch as numba does; numba's own @njit is the oracle for the answers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402


def classify(x):
    code = 0
    if isinstance(x, int):
        code += 1
    if isinstance(x, float):
        code += 2
    if isinstance(x, complex):
        code += 4
    if isinstance(x, bool):
        code += 8
    if isinstance(x, (np.float32, np.int64)):
        code += 16
    return code


classify_on_gpu = cuda.jit(device=True)(classify)


@cuda.jit
def classify_kernel(out, x):
    out[0] = classify_on_gpu(x)


@pytest.mark.parametrize("value", [3, 2.5, np.float32(1.5), True, 1 + 2j, np.int8(4),
                                   np.uint64(7), np.complex64(1j)])
def test_isinstance_answers_as_numba(target, value):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba calls isinstance experimental
        expected = numba.njit(classify)(value)
    out = np.zeros(1, np.int64)
    classify_kernel[1, 1](out, value)
    assert out[0] == expected


@cuda.jit
def pruned(out, x):
    if isinstance(x, float):
        out[0] = x * 2
    else:
        out[0] = x.no_such_attribute  # never typed for a float


def test_the_other_branch_is_not_typed(target):
    out = np.zeros(1)
    pruned[1, 1](out, 1.25)
    assert out[0] == 2.5
    with pytest.raises(gpunb.CompileError, match="no_such_attribute"):
        pruned[1, 1](out, 3)


@cuda.jit
def bad_class(out, x):
    out[0] = isinstance(x, str.upper)


def test_a_class_gpu_code_cannot_test_for_is_a_clear_error():
    with pytest.raises(gpunb.CompileError, match="isinstance"):
        bad_class[1, 1](np.zeros(1), 1.0)
