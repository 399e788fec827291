"""The channel to the JupyterLab side panel: comms with target 'gpunb' carrying JSON messages.

This docstring is THE message schema (labextension/src/model.ts reads exactly these); version 3
(version 2's L was one record per launch; the panel still reads those).

Either side may open a comm. The kernel opens one lazily on its first message; the panel opens one
each time it meets a kernel connection (page load, page reload, a notebook opened on a kernel that
was started earlier) and the kernel answers that open with a `snapshot`, so the panel never waits
for the next cell to show what the kernel already knows. Every message goes to every open comm.

kernel -> panel, each a JSON object with "type":
- `{"type": "hello", "version": 3}`: the data of the kernel-opened comm's open message.
- `{"type": "snapshot", "version": 3, "kernels": [K...], "events": [E...], "profiles": [P...]}`:
  all the kernel remembers (bounded); the panel replaces its view of this notebook with it.
- `{"type": "cache_events", "events": [E...]}`: new cache decisions, after each cell.
- `{"type": "kernels", "kernels": [K...]}`: specialisations made (or failed) in the last cell,
  from the SPECIALIZED / FAILED events (panel_feed.py); a record replaces the panel's record
  with the same "id".
- `{"type": "launches", "launches": [L...], "omitted_kernels": n}`: the launches of one
  %%gpuprofile cell summarised per kernel, at most 50 rows (the most launched kernels; n, when
  present, counts the kernels left out).
- `{"type": "profile", "profile": P}`: one finished profile (`with gpunb.profile()`,
  %%gpuprofile), after the cell it ran in (from the PROFILE event; `comm.publish_profile(P)`).
- `{"type": "cleared"}`: the kernel forgot its history (after the panel's clear button).
panel -> kernel (comm messages):
- `{"type": "hello"}`, as the data of a panel-opened comm's open: answer with a snapshot; as a
  message on the kernel-opened comm: a panel is listening (kernel records are worth computing)
  and wants a snapshot. `{"type": "clear"}`: forget the history.

Records:
- E, a cache event: CacheEvent.to_json() (gpunb/foundation/events.py): function, signature,
  target, kind, source, reason, outcome ("hit (disk)", "miss (changed: scale)"), why, detail,
  time_ms, compile_ms, waited_ms, key, entry_bytes, defined_at, timestamp.
- K, a kernel (panel_feed.kernel_record): id, name, signature, target, arch, registers,
  local_bytes (spills), shared_bytes, occupancy (0..1 or null), limiter, block, cache (outcome),
  why, compile_ms, defined_at ("Cell In[3], line 2"), cell (execution count or null), cell_id
  (the JupyterLab cell id the kernel was defined in, or null), file, line; problem (optional:
  why the record is incomplete); note (optional: why resources are absent, e.g. the CPU
  target's "CPU target: registers, ... are a GPU's figures"). A failed compile or launch is a
  K record too (panel_feed: cache "compile failed" / "launch failed", the error in why and
  problem, no resources; the signature "(launch failed before compiling)" when the arguments
  had no types); when it is gone, its id is re-sent with cache "failure gone" unless a
  compiled record replaces it.
- L, one kernel's launches in a %%gpuprofile cell: kernel, launches, compiling (launches that
  compiled or loaded it: their time is not the kernel's), mean_ms, min_ms, max_ms (of the
  other launches; null when there are none).
- P, a profile: {"title": str ("Cell In[5]: 3 launches"), "target": "cuda"|"cpu",
  "timing": "device"|"host", "cell": execution count or null, "cell_id": the JupyterLab cell
  id it ran in or null, "kernels": [{"kernel", "launches", "p50_ms", "min_ms", "max_ms",
  "total_ms", and optionally "achieved_gbps", "pct_of_peak", "gflops", "occupancy" (0..1),
  "occupancy_note" (the limiter, or why there is none: "n/a (CPU target)"), "defined_at"}],
  "note": str (optional, e.g. "CUDA events: CUPTI could not be loaded")}. Unknown extra keys
  are kept and ignored.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

from gpunb.foundation.events import CacheEvent

TARGET = "gpunb"
VERSION = 3

_state: dict = {"comm": None, "last_event": None, "closed": False, "registered": None,
                "acked": False}
_channels: list = []  # the panel-opened comms still open
sent: list[dict] = []  # every message published in this process (tests and the panel read it)
# what a panel that connects later is sent in its snapshot
history: dict = {"kernels": {}, "events": deque(maxlen=200), "profiles": deque(maxlen=20)}


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
    channel = comm_pkg.create_comm(target_name=TARGET, data={"type": "hello", "version": VERSION})

    def on_close(_msg):
        _state["closed"] = True
        _state["comm"] = None
        _state["acked"] = False

    channel.on_close(on_close)
    channel.on_msg(_on_panel_message)
    _state["comm"] = channel
    return channel


def register_target() -> bool:
    """Let the panel open comms to this kernel (called by %load_ext gpunb); True when done."""
    from gpunb.notebook.widgets import in_kernel

    if not in_kernel():
        return False
    try:
        import comm as comm_pkg
    except ImportError:
        return False
    manager = comm_pkg.get_comm_manager()
    if _state["registered"] is manager:
        return True
    manager.register_target(TARGET, _on_panel_open)
    _state["registered"] = manager
    return True


def _on_panel_open(channel, _open_msg) -> None:
    """A panel connected (page load or reload): remember its comm and send what we know."""
    _channels.append(channel)

    def on_close(_msg):
        if channel in _channels:
            _channels.remove(channel)

    channel.on_close(on_close)
    channel.on_msg(_on_panel_message)
    channel.send(data=to_json(snapshot()))


def _on_panel_message(msg) -> None:
    data = (msg.get("content") or {}).get("data") or {}
    if data.get("type") == "clear":
        clear_history()
        publish({"type": "cleared"})
    elif data.get("type") == "hello":
        _state["acked"] = True
        publish(snapshot())


def panel_connected() -> bool:
    """Whether a panel is listening: it opened a comm, or answered ours (a frontend without
    the labextension never does)."""
    return bool(_channels) or (_state["comm"] is not None and _state["acked"])


def snapshot() -> dict:
    return {"type": "snapshot", "version": VERSION,
            "kernels": list(history["kernels"].values()),
            "events": list(history["events"]), "profiles": list(history["profiles"])}


def clear_history() -> None:
    history["kernels"].clear()
    history["events"].clear()
    history["profiles"].clear()


def _remember(message: dict) -> None:
    kind = message.get("type")
    if kind == "cache_events":
        history["events"].extend(message.get("events", ()))
    elif kind == "kernels":
        for record in message.get("kernels", ()):
            history["kernels"][record.get("id")] = record
    elif kind == "profile" and message.get("profile") is not None:
        history["profiles"].append(message["profile"])


def publish(message: dict) -> None:
    """Send one JSON message to every side panel (when there is a frontend to receive it)."""
    message = to_json(message)
    sent.append(message)
    if len(sent) > 1000:
        del sent[:500]
    _remember(message)
    for channel in list(_channels):
        channel.send(data=message)
    if _channels:
        return
    channel = _open()
    if channel is not None:
        channel.send(data=message)


def publish_profile(profile: dict) -> None:
    """Show one finished profile (record P of the schema above) in the side panel."""
    publish({"type": "profile", "profile": profile})


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
    if isinstance(value, (list, tuple, deque)):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(dataclasses.asdict(value))
    return str(value)
