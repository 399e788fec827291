"""The channel to the JupyterLab side panel: a comm with target 'gpunb' carrying JSON messages.

Messages: {"type": "cache_events", "events": [...]} after each cell (new cache decisions only) and
{"type": "launches", "launches": [...]} from %%gpuprofile. The comm is opened lazily, only inside
a kernel; without the labextension the frontend closes it and sends become no-ops.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpunb.foundation.events import CacheEvent

TARGET = "gpunb"

_state: dict = {"comm": None, "last_event": None, "closed": False}
sent: list[dict] = []  # every message published in this process (tests and the panel read it)


def _open():
    if _state["comm"] is not None or _state["closed"]:
        return _state["comm"]
    from gpunb.notebook.widgets import in_kernel

    if not in_kernel():
        return None
    try:
        import comm as comm_pkg
    except ImportError:
        return None
    channel = comm_pkg.create_comm(target_name=TARGET, data={"type": "hello", "version": 1})

    def on_close(_msg):
        _state["closed"] = True
        _state["comm"] = None

    channel.on_close(on_close)
    _state["comm"] = channel
    return channel


def publish(message: dict) -> None:
    """Send one JSON message to the side panel (when there is a frontend to receive it)."""
    message = to_json(message)
    sent.append(message)
    if len(sent) > 1000:
        del sent[:500]
    channel = _open()
    if channel is not None:
        channel.send(data=message)


def publish_new_events() -> None:
    """Send the cache events recorded since the last call (called after every cell)."""
    events = cache_events()
    new = events_after(events, _state["last_event"])
    if events:
        _state["last_event"] = events[-1]
    if new:
        publish({"type": "cache_events", "events": [event_record(e) for e in new]})


def events_after(events: list, last) -> list:
    """The events recorded after `last` (found by identity, so a log that drops its oldest
    entries still yields exactly the new ones); all of them when `last` is gone or None."""
    if last is None:
        return list(events)
    for index in range(len(events) - 1, -1, -1):
        if events[index] is last:
            return list(events[index + 1:])
    return list(events)


def cache_events() -> list:
    """The cache layer's event log (gpunb.cache.events()), oldest first."""
    import gpunb.cache

    return gpunb.cache.events()


def event_record(event: CacheEvent) -> dict:
    """A cache event as the flat JSON record the side panel reads (outcome and why included)."""
    return event.to_json()


def to_json(value: Any) -> Any:
    """Make a value JSON-safe: tuples -> lists, unknown objects -> str."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(dataclasses.asdict(value))
    return str(value)
