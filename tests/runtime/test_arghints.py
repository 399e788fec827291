# Cases adapted from numba-cuda (numba_cuda/numba/cuda/tests/cudapy/
# test_retrieve_autoconverted_arrays.py)
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""cuda.In / cuda.Out / cuda.InOut: which way a host array is copied around a launch."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import LaunchError

RECORD = np.dtype([("b", np.int32)], align=True)


@cuda.jit
def set_to_three(arr):
    arr[0] = 3


@cuda.jit
def set_record_to_three(rec):
    rec[0]["b"] = 3


@cuda.jit
def add_one(src, dst):
    dst[0] = src[0] + 1


@pytest.mark.parametrize("hint, seen", [(cuda.In, 0), (cuda.InOut, 3), (cuda.Out, 3)])
def test_arrays(target, hint, seen):
    host = np.zeros(1, np.int64)
    set_to_three[1, 1](hint(host))
    assert host[0] == seen


@pytest.mark.parametrize("hint, seen", [(cuda.In, 0), (cuda.InOut, 3)])
def test_records(target, hint, seen):
    host = np.zeros(1, RECORD)
    set_record_to_three[1, 1](hint(host))
    assert host[0]["b"] == seen


def test_in_is_read_and_out_is_written(target):
    src, dst = np.array([41], np.int64), np.zeros(1, np.int64)
    add_one[1, 1](cuda.In(src), cuda.Out(dst))
    assert dst[0] == 42 and src[0] == 41


def test_hints_of_device_arrays_pass_them_through(target):
    d = cuda.to_device(np.zeros(1, np.int64))
    set_to_three[1, 1](cuda.In(d))
    assert d.copy_to_host()[0] == 3  # a device array is the kernel's memory: no copies


def test_a_hint_is_not_a_scalar():
    @cuda.jit
    def k(x):
        pass

    with pytest.raises(LaunchError, match="cannot pass a object"):
        k[1, 1](cuda.In(object()))
