"""Releases held back while a graph capture is open (backends/cuda/capture_releases.py): a free,
unload or destroy run by a finalizer inside `with gpunb.graph():` invalidated the capture on a
GPU (cuMemFree synchronises), so they wait for the last capture to end, in order, once."""

from __future__ import annotations

import pytest

from gpunb.backends.cuda import capture_releases
from gpunb.graphs import engines
from gpunb.runtime import allocation


class RecordingDriver:
    """Stands in for cuda.bindings' driver module: records each free."""

    class CUresult:
        CUDA_ERROR_INVALID_CONTEXT = object()

    def __init__(self):
        self.calls = []

    def cuMemFree(self, ptr):  # noqa: N802 - the driver's name
        self.calls.append(("free", ptr))
        return (0,)


@pytest.fixture(autouse=True)
def no_capture_left_open():
    yield
    assert not capture_releases.capturing()


def test_without_a_capture_releases_run_at_once():
    cu = RecordingDriver()
    allocation._free_device(cu, 0x10)
    assert cu.calls == [("free", 0x10)]


def test_inside_captures_releases_wait_for_the_last_to_end():
    cu = RecordingDriver()
    capture_releases.capture_began()
    capture_releases.capture_began()  # another thread's capture
    allocation._free_device(cu, 0x10)
    allocation._free_device(cu, 0x20)
    assert cu.calls == []
    capture_releases.capture_ended()
    assert cu.calls == []  # one capture is still open
    capture_releases.capture_ended()
    assert cu.calls == [("free", 0x10), ("free", 0x20)]
    capture_releases.capture_ended()  # an extra end changes nothing
    allocation._free_device(cu, 0x30)
    assert cu.calls[-1] == ("free", 0x30)


def test_an_engine_ends_its_capture_once_however_it_ends(monkeypatch):
    monkeypatch.setattr(engines.cuda_graphs, "begin_capture", lambda handle: None)
    monkeypatch.setattr(engines.cuda_graphs, "capture_state", lambda handle: ("active", 7))
    monkeypatch.setattr(engines.cuda_graphs, "abandon_capture", lambda handle: None)

    def invalidated(handle):
        raise RuntimeError("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED")

    monkeypatch.setattr(engines.cuda_graphs, "end_capture", invalidated)

    class Stream:
        handle = 0x1234

    engine = engines.CudaEngine(Stream())
    engine.begin()
    assert capture_releases.capturing()
    with pytest.raises(RuntimeError):
        engine.end()  # the capture failed: it is over all the same
    assert not capture_releases.capturing()
    engine.abandon()  # what graph.py does after a failed end: no second decrement
    engine.begin()
    engine.abandon()
    assert not capture_releases.capturing()
