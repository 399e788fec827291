"""gpunb graphs on a real GPU (the `gpu` marker; the API itself runs on CUDA through
test_graph_api.py's `target` fixture): results after replay and update, a first compile inside
a capture, pinned and pageable copies, work of other libraries on the graph's stream, gpunb
launches inside PyTorch's and CuPy's own stream capture, and a stream that stays usable after a
capture failed in the driver."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

pytestmark = pytest.mark.gpu


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def axpy(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + out[i]


@pytest.fixture(autouse=True)
def on_the_gpu():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


def test_a_hundred_launches_replay_and_update_on_the_gpu():
    k_axpy = cuda.jit(axpy)
    n = 1 << 16
    x = cuda.to_device(np.ones(n, np.float32))
    out = cuda.to_device(np.zeros(n, np.float32))
    with gpunb.graph() as g:  # compiled here, on its first launch: a CUDA 12.3+ driver loads it
        for k in range(100):
            k_axpy[n // 256, 256](out, x, np.float32(k % 3))
    assert not out.copy_to_host().any()
    g.replay()
    cuda.synchronize()
    expected = sum(k % 3 for k in range(100))
    assert (out.copy_to_host() == expected).all()
    g.update(k_axpy, a=np.float32(1))
    stream = cuda.stream()
    g.replay(stream=stream)
    stream.synchronize()
    assert (out.copy_to_host() == expected + 100).all()
    assert len(g.nodes) == 100 and all(node.kind == "kernel" for node in g.nodes)


def test_pinned_copies_are_captured_and_pageable_ones_refused():
    k_inc = cuda.jit(inc)
    d = cuda.device_array(1024, np.float32)
    host_in = cuda.pinned_array(1024, np.float32)
    host_out = cuda.pinned_array(1024, np.float32)
    with gpunb.graph() as g:
        d.copy_to_device(host_in)
        k_inc[4, 256](d)
        d.copy_to_host(host_out)
    for value in (1, 7):
        host_in[:] = value
        g.replay()
        cuda.synchronize()
        assert (host_out == value + 1).all()
    with pytest.raises(gpunb.GraphError, match="pageable memory"):
        with gpunb.graph():
            d.copy_to_device(np.ones(1024, np.float32))


def test_other_libraries_work_on_the_graphs_stream_is_captured_and_listed():
    cp = pytest.importorskip("cupy")
    k_inc = cuda.jit(inc)
    a = cp.zeros(1024, cp.float32)
    k_inc[4, 256](a)
    with gpunb.graph() as g:
        k_inc[4, 256](a)
        with cp.cuda.ExternalStream(int(g.stream.handle)):
            a *= 3  # CuPy's kernel, on the capturing stream
    cp.cuda.Device().synchronize()
    assert float(a[0]) == 1.0  # captured, not run
    g.replay()
    cp.cuda.Device().synchronize()
    assert float(a[0]) == 6.0
    kinds = [(node.kind, node.recorded) for node in g.nodes]
    assert kinds[0] == ("kernel", True) and ("kernel", False) in kinds[1:]


def test_a_capture_the_driver_invalidates_leaves_the_stream_usable():
    torch = pytest.importorskip("torch")
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(256, np.float32))
    k_inc[1, 256](d)
    with pytest.raises(RuntimeError):  # torch's error for the driver's refusal
        with gpunb.graph() as g:
            k_inc[1, 256](d)
            torch.cuda.synchronize()  # not gpunb's: the driver refuses it in the capture
    k_inc[1, 256, g.stream](d)
    g.stream.synchronize()
    cuda.synchronize()
    assert (d.copy_to_host() == 2).all()
    with gpunb.graph() as again:
        k_inc[1, 256](d)
    again.replay()
    cuda.synchronize()
    assert (d.copy_to_host() == 3).all()


def test_gpunb_launches_inside_torch_cuda_graph():
    torch = pytest.importorskip("torch")
    import gpunb.torch as gt

    k_inc = cuda.jit(inc)
    x = torch.zeros(4096, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph advises
        k_inc[16, 256, gt.current_stream](x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k_inc[16, 256, gt.current_stream](x)  # torch's capturing stream, read at the launch
        x.mul_(2)
        k_inc[16, 256, torch.cuda.current_stream()](gt.kernel_argument(x))
    torch.cuda.synchronize()
    assert x[0].item() == 1.0  # captured by torch, not run
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 5).all()  # (1 + 1) * 2 + 1
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 13).all()


def test_gpunb_launches_inside_cupy_stream_capture():
    cp = pytest.importorskip("cupy")
    k_inc = cuda.jit(inc)
    a = cp.zeros(2048, cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    k_inc[8, 256, stream](a)
    stream.synchronize()
    with stream:
        stream.begin_capture()
        k_inc[8, 256, stream](a)  # a's interface names this capturing stream: no host wait
        a *= 2
        graph = stream.end_capture()
    assert float(a[0]) == 1.0
    graph.launch(stream)
    stream.synchronize()
    assert float(a[0]) == 4.0
