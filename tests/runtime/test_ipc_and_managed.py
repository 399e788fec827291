"""CUDA IPC (numba-cuda's get_ipc_handle / open_ipc_array) between two processes, and managed
memory (cuda.managed_array). The handles pickle on any machine; the sharing itself and managed
memory run on the device (gpu marker); on the CPU target managed_array is numpy memory."""

from __future__ import annotations

import concurrent.futures
import multiprocessing as mp
import os
import pickle

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.runtime.ipc import IpcArrayHandle


def test_an_ipc_handle_pickles_without_its_mapping():
    from gpunb.runtime.devicearray import DeviceAllocation, DeviceArray

    handle = IpcArrayHandle(bytes(range(64)), 24, (3, 2), (16, 8), np.float64, 72, DeviceArray,
                            DeviceAllocation)
    handle._opened = 1234  # as if open in this process
    again = pickle.loads(pickle.dumps(handle))
    assert again.handle == bytes(range(64)) and again.offset == 24 and again.shape == (3, 2)
    assert again._opened is None and again.array_class is DeviceArray


def test_a_raw_handle_must_be_64_bytes():
    from gpunb.runtime.ipc import open_handle

    with pytest.raises(ValueError, match="64 bytes"):
        open_handle(b"short")


def test_managed_arrays_are_numpy_on_the_cpu_target():
    gpunb.set_target("cpu")
    try:
        a = cuda.managed_array((2, 3), dtype=np.float32, order="F")
        assert isinstance(a, np.ndarray) and a.shape == (2, 3) and a.flags.f_contiguous
    finally:
        gpunb.set_target(None)


def _read_shared(handle, parent_pid):
    assert os.getpid() != parent_pid
    with handle as darr:
        got = darr.copy_to_host()
        with pytest.raises(ValueError, match="IpcHandle is already opened"):
            handle.open()
    return got


def _read_raw(raw, size, parent_pid):
    assert os.getpid() != parent_pid
    with cuda.open_ipc_array(raw, shape=size // 8, dtype=np.int64) as darr:
        return darr.copy_to_host()


@pytest.mark.gpu
@pytest.mark.parametrize("index", [None, slice(3, None), slice(3, 8)])
def test_ipc_shares_a_device_array_with_another_process(index):
    gpunb.set_target("cuda")
    try:
        devarr = cuda.to_device(np.arange(10, dtype=np.int64))
        view = devarr if index is None else devarr[index]
        expected = view.copy_to_host()
        with concurrent.futures.ProcessPoolExecutor(
                mp_context=mp.get_context("spawn")) as pool:
            got = pool.submit(_read_shared, view.get_ipc_handle(), os.getpid()).result(60)
            np.testing.assert_array_equal(got, expected)
            whole = devarr.get_ipc_handle()
            raw = pool.submit(_read_raw, whole.handle, whole.size, os.getpid()).result(60)
            np.testing.assert_array_equal(raw, np.arange(10))
    finally:
        gpunb.set_target(None)


@pytest.mark.gpu
def test_managed_memory_is_shared_by_host_and_kernels():
    gpunb.set_target("cuda")
    try:
        a = cuda.managed_array(64, dtype=np.float32)
        a[:] = 1.0  # written by the host, in place

        @cuda.jit
        def add(r, x):
            i = cuda.grid(1)
            if i < r.size:
                r[i] += x * i

        add[1, 64](a, 2.0)
        cuda.synchronize()
        np.testing.assert_array_equal(a, 1.0 + 2.0 * np.arange(64))
        host_attached = cuda.managed_array(8, dtype=np.int32, attach_global=False)
        host_attached[:] = 3
        np.testing.assert_array_equal(host_attached, 3)
    finally:
        gpunb.set_target(None)
