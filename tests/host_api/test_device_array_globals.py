# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_device_array_capture.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""Device arrays read as globals are captured by reference (numba-cuda's documented behaviour):
kernels see later in-place changes and may write them; the cache key holds the address."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError

HOST = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)


def _run_capture_checks():
    global_array = cuda.to_device(HOST)

    @cuda.jit(device=True)
    def read_global(idx):
        return global_array[idx]

    @cuda.jit
    def kernel(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = read_global(i)

    @cuda.jit
    def write(v):
        i = cuda.grid(1)
        if i < global_array.size:
            global_array[i] = v

    out = cuda.device_array(5, np.float32)
    kernel[1, 5](out)
    np.testing.assert_array_equal(out.copy_to_host(), HOST)
    global_array.copy_to_device(HOST * 10)  # seen by the next launch, without recompiling
    kernel[1, 5](out)
    np.testing.assert_array_equal(out.copy_to_host(), HOST * 10)
    assert len(kernel.specializations) == 1
    write[1, 5](7.0)
    np.testing.assert_array_equal(global_array.copy_to_host(), np.full(5, 7.0, np.float32))

    g2 = cuda.to_device(np.arange(12, dtype=np.float64).reshape(3, 4).T)  # a strided view

    @cuda.jit
    def read2d(out):
        i, j = cuda.grid(2)
        if i < out.shape[0] and j < out.shape[1]:
            out[i, j] = g2[i, j]

    o2 = np.zeros((4, 3))
    read2d[1, (4, 3)](o2)
    np.testing.assert_array_equal(o2, np.arange(12, dtype=np.float64).reshape(3, 4).T)


def test_capture_by_reference_cpu():
    gpunb.set_target("cpu")
    try:
        _run_capture_checks()
    finally:
        gpunb.set_target("auto")


@pytest.mark.gpu
def test_capture_by_reference_gpu():
    gpunb.set_target("cuda")
    try:
        _run_capture_checks()
    finally:
        gpunb.set_target("auto")


def test_cache_key_holds_the_address():
    from gpunb.cache.encode import encode

    gpunb.set_target("cpu")
    try:
        a, b = cuda.to_device(HOST), cuda.to_device(HOST)
        assert encode(a, str) != encode(b, str)  # equal contents, other memory
        assert encode(a, str) == encode(a, str)
    finally:
        gpunb.set_target("auto")


def test_other_targets_array_is_refused():
    gpunb.set_target("cpu")
    try:
        host_side = cuda.to_device(HOST)
    finally:
        gpunb.set_target("auto")

    def reads(out):
        out[0] = host_side[0]

    with pytest.raises(CompileError, match="cpu-target device array"):
        cuda.compile_ptx(reads, "void(float32[::1])")
