"""Typed events (compile stages, launches, cache decisions) and the subscriptions that receive them.

Every layer publishes here and nothing here imports another layer, so the notebook, a profiler or
a user script can listen to all of gpunb without replacing anything: `gpunb.events.subscribe`.
Subscribers run in the publishing thread, synchronously; one that raises is reported as a
warning and never breaks a compile or a launch. With no subscriber, publishing costs one dict
lookup, and the launch fast path reads nothing here: launch observers coming or going is a
RUNTIME_CHANGED event, after which launchers are bound again with the hooks that apply. A
profiler that needs only what happened (not a say before each launch) uses `record_launches`
instead: the native launchers keep running and each launch appends one small tuple to a list.
"""

from __future__ import annotations

import enum
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from gpunb.foundation import forksafe


class NamedEnum(str, enum.Enum):
    """An enum whose members read as their values: `kind == "hit"`, f"{kind}" and JSON all give
    the plain word, so records stay readable and comparable with what users type."""

    def __str__(self) -> str:
        return self.value


class EventKind(NamedEnum):
    """What a subscriber can ask for; `subscribe` also takes the value ("launch_after")."""

    COMPILE_STARTED = "compile_started"  # CompileEvent, stage None
    STAGE_STARTED = "stage_started"  # CompileEvent
    STAGE_FINISHED = "stage_finished"  # CompileEvent with ms (and error when it failed)
    COMPILE_FINISHED = "compile_finished"  # CompileEvent, stage None, ms of the whole compile
    LAUNCH_BEFORE = "launch_before"  # LaunchEvent, before the arguments are packed
    LAUNCH_AFTER = "launch_after"  # LaunchEvent with ms (host time, not synchronised)
    CACHE = "cache"  # CacheEvent: one cache decision
    RUNTIME_CHANGED = "runtime_changed"  # RuntimeChange: what every launch is prepared for
    NOTICE = "notice"  # Notice: a one-line message for the user (see notify)
    SPECIALIZED = "specialized"  # KernelEvent: a GPU function has code for new argument types
    FAILED = "failed"  # KernelEvent: a compile or a launch of a GPU function failed
    PROFILE = "profile"  # the Profile of a `gpunb.profile()` block or %%gpuprofile cell, ended


class Stage(NamedEnum):
    """Compile stages, in pipeline order; a backend runs the ones it has (backends/pipeline.py)."""

    TYPES = "types"  # inference: the typed function
    LLVM = "LLVM"  # lowering: an LLVM module
    PTX = "PTX"  # cuda: LLVM's NVPTX backend
    HOST_CODE = "host code"  # cpu: an object file for this host
    LINK = "driver link"  # cuda: PTX -> cubin by the driver's JIT linker (needs the GPU)
    SASS = "SASS"  # inspection only: ptxas + nvdisasm


@dataclass(frozen=True, slots=True)
class CompileEvent:
    """A compile (stage None) or one of its stages starting or finishing."""

    kind: EventKind
    kernel: str  # the Python function's name
    signature: str  # argument types, e.g. "(float32[::1], float32)"
    target: str  # the backend's name: "cuda" or "cpu"
    stage: Stage | None = None
    ms: float = 0.0  # finished events: wall time of the stage (or of the whole compile)
    error: str = ""  # finished events: what failed ("" when it succeeded)


@dataclass(frozen=True, slots=True)
class ArgumentInfo:
    """One launch argument as a profile needs it, without keeping the argument alive."""

    type: str  # the kernel-language type, e.g. "float32[::1]"
    shape: tuple = ()  # arrays: their shape; scalars: ()


class LaunchEvent(NamedTuple):
    """One kernel launch, published before the arguments are packed and after the launch call.

    A named tuple rather than a dataclass: a launch someone listens to builds one per event,
    and a tuple is made in a fraction of the time a frozen dataclass takes (the launch path
    builds it with `tuple.__new__`, see jit/launch_hooks.py), which is most of what listening
    costs.
    Read it by field name; it is immutable.
    """

    kind: EventKind  # LAUNCH_BEFORE or LAUNCH_AFTER
    kernel: str
    specialization: Any  # the jit layer's Specialization: artifact, cache event, compile time
    grid: Any  # as the launch wrote them: an int or a tuple
    block: Any
    stream: Any
    shared_bytes: int
    types: tuple  # each argument's kernel-language type, as text ("float32[::1]")
    shapes: tuple  # each argument's shape (() for scalars)
    target: str
    new_specialization: bool = False  # this launch compiled (or loaded from the cache) its code
    ms: float = 0.0  # LAUNCH_AFTER: host time of packing + launch (no device synchronisation)
    error: str = ""  # LAUNCH_AFTER: the exception the launch raised, if any
    # the argument values themselves, for a subscriber that must read them before the launch
    # (the replay snapshot of --ncu / --sanitize); only LAUNCH_BEFORE holds them
    args: tuple = ()
    start_ns: int = 0  # LAUNCH_AFTER: time.perf_counter_ns() when packing began

    @property
    def arguments(self) -> tuple:
        """The arguments as ArgumentInfo records (type and shape), made when asked for: a
        launch someone listens to pays for its events, not for a record per argument."""
        return tuple(ArgumentInfo(ty, shape)
                     for ty, shape in zip(self.types, self.shapes, strict=False))


class RuntimeChange(NamedEnum):
    """What changed of what every launch is prepared for (the event of RUNTIME_CHANGED): a
    launcher bound before (jit/launcher.py) launches no more, its dispatcher binds again."""

    TARGET = "target"  # gpunb.set_target
    LAUNCH_OBSERVERS = "launch observers"  # a launch subscriber or recorder came or went
    CONTEXTS = "contexts"  # a second CUDA context was made, or the contexts were reset
    CAPTURE = "capture"  # a graph capture began on a thread: its launches take the Python
    # path (which records them into the graph), so launchers bound before launch no more


def runtime_changed(what: RuntimeChange) -> None:
    """Tell RUNTIME_CHANGED's subscribers (the jit layer) that `what` changed, before the
    caller returns: a launch that starts after this call sees the change."""
    publish(EventKind.RUNTIME_CHANGED, what)


@dataclass(frozen=True, slots=True)
class Notice:
    """A one-line message for the user that is no error (e.g. the CPU-target fallback)."""

    text: str
    topic: str = ""  # what it is about: "target", ...


def notify(text: str, topic: str = "") -> None:
    """Tell the user something once: the NOTICE subscribers show it (the notebook as a plain
    output line, not an error box); with none, it goes to stderr, as a script expects."""
    if EventKind.NOTICE in _table:
        publish(EventKind.NOTICE, Notice(text, topic))
    else:
        print(text, file=sys.stderr)


@dataclass(frozen=True, slots=True)
class KernelEvent:
    """A GPU function's code for one signature became ready (SPECIALIZED: compiled or from the
    cache) or could not be made or launched (FAILED). Published off the launch fast path only:
    the slow path and error paths."""

    kind: EventKind  # SPECIALIZED or FAILED
    function: str
    signature: str  # "void(float32[::1], float32)"; "" for a launch refused before typing
    target: str  # "cuda" or "cpu" ("" when no target could be chosen)
    dispatcher: Any  # the jit layer's Dispatcher (py_func says where it was defined)
    specialization: Any = None  # SPECIALIZED: artifact, cache event, compile time
    stage: str = ""  # FAILED: "compile" or "launch"
    error: str = ""  # FAILED: the error in one line, with where it points


# ---- cache decisions ---------------------------------------------------------------------------


class CacheKind(NamedEnum):
    HIT = "hit"
    MISS = "miss"


class CacheSource(NamedEnum):
    MEMORY = "memory"
    DISK = "disk"


class CacheReason(NamedEnum):
    """Why a lookup missed, or `RECHECKED` for a hit kept after what it reads was rebound."""

    NEW = "new"
    CHANGED = "changed"  # the function, a function it calls, or a value it reads
    OPTION_CHANGED = "option changed"
    ARCH_CHANGED = "arch changed"
    TOOLCHAIN_CHANGED = "toolchain changed"
    FORMAT_CHANGED = "format changed"
    CORRUPT = "corrupt"
    UNTRUSTED = "untrusted"  # the trust model refused the entry or its directory (cache/trust.py)
    DISABLED = "disabled"
    RECHECKED = "re-checked"


@dataclass(frozen=True, slots=True)
class CacheChange:
    """One reason for a decision, structured: `changed` names the dependency it is about."""

    reason: CacheReason
    subject: str = ""  # dependency ('scale'), option ('fastmath'), tool ('llvmlite'), arch
    text: str = ""  # the whole sentence, e.g. "changed: device function `scale` defined at ..."
    what: str = ""  # the subject's kind: "device function", "global", "option", ...
    defined_at: str = ""
    before: str = ""
    after: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", CacheReason(self.reason))


@dataclass(frozen=True, slots=True)
class CacheEvent:
    """One cache decision for one specialisation (function, signature, target).

    `outcome` is the one spelling every view uses: `hit (memory)`, `hit (disk)`,
    `hit (disk, waited 412 ms)`, `hit (memory, re-checked)`, `miss (new)`,
    `miss (changed: scale)`, `miss (disabled)` ...
    """

    function: str
    signature: str
    target: str
    kind: CacheKind
    source: CacheSource | None  # hits: where the entry was; misses: None
    reason: CacheReason | None  # misses: the first change's reason; hits: None or RECHECKED
    changes: tuple = ()  # of CacheChange, most useful first
    time_ms: float = 0.0  # the lookup itself: key, memory and disk (fingerprint excluded)
    compile_ms: float = 0.0  # misses: the compile that followed
    key: str = ""
    entry_bytes: int = 0
    defined_at: str = ""
    timestamp: float = 0.0  # time.time()
    # part of time_ms spent waiting for another thread, or another process sharing the cache
    # directory, compiling the same key (cache/compile_once.py): a hit loaded its result; a miss
    # waited for nothing (its compile failed or took too long) and compiled
    waited_ms: float = 0.0

    def __post_init__(self) -> None:
        # plain strings are accepted (tests, JSON); the record always holds the enums
        object.__setattr__(self, "kind", CacheKind(self.kind))
        if self.source is not None:
            object.__setattr__(self, "source", CacheSource(self.source))
        if self.reason is not None:
            object.__setattr__(self, "reason", CacheReason(self.reason))

    @property
    def outcome(self) -> str:
        """`hit (disk)`, `miss (changed: scale)`: the short form tables and headers show."""
        waited = f", waited {self.waited_ms:.0f} ms" if self.waited_ms else ""
        if self.kind is CacheKind.HIT:
            extra = f", {self.reason}" if self.reason is not None else ""
            return f"hit ({self.source}{extra}{waited})"
        first = self.changes[0] if self.changes else None
        reason = self.reason or (first.reason if first else "")
        subject = f": {first.subject}" if first is not None and first.subject else ""
        return f"miss ({reason}{subject}{waited})"

    @property
    def why(self) -> str:
        """The first reason as a sentence ('' for a plain hit)."""
        return self.changes[0].text if self.changes else ""

    @property
    def detail(self) -> str:
        """Every reason as a sentence, '; '-joined."""
        return "; ".join(change.text for change in self.changes)

    @property
    def total_ms(self) -> float:
        """The lookup (waiting included) and the compile that followed it."""
        return self.time_ms + self.compile_ms

    def describe(self) -> str:
        """The outcome with its time: `hit (disk, waited 412 ms) in 415.20 ms`,
        `miss (new), compiled in 48.1 ms`."""
        if self.kind is CacheKind.HIT:
            return f"{self.outcome} in {self.time_ms:.2f} ms"
        compiled = f", compiled in {self.compile_ms:.1f} ms" if self.compile_ms else ""
        return f"{self.outcome}{compiled}"

    def to_json(self) -> dict:
        """A flat JSON-ready record (what the labextension receives)."""
        return {"function": self.function, "signature": self.signature, "target": self.target,
                "kind": self.kind.value, "source": self.source.value if self.source else None,
                "reason": self.reason.value if self.reason else None, "outcome": self.outcome,
                "why": self.why, "detail": self.detail, "time_ms": self.time_ms,
                "compile_ms": self.compile_ms, "waited_ms": self.waited_ms, "key": self.key,
                "entry_bytes": self.entry_bytes, "defined_at": self.defined_at,
                "timestamp": self.timestamp}

    def __repr__(self) -> str:
        return f"{self.outcome} {self.function} {self.signature} {self.total_ms:.1f} ms"

    __str__ = __repr__


# ---- subscriptions -----------------------------------------------------------------------------

_lock = forksafe.lock()  # (a child forked while a thread held it: free)
_table: dict = {}  # EventKind -> tuple of Subscriptions (replaced whole, read without the lock)
# the same dict, public for the launch hooks (jit/launch_hooks.py), which look a kind up
# themselves rather than call has_subscribers and publish; never mutate it, subscribe() does
subscriptions = _table
# the subscriptions to LAUNCH_BEFORE or LAUNCH_AFTER: while there are any, launchers are bound
# with hooks that publish (jit/launch_hooks.py), and without a native part
launch_subscribers: tuple = ()
# the active LaunchRecorders (below): every launch appends a compact entry to each one's log,
# native launchers' launches included
launch_recorders: tuple = ()
# launch_subscribers + launch_recorders: while it is empty, launchers are bound without hooks
launch_observers: tuple = ()
# `launch_append(entry)` appends a launch's entry to every active recorder's log (None while
# none records): a recording launcher's hooks look it up at each launch
launch_append: Callable[[tuple], None] | None = None
_LAUNCH_KINDS = (EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER)
_LAUNCH_KINDS_SET = frozenset(_LAUNCH_KINDS)


class Subscription:
    """A subscription; `unsubscribe()` (or leaving its `with` block) ends it. Idempotent."""

    __slots__ = ("kinds", "fn", "_active")

    def __init__(self, kinds: tuple, fn: Callable[[Any], None]):
        self.kinds = kinds
        self.fn = fn
        self._active = True

    def unsubscribe(self) -> None:
        """Stop receiving events; safe to call twice and from any thread."""
        global launch_subscribers
        with _lock:
            if not self._active:
                return
            self._active = False
            for kind in self.kinds:
                remaining = tuple(s for s in _table.get(kind, ()) if s is not self)
                if remaining:
                    _table[kind] = remaining
                else:
                    _table.pop(kind, None)
            launch_subscribers = _launch_union()
            _update_observers()
        if _LAUNCH_KINDS_SET.intersection(self.kinds):
            runtime_changed(RuntimeChange.LAUNCH_OBSERVERS)

    close = unsubscribe

    @property
    def active(self) -> bool:
        return self._active

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc) -> None:
        self.unsubscribe()

    def __repr__(self) -> str:
        state = "active" if self._active else "ended"
        return f"<gpunb subscription {', '.join(map(str, self.kinds))} -> {self.fn!r} ({state})>"


def subscribe(kinds: EventKind | str | Iterable, fn: Callable[[Any], None]) -> Subscription:
    """Call `fn(event)` for every event of these kinds until the subscription ends.

    `kinds` is an EventKind, its value ("launch_after"), or several. Returns a Subscription that
    is also a context manager: `with gpunb.events.subscribe("cache", print): ...`. Thread-safe.
    """
    global launch_subscribers
    if not callable(fn):
        raise TypeError(f"gpunb.events.subscribe: {fn!r} is not callable")
    if isinstance(kinds, EventKind):
        resolved: tuple = (kinds,)
    else:
        if isinstance(kinds, str):
            kinds = (kinds,)
        resolved = tuple(dict.fromkeys(_kind(k) for k in kinds))
    if not resolved:
        raise ValueError("gpunb.events.subscribe: no event kind given")
    subscription = Subscription(resolved, fn)
    with _lock:
        # told of the change its own arrival makes: those subscribed before it
        told = _table.get(EventKind.RUNTIME_CHANGED, ())
        for kind in resolved:
            _table[kind] = (*_table.get(kind, ()), subscription)
        launch_subscribers = _launch_union()
        _update_observers()
    if _LAUNCH_KINDS_SET.intersection(resolved):  # launchers bound before publish nothing
        _deliver(told, EventKind.RUNTIME_CHANGED, RuntimeChange.LAUNCH_OBSERVERS)
    return subscription


def _kind(kind) -> EventKind:
    try:
        return EventKind(kind)
    except ValueError:
        known = ", ".join(k.value for k in EventKind)
        raise ValueError(f"gpunb.events: unknown event kind {kind!r}; expected one of {known}") \
            from None


def _launch_union() -> tuple:
    before, after = (_table.get(kind, ()) for kind in _LAUNCH_KINDS)
    if not before or not after:
        return before or after
    return tuple(dict.fromkeys(before + after))


def _update_observers() -> None:
    global launch_observers, launch_append
    launch_observers = launch_subscribers + launch_recorders
    logs = [recorder.log for recorder in launch_recorders]
    launch_append = logs[0].append if len(logs) == 1 else _append_to(logs) if logs else None


def _append_to(logs: list) -> Callable[[tuple], None]:
    appends = tuple(log.append for log in logs)

    def append(entry: tuple) -> None:
        for add in appends:
            add(entry)

    return append


# ---- launch recorders: every launch, native ones included, as one compact entry ----------------


class LaunchSite(NamedTuple):
    """What every launch of one specialisation with one configuration shares; a recorded
    launch's entry points at one (made once per native launcher, once per observed launch)."""

    kernel: str
    specialization: Any
    grid: Any
    block: Any
    stream: Any
    shared_bytes: int
    types: tuple
    target: str
    new_specialization: bool = False
    # None: an entry's shapes are every argument's (() for scalars); else the positions of the
    # arguments whose shapes it holds (a native launcher records its arrays' shapes only)
    shape_at: tuple | None = None


def launch_event(entry: tuple) -> LaunchEvent:
    """A recorder's entry `(site, shapes, start_ns, end_ns, error)` as the LAUNCH_AFTER event
    a subscriber would have received for that launch."""
    site, shapes, start, end, error = entry
    if site.shape_at is not None:
        full = [()] * len(site.types)
        for position, shape in zip(site.shape_at, shapes, strict=True):
            full[position] = shape
        shapes = tuple(full)
    return LaunchEvent(EventKind.LAUNCH_AFTER, site.kernel, site.specialization, site.grid,
                       site.block, site.stream, site.shared_bytes, site.types, shapes,
                       site.target, site.new_specialization, (end - start) / 1e6, error, (),
                       start)


class LaunchRecorder:
    """`record_launches(log)`: every launch appends `(site, shapes, start_ns, end_ns, error)` to
    `log` (a list) until `stop()`, in the launching thread.

    Why not a LAUNCH_AFTER subscriber: a subscription sends launches through the Python path
    and builds an event per launch; a recorder lets the native launchers keep running (their
    hooks append to the logs of the recorders active when a launch ends, `launch_append`,
    jit/launch_hooks.py) and costs a launch one small tuple appended to a list. Starting or
    stopping one is a RUNTIME_CHANGED event (launch observers): launchers bound before launch
    no more, and the next launch of each configuration binds one with the hooks that apply.
    The entries become LaunchEvents (`launch_event`) when read."""

    __slots__ = ("log", "_active")

    def __init__(self, log: list):
        self.log = log
        self._active = True

    def stop(self) -> None:
        """Stop recording; safe to call twice and from any thread (also `close()`)."""
        global launch_recorders
        with _lock:
            if not self._active:
                return
            self._active = False
            if launch_recorders[-1] is self:  # the latest (blocks end in the order they began)
                launch_recorders = launch_recorders[:-1]
            else:
                launch_recorders = tuple([r for r in launch_recorders if r is not self])
            _update_observers()
        runtime_changed(RuntimeChange.LAUNCH_OBSERVERS)  # its launchers record no more

    close = stop

    @property
    def active(self) -> bool:
        return self._active

    def __enter__(self) -> LaunchRecorder:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def record_launches(log: list) -> LaunchRecorder:
    """Append an entry per kernel launch to `log` until the returned recorder stops."""
    global launch_recorders
    if not isinstance(log, list):
        raise TypeError(f"gpunb.events.record_launches: expected a list, got {type(log).__name__}")
    recorder = LaunchRecorder(log)
    with _lock:
        launch_recorders = (*launch_recorders, recorder)
        _update_observers()
    runtime_changed(RuntimeChange.LAUNCH_OBSERVERS)  # launchers bound before do not record
    return recorder


# ---- gpunb's own kernels ------------------------------------------------------------------------

_internal = threading.local()  # .depth > 0 while this thread does gpunb's own work
# what gpunb's own work does not tell anyone: its compiles and cache decisions (launches are only
# seen by those who asked for every launch: a profiler, a launch subscriber)
_QUIET_KINDS = frozenset({EventKind.COMPILE_STARTED, EventKind.STAGE_STARTED,
                          EventKind.STAGE_FINISHED, EventKind.COMPILE_FINISHED, EventKind.CACHE,
                          EventKind.SPECIALIZED, EventKind.FAILED})


@contextmanager
def internal_work():
    """Mark gpunb's own kernels (the one that measures the FP32 peak): while this thread is in
    the block their compile and cache events reach no subscriber and no log, so a user's
    progress line, panel and `%gpucache` show only the user's kernels."""
    depth = getattr(_internal, "depth", 0)
    _internal.depth = depth + 1
    try:
        yield
    finally:
        _internal.depth = depth


def in_internal_work() -> bool:
    """Whether this thread is inside `internal_work()`."""
    return getattr(_internal, "depth", 0) > 0


def has_subscribers(kind: EventKind) -> bool:
    """Whether publishing `kind` would reach anyone (to skip building costly events)."""
    return kind in _table


def publish(kind: EventKind, event: Any) -> None:
    """Hand `event` to the subscribers of `kind`, in subscription order, in this thread."""
    subscriptions = _table.get(kind)
    if not subscriptions:
        return
    if kind in _QUIET_KINDS and getattr(_internal, "depth", 0):
        return
    _deliver(subscriptions, kind, event)


def _deliver(subscriptions: tuple, kind: EventKind, event: Any) -> None:
    for subscription in subscriptions:
        fn = subscription.fn
        try:
            fn(event)
        except Exception as exc:  # noqa: BLE001 - a listener must not break a compile or launch
            report_failure(fn, kind, exc)


def report_failure(fn, kind: EventKind, exc: Exception) -> None:
    """A subscriber raised: a RuntimeWarning naming it, never an exception; it points at the
    user's line that caused the event (the launch, the compile), not at gpunb's."""
    from gpunb.foundation.user_warnings import user_stacklevel

    warnings.warn(f"gpunb: event subscriber {getattr(fn, '__qualname__', fn)!r} failed "
                  f"on {kind}: {type(exc).__name__}: {exc}", RuntimeWarning,
                  stacklevel=user_stacklevel())


__all__ = ["ArgumentInfo", "CacheChange", "CacheEvent", "CacheKind", "CacheReason", "CacheSource",
           "CompileEvent", "EventKind", "KernelEvent", "LaunchEvent", "LaunchRecorder",
           "LaunchSite", "Notice", "RuntimeChange", "Stage", "Subscription", "has_subscribers",
           "in_internal_work", "internal_work", "launch_event", "notify", "publish",
           "record_launches", "report_failure", "runtime_changed", "subscribe", "subscriptions"]
