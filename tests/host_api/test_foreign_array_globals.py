"""Another library's GPU array (anything with __cuda_array_interface__) read by a kernel as a
global, captured by reference as numba-cuda captures it (numba-cuda's
test_device_array_capture.py "foreign" half). CUDA target only: the CPU target refuses it."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda


class Foreign:
    """An array of "another library": only the interface of a device array."""

    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


class FakeInterface:
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0x1000, False),
                                "version": 3, "strides": None}


CPU_GLOBAL = FakeInterface()


@cuda.jit(target="cpu")
def read_cpu_global(out):
    out[0] = CPU_GLOBAL[0]


def test_the_cpu_target_refuses_foreign_gpu_memory():
    with pytest.raises(gpunb.CompileError, match="__cuda_array_interface__"):
        read_cpu_global[1, 1](np.zeros(1, np.float32))


def test_cache_keys_hold_the_foreign_address():
    from gpunb.cache.encode import encode

    a, b = FakeInterface(), FakeInterface()
    b.__cuda_array_interface__ = dict(FakeInterface.__cuda_array_interface__,
                                      data=(0x2000, False))
    assert encode(a, lambda f: "gpu") != encode(b, lambda f: "gpu")
    assert "0x1000" in encode(a, lambda f: "gpu") or "4096" in encode(a, lambda f: "gpu")


@pytest.mark.gpu
def test_foreign_arrays_are_captured_by_reference():
    gpunb.set_target("cuda")
    try:
        data = cuda.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
        glob = Foreign(data)

        @cuda.jit(device=True)
        def read(i, j):
            return glob[i, j]

        @cuda.jit
        def kernel(out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = read(i // 3, i % 3) * 2

        out = cuda.device_array(6, np.float32)
        kernel[1, 6](out)
        np.testing.assert_array_equal(out.copy_to_host(), np.arange(6) * 2)
        data.copy_to_device(np.ones((2, 3), np.float32))  # in place: seen by the next launch
        kernel[1, 6](out)
        np.testing.assert_array_equal(out.copy_to_host(), np.full(6, 2.0))
    finally:
        gpunb.set_target(None)
