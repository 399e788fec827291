"""numba-cuda's memory IPC handles: `cuda.current_context().get_ipc_handle(devarr.gpu_data)`
exports memory (a view's gpu_data is the bytes it spans), pickles without the exporting memory,
and `open_array` / `cuda.open_ipc_array` map it as arrays. On the simulated driver "another
process" maps the same host memory, so what a receiver reads is checked here; the real sharing
between two processes runs on the device (gpu marker)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing as mp
import os
import pickle

import numpy as np
import pytest

import gpunb
from gpunb import cuda


@pytest.mark.parametrize("index", [None, slice(3, None), slice(3, 8), slice(None, 8),
                                   slice(8, 2, -2)])
def test_a_views_memory_handle_exports_the_view(simulated_gpu, index):
    whole = cuda.to_device(np.arange(10, dtype=np.int64))
    devarr = whole if index is None else whole[index]
    expected = devarr.copy_to_host()
    handle = cuda.current_context().get_ipc_handle(devarr.gpu_data)
    assert handle.base is devarr.gpu_data and handle.size == devarr.gpu_data.nbytes
    received = pickle.loads(pickle.dumps(handle))
    assert received.base is None and received.size == handle.size
    assert received.handle.reserved == handle.handle.reserved
    span = received.open_array(cuda.current_context(), shape=received.size // 8,
                               dtype=np.int64)
    got = span.copy_to_host()
    if devarr.strides[0] < 0:
        got = got[::-1]
    np.testing.assert_array_equal(got[::abs(devarr.strides[0]) // 8], expected)
    with pytest.raises(ValueError, match="IpcHandle is already opened"):
        received.open(None)
    received.close()
    assert simulated_gpu.calls[-1][0] == "cuIpcCloseMemHandle"


def test_raw_handle_bytes_open_as_an_array(simulated_gpu):
    devarr = cuda.to_device(np.arange(10, dtype=np.intp))
    handle = cuda.current_context().get_ipc_handle(devarr.gpu_data)
    with cuda.open_ipc_array(handle.handle.reserved, shape=handle.size // 8,
                             dtype=np.intp) as darr:
        np.testing.assert_array_equal(darr.copy_to_host(), np.arange(10))


def test_the_exporting_process_cannot_open_its_handle(simulated_gpu):
    devarr = cuda.to_device(np.arange(4, dtype=np.float32))
    handle = cuda.current_context().get_ipc_handle(devarr.gpu_data)
    with pytest.raises(ValueError, match="process that made an IPC handle"):
        handle.open(None)
    received = pickle.loads(pickle.dumps(handle))
    with pytest.raises(ValueError, match="needs more than the 16 bytes"):
        received.open_array(None, shape=5, dtype=np.float32)


def test_a_slices_device_pointer_is_the_slices_start(simulated_gpu):
    devarr = cuda.to_device(np.arange(10, dtype=np.float64))
    part = devarr[4:]
    assert int(part.gpu_data.device_pointer) == devarr._ptr + 32
    assert part.alloc_size == 48 and devarr.alloc_size == 80
    part[0] = -1.0  # a view still writes its parent's memory
    assert devarr.copy_to_host()[4] == -1.0


def _read_memory_handle(handle, parent_pid):
    assert os.getpid() != parent_pid
    darr = handle.open_array(cuda.current_context(), shape=handle.size // 8, dtype=np.int64)
    got = darr.copy_to_host()
    handle.close()
    return got


@pytest.mark.gpu
@pytest.mark.parametrize("index", [None, slice(3, None), slice(3, 8)])
def test_memory_handles_share_with_another_process(index):
    gpunb.set_target("cuda")
    try:
        whole = cuda.to_device(np.arange(10, dtype=np.int64))
        devarr = whole if index is None else whole[index]
        handle = cuda.current_context().get_ipc_handle(devarr.gpu_data)
        with concurrent.futures.ProcessPoolExecutor(
                mp_context=mp.get_context("spawn")) as pool:
            got = pool.submit(_read_memory_handle, handle, os.getpid()).result(60)
        np.testing.assert_array_equal(got, devarr.copy_to_host())
    finally:
        gpunb.set_target(None)


@pytest.mark.parametrize("index", [None, slice(3, None), slice(3, 8)])
def test_an_array_handle_carries_its_view(simulated_gpu, index):
    whole = cuda.to_device(np.arange(10, dtype=np.int64))
    devarr = whole if index is None else whole[index]
    handle = pickle.loads(pickle.dumps(devarr.get_ipc_handle()))
    with handle as darr:
        np.testing.assert_array_equal(darr.copy_to_host(), devarr.copy_to_host())
