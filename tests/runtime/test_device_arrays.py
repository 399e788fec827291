"""DeviceArray and the driver wrapper against the simulated driver (device memory = host memory).

These check gpunb's own logic - views, copies, interfaces, error translation - without a GPU; the
same behaviours run against the real driver in test_runtime_gpu.py.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gpunb import cuda
from gpunb.backends.cuda import driver
from gpunb.foundation.errors import LaunchError
from gpunb.runtime import dlpack, memory
from gpunb.runtime.devicearray import DeviceArray


def host(shape=(3, 4), dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def test_device_info_and_context(fake_cuda):
    assert driver.is_available() and driver.device_count() == 1
    d = driver.current_device()
    assert d.name == "Fake H100" and d.compute_capability == (9, 0) and d.arch == "sm_90"
    assert d.multiprocessor_count == 132 and d.max_block_dim == (1024, 1024, 64)
    assert d.max_shared_memory_per_block_optin == 227 * 1024 and d.cooperative_launch is True
    assert d.pci_bus_id == "0000:01:00.0" and d.driver_version == (13, 0)
    assert d.MULTIPROCESSOR_COUNT == 132 and d.MAX_PITCH == 2**31 - 1  # numba-style names
    assert not hasattr(d, "NOT_AN_ATTRIBUTE")
    retains = [c for c in fake_cuda.calls if c[0] == "cuDevicePrimaryCtxRetain"]
    driver.ensure_context()
    driver.synchronize()
    assert [c for c in fake_cuda.calls if c[0] == "cuDevicePrimaryCtxRetain"] == retains
    assert driver.select_device(0).id == 0


def test_check_translates_errors_with_hints(fake_cuda):
    R = fake_cuda.CUresult
    assert driver.check((R.CUDA_SUCCESS,), "x") is None
    assert driver.check((R.CUDA_SUCCESS, 5), "x") == 5
    assert driver.check((R.CUDA_SUCCESS, 5, 6), "x") == (5, 6)
    with pytest.raises(driver.CudaDriverError) as info:
        driver.check((R.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAlloc(8 bytes)", kernel="k")
    err = info.value
    assert isinstance(err, LaunchError) and err.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert "cuMemAlloc(8 bytes) failed" in str(err) and "out of memory" in str(err)
    assert "'k'" in str(err)
    with pytest.raises(LaunchError, match=r"gpunb\.cuda\.reset\(\)"):
        driver.check((R.CUDA_ERROR_ILLEGAL_ADDRESS,), "cuCtxSynchronize")
    with pytest.raises(LaunchError, match="max_registers"):
        driver.check((R.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,), "cuLaunchKernel")


def test_round_trip_and_free(fake_cuda):
    a = host()
    d = memory.to_device(a, target="cuda")
    assert isinstance(d, DeviceArray) and d.shape == (3, 4) and d.strides == (16, 4)
    np.testing.assert_array_equal(d.copy_to_host(), a)
    ptr = d._ptr
    assert ptr in fake_cuda.allocations
    del d
    gc.collect()
    assert ptr in fake_cuda.freed


def test_copies_from_a_thread_that_never_used_the_gpu(fake_cuda):
    """A process pool's task thread pickles a device array (copy_to_host), a worker thread
    copies into one: each makes the context current in its own thread first, as the real
    driver refuses copies and stream queries from a thread without one."""
    import pickle
    import threading

    fake_cuda.strict_contexts = True
    d = memory.to_device(host(), target="cuda")
    results: dict = {}

    def work():
        try:
            results["pickled"] = pickle.loads(pickle.dumps(d)).copy_to_host()
            d[0] = -1.0
            d.copy_to_device(host() * 2)
            results["copied"] = d.copy_to_host()
        except Exception as error:  # reported below, in the test's thread
            results["error"] = error

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert "error" not in results, results.get("error")
    np.testing.assert_array_equal(results["pickled"], host())
    np.testing.assert_array_equal(results["copied"], host() * 2)


def test_views_share_memory_and_copy_elements(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    assert d[1, 2] == 6.0 and isinstance(d[1, 2], np.float32)
    np.testing.assert_array_equal(d[1].copy_to_host(), host()[1])
    np.testing.assert_array_equal(d[:, 1].copy_to_host(), host()[:, 1])  # non-contiguous view
    np.testing.assert_array_equal(d[::-1, ::-2].copy_to_host(), host()[::-1, ::-2])
    column = d[:, 1]  # numba's view memory: the bytes the view spans, kept alive by its block
    assert column._ptr == d._ptr + 4 and column.gpu_data.owner is d.gpu_data
    assert column.gpu_data.device_pointer == d._ptr + 4
    assert column.alloc_size == 4 * (2 * 4 + 1)  # rows 0..2 of column 1: 9 floats spanned
    assert d[:].gpu_data is d.gpu_data  # the whole array is its block
    d[2] = np.full(4, 5, np.float32)
    d[0, 0] = -1
    expected = host()
    expected[2] = 5
    expected[0, 0] = -1
    np.testing.assert_array_equal(d.copy_to_host(), expected)
    out = np.zeros((3,), np.float32)
    assert d[:, 3].copy_to_host(out) is out
    np.testing.assert_array_equal(out, expected[:, 3])


def test_reshape_ravel_transpose_on_device(fake_cuda):
    d = memory.to_device(host((2, 6)), target="cuda")
    np.testing.assert_array_equal(d.reshape(3, 4).copy_to_host(), host((2, 6)).reshape(3, 4))
    np.testing.assert_array_equal(d.T.copy_to_host(), host((2, 6)).T)
    assert d.T.is_c_contiguous() and d.ravel().shape == (12,)  # numba-cuda's .T: a copy
    np.testing.assert_array_equal(d.T.ravel().copy_to_host(), host((2, 6)).T.ravel())
    with pytest.raises(NotImplementedError):
        d[:, ::2].ravel()



def test_split_and_squeeze_are_views_of_device_memory(fake_cuda):
    """numba's DeviceNDArray.split (documented) and squeeze on a DeviceArray: views whose
    memory is the parent's."""
    d = memory.to_device(np.arange(10, dtype=np.int64), target="cuda")
    parts = list(d.split(4))
    assert [p.shape for p in parts] == [(4,), (4,), (2,)]
    assert all(isinstance(p, DeviceArray) for p in parts)
    assert parts[2]._ptr == d._ptr + 8 * 8
    np.testing.assert_array_equal(parts[2].copy_to_host(), [8, 9])
    s = memory.to_device(host((1, 4)), target="cuda").squeeze()
    assert isinstance(s, DeviceArray) and s.shape == (4,) and s.strides == (4,)
    np.testing.assert_array_equal(s.copy_to_host(), host((1, 4))[0])
    zero_d = memory.to_device(np.ones((1, 1), np.float32), target="cuda").squeeze()
    assert isinstance(zero_d, DeviceArray) and zero_d.shape == ()


def test_a_negative_shape_is_refused_before_allocating(fake_cuda):
    from gpunb.runtime.memory import device_array

    with pytest.raises(ValueError, match="negative dimensions"):
        device_array((4, -1), target="cuda")
    with pytest.raises(ValueError, match="negative dimensions"):
        DeviceArray((-2,), dtype=np.float32)
    assert not [c for c in fake_cuda.calls if c[0] == "cuMemAlloc"]


def test_strided_views_copy_only_their_elements(fake_cuda):
    a = host((4, 5, 6))
    d = memory.to_device(a, target="cuda")
    for index in [(slice(None), 1), (slice(None), slice(None), 2), (slice(None, None, 2),),
                  (slice(None), slice(1, 4), slice(None, None, 3)), (slice(None, None, -1), 0),
                  (0, slice(None, None, -2), slice(None, None, -1))]:
        np.testing.assert_array_equal(d[index].copy_to_host(), a[index])
        fresh = np.full_like(a[index], -3)
        d[index].copy_to_device(fresh)
        a[index] = -3
        np.testing.assert_array_equal(d.copy_to_host(), a)  # gaps untouched
    d[:, 2, ::2] = 7
    a[:, 2, ::2] = 7
    np.testing.assert_array_equal(d.copy_to_host(), a)
    assert any(c[0] == "cuMemcpy2D" for c in fake_cuda.calls)
    s = memory.stream(target="cuda")
    out = d[:, :, 1].copy_to_host(stream=s)
    np.testing.assert_array_equal(out, a[:, :, 1])
    assert any(c[0] == "cuMemcpy2DAsync" for c in fake_cuda.calls)


def test_fortran_and_empty_arrays(fake_cuda):
    f = np.asfortranarray(host((3, 5), np.float64))
    d = memory.to_device(f, target="cuda")
    assert d.is_f_contiguous() and d.strides == f.strides
    np.testing.assert_array_equal(d.copy_to_host(), f)
    e = memory.device_array((0, 3), target="cuda")
    assert e.size == 0 and e.copy_to_host().shape == (0, 3)
    like = memory.device_array_like(f, target="cuda")
    assert like.is_f_contiguous() and like.dtype == np.float64


def test_device_to_device_copies(fake_cuda):
    a = memory.to_device(host(), target="cuda")
    b = memory.device_array_like(a, target="cuda")
    b.copy_to_device(a)
    np.testing.assert_array_equal(b.copy_to_host(), host())
    assert any(c[0] == "cuMemcpyDtoD" for c in fake_cuda.calls)


def test_cuda_array_interface(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    cai = d.__cuda_array_interface__
    assert cai == {"shape": (3, 4), "strides": None, "data": (d._ptr, False), "typestr": "<f4",
                   "version": 3, "stream": None}
    col = d[:, 1]
    assert col.__cuda_array_interface__["strides"] == (16,)
    view = memory.as_cuda_array(col)  # consumed back through the interface: no copy
    assert view is col
    again = memory.from_cuda_array_interface(col.__cuda_array_interface__, owner=col)
    assert again._ptr == col._ptr and again.strides == (16,)
    np.testing.assert_array_equal(again.copy_to_host(), host()[:, 1])
    s = memory.stream(target="cuda")
    bound = d.bind(s)
    assert bound.__cuda_array_interface__["stream"] == s.handle
    rec = memory.device_array(3, np.dtype([("a", np.int32), ("b", np.float64)]), target="cuda")
    assert rec.__cuda_array_interface__["descr"] == [("a", "<i4"), ("b", "<f8")]


def test_dlpack_export_is_a_cuda_tensor(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    assert d.__dlpack_device__() == (dlpack.kDLCUDA, 0)
    tensor = dlpack.import_capsule(d[:, ::2].__dlpack__())
    assert tensor.device_type == dlpack.kDLCUDA and tensor.data == d._ptr
    assert tensor.shape == (3, 2) and tensor.strides == (16, 8)
    with pytest.raises(BufferError):
        d.__dlpack__(copy=True)


def test_async_copies_use_the_stream(fake_cuda):
    s = memory.stream(target="cuda")
    d = memory.to_device(host(), stream=s, target="cuda")
    out = d.copy_to_host(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(out, host())
    names = [c[0] for c in fake_cuda.calls]
    assert "cuMemcpyHtoDAsync" in names and "cuMemcpyDtoHAsync" in names
    assert any(c[0] == "cuMemcpyDtoHAsync" and c[1][-1] == s.handle for c in fake_cuda.calls)


def test_events_time_between_records(fake_cuda):
    start, end = memory.event(target="cuda"), memory.event(target="cuda")
    start.record()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) == pytest.approx(1.5)
    assert memory.event_elapsed_time(start, end) == pytest.approx(1.5)
    assert end.query()


def test_allocation_failure_is_a_launch_error_with_a_hint(fake_cuda):
    fake_cuda.fail_next["cuMemAlloc"] = fake_cuda.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(LaunchError, match="out of memory"):
        memory.device_array(10, target="cuda")


def test_device_array_refused_by_copies_of_wrong_shape(fake_cuda):
    d = memory.device_array((2, 2), np.float32, target="cuda")
    with pytest.raises(ValueError, match="shape"):
        d.copy_to_device(np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        d.copy_to_device(np.zeros((2, 2), np.float64))
    with pytest.raises(ValueError, match="shape"):
        d.copy_to_device(np.arange(4, dtype=np.float32))
    d.copy_to_device(np.arange(4, dtype=np.float32).reshape(1, 2, 2))  # numba: squeezed shapes
    np.testing.assert_array_equal(d.copy_to_host(), [[0, 1], [2, 3]])


def test_to_device_of_a_device_array_copies_on_the_device(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    fake_cuda.calls.clear()
    e = memory.to_device(d, target="cuda")
    assert e._ptr != d._ptr
    np.testing.assert_array_equal(e.copy_to_host(), host())
    assert [c[0] for c in fake_cuda.calls if c[0].startswith("cuMemcpy")][0] == "cuMemcpyDtoD"


def test_occupancy_tables_fall_back_to_the_device(fake_cuda, monkeypatch):
    from fake_cuda_driver import H100_ATTRIBUTES

    from gpunb.backends.cuda import occupancy

    monkeypatch.setitem(H100_ATTRIBUTES, "COMPUTE_CAPABILITY_MAJOR", 10)
    occ = occupancy.occupancy("sm_100", 256, 32, 0)  # not in the table: read from the device
    assert occ.arch == "sm_100" and occ.active_blocks_per_sm == 8


@pytest.mark.parametrize("make", [lambda: cuda.to_device(None),
                                  lambda: cuda.to_device(np.array([1, None], dtype=object)),
                                  lambda: cuda.device_array(3, dtype=object)])
def test_arrays_of_python_objects_are_refused_on_the_cuda_target(simulated_gpu, make):
    with pytest.raises(TypeError, match=r"cannot be put in device memory"):
        make()
    assert not [c for c in simulated_gpu.calls if c[0] == "cuMemAlloc"]  # nothing allocated
