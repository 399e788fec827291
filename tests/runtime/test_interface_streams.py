"""The stream in __cuda_array_interface__, both ways (numba-cuda's rules): an array made on a
stream (device, mapped or managed) exports that stream's handle, the default stream exports
None; an array consumed from an interface that names a stream gets it as its own stream, an
external one (not destroyed by gpunb), and one naming none gets numba's 0. Simulated driver."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda


class _Foreign:
    """Another library's array: only its interface (it keeps the memory it describes alive, as
    an exporter must: the H200 run of this test freed it, and a copy into it failed)."""

    def __init__(self, array):
        self._array = array

    @property
    def __cuda_array_interface__(self) -> dict:
        return self._array.__cuda_array_interface__


@pytest.mark.parametrize("make", [cuda.device_array, cuda.mapped_array, cuda.managed_array])
def test_arrays_made_on_a_stream_export_it(simulated_gpu, make):
    s = cuda.stream()
    assert s.handle != 0
    assert make(10, stream=s).__cuda_array_interface__["stream"] == int(s.handle)
    assert make(10).__cuda_array_interface__["stream"] is None


def test_a_mapped_arrays_view_exports_its_stream_and_address(simulated_gpu):
    s = cuda.stream()
    mapped = cuda.mapped_array(10, dtype=np.float32, stream=s)
    part = mapped[2:]
    assert part.stream is s
    interface = part.__cuda_array_interface__
    assert interface["stream"] == int(s.handle)
    assert interface["data"][0] == mapped.__cuda_array_interface__["data"][0] + 8


def test_a_consumed_array_takes_the_producers_stream(simulated_gpu):
    s = cuda.stream()
    consumed = cuda.as_cuda_array(_Foreign(cuda.device_array(10, stream=s)))
    assert consumed.stream.external and int(consumed.stream.handle) == int(s.handle)
    assert consumed.__cuda_array_interface__["stream"] == int(s.handle)
    plain = cuda.as_cuda_array(_Foreign(cuda.device_array(10)))
    assert plain.stream == 0


@pytest.mark.gpu
def test_interface_streams_on_a_gpu():
    gpunb.set_target("cuda")
    try:
        s = cuda.stream()
        for make in (cuda.device_array, cuda.mapped_array, cuda.managed_array):
            assert make(10, stream=s).__cuda_array_interface__["stream"] == int(s.handle)
        consumed = cuda.as_cuda_array(_Foreign(cuda.device_array(10, stream=s)))
        assert consumed.stream.external and int(consumed.stream.handle) == int(s.handle)
        consumed.copy_to_device(np.arange(10.0))  # copies go on the producer's stream
        np.testing.assert_array_equal(consumed.copy_to_host(), np.arange(10.0))
    finally:
        gpunb.set_target(None)


def test_a_masked_interface_is_refused(simulated_gpu):
    from gpunb.foundation.errors import UnsupportedArrayError

    data = cuda.to_device(np.random.random(10))
    masked = dict(data.__cuda_array_interface__, mask=cuda.to_device(np.ones(10, np.bool_)))
    with pytest.raises(NotImplementedError, match="Masked arrays are not supported") as info:
        cuda.from_cuda_array_interface(masked)
    assert isinstance(info.value, UnsupportedArrayError) and "hint:" in str(info.value)

    class Masked:
        __cuda_array_interface__ = masked

    @cuda.jit
    def k(a):
        a[0] = 1.0

    with pytest.raises(UnsupportedArrayError, match="Masked's __cuda_array_interface__"):
        k[1, 1](Masked())
    unmasked = dict(masked, mask=None)  # CAI v3: a None mask is no mask
    assert cuda.from_cuda_array_interface(unmasked).shape == (10,)
