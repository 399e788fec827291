"""Messages for the labextension: JSON-safe, cache events forwarded once each."""

import dataclasses

from gpunb.notebook import comm


@dataclasses.dataclass(frozen=True)
class FakeEvent:
    function: str
    kind: str
    reason: str
    argtypes: tuple


def test_event_records_are_json_safe():
    record = comm.event_record(FakeEvent("saxpy", "miss", "changed: dep scale", ("f32", "f32")))
    assert record == {"function": "saxpy", "kind": "miss", "reason": "changed: dep scale",
                      "argtypes": ["f32", "f32"]}
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
