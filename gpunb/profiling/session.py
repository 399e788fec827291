"""`with gpunb.profile() as prof:` - record every kernel launch of a block as a Profile.

A ProfileSession subscribes to gpunb's launch events for the block's duration (any thread),
hands each launch to a timer (CUPTI / CUDA events on the GPU, the host clock on the CPU target)
and keeps what the records need; the records themselves (bytes, flops, occupancy, peaks) are
made once, when the block ends, so a launch pays only for its two events and the timer.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from gpunb.foundation.events import EventKind, LaunchEvent, subscribe
from gpunb.profiling.records import Occupancy, Profile

_last: Profile | None = None


def last_profile() -> Profile | None:
    """The Profile of the last `%%gpuprofile` cell (or `gpunb.profile()` block), else None."""
    return _last


def remember(profile: Profile) -> None:
    global _last
    _last = profile


class ProfileSession:
    """Context manager recording launches; `.profile` is the Profile once the block has ended."""

    def __init__(self, *, timer: str = "auto", snapshot=None):
        if timer not in ("auto", "cupti", "events", "host"):
            raise ValueError(f"gpunb.profile: timer {timer!r}: expected auto, cupti, events "
                             "or host")
        self.prefer = timer
        self.snapshot = snapshot  # a replay Snapshot that copies each launch's inputs
        self.profile: Profile | None = None
        self._pending: list = []  # (LAUNCH_AFTER event, timer token)
        self._timers: dict = {}  # target -> timer
        self._notes: list = []
        self._started = threading.local()
        self._lock = threading.Lock()
        self._subscription = None

    def __enter__(self) -> ProfileSession:
        self._subscription = subscribe((EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER),
                                       self._on_launch)
        return self

    def __exit__(self, *exc) -> None:
        self._subscription.unsubscribe()
        self.profile = self._build()
        remember(self.profile)

    def _timer(self, target: str):
        timer = self._timers.get(target)
        if timer is None:
            from gpunb.profiling import timers

            if target == "cuda" and self.prefer != "host":
                timer = timers.cuda_timer("events" if self.prefer == "events" else "auto")
            else:
                timer = timers.HostTimer()
            if timer.note:
                self._notes.append(timer.note)
            self._timers[target] = timer
        return timer

    def _on_launch(self, event: LaunchEvent) -> None:
        stack = getattr(self._started, "stack", None)
        if stack is None:
            stack = self._started.stack = []
        timer = self._timer(event.target)
        if event.kind is EventKind.LAUNCH_BEFORE:
            if self.snapshot is not None:
                self.snapshot.add(event)
            stack.append(timer.before(event))
            return
        token = timer.after(event, stack.pop() if stack else None)
        with self._lock:
            self._pending.append((event, token))

    # ---- at the end of the block ---------------------------------------------------------------

    def _build(self) -> Profile:
        from gpunb.profiling.peaks import device_peaks

        profile = Profile(notes=list(dict.fromkeys(self._notes)))
        by_target: dict = {}
        for index, item in enumerate(self._pending):
            by_target.setdefault(item[0].target, []).append(index)
        times: list = [(None, None)] * len(self._pending)
        others: list = []
        for target, indices in by_target.items():
            timer = self._timers[target]
            try:
                measured, foreign = timer.finish([self._pending[i][1] for i in indices])
            finally:
                timer.close()
            for i, value in zip(indices, measured, strict=True):
                times[i] = value
            others.extend((target, row) for row in foreign)
            profile.timer = timer.name if not profile.timer else profile.timer
        targets = list(by_target) or [_default_target()]
        try:
            peak, gflops, device = device_peaks(targets[0])
        except Exception as exc:  # noqa: BLE001 - a profile without a roof is still a profile
            peak, gflops, device = None, None, ""
            profile.notes.append(f"copy bandwidth could not be measured: {exc}")
        profile.peak_gbps, profile.peak_gflops, profile.device = peak, gflops, device
        facts: dict = {}  # per specialisation and block: counts, defined_at, occupancy
        for (event, _), (ms, start) in zip(self._pending, times, strict=True):
            profile.launches.append(_record(event, ms, start, peak, self._timers, facts))
        for target, row in others:
            profile.launches.append(_other_record(target, row))
        if not profile.launches:
            profile.notes.append("no kernel launches were recorded")
        if any((r.pct_of_peak or 0) > 100 for r in profile.launches):
            profile.notes.append("some launches moved data faster than the measured copy "
                                 "bandwidth: their arrays fit in the cache (L2 on a GPU), so "
                                 "% of peak above 100 is cache, not DRAM, bandwidth")
        for record in profile.launches:
            _keep_source(profile, record)
        return profile


def _default_target() -> str:
    from gpunb.runtime.target import active_target

    try:
        return active_target(None)
    except Exception:  # noqa: BLE001
        return "cpu"


def _dim3(value) -> tuple:
    if isinstance(value, int):
        return (value, 1, 1)
    value = tuple(int(v) for v in value)
    return value + (1,) * (3 - len(value))


def _record(event: LaunchEvent, ms, start, peak, timers, facts: dict):
    from gpunb.profiling.counts import counts_for, meta_from_types
    from gpunb.profiling.records import LaunchRecord

    spec = event.specialization
    artifact = spec.artifact
    grid, block = _dim3(event.grid), _dim3(event.block)
    threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
    shared = artifact.resources.shared_bytes + int(event.shared_bytes or 0)
    key = (id(spec), block, shared)
    known = facts.get(key)
    if known is None:
        known = facts[key] = (
            counts_for(_dispatcher_of(spec), spec), _defined_at(artifact),
            _occupancy(artifact, block, shared) if event.target == "cuda" else None)
    counts, defined_at, occupancy = known
    meta = meta_from_types(spec.argtypes, event.shapes)
    nbytes = counts.bytes_for(meta) if counts is not None and meta else None
    flops = counts.flops_for(meta, threads) if counts is not None and meta else None
    gbps = nbytes / (ms * 1e-3) / 1e9 if nbytes and ms else None
    registers = artifact.resources.registers if event.target == "cuda" else None
    timer = timers[event.target]
    return LaunchRecord(
        kernel=event.kernel, defined_at=defined_at, grid=grid, block=block,
        shared_bytes=shared, registers=registers, target=event.target, timing=timer.timing,
        timer=timer.name, time_ms=ms, bytes=nbytes, flops=flops, achieved_gbps=gbps,
        pct_of_peak=gbps / peak * 100.0 if gbps and peak else None,
        occupancy=occupancy,
        cache=spec.cache_event, compiled=event.new_specialization, start_ns=start,
        symbol=artifact.symbol, error=event.error, source_file=artifact.source_file)


def _other_record(target: str, row: tuple):
    from gpunb.profiling.records import LaunchRecord

    name, start, end, grid, block, registers, shared = row
    return LaunchRecord(kernel=name, defined_at="", grid=grid, block=block, shared_bytes=shared,
                        registers=registers, target=target, timing="device", timer="cupti",
                        time_ms=(end - start) / 1e6, bytes=None, flops=None, achieved_gbps=None,
                        pct_of_peak=None, occupancy=None, start_ns=start, source="other",
                        symbol=name)


def _dispatcher_of(spec):
    """The Dispatcher owning a specialisation (counts compile its CUDA LLVM through it)."""
    from gpunb.jit import dispatcher as jit_dispatcher

    for candidate in list(jit_dispatcher._live):
        if spec in candidate.specializations.values():
            return candidate
    return None


def _defined_at(artifact) -> str:
    from gpunb.foundation.sources import cell_label

    label = cell_label(artifact.source_file) if artifact.source_file else None
    where = label or artifact.source_file
    return f"{where}:{artifact.first_line}" if where else ""


def _occupancy(artifact, block: tuple, shared: int) -> Occupancy | None:
    from gpunb.backends.cuda import occupancy as occ

    try:
        result = occ.occupancy(artifact.arch, block[0] * block[1] * block[2],
                               artifact.resources.registers, shared)
    except Exception:  # noqa: BLE001 - an arch the calculator does not know
        return None
    return Occupancy(result.occupancy_fraction, result.active_warps_per_sm,
                     result.max_warps_per_sm, result.limiter, result.arch)


def _keep_source(profile: Profile, record) -> None:
    """The text of each kernel's file or cell (linecache has both), for per-line heat."""
    import linecache

    name = record.source_file
    if name and name not in profile.sources:
        lines = linecache.getlines(name)
        if lines:
            profile.sources[name] = "".join(lines)


@contextmanager
def profile(*, timer: str = "auto"):
    """Record every kernel launch in the block: `with gpunb.profile() as prof: ...`, then
    `prof.launches`, `prof.summary()`, `prof.to_json()`, `prof.to_pandas()`.

    On a GPU, launches are timed by CUPTI (cupti-python, the `[profile]` extra; other libraries'
    kernels on the context are listed too) or by CUDA events when CUPTI cannot be used (a note
    says why); on the CPU target by the host clock, labelled `timing == "host"`.
    """
    session = ProfileSession(timer=timer)
    holder = _ProfileHandle()
    with session:
        yield holder
    holder._set(session.profile)


class _ProfileHandle(Profile):
    """What `with gpunb.profile() as prof` binds: empty inside the block, the Profile after."""

    def _set(self, profile: Profile) -> None:
        self.__dict__.update(profile.__dict__)
