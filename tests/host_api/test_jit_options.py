# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_dispatcher.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""numba's cuda.jit options shared_memory_carveout and forceinline."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.types import float32


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


@pytest.mark.parametrize("carveout, message", [
    (150, "must be between -1 and 100"), (-2, "must be between -1 and 100"),
    (101, "must be between -1 and 100"), ("InvalidOption", "Invalid carveout value"),
])
def test_carveout_invalid_values(carveout, message):
    with pytest.raises(ValueError, match=message):
        @cuda.jit(shared_memory_carveout=carveout)
        def add_one(x):
            x[cuda.grid(1)] = 1
    with pytest.raises(ValueError, match=message):
        @cuda.jit("void(int32[:])", shared_memory_carveout=carveout)
        def add_one_sig(x):
            x[cuda.grid(1)] = 1


def _run_carveouts():
    for carveout in ["MaxL1", "MaxShared", "default", 0, 50, 100, -1]:
        @cuda.jit(shared_memory_carveout=carveout)
        def add_one(x):
            i = cuda.grid(1)
            if i < x.size:
                x[i] = i + 1

        d_x = cuda.to_device(np.zeros(10, np.int32))
        add_one[1, 10](d_x)
        np.testing.assert_array_equal(d_x.copy_to_host(), np.arange(1, 11))


def test_carveout_valid_values_cpu():
    _run_carveouts()  # a preference only: the CPU target has no L1/shared split


@pytest.mark.gpu
def test_carveout_valid_values_gpu():
    gpunb.set_target("cuda")
    _run_carveouts()


def test_forceinline_marks_the_device_function_alwaysinline():
    from gpunb import backends
    from gpunb.backends.pipeline import compile as run_compile
    from gpunb.foundation.events import Stage

    def body(x):
        return x * 2.0 + 1.0

    plain = cuda.jit(device=True)(body)
    forced = cuda.jit(device=True, forceinline=True)(body)

    def k_plain(o, x):
        o[0] = plain(x[0])

    def k_forced(o, x):
        o[0] = forced(x[0])

    def llvm_of(kernel):
        compiled = run_compile(kernel, (float32[::1], float32[::1]), {}, backends.get("cuda"),
                               stop_after=Stage.LLVM, arch=(9, 0))
        return str(compiled.builder.module)

    assert "alwaysinline" in llvm_of(k_forced)
    assert "alwaysinline" not in llvm_of(k_plain)

    @cuda.jit
    def run(o, x):
        o[0] = forced(x[0])

    out = np.zeros(1, np.float32)
    run[1, 1](out, np.array([2.0], np.float32))
    assert out[0] == 5.0
