# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_intrinsics.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""`x.bit_count()` on integers in kernels: numba-cuda's cuda.popc (two's complement bits)."""

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


def simple_bit_count(ary, c):
    ary[0] = c.bit_count()


@pytest.mark.parametrize("sig, value, expected", [
    ("void(int32[:], uint8)", np.uint8(0xFF), 8),
    ("void(int32[:], uint16)", np.uint16(0xFFFF), 16),
    ("void(int32[:], uint32)", np.uint32(0xFFFFFFFF), 32),
    ("void(int32[:], uint64)", np.uint64(0xFFFFFFFFFFFFFFFF), 64),
    ("void(int32[:], int64)", np.int64(0b1011), 3),
    ("void(int32[:], int32)", np.int32(-1), 32),  # cuda.popc's answer, as numba-cuda's
])
def test_bit_count(sig, value, expected):
    compiled = cuda.jit(sig)(simple_bit_count)
    ary = np.zeros(1, dtype=np.int32)
    compiled[1, 1](ary, value)
    assert ary[0] == expected
