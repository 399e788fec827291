"""Launch hooks: before/after events with the specialisation and arguments; nothing without them."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation import events
from gpunb.foundation.events import EventKind
from gpunb.jit.configuration import LaunchConfiguration


@cuda.jit(target="cpu")
def add_one(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + 1


def test_before_and_after_carry_what_a_profile_needs():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    seen = []
    with gpunb.events.subscribe(["launch_before", "launch_after"], seen.append):
        add_one[2, 4](out, x)
        add_one[(2,), (4,), 0, 0](out, x)
    before, after, again, _ = seen
    assert [e.kind for e in seen] == [EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER] * 2
    assert (before.kernel, before.grid, before.block, before.shared_bytes, before.target) == \
        ("add_one", 2, 4, 0, "cpu")
    assert [(a.type, a.shape) for a in before.arguments] == [("float32[::1]", (8,))] * 2
    spec = before.specialization
    assert spec is add_one.specializations[("cpu", spec.argtypes)] is after.specialization
    assert before.new_specialization and not again.new_specialization  # the first made it
    assert after.ms > 0 and after.error == ""
    assert again.grid == (2,) and again.block == (4,)
    np.testing.assert_array_equal(out, x + 1)


def test_the_first_launch_of_new_types_says_it_made_the_specialisation():
    x = np.arange(4, dtype=np.int64)
    seen = []
    with events.subscribe("launch_before", seen.append):
        add_one[1, 4](np.zeros_like(x), x)
        add_one[1, 4](np.zeros_like(x), x)
    assert [e.new_specialization for e in seen] == [True, False]


def test_no_subscriber_no_hooks(monkeypatch):
    from gpunb.jit import launch_hooks

    def refuse(*args):
        raise AssertionError("a launch published with nobody listening")

    monkeypatch.setattr(launch_hooks.Publishing, "enter", refuse)
    monkeypatch.setattr(launch_hooks.Recording, "enter", refuse)
    x = np.arange(8, dtype=np.float32)
    config = add_one[2, 4]
    for _ in range(4):
        config(np.zeros_like(x), x)
    assert events.launch_subscribers == () and config.launcher is not None
    assert config.launcher.hooks is None and config.launcher.call is \
        config.launcher.native.builtin  # nothing runs around the machine code


def test_a_failing_launch_still_publishes_after_with_the_error():
    x = np.arange(8, dtype=np.float32)
    seen = []
    with events.subscribe("launch_after", seen.append):
        with pytest.raises(gpunb.LaunchError, match="block"):
            add_one[1, 4096](np.zeros_like(x), x)
    assert len(seen) == 1 and "LaunchError" in seen[0].error


def test_a_broken_subscriber_does_not_break_the_launch():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)

    def broken(event):
        raise KeyError("nope")

    with events.subscribe("launch_before", broken):
        with pytest.warns(RuntimeWarning, match="broken") as caught:
            add_one[2, 4](out, x)
    np.testing.assert_array_equal(out, x + 1)
    assert caught[0].filename == __file__  # the launch's line, not gpunb's


def test_gpuprofile_records_through_hooks_without_replacing_launch():
    from gpunb.profiling.session import ProfileSession

    launch = LaunchConfiguration.__call__
    x = np.arange(8, dtype=np.float32)
    with ProfileSession() as session:
        assert LaunchConfiguration.__call__ is launch
        for _ in range(3):
            add_one[2, 4](np.zeros_like(x), x)
    add_one[2, 4](np.zeros_like(x), x)  # after the block: not recorded
    records = session.profile.launches
    assert [(r.kernel, r.grid, r.block) for r in records] == [("add_one", (2, 1, 1),
                                                                (4, 1, 1))] * 3
    assert all(r.time_ms > 0 for r in records) and events.launch_subscribers == ()
    assert session.profile.summary()[0].row()[:2] == ["add_one", 3]
