"""A process forked after CUDA was initialised refuses the GPU with numba-cuda's
CudaDriverError("CUDA initialized before forking"), instead of using the parent's contexts
(which crashed the worker); a fork before initialisation is free to use CUDA. Simulated driver;
the real fork runs on the device (gpu marker)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing as mp
import os
import pickle
import sys

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.backends.cuda import driver
from gpunb.cuda.cudadrv.error import CudaDriverError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork: Linux")


def _to_device_in_child():
    return cuda.to_device(np.arange(3)).copy_to_host()


def test_a_child_forked_after_init_refuses_cuda(simulated_gpu):
    cuda.current_context()  # CUDA initialised in this process
    with concurrent.futures.ProcessPoolExecutor(mp_context=mp.get_context("fork")) as pool:
        future = pool.submit(_to_device_in_child)
        with pytest.raises(CudaDriverError, match="CUDA initialized before forking") as info:
            future.result(60)
    assert f"forked from process {os.getpid()}" in str(info.value)
    assert "spawn" in str(info.value)


def test_the_forking_process_keeps_its_gpu(simulated_gpu):
    cuda.current_context()
    assert driver.state.forked_from is None
    np.testing.assert_array_equal(_to_device_in_child(), np.arange(3))


def test_driver_errors_pickle():
    error = CudaDriverError("cuMemAlloc failed", code=2, name="CUDA_ERROR_OUT_OF_MEMORY",
                            hint="free memory")
    again = pickle.loads(pickle.dumps(error))
    assert (again.code, again.name, again.hint) == (2, "CUDA_ERROR_OUT_OF_MEMORY", "free memory")
    assert str(again) == str(error)


@pytest.mark.gpu
def test_fork_after_init_on_a_gpu():
    gpunb.set_target("cuda")
    try:
        cuda.current_context()
        with concurrent.futures.ProcessPoolExecutor(
                mp_context=mp.get_context("fork")) as pool:
            future = pool.submit(cuda.to_device, np.arange(1))
            with pytest.raises(CudaDriverError, match="CUDA initialized before forking"):
                future.result(60)
    finally:
        gpunb.set_target(None)
