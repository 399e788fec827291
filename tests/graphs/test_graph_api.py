"""gpunb.graph on every target under test (the CPU target here; on a GPU machine CUDA too):
a block's launches and copies are recorded, not run; replay runs them; update swaps arguments
of the captured types and shapes; what a graph cannot hold raises GraphError at the user's line
and leaves everything usable."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import gpunb
from gpunb import cuda


def axpb(out, x, a, b):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + b


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def kernels():
    return cuda.jit(axpb), cuda.jit(inc)  # fresh dispatchers: nothing compiled yet


def host(d) -> np.ndarray:
    return d.copy_to_host()


def test_capture_runs_nothing_and_replay_runs_everything(target):
    k_axpb, k_inc = kernels()
    x = cuda.to_device(np.arange(64, dtype=np.float32))
    out = cuda.device_array(64, np.float32)
    out.copy_to_device(np.zeros(64, np.float32))
    with gpunb.graph() as g:  # both kernels compile here, on their first launch
        k_axpb[2, 32](out, x, np.float32(3), np.float32(1))
        for _ in range(4):
            k_inc[2, 32](out)
    assert not host(out).any()  # captured, not run
    g.replay()
    cuda.synchronize()
    expected = 3 * np.arange(64, dtype=np.float32) + 5
    assert np.array_equal(host(out), expected)
    g.replay()
    cuda.synchronize()
    assert np.array_equal(host(out), expected)  # axpb resets out, then four increments
    assert [launch.name for launch in g.launches] == ["axpb"] + ["inc"] * 4
    assert g.launches[0].grid == (2, 1, 1) and g.launches[0].block == (32, 1, 1)


def test_update_swaps_arguments_by_index_kernel_and_record(target):
    k_axpb, k_inc = kernels()
    x = cuda.to_device(np.arange(32, dtype=np.float32))
    x2 = cuda.to_device(np.full(32, 10, np.float32))
    out = cuda.device_array(32, np.float32)
    other = cuda.device_array(32, np.float32)
    with gpunb.graph() as g:
        k_axpb[1, 32](out, x, np.float32(2), np.float32(0))
        k_inc[1, 32](out)
    g.update(0, a=np.float32(5), x=x2)
    g.replay()
    cuda.synchronize()
    assert np.array_equal(host(out), np.full(32, 51, np.float32))
    g.update(k_axpb, out=other)  # every launch of that kernel
    g.update(g.launches[1], x=other)  # the record itself
    g.replay()
    cuda.synchronize()
    assert np.array_equal(host(other), np.full(32, 51, np.float32))
    g.update(0, a=3.0)  # a float for a float32: converted as a launch converts it
    g.replay()
    cuda.synchronize()
    assert np.array_equal(host(other), np.full(32, 31, np.float32))


@pytest.mark.parametrize("arguments, message", [
    ({"y": 1.0}, "has no argument 'y'"),
    ({"x": "shape"}, "captured with shape (32,), got (16,)"),
    ({"x": "dtype"}, "captured as float32[::1], got float64[::1]"),
    ({"x": "ndim"}, "captured as float32[::1], got float32[:, ::1]"),
    ({"a": 2}, "captured as float32, got int64"),
])
def test_update_refuses_other_types_and_shapes_and_changes_nothing(target, arguments, message):
    k_axpb, _ = kernels()
    x = cuda.to_device(np.arange(32, dtype=np.float32))
    out = cuda.device_array(32, np.float32)
    with gpunb.graph() as g:
        k_axpb[1, 32](out, x, np.float32(2), np.float32(1))
    made = {"shape": np.zeros(16, np.float32), "dtype": np.zeros(32, np.float64),
            "ndim": np.zeros((4, 8), np.float32)}
    arguments = {name: cuda.to_device(made[value]) if isinstance(value, str) else value
                 for name, value in arguments.items()}
    before = g.launches[0].params.raw()
    with pytest.raises(gpunb.GraphError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        g.update(0, b=np.float32(7), **arguments)  # b is fine: nothing changes all the same
    assert g.launches[0].params.raw() == before
    g.replay()
    cuda.synchronize()
    assert np.array_equal(host(out), 2 * np.arange(32, dtype=np.float32) + 1)


def test_update_names_launches_clearly(target):
    k_axpb, k_inc = kernels()
    out = cuda.device_array(8, np.float32)
    with gpunb.graph() as g:
        k_inc[1, 8](out)
    with pytest.raises(gpunb.GraphError, match="launch 3 does not exist: this graph has 1 launch"):
        g.update(3, x=out)
    with pytest.raises(gpunb.GraphError, match="'axpb' was not launched in this graph"):
        g.update(k_axpb, x=out)
    with gpunb.graph() as g2:
        k_axpb[1, 8](out, out, np.float32(1), np.float32(0))
    with pytest.raises(gpunb.GraphError, match="did you mean 'out'"):
        g2.update(0, outt=out)
    with pytest.raises(gpunb.GraphError, match="belongs to another graph"):
        g2.update(g.launches[0], x=out)
    with pytest.raises(gpunb.GraphError, match="no arguments given"):
        g.update(0)


def test_replay_after_an_argument_was_freed_is_refused_until_updated(target):
    _, k_inc = kernels()
    kept = cuda.to_device(np.zeros(16, np.float32))
    gone = cuda.to_device(np.zeros(16, np.float32))
    with gpunb.graph() as g:
        k_inc[1, 16](kept)
        k_inc[1, 16](gone[:])  # a view made in the block: its array is what must stay alive
    g.replay()
    del gone
    gc.collect()
    with pytest.raises(gpunb.GraphError, match=r"argument 'x' of launch 1 \(inc\) was freed"):
        g.replay()
    g.update(1, x=kept)
    g.replay()
    cuda.synchronize()
    assert np.array_equal(host(kept), np.full(16, 3, np.float32))


def test_copies_are_captured_and_read_the_host_array_at_each_replay(target):
    k_axpb, _ = kernels()
    x = cuda.device_array(16, np.float32)
    out = cuda.device_array(16, np.float32)
    pinned_in = cuda.pinned_array(16, np.float32)
    pinned_out = cuda.pinned_array(16, np.float32)
    pinned_in[:] = 1
    pinned_out[:] = -1
    with gpunb.graph() as g:
        x.copy_to_device(pinned_in)
        k_axpb[1, 16](out, x, np.float32(2), np.float32(0))
        out.copy_to_host(pinned_out)
    assert (pinned_out == -1).all()
    pinned_in[:] = np.arange(16)
    g.replay()
    cuda.synchronize()
    assert np.array_equal(pinned_out, 2 * np.arange(16, dtype=np.float32))
    pinned_in[:] = 5
    g.replay()
    cuda.synchronize()
    assert (pinned_out == 10).all()
    kinds = [(node.kind, node.name) for node in g.nodes]
    assert kinds == [("copy", "host to device"), ("kernel", "axpb"), ("copy", "device to host")]


@pytest.mark.parametrize("action, message", [
    (lambda d, s, e: cuda.synchronize(), r"cuda.synchronize\(\) waits for the GPU"),
    (lambda d, s, e: s.synchronize(), r"stream.synchronize\(\) waits"),
    (lambda d, s, e: s.query(), r"stream.query\(\) waits"),
    (lambda d, s, e: e.synchronize(), r"event.synchronize\(\) waits"),
    (lambda d, s, e: cuda.device_array(4), r"cuda.device_array\(\) allocates memory"),
    (lambda d, s, e: cuda.to_device(np.ones(4)), r"cuda.to_device\(\) allocates memory"),
    (lambda d, s, e: cuda.pinned_array(4), r"cuda.pinned_array\(\) allocates memory"),
    (lambda d, s, e: d.copy_to_host(), "without a destination"),
    (lambda d, s, e: e.record(), "recording an event"),
    (lambda d, s, e: gpunb.graph().__enter__(), "already open on this thread"),
])
def test_what_a_graph_cannot_hold_is_refused_at_the_users_line(target, action, message):
    _, k_inc = kernels()
    d = cuda.to_device(np.zeros(8, np.float32))
    stream, event = cuda.stream(), cuda.event()
    k_inc[1, 8](d)  # compiled before
    with pytest.raises(gpunb.GraphError, match=message) as info:
        with gpunb.graph() as g:
            k_inc[1, 8](d)
            action(d, stream, event)
    assert info.value.loc is not None and info.value.loc.filename == __file__
    with pytest.raises(gpunb.GraphError, match="capture failed"):
        g.replay()
    k_inc[1, 8](d)  # the stream and the launch path work as before
    cuda.synchronize()
    assert (host(d) == 2).all()
    with gpunb.graph() as again:
        k_inc[1, 8](d)
    again.replay()
    cuda.synchronize()
    assert (host(d) == 3).all()


def test_a_failed_launch_inside_a_capture_names_the_line(target):
    _, k_inc = kernels()
    d = cuda.to_device(np.zeros(8, np.float32))
    with pytest.raises(gpunb.LaunchError, match="block") as info:
        with gpunb.graph():
            k_inc[1, 4096](d)
    assert info.value.loc is not None and info.value.loc.filename == __file__


def test_replay_and_update_inside_the_block_are_refused(target):
    _, k_inc = kernels()
    d = cuda.to_device(np.zeros(8, np.float32))
    with gpunb.graph() as first:
        k_inc[1, 8](d)
    with pytest.raises(gpunb.GraphError, match="replaying a graph"):
        with gpunb.graph():
            first.replay()
    with pytest.raises(gpunb.GraphError, match="inside the `with gpunb.graph"):
        with gpunb.graph() as g:
            g.replay()


def test_other_threads_launch_as_usual_while_one_captures(target):
    _, k_inc = kernels()
    mine = cuda.to_device(np.zeros(8, np.float32))
    theirs = cuda.to_device(np.zeros(8, np.float32))
    k_inc[1, 8](theirs)
    done = []

    def other():
        k_inc[1, 8](theirs)
        cuda.synchronize()
        done.append(True)

    with gpunb.graph() as g:
        k_inc[1, 8](mine)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert done == [True] and len(g.launches) == 1
    assert (host(theirs) == 2).all() and not host(mine).any()


def test_launches_take_the_fast_path_again_after_a_capture(target):
    _, k_inc = kernels()
    d = cuda.to_device(np.zeros(8, np.float32))
    config = k_inc[1, 8]
    for _ in range(3):
        config(d)
    with gpunb.graph():
        config(d)
    for _ in range(3):
        config(d)
    cuda.synchronize()
    assert (host(d) == 6).all()
    import llvmlite.binding  # noqa: F401 - native launchers exist once llvmlite is loaded

    assert config.launcher is not None  # bound again after the capture's version bump


def test_a_kernel_of_another_target_cannot_join_the_graph(target):
    k_cpu = cuda.jit(inc, target="cpu")
    d = np.zeros(8, np.float32)
    if target == "cpu":  # a kernel pinned to the CPU target joins a CPU graph
        with gpunb.graph() as g:
            k_cpu[1, 8](d)
        g.replay()
        assert (d == 1).all()
        return
    with pytest.raises(gpunb.GraphError, match="runs on the cpu target, but this graph "
                                               "captures cuda work"):
        with gpunb.graph():
            k_cpu[1, 8](d)


def test_the_graph_lists_its_nodes_as_text_and_html(target):
    k_axpb, k_inc = kernels()
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    out = cuda.device_array(8, np.float32)
    with gpunb.graph() as g:
        k_axpb[1, 8](out, x, np.float32(2), 1.5)
        k_inc[1, 8](out)
    text = repr(g)
    assert f"gpunb graph on the {target} target: 2 launches, 0 copies" in text
    assert "axpb" in text and "(1, 1, 1)" in text and "(8, 1, 1)" in text
    assert "out: float32[::1] (8,)" in text and "b: float64" in text
    assert "<table>" in g._repr_html_() and "inc" in g._repr_html_()
    node = g.nodes[0]
    assert (node.kind, node.name, node.grid, node.block) == ("kernel", "axpb", (1, 1, 1),
                                                             (8, 1, 1))
    assert node.arguments[2] == "a: float32"


@pytest.mark.parametrize("which", ["default_stream", "legacy_default_stream",
                                   "per_thread_default_stream", "zero"])
def test_no_target_captures_on_a_default_stream(target, which):
    # the CPU target accepted a capture on cuda.default_stream() that CUDA refuses
    _, k_inc = kernels()
    d = cuda.to_device(np.zeros(8, np.float32))
    stream = 0 if which == "zero" else getattr(cuda, which)()
    with pytest.raises(gpunb.GraphError, match="cannot be captured on the default stream") as info:
        with gpunb.graph(stream=stream):
            k_inc[1, 8](d)
    assert info.value.loc is not None and info.value.loc.filename == __file__
    assert "cuda.stream()" in info.value.hint
    assert (host(d) == 0).all()  # nothing ran, nothing was captured
    mine = cuda.stream()  # a stream made for the graph is fine, and the thread captures again
    with gpunb.graph(stream=mine) as g:
        k_inc[1, 8](d)
    g.replay()
    assert (host(d) == 1).all()
