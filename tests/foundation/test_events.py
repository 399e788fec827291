"""gpunb.events: subscriptions (thread-safe, ended by handle or `with`), publishing, launch flag."""

from __future__ import annotations

import threading

import pytest

import gpunb
from gpunb.foundation import events
from gpunb.foundation.events import CompileEvent, EventKind, Stage


def _event(kind: EventKind = EventKind.STAGE_STARTED) -> CompileEvent:
    return CompileEvent(kind, "k", "void()", "cpu", Stage.TYPES)


def test_the_facade_is_the_foundation_module():
    assert gpunb.events is events and "events" in gpunb.__all__


def test_subscribe_publish_and_unsubscribe():
    seen = []
    sub = events.subscribe("stage_started", seen.append)  # the value works as the kind
    assert sub.active and sub.kinds == (EventKind.STAGE_STARTED,)
    events.publish(EventKind.STAGE_STARTED, _event())
    events.publish(EventKind.STAGE_FINISHED, _event(EventKind.STAGE_FINISHED))  # not asked for
    sub.unsubscribe()
    sub.unsubscribe()  # idempotent
    events.publish(EventKind.STAGE_STARTED, _event())
    assert len(seen) == 1 and seen[0].stage is Stage.TYPES and not sub.active
    assert not events.has_subscribers(EventKind.STAGE_STARTED)


def test_a_subscription_is_a_context_manager_for_several_kinds():
    seen = []
    with events.subscribe([EventKind.COMPILE_STARTED, "compile_finished"], seen.append):
        events.publish(EventKind.COMPILE_STARTED, _event(EventKind.COMPILE_STARTED))
        events.publish(EventKind.COMPILE_FINISHED, _event(EventKind.COMPILE_FINISHED))
    events.publish(EventKind.COMPILE_STARTED, _event(EventKind.COMPILE_STARTED))
    assert [e.kind for e in seen] == [EventKind.COMPILE_STARTED, EventKind.COMPILE_FINISHED]


def test_bad_kinds_and_subscribers_are_refused():
    with pytest.raises(ValueError, match="unknown event kind 'launch'.*launch_before"):
        events.subscribe("launch", print)
    with pytest.raises(TypeError, match="not callable"):
        events.subscribe("cache", None)
    with pytest.raises(ValueError, match="no event kind"):
        events.subscribe([], print)


def test_a_failing_subscriber_warns_and_the_others_still_run():
    seen = []

    def broken(event):
        raise RuntimeError("boom")

    with events.subscribe("stage_started", broken), \
            events.subscribe("stage_started", seen.append):
        with pytest.warns(RuntimeWarning, match="subscriber .*broken.* failed .*boom"):
            events.publish(EventKind.STAGE_STARTED, _event())
    assert len(seen) == 1


def test_the_launch_flag_is_an_empty_tuple_unless_someone_listens():
    assert events.launch_subscribers == ()
    with events.subscribe(["launch_before", "launch_after"], print) as both:
        with events.subscribe("launch_after", print) as after:  # the same function twice
            assert events.launch_subscribers == (both, after)
        assert events.launch_subscribers == (both,)
    assert events.launch_subscribers == ()


def test_launch_observers_are_the_subscribers_and_the_recorders():
    assert events.launch_observers == ()
    with events.subscribe("launch_after", print) as after:
        with events.record_launches([]) as recorder:
            assert events.launch_recorders == (recorder,)
            assert events.launch_observers == (after, recorder)
        assert events.launch_observers == (after,) and events.launch_recorders == ()
    assert events.launch_observers == ()


def test_launch_append_writes_to_every_active_recorder_only():
    assert events.launch_append is None
    first, second = [], []
    with events.record_launches(first):
        events.launch_append("a")
        with events.record_launches(second):
            events.launch_append("b")
        events.launch_append("c")
    assert events.launch_append is None
    assert (first, second) == (["a", "b", "c"], ["b"])


def test_launch_observers_coming_and_going_are_runtime_changes():
    changes = []
    with events.subscribe("runtime_changed", changes.append):
        with events.record_launches([]):
            assert changes == [events.RuntimeChange.LAUNCH_OBSERVERS]  # before it returned
        with events.subscribe("launch_after", print):
            pass
        with events.subscribe("cache", print):  # not a launch observer: no change
            pass
    assert changes == [events.RuntimeChange.LAUNCH_OBSERVERS] * 4
    assert changes[0] == "launch observers"


def test_subscribing_from_many_threads_loses_nothing():
    steady, churned = [], []

    def churn():
        for _ in range(200):
            with events.subscribe("stage_started", churned.append):  # the same fn, many times
                pass

    with events.subscribe("stage_started", steady.append):
        threads = [threading.Thread(target=churn) for _ in range(4)]
        for thread in threads:
            thread.start()
        for _ in range(500):
            events.publish(EventKind.STAGE_STARTED, _event())
        for thread in threads:
            thread.join()
    assert len(steady) == 500  # the steady subscription saw every event, whatever the churn
    assert not events.has_subscribers(EventKind.STAGE_STARTED)


def test_notify_goes_to_subscribers_else_to_stderr(capsys):
    seen = []
    with events.subscribe(events.EventKind.NOTICE, seen.append):
        events.notify("gpunb: something to know", "target")
    assert seen == [events.Notice("gpunb: something to know", "target")]
    assert capsys.readouterr().err == ""
    events.notify("gpunb: said again")
    assert capsys.readouterr().err == "gpunb: said again\n"


def test_internal_work_is_told_to_no_one_but_launch_listeners():
    seen = []
    with events.subscribe(("stage_started", "notice"), seen.append):
        with events.internal_work():
            assert events.in_internal_work()
            events.publish(EventKind.STAGE_STARTED, _event())
            with events.internal_work():  # nests
                pass
            assert events.in_internal_work()
            events.notify("still said")
        assert not events.in_internal_work()
        events.publish(EventKind.STAGE_STARTED, _event())
    assert [type(e).__name__ for e in seen] == ["Notice", "CompileEvent"]
