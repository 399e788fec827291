"""Allocations made while another library captures in global mode (torch.cuda.graph's default),
against the simulated driver, which refuses what the H200 refused (RESULTS.md, graphs8's
probe: cuMemAlloc and cuMemHostAlloc from any thread not in relaxed mode, while a global-mode
capture is open, are CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate that capture).
gpunb's device, pinned and mapped arrays made then, in the capturing thread (as torch's own
caching allocator does, in relaxed mode) or in any other, must neither fail nor break the
capture. gpunb's own captures keep refusing allocations (runtime/capture.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import GraphError


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


class ForeignCapture:
    """A global-mode capture on a non-blocking stream made with the driver directly, as
    torch.cuda.graph makes one (gpunb knows nothing of it)."""

    def __init__(self, cu):
        self.cu = cu
        self.stream = int(cu.cuStreamCreate(1)[1])

    def __enter__(self):
        mode = self.cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
        assert self.cu.cuStreamBeginCapture(self.stream, mode)[0] == \
            self.cu.CUresult.CUDA_SUCCESS
        return self

    def __exit__(self, *exc):
        self.status = self.cu.cuStreamEndCapture(self.stream)[0]


def _allocate_all() -> list:
    d = cuda.device_array(64, np.float32)
    h = cuda.to_device(np.arange(16, dtype=np.float32))
    pinned = cuda.pinned_array(16, np.float32)
    mapped = cuda.mapped_array(16, np.float32)
    return [d, h, pinned, mapped]


def test_arrays_made_on_another_thread_during_a_foreign_global_capture(simulated_gpu):
    fake = simulated_gpu
    made, failed = [], []

    def other():
        try:
            made.extend(_allocate_all())
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    with ForeignCapture(fake) as capture:
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert failed == [] and len(made) == 4
    assert fake.refused == [] and capture.status == fake.CUresult.CUDA_SUCCESS
    assert (made[1].copy_to_host() == np.arange(16)).all()


def test_arrays_made_in_the_capturing_thread_of_a_foreign_global_capture(simulated_gpu):
    """What torch's allocator does inside torch.cuda.graph (cudaMalloc in relaxed mode)."""
    fake = simulated_gpu
    k_inc = cuda.jit(inc)
    with ForeignCapture(fake) as capture:
        d = cuda.device_array(8, np.float32)
        k_inc[1, 8, capture.stream](d)
    assert fake.refused == [] and capture.status == fake.CUresult.CUDA_SUCCESS
    assert len(fake.graphs) == 1


def test_gpunb_captures_still_refuse_allocations(simulated_gpu):
    with pytest.raises(GraphError):
        with gpunb.graph():
            cuda.device_array(8, np.float32)
