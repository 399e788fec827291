"""`kernel[grid, block]` reuses one configuration object per key, and a key equal only as a
value (2.0 == 2, True == 1) is not the same key: numba refuses float and bool dimensions, so
gpunb must too, whatever was launched before."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import LaunchError


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def fill(a):
    a[cuda.grid(1)] = 1


@pytest.mark.parametrize("bad, after", [
    ((2.0, 32), (2, 32)), ((2, 32.0), (2, 32)), ((np.float64(2), 32), (2, 32)),
    ((True, 32), (1, 32)), (((2.0, 1), 32), ((2, 1), 32)), ((2, (32.0, 1)), (2, (32, 1))),
    ((2, 32, 0, 0.0), (2, 32, 0, 0))])
def test_a_float_or_bool_key_is_refused_after_an_equal_int_one(bad, after):
    kernel = cuda.jit(fill)
    with pytest.raises(LaunchError, match="must be"):
        kernel[bad]
    a = np.zeros(64)
    kernel[after](a)  # the valid key: cached
    assert kernel[after] is kernel[after]
    with pytest.raises(LaunchError, match="must be"):
        kernel[bad](a)


def test_equal_valid_keys_share_the_configuration():
    kernel = cuda.jit(fill)
    blocks, threads = 2, 32
    first = kernel[blocks, threads]
    assert kernel[2, 32] is first and kernel[(2,), (32,)] is not first
    assert kernel[np.int64(2), 32].grid == 2  # a numpy integer is a valid dimension
    a = np.zeros(64)
    kernel[np.int64(2), np.int32(32)](a)
    assert a.sum() == 64
