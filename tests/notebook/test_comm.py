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
