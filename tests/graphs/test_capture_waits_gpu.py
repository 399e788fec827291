"""Waits on a stream while it captures a graph, from another thread, on a real GPU (the `gpu`
marker): stream.synchronize() / query() of the capturing stream is a GraphError, and the capture
(gpunb's, or torch.cuda.graph's) stays valid - the driver refuses a query of a capturing stream
in every mode and ends the capture. The same against the simulated driver:
test_capture_releases_simulated.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from capture_kernels import inc

import gpunb
from gpunb import cuda

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("on_the_gpu")]


def _wait_elsewhere(stream) -> list:
    errors = []

    def other():
        for wait in (stream.synchronize, stream.query):
            try:
                wait()
            except gpunb.GraphError as exc:
                errors.append(exc)

    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    return errors


def test_waiting_on_a_gpunb_capturing_stream_from_another_thread():
    k_inc = cuda.jit(inc)
    d = cuda.to_device(np.zeros(256, np.float32))
    k_inc[1, 256](d)
    cuda.synchronize()
    with gpunb.graph() as g:
        k_inc[1, 256](d)
        errors = _wait_elsewhere(g.stream)
        k_inc[1, 256](d)
    assert len(errors) == 2
    g.replay()
    cuda.synchronize()
    assert (d.copy_to_host() == 3).all()


def test_waiting_on_torchs_capturing_stream_from_another_thread():
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
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        capturing = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
        k_inc[16, 256, gt.current_stream](x)
        errors = _wait_elsewhere(capturing)
    assert len(errors) == 2
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 2).all()
