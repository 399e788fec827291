"""numba-cuda's host API as its cudadrv and doc_examples tests use it: np.transpose / ravel of
device arrays, alloc_size, the layout a launch types an array with, the memory-info tuple, the
version/profiler functions, C pointers in string signatures, and devicearray's helpers. Each test
runs on every target under test (the CPU target here; both on a GPU machine)."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda
from gpunb.cuda.cudadrv import devicearray


def test_np_transpose_of_a_device_array_stays_on_the_device(target):
    host = np.arange(12).reshape(3, 4)
    d = cuda.to_device(host)
    t = np.transpose(d)  # numpy calls d.transpose(None)
    assert isinstance(t, cuda.devicearray.DeviceNDArray)
    np.testing.assert_array_equal(t.copy_to_host(), host.T)
    same = np.transpose(cuda.to_device(np.arange(24).reshape(3, 4, 2)), axes=(0, 1, 2))
    np.testing.assert_array_equal(same.copy_to_host(), np.arange(24).reshape(3, 4, 2))
    np.testing.assert_array_equal(d.transpose((1, 0)).copy_to_host(), host.T)
    np.testing.assert_array_equal(d.transpose(-1, -2).copy_to_host(), host.T)


@pytest.mark.parametrize("axes", [(0, 0), (0, 2), (1,), (0, 1, 2)])
def test_transpose_with_bad_axes_says_so(target, axes):
    d = cuda.to_device(np.arange(12).reshape(3, 4))
    with pytest.raises(ValueError, match=r"invalid axes list \("):
        np.transpose(d, axes=axes)


@pytest.mark.parametrize("order", ["C", "F"])
def test_ravel_order_a_follows_the_layout(target, order):
    host = np.asarray(np.arange(60).reshape(3, 4, 5), order=order)
    d = cuda.to_device(host)
    for how in "CFA":
        if how != "A" and how != order:
            with pytest.raises(NotImplementedError):
                d.ravel(order=how)  # would need a copy, as numba-cuda refuses
            continue
        flat = d.ravel(order=how)
        assert flat is not d and flat.ndim == 1
        np.testing.assert_array_equal(flat.copy_to_host(), host.ravel(order=how))
    with pytest.raises(ValueError, match="order must be"):
        d.ravel(order="K")
    with pytest.raises(NotImplementedError):
        cuda.to_device(np.arange(10))[::2].ravel()


def test_alloc_size_and_launch_layout(target):
    c = cuda.to_device(np.zeros((2, 10)))
    assert c.alloc_size == 160 and c._numba_type_.layout == "C"
    f = cuda.to_device(np.zeros((2, 10), order="F"))
    assert f._numba_type_.layout == "F"
    assert cuda.to_device(np.zeros(10, order="F"))._numba_type_.layout == "C"
    strided = c[:, ::2]
    assert strided._numba_type_.layout == "A"
    from gpunb.runtime.typeof import typeof

    for d in (c, f, strided):
        assert d._numba_type_ == typeof(d)  # the type a launch gives it
    assert strided.alloc_size == (1 * 80 + 4 * 16 + 8)  # the bytes its elements span
    assert cuda.device_array(0).alloc_size == 0


def test_memory_info_is_numbas_named_tuple(target):
    info = cuda.current_context().get_memory_info()
    free, total = info
    assert (info.free, info.total) == (free, total)
    assert 0 < info.free <= info.total


def test_version_and_feature_queries(target):
    assert cuda.is_float16_supported() is True
    assert cuda.is_supported_version() is True  # the CPU target, or a CUDA 12/13 driver
    error = cuda.cuda_error()
    # None exactly when the driver initialised (with a device); else the reason, as a sentence
    assert (error is None) == cuda.is_available()
    assert error is None or (isinstance(error, str) and error)


def test_profiling_context_stops_when_the_block_raises(target):
    with cuda.profiling():
        cuda.device_array(10)
    with pytest.raises(KeyError), cuda.profiling():
        raise KeyError("inside")
    cuda.profile_start()
    cuda.profile_stop()


def test_c_pointers_in_string_signatures(target):
    @cuda.jit("void(CPointer(float32), int32)")
    def double(p, n):
        i = cuda.grid(1)
        if i < n:
            p[i] = p[i] * 2

    d = cuda.to_device(np.arange(8, dtype=np.float32))
    address = (d.__cuda_array_interface__ if target == "cuda" else
               d.__array_interface__)["data"][0]
    double[1, 8](address, 8)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(8, dtype=np.float32) * 2)
    declared = cuda.declare_device("sum_reduce", "float32(CPointer(float32), int32)")
    assert str(declared.sig) == "float32(float32*, int32)"
    with pytest.raises(Exception, match="cannot read the signature"):
        cuda.jit("void(CPointer(nothing))")(lambda p: None)


def test_devicearray_module_helpers(target):
    d = cuda.device_array((10, 12), order="F")
    assert not devicearray.is_contiguous(d) and devicearray.is_contiguous(d.T)
    assert devicearray.is_contiguous(np.broadcast_to(np.arange(3.0), (4, 3)))
    core = devicearray.array_core(np.broadcast_to(np.arange(3.0), (4, 3)))
    assert core.shape == (3,)
    devicearray.sentry_contiguous(np.broadcast_to(np.arange(3.0), (4, 3)))
    with pytest.raises(ValueError, match="non-contiguous buffer"):
        devicearray.sentry_contiguous(np.zeros((4, 4))[:, ::2])
    devicearray.verify_cuda_ndarray_interface(d)
    with pytest.raises(ValueError, match="cuda ndarray"):
        devicearray.verify_cuda_ndarray_interface(np.zeros(3))


@pytest.mark.gpu
def test_np_array_without_copy_of_gpu_memory_is_refused():
    import gpunb

    gpunb.set_target("cuda")
    try:
        d = cuda.to_device(np.arange(3.0))
        with pytest.raises(ValueError, match="copy=False"):
            np.array(d, copy=False)
        np.testing.assert_array_equal(np.array(d), np.arange(3.0))
    finally:
        gpunb.set_target(None)
