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


def test_split_yields_unit_stride_views_of_section_elements():
    d = cuda.to_device(np.arange(10))
    parts = d.split(3)
    assert not isinstance(parts, list)  # numba's is a generator
    parts = list(parts)
    assert [p.copy_to_host().tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    parts[1][0] = 30  # views: writes reach the array
    assert d.copy_to_host()[3] == 30
    with pytest.raises(ValueError, match="only support 1d array"):
        list(cuda.device_array((2, 2)).split(1))
    with pytest.raises(ValueError, match="only support unit stride"):
        list(d[::2].split(1))


def test_squeeze_removes_axes_of_length_one_as_numpy_does():
    host = np.arange(6.0).reshape(1, 6, 1)
    d = cuda.to_device(host)
    for axis in (None, 0, 2, -1, (0, 2)):
        squeezed = d.squeeze(axis=axis)
        assert squeezed.shape == host.squeeze(axis=axis).shape
        np.testing.assert_array_equal(squeezed.copy_to_host(), host.squeeze(axis=axis))
    assert d.squeeze().strides == (8,)
    d.squeeze()[2] = 42.0
    assert d.copy_to_host()[0, 2, 0] == 42.0
    one = cuda.to_device(np.full((1, 1), 5.0)).squeeze()
    assert one.shape == () and one.copy_to_host()[()] == 5.0  # a 0-d array, not a scalar
    with pytest.raises(ValueError, match="size not equal to one"):
        d.squeeze(axis=1)
    with pytest.raises(np.exceptions.AxisError):
        d.squeeze(axis=3)


def test_getitem_setitem_with_a_stream_and_as_cuda_arg():
    d = cuda.to_device(np.arange(5, dtype=np.int32))
    s = cuda.stream()
    assert d.getitem(slice(1, 3), stream=s).copy_to_host().tolist() == [1, 2]
    assert d.getitem(4) == 4
    d.setitem(0, 9, stream=s)
    d.setitem(slice(1, 3), np.array([7, 8], np.int32))
    s.synchronize()
    assert d.copy_to_host().tolist() == [9, 7, 8, 3, 4]
    assert d.as_cuda_arg().device_pointer == d.gpu_data.device_pointer


@pytest.mark.parametrize("make", [cuda.device_array, cuda.pinned_array, cuda.mapped_array,
                                  cuda.managed_array])
def test_allocations_refuse_negative_and_non_integer_shapes_and_unknown_orders(make):
    """cuda.device_array(-1) once gave an array of shape (1,) on the CPU target, (3.5,) was
    truncated and order='X' ignored; numpy's and numba's errors now."""
    for shape in (-1, (2, -3)):
        with pytest.raises(ValueError, match="negative dimensions"):
            make(shape)
    for shape in (3.0, (2.5,), "3", np.array([2.0])):
        with pytest.raises(TypeError, match="integer or tuple of integers"):
            make(shape)
    with pytest.raises(ValueError, match="C/F order"):
        make(3, order="X")
    assert make((np.int32(2), np.uint8(3))).shape == (2, 3)
    assert make(np.array([2, 3])).shape == (2, 3) and make(()).shape == ()


def test_reshape_takes_one_unknown_dimension_and_no_other_negative():
    d = cuda.to_device(np.arange(6.0))
    assert d.reshape(-1, 2).shape == (3, 2) and d.reshape((2, -1, 1)).shape == (2, 3, 1)
    with pytest.raises(ValueError, match="negative dimensions"):
        d.reshape(-2, -3)  # its product is the size: accepted as a shape once
    with pytest.raises(TypeError):
        d.reshape(3.0, 2)
