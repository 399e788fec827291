# Cases adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_array.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""a.reshape() in kernels: views of contiguous arrays, -1 extents, numba's size check."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda


@cuda.jit
def reshape_2d(arr, newshape, got):
    y = arr.reshape(newshape)
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            got[i, j] = y[i, j]


@cuda.jit
def reshape_3d(arr, newshape, got):
    y = arr.reshape(newshape)
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            for k in range(y.shape[2]):
                got[i, j, k] = y[i, j, k]


@cuda.jit
def reshape_in_place(arr):
    flat = arr.reshape(arr.size)  # a view: writes reach the array
    for i in range(flat.shape[0]):
        flat[i] = i
    square = arr.reshape(2, -1)
    square[1, 0] = -1


@pytest.mark.parametrize("kernel, arr, shape", [
    (reshape_2d, np.arange(24), (4, 6)),
    (reshape_2d, np.arange(24).reshape((1, 8, 1, 1, 3, 1)), (8, 3)),
    (reshape_3d, np.arange(24.0), (8, 1, 3)),
    (reshape_2d, np.arange(25).reshape(5, 5), (-1, 5)),
    (reshape_3d, np.arange(25).reshape(5, 5), (5, -1, 5)),
    (reshape_3d, np.array([]), (1, 0, 2)),
])
def test_matches_numpy(target, kernel, arr, shape):
    expected = arr.reshape(shape)
    got = np.zeros(expected.shape, arr.dtype)
    kernel[1, 1](arr, shape, got)
    np.testing.assert_array_equal(got, expected)


def test_f_ordered_arrays_reshape_in_their_order(target):
    # numba keeps an F-ordered array's order (numpy's default would be C)
    f = np.asfortranarray(np.arange(6).reshape(2, 3))
    got = np.zeros((3, 2), np.int64)
    reshape_2d[1, 1](f, (3, 2), got)
    np.testing.assert_array_equal(got, f.reshape((3, 2), order="F"))


def test_views_write_through(target):
    arr = np.zeros((2, 3), np.int64)
    reshape_in_place[1, 1](arr)
    np.testing.assert_array_equal(arr, [[0, 1, 2], [-1, 4, 5]])


def test_wrong_size_is_numbas_valueerror():
    kernel = cuda.jit(reshape_2d.py_func, debug=True, opt=False)
    with pytest.raises(ValueError, match="total size of new array must be unchanged"):
        kernel[1, 1](np.arange(6), (4, 2), np.zeros((4, 2), np.int64))


def test_non_contiguous_arrays_are_refused():
    with pytest.raises(CompileError, match="needs a contiguous array"):
        reshape_2d[1, 1](np.arange(12)[::2], (2, 3), np.zeros((2, 3), np.int64))


def test_ptx(ptxas):
    from gpunb.foundation import types as t

    sig = t.Signature(t.void, (t.float32[::1], t.Tuple((t.int64,) * 3), t.float32[:, :, ::1]))
    ptx, _ = cuda.compile_ptx(reshape_3d.py_func, sig)
    ptxas(ptx)
