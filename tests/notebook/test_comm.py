"""Messages for the labextension: JSON-safe, cache events forwarded once each."""

import json

from gpunb.foundation.events import CacheChange, CacheEvent
from gpunb.notebook import comm


def FakeEvent(function: str, kind: str, reason: str, argtypes: tuple) -> CacheEvent:
    changes = (CacheChange(reason, "scale", "changed: device function `scale`"),) if reason \
        else ()
    signature = f"void({', '.join(argtypes)})"
    return CacheEvent(function, signature, "cpu", kind, "memory" if kind == "hit" else None,
                      reason or None, changes)


def test_event_records_are_json_safe():
    record = comm.event_record(FakeEvent("saxpy", "miss", "changed", ("float32", "float32")))
    assert json.loads(json.dumps(record)) == record
    assert {k: record[k] for k in ("function", "signature", "kind", "reason", "outcome", "why")} \
        == {"function": "saxpy", "signature": "void(float32, float32)", "kind": "miss",
            "reason": "changed", "outcome": "miss (changed: scale)",
            "why": "changed: device function `scale`"}
    assert comm.to_json({1: object}) == {"1": str(object)}


def test_new_events_are_published_once(monkeypatch):
    log = [FakeEvent("a", "miss", "new", ())]
    monkeypatch.setattr(comm, "cache_events", lambda: list(log))
    monkeypatch.setitem(comm._state, "last_event", None)
    before = len(comm.sent)
    comm.publish_new_events()
    comm.publish_new_events()  # nothing new: nothing sent
    log.append(FakeEvent("a", "hit", "", ()))
    comm.publish_new_events()
    new = comm.sent[before:]
    assert [m["type"] for m in new] == ["cache_events", "cache_events"]
    assert [e["kind"] for e in new[1]["events"]] == ["hit"]


def test_a_rotating_log_still_yields_only_new_events():
    a, b, c, d = (FakeEvent(n, "miss", "new", ()) for n in "abcd")
    assert comm.events_after([a, b, c], b) == [c]
    assert comm.events_after([b, c, d], c) == [d]  # `a` dropped off the front
    assert comm.events_after([c, d], a) == [c, d]  # `a` long gone: everything is new
    assert comm.events_after([a], None) == [a]


class FakeChannel:
    """A comm as ipykernel hands it to a target: records what the kernel sends on it."""

    def __init__(self):
        self.sent: list = []
        self.handlers: dict = {}

    def send(self, data=None):
        self.sent.append(data)

    def on_close(self, fn):
        self.handlers["close"] = fn

    def on_msg(self, fn):
        self.handlers["msg"] = fn


def test_a_panel_that_connects_later_gets_a_snapshot_then_every_message(monkeypatch):
    monkeypatch.setattr(comm, "_channels", [])
    monkeypatch.setitem(comm._state, "comm", None)
    monkeypatch.setitem(comm._state, "closed", True)  # no kernel-opened comm in this test
    comm.clear_history()
    comm.publish({"type": "cache_events", "events": [
        comm.event_record(FakeEvent("a", "miss", "new", ("float32",)))]})
    comm.publish({"type": "kernels", "kernels": [{"id": "a void(float32) cpu", "name": "a"}]})
    comm.publish_profile({"title": "cell 3", "target": "cpu", "timing": "host",
                          "kernels": [{"kernel": "a", "launches": 2, "p50_ms": 0.1}]})
    channel = FakeChannel()  # the page was reloaded: the panel opens a comm
    comm._on_panel_open(channel, {})
    assert comm.panel_connected()
    snapshot = channel.sent[0]
    assert snapshot["type"] == "snapshot" and snapshot["version"] == comm.VERSION
    assert [e["function"] for e in snapshot["events"]] == ["a"]
    assert [k["name"] for k in snapshot["kernels"]] == ["a"]
    assert snapshot["profiles"][0]["kernels"][0]["kernel"] == "a"
    assert json.loads(json.dumps(snapshot)) == snapshot
    comm.publish({"type": "kernels", "kernels": [{"id": "a void(float32) cpu", "name": "a",
                                                  "registers": 12}]})
    assert channel.sent[-1]["type"] == "kernels"  # later messages reach the reconnected panel
    assert len(comm.snapshot()["kernels"]) == 1  # same id: replaced, not duplicated
    channel.handlers["msg"]({"content": {"data": {"type": "clear"}}})  # the clear button
    assert channel.sent[-1] == {"type": "cleared"}
    assert comm.snapshot()["kernels"] == [] and comm.snapshot()["events"] == []
    channel.handlers["close"]({})
    assert not comm.panel_connected()


def test_a_kernel_opened_comm_counts_as_a_panel_only_once_answered(monkeypatch):
    channel = FakeChannel()
    monkeypatch.setattr(comm, "_channels", [])
    monkeypatch.setitem(comm._state, "comm", channel)
    monkeypatch.setitem(comm._state, "acked", False)
    assert not comm.panel_connected()  # nbclient, or a frontend without the labextension
    comm._on_panel_message({"content": {"data": {"type": "hello"}}})
    assert comm.panel_connected() and channel.sent[-1]["type"] == "snapshot"


def test_json_has_no_nan():
    assert comm.to_json({"x": float("nan"), "y": (1.5, float("inf"))}) == {"x": None,
                                                                          "y": [1.5, None]}
