"""The CUDA half of gpunb.graph against the simulated driver (tests/runtime/fake_cuda_graphs.py:
a capturing stream turns work into nodes, the legacy stream and synchronisations refuse while a
stream captures): which driver calls gpunb makes, on which stream, with which parameters - and
that what must not reach the driver never does. The same API on a real GPU is covered by
test_graph_api.py (on the device) and test_graph_gpu.py."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import gpunb
from gpunb import cuda


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def scale(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a


def first_slot(params_address: int) -> int:
    """The first parameter's value (an array's data pointer) from a kernelParams address."""
    pointer = ctypes.c_void_p.from_address(params_address).value
    return ctypes.c_uint64.from_address(pointer).value


def float_slot(params_address: int, k: int) -> float:
    pointer = (ctypes.c_void_p * (k + 1)).from_address(params_address)[k]
    return ctypes.c_float.from_address(pointer).value


def called(fake, name: str) -> list:
    return [args for call, args in fake.calls if call == name]


def test_launches_are_captured_on_the_graphs_stream_and_replayed_as_one_launch(simulated_gpu):
    fake = simulated_gpu
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    kernel[1, 8](d)
    eager = len(fake.launches)
    with gpunb.graph() as g:
        for _ in range(3):
            kernel[1, 8](d)
    assert len(fake.launches) == eager  # nothing ran
    stream = int(g.stream.handle)
    assert stream not in (0, 1, 2)
    captured = [args for args in called(fake, "cuLaunchKernel") if len(args) == 3]
    assert len(captured) == 3 and all(int(s) == stream for _f, s, _p in captured)
    assert called(fake, "cuStreamBeginCapture")[0][1].name == \
        "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL"
    assert len(called(fake, "cuGraphInstantiate")) == 1
    g.replay()
    replayed = fake.launches[eager:]
    assert [entry[0] for entry in replayed] == ["graph kernel"] * 3
    assert all(first_slot(entry[5]) == d._ptr for entry in replayed)
    assert [launch.node for launch in g.launches] == [n["handle"] for n in
                                                      fake.graphs[g._engine.graph]]


def test_update_rewrites_the_kernel_node_of_the_executable_graph(simulated_gpu):
    fake = simulated_gpu
    kernel = cuda.jit(scale)
    x = cuda.to_device(np.ones(8, np.float32))
    out = cuda.device_array(8, np.float32)
    other = cuda.device_array(8, np.float32)
    with gpunb.graph() as g:
        kernel[1, 8](out, x, np.float32(2))
    g.update(0, out=other, a=np.float32(7))
    (exec_handle, node), = called(fake, "cuGraphExecKernelNodeSetParams")
    assert int(node) == g.launches[0].node
    start = len(fake.launches)
    g.replay()
    params = fake.launches[start][5]
    assert params == g.launches[0].params.address
    assert first_slot(params) == other._ptr
    slots = g.launches[0].spec.packer.slots
    assert float_slot(params, slots.index("f32")) == 7.0


def test_copies_between_pinned_and_device_memory_become_nodes(simulated_gpu):
    fake = simulated_gpu
    d = cuda.device_array(4, np.float32)
    pinned = cuda.pinned_array(4, np.float32)
    back = cuda.pinned_array(4, np.float32)
    pinned[:] = [1, 2, 3, 4]
    with gpunb.graph() as g:
        d.copy_to_device(pinned)
        d.copy_to_host(back)
    assert not back.any()  # captured, not copied
    g.replay()
    assert np.array_equal(back, [1, 2, 3, 4])
    pinned[:] = 9
    g.replay()
    assert (back == 9).all()
    assert [n.kind for n in g.nodes] == ["copy", "copy"]
    assert int(called(fake, "cuMemcpyHtoDAsync")[0][3]) == int(g.stream.handle)


def test_pageable_host_memory_is_refused_before_the_driver(simulated_gpu):
    fake = simulated_gpu
    d = cuda.device_array(4, np.float32)
    with pytest.raises(gpunb.GraphError, match="pageable memory") as info:
        with gpunb.graph():
            d.copy_to_device(np.ones(4, np.float32))
    assert "cuda.pinned_array" in str(info.value)
    assert called(fake, "cuMemcpyHtoDAsync") == [] and fake.captures == {}


def test_a_synchronisation_never_reaches_the_driver_and_the_capture_ends(simulated_gpu):
    fake = simulated_gpu
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    with pytest.raises(gpunb.GraphError, match="waits for the GPU"):
        with gpunb.graph() as g:
            kernel[1, 8](d)
            cuda.synchronize()
    assert called(fake, "cuCtxSynchronize") == []
    assert fake.captures == {}  # ended: the stream takes work again
    kernel[1, 8, g.stream](d)
    assert fake.launches[-1][4] == g.stream.handle


def test_a_capture_invalidated_behind_gpunbs_back_fails_clearly(simulated_gpu):
    fake = simulated_gpu
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    with pytest.raises(gpunb.GraphError, match="could not be completed") as info:
        with gpunb.graph() as g:
            kernel[1, 8](d)
            fake.cuCtxSynchronize()  # another library's synchronisation, say
    assert "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" in str(info.value)
    assert fake.captures == {}
    with pytest.raises(gpunb.GraphError, match="capture failed"):
        g.replay()


def test_a_driver_capture_error_inside_the_block_becomes_a_graph_error(simulated_gpu):
    fake = simulated_gpu
    d = cuda.to_device(np.zeros(8, np.float32))
    fake.fail_next["cuMemcpyDtoDAsync"] = fake.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    other = cuda.device_array(8, np.float32)
    with pytest.raises(gpunb.GraphError, match="the graph capture failed") as info:
        with gpunb.graph():
            other.copy_to_device(d)
    assert info.value.__cause__ is not None and fake.captures == {}


def test_work_on_a_stream_outside_the_capture_is_refused(simulated_gpu):
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    stream = cuda.stream()
    with pytest.raises(gpunb.GraphError, match="does not capture into this graph"):
        with gpunb.graph():
            kernel[1, 8, stream](d)


def test_a_graph_captures_on_a_stream_it_is_given_but_never_the_default(simulated_gpu):
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    mine = cuda.stream()
    with gpunb.graph(stream=mine) as g:
        kernel[1, 8](d)
        kernel[1, 8, mine](d)
    assert g.stream is mine and len(g.launches) == 2
    with pytest.raises(gpunb.GraphError, match="cannot be captured on the default stream"):
        with gpunb.graph(stream=0):
            pass


def test_an_old_driver_asks_for_kernels_compiled_before_the_capture(simulated_gpu, monkeypatch):
    fake = simulated_gpu
    monkeypatch.setattr(type(fake), "cuDriverGetVersion", lambda self: (fake.CUresult(0), 12020),
                        raising=False)
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    with pytest.raises(gpunb.GraphError, match=r"first time inside a graph capture.*CUDA 12.2"):
        with gpunb.graph():
            kernel[1, 8](d)
    kernel[1, 8](d)  # compiled before: captured fine
    with gpunb.graph() as g:
        kernel[1, 8](d)
    assert len(g.launches) == 1


def test_nodes_captured_from_the_stream_by_others_are_listed(simulated_gpu):
    fake = simulated_gpu
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    with gpunb.graph() as g:
        kernel[1, 8](d)
        fake.cuLaunchKernel(0x7100, 4, 1, 1, 64, 1, 1, 0, g.stream.handle, 0, 0)  # CuPy's, say
    kinds = [(n.kind, n.recorded, n.grid) for n in g.nodes]
    assert kinds == [("kernel", True, (1, 1, 1)), ("kernel", False, (4, 1, 1))]
    assert "(not launched through gpunb)" in repr(g)


def test_closing_a_graph_frees_it_in_the_driver(simulated_gpu):
    fake = simulated_gpu
    kernel = cuda.jit(inc)
    d = cuda.to_device(np.zeros(8, np.float32))
    with gpunb.graph() as g:
        kernel[1, 8](d)
    g.close()
    assert len(called(fake, "cuGraphExecDestroy")) == 1
    assert len(called(fake, "cuGraphDestroy")) == 1
    with pytest.raises(gpunb.GraphError, match="was closed"):
        g.replay()


def test_host_arrays_passed_to_kernels_are_refused_on_the_gpu(simulated_gpu):
    kernel = cuda.jit(inc)
    kernel[1, 8](cuda.to_device(np.zeros(8, np.float32)))
    with pytest.raises(gpunb.GraphError, match="argument 1 of 'inc' is a host numpy array"):
        with gpunb.graph():
            kernel[1, 8](np.zeros(8, np.float32))


def test_the_graphs_stream_does_not_block_other_threads_legacy_stream_work(simulated_gpu):
    import threading

    fake = simulated_gpu
    kernel = cuda.jit(inc)
    mine = cuda.to_device(np.zeros(8, np.float32))
    theirs = cuda.to_device(np.zeros(8, np.float32))
    kernel[1, 8](theirs)
    errors = []

    def other():
        try:
            kernel[1, 8](theirs)  # the legacy default stream, in another thread
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with gpunb.graph() as g:
        kernel[1, 8](mine)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert errors == [] and len(g.launches) == 1
    flags = called(fake, "cuStreamCreate")[-1][0]
    assert int(flags) == int(fake.CUstream_flags.CU_STREAM_NON_BLOCKING)
    assert fake.launches[-1][4] in (0, 1)  # the worker's launch ran, on the legacy stream
