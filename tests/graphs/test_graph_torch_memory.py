"""A graph that captured launches on torch tensors watches their memory, not only the tensor
objects: a tensor whose memory moved or was freed while the object lived (resize_ to more
elements, set_, .data =, untyped_storage().resize_(0)) made the replay read and write freed
memory (a crash or silent corruption on the CPU target; an illegal address on a GPU). The replay
is now a GraphError naming the argument, until `update` gives it memory again. CPU target."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

torch = pytest.importorskip("torch")


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _moves() -> dict:
    def resized(t):
        t.resize_(1 << 16)

    def set_other(t):
        t.set_(torch.zeros(16))

    def data_assigned(t):
        t.data = torch.zeros(16)

    def storage_freed(t):
        t.untyped_storage().resize_(0)

    return {"resize_": resized, "set_": set_other, ".data =": data_assigned,
            "storage freed": storage_freed}


@pytest.mark.parametrize("move", list(_moves()))
@pytest.mark.parametrize("viewed", [False, True], ids=["tensor", "view"])
def test_replay_after_a_tensors_memory_moved_is_refused_until_updated(move, viewed):
    k_inc = cuda.jit(inc)
    kept = torch.zeros(16)
    moving = torch.zeros(16)
    with gpunb.graph() as g:
        k_inc[1, 16](kept)
        k_inc[1, 16](moving[:] if viewed else moving)
    g.replay()
    _moves()[move](moving)
    with pytest.raises(gpunb.GraphError, match=r"argument 'x' of launch 1 \(inc\) moved"):
        g.replay()
    g.update(1, x=kept)
    g.replay()
    assert torch.equal(kept, torch.full((16,), 3.0))


def test_in_place_writes_and_views_keep_the_graph_usable():
    k_inc = cuda.jit(inc)
    x = torch.zeros(16)
    with gpunb.graph() as g:
        k_inc[1, 16](x[4:])
    x.add_(1)  # same memory
    x.resize_(8)  # fewer elements: torch keeps the storage
    g.replay()
    assert np.array_equal(x.numpy(), np.array([1, 1, 1, 1, 2, 2, 2, 2], np.float32))


@pytest.mark.gpu
def test_replay_after_a_cuda_tensors_memory_moved_is_refused():
    gpunb.set_target("cuda")
    k_inc = cuda.jit(inc)
    x = torch.zeros(256, device="cuda")
    k_inc[1, 256](x)  # (compiled and loaded before the capture)
    with gpunb.graph() as g:
        k_inc[1, 256](x)
    g.replay()
    x.resize_(1 << 20)
    with pytest.raises(gpunb.GraphError, match="moved after the capture"):
        g.replay()
    g.update(0, x=x[:256])  # (the captured shape)
    g.replay()
    cuda.synchronize()
    assert x[0].item() == 3.0
