"""Why the cache hit or missed: one CacheEvent per decision, a bounded log, readable accounts.

The notebook's `%gpucache`, the widgets and `python -m gpunb.cache` read these records; nothing
here knows about IPython.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

KINDS = ("hit", "miss")
SOURCES = ("memory", "disk", None)
_LOG_SIZE = 2048


@dataclass(frozen=True, slots=True)
class CacheEvent:
    """One cache decision for one specialisation (function, signature, target)."""

    function: str
    signature: str
    target: str
    kind: str  # 'hit' | 'miss'
    source: str | None  # 'memory' | 'disk' for hits, None for misses
    # '' for hits ('re-checked': kept after a rebinding); 'new', 'changed: ...', 'corrupt', ...
    reason: str
    detail: str = ""  # every reason found, '; '-joined (or what failed verification)
    time_ms: float = 0.0  # the lookup itself: key, memory and disk (fingerprint excluded)
    compile_ms: float = 0.0  # misses: the compile that followed
    key: str = ""
    entry_bytes: int = 0
    defined_at: str = ""
    timestamp: float = 0.0  # time.time()
    # part of time_ms spent waiting for another thread, or another process sharing the cache
    # directory, compiling the same key (compile_once.py): a hit loaded its result; a miss
    # waited for nothing (its compile failed or took too long) and compiled
    waited_ms: float = 0.0

    @property
    def entry_size(self) -> int:
        """Alias read by the notebook's status table."""
        return self.entry_bytes

    @property
    def outcome(self) -> str:
        """`hit (memory)`, `hit (disk, waited 412 ms)`, `miss (new)`: the short form."""
        waited = f", waited {self.waited_ms:.0f} ms" if self.waited_ms else ""
        if self.kind == "hit":
            how = f", {self.reason}: unchanged" if self.reason else ""
            return f"hit ({self.source}{how}{waited})"
        return f"miss ({self.reason}{waited})"

    def describe(self) -> str:
        """The outcome with its time: `hit (disk, waited 412 ms) in 415.20 ms`."""
        if self.kind == "hit":
            return f"{self.outcome} in {self.time_ms:.2f} ms"
        compiled = f", compiled in {self.compile_ms:.1f} ms" if self.compile_ms else ""
        return f"{self.outcome}{compiled}"


_log: deque = deque(maxlen=_LOG_SIZE)
_lock = threading.Lock()


def record(event: CacheEvent) -> CacheEvent:
    with _lock:
        _log.append(event)
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


def render_explanation(name: str, fingerprint, last: CacheEvent | None, parts: dict | None,
                       pending: list[str], stale_files: tuple[str, ...], error: str = "") -> str:
    """The text of gpunb.cache.explain(): key parts, dependency tree, last event, what changed."""
    lines = []
    if fingerprint is not None:
        lines.append(f"{name}: defined at {fingerprint.defined_at}")
    else:
        lines.append(f"{name}:")
    if error:
        lines.append(f"  fingerprint unavailable: {error}")
    if last is None:
        lines.append("  no cache event yet (not launched or compiled since this process started)")
    else:
        lines.append(f"  last event: {last.describe()}, {_ago(last.timestamp)}")
        lines.append(f"    signature {last.signature}, target {last.target}, key {last.key}")
        if last.detail and last.detail != last.reason:
            lines.append(f"    details: {last.detail}")
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
        lines.extend(f"    {reason}" for reason in pending)
    for path in stale_files:
        lines.append(f"  note: {path} changed on disk after it was imported; reload the module "
                     "(importlib.reload) to use the edit")
    return "\n".join(lines)
