# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_record_dtype.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""Whole-array assignment to a record's array field (rec['v'] = arr, rec.v = arr): the elements
are copied into the record's bytes, as numba does."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

nested_array1_dtype = np.dtype([("array1", np.int16, (3,))], align=True)
nested_array2_dtype = np.dtype([("array2", np.int16, (3, 2))], align=True)
with_2d = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def assign_array_to_nested(dest, src):
    dest["array1"] = src


def assign_array_to_nested_2d(dest, src):
    dest["array2"] = src


def record_setitem_array(rec_source, rec_dest):
    rec_dest["j"] = rec_source["j"]


def test_assign_array_to_nested():
    src = (np.arange(3) + 1).astype(np.int16)
    got, expected = np.zeros(2, nested_array1_dtype), np.zeros(2, nested_array1_dtype)
    cuda.jit(assign_array_to_nested)[1, 1](got[0], src)
    assign_array_to_nested(expected[0], src)
    np.testing.assert_array_equal(expected, got)


def test_assign_array_to_nested_2d():
    src = (np.arange(6) + 1).astype(np.int16).reshape((3, 2))
    got, expected = np.zeros(2, nested_array2_dtype), np.zeros(2, nested_array2_dtype)
    cuda.jit(assign_array_to_nested_2d)[1, 1](got[0], src)
    assign_array_to_nested_2d(expected[0], src)
    np.testing.assert_array_equal(expected, got)


def test_record_to_record_and_attribute_form():
    def gen():
        a = np.recarray(1, dtype=with_2d)
        a[0] = np.array([(1, ((1, 2), (4, 5), (2, 3)))], dtype=with_2d)[0]
        b = np.recarray(1, dtype=with_2d)
        b[0] = np.array([(10, ((10, 20), (40, 50), (20, 30)))], dtype=with_2d)[0]
        return a[0], b[0]

    py_args, cu_args = gen(), gen()
    record_setitem_array(*py_args)
    cuda.jit(record_setitem_array)[1, 1](*cu_args)
    np.testing.assert_equal(py_args, cu_args)

    @cuda.jit
    def by_attribute(recs, src):
        recs[1].j = src

    recs = np.zeros(2, with_2d)
    by_attribute[1, 1](recs, np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(recs["j"][1], np.ones((3, 2)))
    np.testing.assert_array_equal(recs["j"][0], np.zeros((3, 2)))
