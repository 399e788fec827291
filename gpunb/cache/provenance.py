"""Why the cache hit or missed: the bounded log of CacheEvents and readable accounts of them.

Events are made by KernelCache (its one `_decided` producer) and typed in foundation/events.py;
the notebook's `%gpucache`, the widgets and `python -m gpunb.cache` read them. Nothing here
knows about IPython.
"""

from __future__ import annotations

import time
from collections import deque

from gpunb.foundation import forksafe
from gpunb.foundation.events import CacheEvent, EventKind, in_internal_work, publish

_LOG_SIZE = 2048

_log: deque = deque(maxlen=_LOG_SIZE)
_lock = forksafe.lock()  # (a child forked while a thread held it: free)


def record(event: CacheEvent) -> CacheEvent:
    """Keep `event` in the bounded log and publish it to `EventKind.CACHE` subscribers (neither
    for gpunb's own kernels: events.internal_work)."""
    if in_internal_work():
        return event
    with _lock:
        _log.append(event)
    publish(EventKind.CACHE, event)
    return event


def events(function: str | None = None) -> list[CacheEvent]:
    """Recorded events, oldest first; only those of `function` (name or qualname) if given."""
    with _lock:
        found = list(_log)
    if function is None:
        return found
    return [e for e in found if e.function == function or e.function.rpartition(".")[2] == function]


def last_event(name: str) -> CacheEvent | None:
    found = events(name)
    return found[-1] if found else None


def clear_events() -> None:
    with _lock:
        _log.clear()


def _ago(timestamp: float) -> str:
    seconds = max(0.0, time.time() - timestamp)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


class Explanation(str):
    """What gpunb.cache.explain() returns: the text itself (a str, so print, `in` and
    comparisons work), shown as that text (not a quoted string with literal \\n escapes) by
    repr(), IPython and notebooks."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        import html

        return ('<pre style="white-space:pre-wrap;color:var(--jp-content-font-color1,inherit);'
                'font-family:var(--jp-code-font-family,monospace)">'
                f"{html.escape(str(self))}</pre>")


def render_explanation(name: str, fingerprint, last: CacheEvent | None, parts: dict | None,
                       pending: list, stale_files: tuple[str, ...], error: str = "") -> str:
    """The text of gpunb.cache.explain(): key parts, dependency tree, last event, what changed."""
    lines = []
    if fingerprint is not None:
        lines.append(f"{name}: defined at {fingerprint.defined_at}")
    else:
        lines.append(f"{name}:")
    if error:
        lines.append(f"  fingerprint unavailable: {error}")
    if last is None:
        lines.append("  no cache event yet (not launched or compiled since this process started; "
                     "a device function has none of its own: it is compiled into each kernel "
                     "that calls it)")
    else:
        lines.append(f"  last event: {last.describe()}, {_ago(last.timestamp)}")
        lines.append(f"    signature {last.signature}, target {last.target}, key {last.key}")
        lines.extend(f"    why: {change.text}" for change in last.changes)
    if parts:
        lines.append("  key parts:")
        lines.append(f"    function digest  {parts.get('function')}")
        lines.append(f"    argument types   {parts.get('argtypes')}")
        opts = parts.get("options") or {}
        lines.append("    options          " +
                     (", ".join(f"{k}={v}" for k, v in opts.items()) or "(defaults)"))
        lines.append(f"    target / arch    {parts.get('target')} / {parts.get('arch')}")
        tools = parts.get("toolchain") or {}
        lines.append("    toolchain        " + ", ".join(f"{k} {v}" for k, v in tools.items()))
    if fingerprint is not None:
        lines.append("  depends on:")
        lines.append(f"    {fingerprint.qualname} (source {fingerprint.code_digest[:12]}) "
                     f"defined at {fingerprint.defined_at}")
        for depth, dep in fingerprint.dependency_tree():
            value = f" = {dep.value}" if dep.value else ""
            lines.append(f"    {'    ' * depth}- {dep.kind} {dep.name}{value}  "
                         f"[{dep.defined_at}]  {dep.digest[:12]}")
    if pending:
        lines.append("  changed since the last compile (the next launch recompiles):")
        lines.extend(f"    {change.text}" for change in pending)
    for path in stale_files:
        lines.append(f"  note: {path} changed on disk after it was imported; reload the module "
                     "(importlib.reload) to use the edit")
    return Explanation("\n".join(lines))
