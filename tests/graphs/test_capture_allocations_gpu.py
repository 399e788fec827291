"""gpunb arrays made while torch.cuda.graph captures in global mode (its default), on a real GPU
(the `gpu` marker): in another thread, and in the capturing thread (as torch's own allocator
allocates there). cuMemAlloc / cuMemHostAlloc outside relaxed mode were refused
(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, graphs8's probe) and invalidated torch's capture. The
same against the simulated driver: test_capture_allocations_simulated.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from capture_kernels import inc

from gpunb import cuda

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("on_the_gpu")]


def _warm_graph(torch, k_inc, x):
    import gpunb.torch as gt

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        k_inc[16, 256, gt.current_stream](x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def test_arrays_made_on_another_thread_while_torch_captures():
    torch = pytest.importorskip("torch")
    import gpunb.torch as gt

    k_inc = cuda.jit(inc)
    x = torch.zeros(4096, device="cuda")
    _warm_graph(torch, k_inc, x)
    made, failed = [], []

    def other():
        try:
            made.append(cuda.device_array(1024, np.float32))
            made.append(cuda.pinned_array(1024, np.float32))
            made.append(cuda.mapped_array(64, np.float32))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k_inc[16, 256, gt.current_stream](x)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        k_inc[16, 256, gt.current_stream](x)
    assert failed == [] and len(made) == 3
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 3).all()  # 1 from the warm-up, 2 from the replay


def test_a_device_array_made_inside_torch_cuda_graph_is_written_by_the_replay():
    torch = pytest.importorskip("torch")
    import gpunb.torch as gt

    k_inc = cuda.jit(inc)
    x = torch.zeros(4096, device="cuda")
    _warm_graph(torch, k_inc, x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        scratch = cuda.device_array(4096, np.float32)  # made during the capture, kept alive
        k_inc[16, 256, gt.current_stream](scratch)
        k_inc[16, 256, gt.current_stream](x)
    scratch.copy_to_device(np.zeros(4096, np.float32))
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    assert (scratch.copy_to_host() == 2).all() and (x == 3).all()
