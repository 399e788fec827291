# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_array.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""DeviceNDArray's flags and view(dtype), and *_array_like of strided views (numpy's order)."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

ARRAY_LIKE = (cuda.device_array_like, cuda.mapped_array_like, cuda.pinned_array_like)


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


@pytest.mark.parametrize("shape", [10, (10, 12), (10, 12, 14)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_array_like_same(shape, order):
    d_a = cuda.device_array(shape, order=order)
    for like in ARRAY_LIKE:
        a = like(d_a)
        assert (a.shape, a.strides, a.dtype) == (d_a.shape, d_a.strides, d_a.dtype)
        assert a.flags["C_CONTIGUOUS"] == d_a.flags["C_CONTIGUOUS"]
        assert a.flags["F_CONTIGUOUS"] == d_a.flags["F_CONTIGUOUS"]


@pytest.mark.parametrize("order", ["C", "F"])
def test_array_like_of_a_view_takes_numpys_order(order):
    view = np.zeros((10, 12), order=order)[::2, ::2]
    d_view = cuda.device_array((10, 12), order=order)[::2, ::2]
    np_like = np.zeros_like(view)
    for like in ARRAY_LIKE:
        a = like(d_view)
        assert a.strides == np_like.strides
        assert a.flags["F_CONTIGUOUS"] == np_like.flags["F_CONTIGUOUS"]


def test_view_reinterprets_the_same_memory():
    d = cuda.to_device(np.arange(4, dtype=np.int32))
    bytes_view = d.view(np.uint8)
    assert bytes_view.shape == (16,) and bytes_view.dtype == np.uint8
    np.testing.assert_array_equal(d.view(np.int16).copy_to_host(),
                                  np.arange(4, dtype=np.int32).view(np.int16))

    @cuda.jit
    def set_first_byte(b):
        b[0] = 7

    set_first_byte[1, 1](bytes_view)
    assert d.copy_to_host()[0] == 7  # the view wrote the original array's memory


def test_view_refuses_non_contiguous_last_axis():
    d = cuda.device_array((4, 4), dtype=np.int32)[:, ::2]
    with pytest.raises(ValueError):
        d.view(np.int8)
