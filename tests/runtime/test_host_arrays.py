"""The CPU target's device arrays: numba's DeviceNDArray API over numpy memory, copy semantics."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda
from gpunb.runtime import memory
from gpunb.runtime.devicearray import HostDeviceArray


def host(shape=(3, 4), dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def test_to_device_copies_and_copy_to_host_copies():
    a = host()
    d = memory.to_device(a, target="cpu")
    assert isinstance(d, HostDeviceArray)
    a[0, 0] = 100  # the device array holds a copy
    assert d.copy_to_host()[0, 0] == 0
    out = d.copy_to_host()
    out[1, 1] = -1  # and copy_to_host returns a copy
    assert d.copy_to_host()[1, 1] == 5
    into = np.empty_like(a)
    assert d.copy_to_host(into) is into
    np.testing.assert_array_equal(into, host())


def test_attributes_match_numpy():
    a = host((2, 3, 4), np.int16)
    d = memory.to_device(a, target="cpu")
    assert d.shape == a.shape and d.strides == a.strides and d.dtype == a.dtype
    assert (d.ndim, d.size, d.nbytes, d.itemsize, len(d)) == (3, 24, 48, 2, 2)
    assert d.is_c_contiguous() and not d.is_f_contiguous()
    assert d.device_ctypes_pointer.value == d.__array_interface__["data"][0]


def test_copy_to_device_overwrites_in_place():
    d = memory.to_device(host(), target="cpu")
    d.copy_to_device(np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(d.copy_to_host(), 1)
    with pytest.raises(ValueError, match="shape"):
        d.copy_to_device(np.ones((4, 3), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        d.copy_to_device(np.ones((3, 4), np.float64))


def test_slices_are_views_sharing_memory():
    d = memory.to_device(host(), target="cpu")
    row = d[1]
    col = d[:, 2]
    stepped = d[::-1, ::2]
    assert isinstance(row, HostDeviceArray) and row.shape == (4,)
    assert col.strides == (16,) and not col.is_c_contiguous()
    np.testing.assert_array_equal(stepped.copy_to_host(), host()[::-1, ::2])
    row.copy_to_device(np.full(4, 7, np.float32))
    np.testing.assert_array_equal(d.copy_to_host()[1], 7)
    assert d[2, 3] == 11.0 and isinstance(d[2, 3], np.float32)  # element: a scalar copy
    d[0, :2] = 9
    np.testing.assert_array_equal(d.copy_to_host()[0], [9, 9, 2, 3])
    assert d[..., 1].shape == (3,) and d[None].shape == (1, 3, 4)


def test_advanced_indexing_is_refused_as_on_the_gpu():
    d = memory.to_device(host(), target="cpu")
    for index in ([0, 1], np.array([0, 2]), True, d.copy_to_host() > 3):
        with pytest.raises(IndexError, match="basic indexing"):
            d[index]


def test_reshape_ravel_transpose():
    d = memory.to_device(host(), target="cpu")
    r = d.reshape(2, 6)
    assert r.shape == (2, 6) and r.reshape((12,)).shape == (12,)
    assert d.reshape(-1, 3).shape == (4, 3)
    r[0, 0] = 42  # a view: writes show through
    assert d[0, 0] == 42
    assert d.ravel().shape == (12,)
    # numba-cuda's .T of a 2-d array: a C-contiguous copy, not a view
    t = d.T
    assert t.shape == (4, 3) and t.strides == (12, 4) and t.is_c_contiguous()
    np.testing.assert_array_equal(t.copy_to_host(), d.copy_to_host().T)
    t[0, 0] = -7
    assert d[0, 0] == 42
    assert d.transpose(1, 0).shape == (4, 3) and d.transpose((1, 0)).shape == (4, 3)
    assert d.transpose(0, 1) is d
    assert d.T.reshape(12).shape == (12,)
    cube = memory.to_device(np.arange(24, dtype=np.float32).reshape(2, 3, 4), target="cpu")
    assert cube.T.strides == (4, 16, 48)  # other ranks: numpy's view (numba refuses them)
    with pytest.raises(NotImplementedError, match="contiguous"):
        d[:, ::2].ravel()
    with pytest.raises(ValueError, match="cannot reshape"):
        d.reshape(5, 2)


def test_zero_d_and_empty_arrays():
    d = memory.to_device(np.float64(3.5) * np.ones(()), target="cpu")
    assert d.shape == () and d.size == 1 and d[()] == 3.5
    with pytest.raises(TypeError):
        len(d)
    e = memory.device_array((0, 5), np.int32, target="cpu")
    assert e.size == 0 and e.copy_to_host().shape == (0, 5)


def test_device_array_layouts():
    c = memory.device_array((3, 4), np.float32, target="cpu")
    f = memory.device_array((3, 4), np.float32, order="F", target="cpu")
    s = memory.device_array((3, 4), np.float32, strides=(4, 12), target="cpu")
    assert c.is_c_contiguous() and f.is_f_contiguous() and not f.is_c_contiguous()
    assert s.strides == (4, 12)
    like = memory.device_array_like(np.zeros((2, 5), np.int8, order="F"), target="cpu")
    assert like.is_f_contiguous() and like.dtype == np.int8
    assert memory.pinned_array((2, 2), np.float32, target="cpu").shape == (2, 2)
    assert memory.mapped_array(4, np.int32, target="cpu").dtype == np.int32


def test_numpy_interop():
    d = memory.to_device(host(), target="cpu")
    np.testing.assert_array_equal(np.asarray(d), host())
    assert np.asarray(d).__array_interface__["data"][0] == d.__array_interface__["data"][0]
    copied = d.__array__()
    copied[0, 0] = -5
    assert d[0, 0] == 0


def test_dlpack_round_trip_with_numpy():
    d = memory.to_device(host(), target="cpu")
    assert d.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(d)
    np.testing.assert_array_equal(view, host())
    view[0, 1] = 77  # DLPack shares memory
    assert d[0, 1] == 77
    assert np.from_dlpack(d[:, 1::2]).strides == (16, 8)


def test_streams_and_events_on_cpu_are_synchronous():
    s = memory.stream(target="cpu")
    with s.auto_synchronize():
        d = memory.to_device(host(), stream=s, target="cpu")
    assert d.stream is s and s.query()
    start, end = memory.event(target="cpu"), memory.event(target="cpu")
    start.record(s)
    end.record(s)
    end.synchronize()
    assert 0 <= start.elapsed_time(end) < 1000
    assert memory.event_elapsed_time(start, end) == pytest.approx(start.elapsed_time(end))
    with pytest.raises(Exception, match="recorded"):
        memory.event(target="cpu").elapsed_time(end)


def test_events_without_timing_refuse_elapsed_time_as_on_a_gpu():
    """A CUDA event made with timing=False keeps no time (the driver refuses elapsed time): the
    CPU target's refuses too, so a program that runs here does not fail on a GPU."""
    from gpunb.foundation.errors import LaunchError

    untimed, timed = memory.event(timing=False, target="cpu"), memory.event(target="cpu")
    untimed.record()
    timed.record()
    for start, end in ((untimed, timed), (timed, untimed)):
        with pytest.raises(LaunchError, match="timing=True"):
            memory.event_elapsed_time(start, end)


def test_pinned_and_mapped_context_managers_on_cpu():
    a = host()
    with memory.pinned(a, target="cpu"):
        pass
    with memory.mapped(a, target="cpu") as m:
        m[0, 0] = 5  # mapped: the device view is the host memory itself
    assert a[0, 0] == 5


@pytest.fixture
def cpu():
    import gpunb

    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@pytest.mark.parametrize("make", [
    lambda: cuda.to_device(None), lambda: cuda.to_device([1, "a", None]),
    lambda: cuda.to_device(np.array([[1, 2], [3]], dtype=object)),
    lambda: cuda.device_array(3, dtype=object), lambda: cuda.pinned_array(2, dtype=object),
    lambda: cuda.mapped_array(2, dtype=object), lambda: cuda.managed_array(2, dtype=object),
    lambda: cuda.device_array_like(np.array([None]))])
def test_arrays_of_python_objects_are_refused_when_made(cpu, make):
    """Not at a launch much later: device memory cannot hold Python objects."""
    with pytest.raises(TypeError, match=r"an array of Python objects \(dtype object\) cannot "
                                        r"be put in device memory"):
        make()


def test_fixed_width_strings_are_still_device_arrays(cpu):
    assert cuda.to_device(np.array(["abc", "de"])).copy_to_host().tolist() == ["abc", "de"]
