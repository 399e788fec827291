"""Driver calls the collector and other threads make while a stream captures, on a real GPU
(the `gpu` marker): garbage holding device memory, pinned memory, loaded kernels, streams,
events and graphs collected inside a `with gpunb.graph():` block and inside PyTorch's global-mode
capture, and cuda.synchronize() from another thread while one captures. Each of these made the
driver refuse a call and invalidate the capture (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED at the
next captured launch or at its end)."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from capture_kernels import inc, twice

import gpunb
from gpunb import cuda

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("on_the_gpu")]


def cyclic_garbage() -> list:
    """Weak references to objects that only the cyclic collector frees, each holding a driver
    resource: device memory, pinned memory, a loaded module (a kernel of its own), a stream, an
    event and an instantiated graph."""
    kernel = cuda.jit(twice)  # a dispatcher of its own: its module goes with it
    memory = cuda.to_device(np.ones(1 << 20, np.float32))
    kernel[1, 32](memory)
    pinned = cuda.pinned_array(1 << 16, np.float32)
    stream, event = cuda.stream(), cuda.event()
    with gpunb.graph() as graph:
        kernel[1, 32](memory)
    cuda.synchronize()
    cycle = [kernel, memory, pinned, stream, event, graph]
    cycle.append(cycle)
    refs = [weakref.ref(item) for item in (memory, stream, event, graph)]
    refs.append(weakref.ref(kernel))
    return refs


def test_garbage_collected_inside_a_gpunb_capture_leaves_it_valid():
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(256, np.float32))
    k_inc[1, 256](d)
    refs = cyclic_garbage()
    with gpunb.graph() as g:
        k_inc[1, 256](d)
        gc.collect()  # the finalizers run here, in the capturing thread
        k_inc[1, 256](d)
    assert all(ref() is None for ref in refs)  # really collected inside the block
    g.replay()
    cuda.synchronize()
    assert (d.copy_to_host() == 3).all()
    gc.collect()  # what was held back is released after the capture, and the GPU works on
    k_inc[1, 256](d)
    cuda.synchronize()
    assert (d.copy_to_host() == 4).all()


def test_garbage_collected_on_another_thread_during_a_capture():
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(256, np.float32))
    k_inc[1, 256](d)
    refs = cyclic_garbage()
    with gpunb.graph() as g:
        k_inc[1, 256](d)
        worker = threading.Thread(target=gc.collect)
        worker.start()
        worker.join()
        k_inc[1, 256](d)
    assert all(ref() is None for ref in refs)
    g.replay()
    cuda.synchronize()
    assert (d.copy_to_host() == 3).all()


def test_synchronize_on_another_thread_during_a_capture_waits_for_its_work():
    k_inc = cuda.jit(inc)
    mine = cuda.to_device(np.zeros(256, np.float32))
    theirs = cuda.to_device(np.zeros(1 << 22, np.float32))
    k_inc[1, 256](mine)
    seen = []

    def other():
        for _ in range(20):  # enough work that a synchronize that did not wait would see it
            k_inc[(1 << 22) // 256, 256](theirs)
        cuda.synchronize()
        seen.append(float(theirs.copy_to_host()[-1]))

    with gpunb.graph() as g:
        k_inc[1, 256](mine)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        k_inc[1, 256](mine)
    assert seen == [20.0]
    g.replay()
    cuda.synchronize()
    assert (mine.copy_to_host() == 3).all()


def test_garbage_collected_inside_torch_cuda_graph_global_capture():
    torch = pytest.importorskip("torch")
    import gpunb.torch as gt

    k_inc = cuda.jit(inc)
    x = torch.zeros(4096, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        k_inc[16, 256, gt.current_stream](x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    refs = cyclic_garbage()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # capture_error_mode "global": every thread is watched
        k_inc[16, 256, gt.current_stream](x)
        gc.collect()
        k_inc[16, 256, gt.current_stream](x)
    assert all(ref() is None for ref in refs)
    torch.cuda.synchronize()
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 3).all()  # 1 from the warm-up, 2 from the replay
    gc.collect()
    k_inc[16, 256, gt.current_stream](x)
    torch.cuda.synchronize()
    assert (x == 4).all()


def test_a_first_launch_inside_torch_cuda_graph_compiles_and_captures():
    torch = pytest.importorskip("torch")
    import gpunb.torch as gt

    k_twice = cuda.jit(twice)  # nothing compiled before the capture
    x = torch.ones(4096, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k_twice[16, 256, gt.current_stream](x)
    torch.cuda.synchronize()
    assert (x == 1).all()
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 4).all()
