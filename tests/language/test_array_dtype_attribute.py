# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_dispatcher.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""`ary.dtype` in kernels: the array's dtype at compile time, e.g. for shared/local arrays."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def test_shared_array_of_the_arguments_dtype():
    @cuda.jit
    def reverse_double(ary):
        sm = cuda.shared.array(100, dtype=ary.dtype)
        i = cuda.threadIdx.x
        sm[i] = ary[i]
        cuda.syncthreads()
        ary[i] = sm[99 - i] * 2

    for dtype in (np.float32, np.float64):
        a = np.arange(100, dtype=dtype)
        reverse_double[1, 100](a)
        np.testing.assert_array_equal(a, np.arange(99, -1, -1, dtype=dtype) * 2)
    sizes = reverse_double.get_shared_mem_per_block()
    assert sorted(sizes.values()) == [400, 800]


def test_local_array_of_the_arguments_dtype():
    @cuda.jit
    def last(ary):
        lm = cuda.local.array(10, dtype=ary.dtype)
        for j in range(10):
            lm[j] = ary[j]
        ary[0] = lm[9]

    c = np.arange(10, dtype=np.int16)
    last[1, 1](c)
    assert c[0] == 9
