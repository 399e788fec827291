"""Driver calls made while a stream captures, against the simulated driver, which refuses what
the H200's driver refused (fake_cuda_graphs.py: frees, unloads, queries from a thread whose
capture mode is not relaxed, cuCtxSynchronize while anything captures): the collector's
releases inside a gpunb capture and inside another library's global-mode capture, and
cuda.synchronize() / stream.synchronize() on another thread while one captures. The same on the
GPU: test_capture_releases_gpu.py."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from capture_kernels import inc, twice

import gpunb
from gpunb import cuda
from gpunb.backends.cuda import capture_safe


def cyclic_garbage() -> tuple:
    """(weak references, device pointer) of objects only the cyclic collector frees, holding
    device memory, pinned memory, a loaded module and an instantiated graph."""
    kernel = cuda.jit(twice)
    memory = cuda.to_device(np.ones(64, np.float32))
    kernel[1, 64](memory)
    pinned = cuda.pinned_array(16, np.float32)
    with gpunb.graph() as graph:
        kernel[1, 64](memory)
    cycle = [kernel, memory, pinned, graph]
    cycle.append(cycle)
    refs = [weakref.ref(item) for item in (kernel, memory, graph)]
    return refs, int(memory.device_ctypes_pointer.value)


def test_garbage_collected_inside_a_capture_is_released_and_the_capture_stays_valid(
        simulated_gpu):
    fake = simulated_gpu
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    k_inc[1, 8](d)
    refs, pointer = cyclic_garbage()
    with gpunb.graph() as g:
        k_inc[1, 8](d)
        gc.collect()  # the finalizers run in the capturing thread
        k_inc[1, 8](d)
    assert all(ref() is None for ref in refs)
    assert fake.refused == []
    assert pointer in fake.freed  # released then, not held back
    assert "cuModuleUnload" in [name for name, _ in fake.calls]
    assert "cuGraphExecDestroy" in [name for name, _ in fake.calls]
    launched = len(fake.launches)
    g.replay()
    assert len(fake.launches) == launched + 2


def test_garbage_collected_inside_another_librarys_global_capture(simulated_gpu):
    # what torch.cuda.graph does by default: a capture in global mode in the user's thread,
    # gpunb launches on its stream
    fake = simulated_gpu
    cu = fake
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    k_inc[1, 8](d)
    refs, _ = cyclic_garbage()
    stream = int(cu.cuStreamCreate(1)[1])  # a non-blocking stream, as torch's side streams
    assert cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
                                   )[0] == cu.CUresult.CUDA_SUCCESS
    k_inc[1, 8, stream](d)
    gc.collect()
    k_inc[1, 8, stream](d)
    err, graph = cu.cuStreamEndCapture(stream)
    assert err == cu.CUresult.CUDA_SUCCESS and len(fake.graphs[int(graph)]) == 2
    assert all(ref() is None for ref in refs) and fake.refused == []


def test_synchronize_on_another_thread_while_one_captures_waits_stream_by_stream(simulated_gpu):
    fake = simulated_gpu
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    k_inc[1, 8](d)
    mine = cuda.stream()  # a stream gpunb made: waited for
    done, failed = [], []

    def other():
        try:
            cuda.synchronize()
            done.append(True)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    with gpunb.graph() as g:
        k_inc[1, 8](d)
        before = len(fake.calls)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        during = fake.calls[before:]
        k_inc[1, 8](d)
    assert failed == [] and done == [True] and fake.refused == []
    assert "cuCtxSynchronize" not in [name for name, _ in during]
    queried = [int(args[0] or 0) for name, args in during if name == "cuStreamQuery"]
    assert 0 in queried and int(mine.handle) in queried
    assert int(g.stream.handle) not in queried  # the capturing stream runs nothing
    cuda.synchronize()  # no capture open: the context-wide wait, as before
    assert fake.calls[-1][0] == "cuCtxSynchronize"


def test_synchronize_leaves_the_legacy_stream_alone_while_a_blocking_stream_captures(
        simulated_gpu):
    fake = simulated_gpu
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    blocking = cuda.stream()  # CUDA's default: ordered with the legacy stream
    with gpunb.graph(stream=blocking) as g:
        k_inc[1, 8](d)
        worker = threading.Thread(target=cuda.synchronize)
        worker.start()
        worker.join()
    assert fake.refused == [] and g.launches  # the capture ended, valid
    assert not fake.captures


def test_stream_synchronize_during_another_threads_global_capture(simulated_gpu):
    fake = simulated_gpu
    cu = fake
    mine = cuda.stream()
    ready, finish = threading.Event(), threading.Event()
    ended = []

    def capture_elsewhere():
        stream = int(cu.cuStreamCreate(1)[1])
        cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL)
        ready.set()
        finish.wait(10)
        ended.append(cu.cuStreamEndCapture(stream)[0])

    worker = threading.Thread(target=capture_elsewhere)
    worker.start()
    ready.wait(10)
    try:
        mine.synchronize()  # a stream that does not capture: a wait, not an error
        cuda.event().synchronize()
    finally:
        finish.set()
        worker.join()
    assert ended == [cu.CUresult.CUDA_SUCCESS] and fake.refused == []


def test_relaxed_restores_the_threads_mode_also_when_the_call_fails(simulated_gpu):
    cu = simulated_gpu
    modes = cu.CUstreamCaptureMode
    seen = []

    def call():
        seen.append(cu.cuThreadExchangeStreamCaptureMode(modes.CU_STREAM_CAPTURE_MODE_RELAXED)[1])
        raise RuntimeError("the release failed")

    with pytest.raises(RuntimeError, match="the release failed"):
        capture_safe.relaxed(cu, call)
    assert seen == [modes.CU_STREAM_CAPTURE_MODE_RELAXED]
    previous = cu.cuThreadExchangeStreamCaptureMode(modes.CU_STREAM_CAPTURE_MODE_GLOBAL)[1]
    assert previous == modes.CU_STREAM_CAPTURE_MODE_GLOBAL


def test_the_capturing_stream_synchronized_from_another_thread_is_refused_not_invalidated(
        simulated_gpu):
    """Querying or synchronizing a stream that captures is invalid in every mode (CUDA's
    programming guide) and invalidates the capture: another thread's stream.synchronize() /
    query() of it - gpunb's capture or another library's - is a GraphError saying so."""
    fake = simulated_gpu
    cu = fake
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    k_inc[1, 8](d)
    errors = []

    def other(stream):
        for wait in (stream.synchronize, stream.query):
            try:
                wait()
            except gpunb.GraphError as exc:
                errors.append(str(exc))

    with gpunb.graph() as g:
        k_inc[1, 8](d)
        worker = threading.Thread(target=other, args=(g.stream,))
        worker.start()
        worker.join()
        k_inc[1, 8](d)
    assert fake.refused == [] and len(g.launches) == 2
    assert len(errors) == 2 and all("captures a graph" in e for e in errors)
    foreign = int(cu.cuStreamCreate(1)[1])
    mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
    assert cu.cuStreamBeginCapture(foreign, mode)[0] == cu.CUresult.CUDA_SUCCESS
    worker = threading.Thread(target=other, args=(cuda.external_stream(foreign),))
    worker.start()
    worker.join()
    assert cu.cuStreamEndCapture(foreign)[0] == cu.CUresult.CUDA_SUCCESS
    assert fake.refused == [] and len(errors) == 4
    g.stream.synchronize()  # after the capture: a wait as usual
