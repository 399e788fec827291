"""Several GPUs and dead contexts against the simulated driver: cuda.gpus / select_device /
list_devices, a module loaded per device and context, device arrays that know their device,
cross-device misuse as a LaunchError, peer copies, reset() after a sticky error. The same
behaviour on real GPUs is checked by tests/runtime/test_devices_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import LaunchError


@pytest.fixture
def two_gpus(fake_cuda):
    fake_cuda.device_count = 2
    gpunb.set_target("cuda")
    yield fake_cuda
    gpunb.set_target(None)


@cuda.jit
def scale(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * 2.0


def _launched_function(fake) -> int:
    return [c for c in fake.calls if c[0] == "cuLaunchKernel"][-1][1][0]


def test_gpus_list_and_select(two_gpus):
    assert len(cuda.gpus) == 2 and cuda.list_devices() is cuda.gpus
    assert [d.id for d in cuda.gpus] == [0, 1]
    assert cuda.gpus[1].compute_capability == (9, 0)  # numba's Device attributes
    assert cuda.get_current_device().id == 0
    with cuda.gpus[1]:
        assert cuda.get_current_device().id == 1 and cuda.gpus.current.id == 1
        with cuda.gpus[0]:
            assert cuda.get_current_device().id == 0
        assert cuda.get_current_device().id == 1
    assert cuda.get_current_device().id == 0
    assert cuda.select_device(1).id == 1 and cuda.get_current_device().id == 1
    with pytest.raises(IndexError, match="there is no GPU 2: 2 CUDA device"):
        cuda.gpus[2]
    retained = [c[1][0] for c in two_gpus.calls if c[0] == "cuDevicePrimaryCtxRetain"]
    assert retained == [0, 1]  # one primary context per device, retained once


def test_arrays_know_their_device_and_launches_refuse_another_devices(two_gpus):
    a0 = cuda.to_device(np.arange(8, dtype=np.float32))
    with cuda.gpus[1]:
        a1 = cuda.to_device(np.arange(8, dtype=np.float32))
        out1 = cuda.device_array(8, dtype=np.float32)
    assert a0.device_id == 0 and a1.device_id == 1
    with cuda.gpus[1]:
        scale[1, 8](out1, a1)  # every array on GPU 1: fine
        with pytest.raises(LaunchError, match="argument 2 is an array on GPU 0, but this "
                                              "launch runs on GPU 1") as info:
            scale[1, 8](out1, a0)
        assert "cuda.gpus[0]" in info.value.hint
    with pytest.raises(LaunchError, match="argument 1 is an array on GPU 1"):
        scale[1, 8](out1, a0)


def test_a_module_is_loaded_per_device(two_gpus):
    x = np.arange(8, dtype=np.float32)
    with cuda.gpus[0]:
        scale[1, 8](cuda.device_array(8, np.float32), cuda.to_device(x))
    with cuda.gpus[1]:
        scale[1, 8](cuda.device_array(8, np.float32), cuda.to_device(x))
    with cuda.gpus[0]:
        scale[1, 8](cuda.device_array(8, np.float32), cuda.to_device(x))
    loads = [c for c in two_gpus.calls if c[0] == "cuModuleLoadData"]
    assert len(loads) == 2  # device 0 once, device 1 once; the third launch reuses device 0's
    currents = [c[1][0] for c in two_gpus.calls if c[0] == "cuCtxSetCurrent"]
    assert "ctx1" in currents and currents[-1] == "ctx0"


def test_peer_copy_between_devices(two_gpus):
    host = np.arange(16, dtype=np.float64)
    a0 = cuda.to_device(host)
    with cuda.gpus[1]:
        b1 = cuda.device_array_like(host)
        b1.copy_to_device(a0)
    peers = [c for c in two_gpus.calls if c[0] == "cuMemcpyPeer"]
    assert len(peers) == 1 and peers[0][1][1] == "ctx1" and peers[0][1][3] == "ctx0"
    assert np.array_equal(b1.copy_to_host(), host)


def test_sticky_error_names_the_kernel_and_reset_recovers(fake_cuda):
    gpunb.set_target("cuda")
    try:
        x = cuda.to_device(np.arange(8, dtype=np.float32))
        out = cuda.device_array(8, np.float32)
        scale[1, 8](out, x)
        fake_cuda.fail_next["cuCtxSynchronize"] = fake_cuda.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
        with pytest.raises(LaunchError) as info:
            cuda.synchronize()
        message, hint = str(info.value), info.value.hint
        assert "kernel 'scale' (the latest launched)" in message
        assert "context is lost" in message and "gpunb.cuda.reset()" in hint
        assert "restarting the Python process" in hint
        assert "debug=True" in hint and "--sanitize memcheck" in hint
        assert "sanitize_launch(kernel[grid, block]" in hint and "Kernel > Restart" in hint
        loads = len([c for c in fake_cuda.calls if c[0] == "cuModuleLoadData"])
        cuda.reset()
        names = [c[0] for c in fake_cuda.calls]
        assert names.count("cuDevicePrimaryCtxReset") == 1
        assert names.count("cuDevicePrimaryCtxRelease") == 1
        assert names[-3:] == ["cuMemAlloc", "cuMemFree", "cuCtxSynchronize"]  # checked at once
        with pytest.raises(LaunchError, match="was reset .*its memory is gone"):
            x.copy_to_host()
        with pytest.raises(LaunchError, match="argument 1 of 'scale'.*was reset"):
            scale[1, 8](out, cuda.to_device(np.zeros(8, np.float32)))
        fresh_x = cuda.to_device(np.arange(8, dtype=np.float32))
        fresh_out = cuda.device_array(8, np.float32)
        scale[1, 8](fresh_out, fresh_x)  # the kernel loads into the fresh context
        assert len([c for c in fake_cuda.calls if c[0] == "cuModuleLoadData"]) == loads + 1
        assert fresh_x.gpu_data.token.handle == "ctx0-1"
    finally:
        gpunb.set_target(None)


def test_memory_of_a_reset_context_is_never_freed_again(fake_cuda):
    import gc

    gpunb.set_target("cuda")
    try:
        d = cuda.to_device(np.zeros(4, np.float32))
        ptr = d.gpu_data.ptr
        cuda.reset()
        del d
        gc.collect()
        assert ptr not in fake_cuda.freed  # its context took it; the address may be reused
    finally:
        gpunb.set_target(None)


def test_reset_says_so_when_the_driver_keeps_the_process_broken(fake_cuda):
    """Some drivers keep a process's device broken after a crashed kernel whatever is reset:
    reset() tries the fresh context at once and says that only a new process helps."""
    gpunb.set_target("cuda")
    try:
        cuda.to_device(np.zeros(4, np.float32))
        fake_cuda.fail_next["cuMemAlloc"] = fake_cuda.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
        with pytest.raises(LaunchError, match="fresh CUDA context of device 0 fails too") as info:
            cuda.reset()
        assert "restart the Python process" in info.value.hint
        cuda.reset()  # a later try starts again from scratch (and here succeeds)
        assert np.array_equal(cuda.to_device(np.ones(4, np.float32)).copy_to_host(), np.ones(4))
    finally:
        gpunb.set_target(None)


def test_reset_when_the_driver_refuses_a_fresh_context(fake_cuda):
    """What the H100's driver did (2026-11-24): after an illegal address, even retaining the
    primary context again fails with the same error. reset() says to restart the process."""
    gpunb.set_target("cuda")
    try:
        cuda.to_device(np.zeros(4, np.float32))
        fake_cuda.fail_next["cuDevicePrimaryCtxRetain"] = \
            fake_cuda.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
        with pytest.raises(LaunchError, match="fresh CUDA context of device 0 fails too "
                                              r"\(CUDA_ERROR_ILLEGAL_ADDRESS") as info:
            cuda.reset()
        assert "restart the Python process" in info.value.hint
    finally:
        gpunb.set_target(None)
