"""A profile's records, made when they are first read rather than when its block ends.

A Recording is what a `gpunb.profile()` block saw: the LAUNCH_AFTER events of its launches, or
their recorded entries (and the CUDA-event tokens when those time it) and the timers.
`build()` turns it, once, into what a Profile shows: one LaunchRecord per launch (bytes, flops,
occupancy, peaks, cache event), other libraries' kernels from CUPTI, and the notes. What is the
same for every launch of one specialisation with one configuration (counts, occupancy, where it
was defined) is worked out once per profile, not per launch.
"""

from __future__ import annotations

import threading

from gpunb.profiling import timers
from gpunb.profiling.records import LaunchRecord, Occupancy

# the fields build() fills, which a Profile reads lazily (records.py)
BUILT_FIELDS = ("launches", "timer", "peak_gbps", "peak_gflops", "peak_source", "device",
                "notes", "sources", "peak_tensor_gflops")


class Recording:
    """The launches of one profile block and their timers; `build()` makes the records once."""

    def __init__(self, prefer: str):
        self.prefer = prefer
        self.events: list = []  # LAUNCH_AFTER events, in the order the launches returned
        # or, when the launches were recorded (events.record_launches), their compact entries,
        # made into LAUNCH_AFTER events when the records are built
        self.entries: list = []
        self.tokens: list = []  # the timers' tokens, parallel to events (CUDA events only)
        self.timers: dict = {}  # target -> timer
        self.notes: list = []
        self._lock = threading.Lock()
        self._built: dict | None = None
        self._closed = False

    def timer_for(self, target: str):
        timer = self.timers.get(target)
        if timer is None:
            if target == "cuda" and self.prefer != "host":
                timer = timers.cuda_timer("events" if self.prefer == "events" else "auto")
            else:
                timer = timers.HostTimer()
            if timer.note:
                self.notes.append(timer.note)
            self.timers[target] = timer
        return timer

    def add(self, event, token) -> None:
        """One launch seen through both events (the CUDA-event timer or a replay snapshot)."""
        with self._lock:
            self.events.append(event)
            self.tokens.append(token)

    def stop(self) -> None:
        """The block ended: the timers stop (CUPTI stops recording unless others run)."""
        for timer in list(self.timers.values()):
            timer.stop()

    def build(self) -> dict:
        """The Profile's fields (BUILT_FIELDS), made on the first call."""
        with self._lock:
            if self._built is None:
                try:
                    self._built = _build(self)
                finally:
                    self.close()
            return self._built

    def close(self) -> None:
        """Release the timers (CUPTI keeps records while a profile may still read them)."""
        if self._closed:
            return
        self._closed = True
        for timer in list(self.timers.values()):
            try:
                timer.close()
            except Exception:  # noqa: BLE001 - closing must not mask the profile's result
                pass

    def __del__(self) -> None:  # a profile dropped unread releases its timers too
        self.close()


def _build(recording: Recording) -> dict:
    from gpunb.foundation.events import launch_event
    from gpunb.profiling.peaks import device_peaks

    events = recording.events + [launch_event(entry) for entry in recording.entries]
    tokens = recording.tokens or [None] * len(events)
    notes = list(dict.fromkeys(recording.notes))
    by_target: dict = {}
    for index, event in enumerate(events):
        by_target.setdefault(event.target, []).append(index)
    times: list = [(None, None)] * len(events)
    others: list = []
    timer_name = ""
    used: dict = {}
    for target, indices in by_target.items():
        timer = recording.timers.get(target)
        if timer is None and target == "cuda":
            notes.append(f"{len(indices)} GPU launch(es) not timed: the profile began with the "
                         "CPU target active (gpunb.set_target('cuda') before the block times "
                         "them)")
            continue
        if timer is None:
            timer = timers.HostTimer()
        used[target] = timer
        try:
            measured, foreign = timer.finish([events[i] for i in indices],
                                             [tokens[i] for i in indices])
        except Exception as exc:  # noqa: BLE001 - records without times beat no records
            notes.append(f"{timer.name} timings could not be read: {type(exc).__name__}: {exc}")
            continue
        for i, value in zip(indices, measured, strict=True):
            times[i] = value
        others.extend((target, row) for row in foreign)
        timer_name = timer_name or timer.name
    if not timer_name and recording.timers:
        timer_name = next(iter(recording.timers.values())).name
    targets = list(by_target) or list(recording.timers) or [_default_target()]
    try:
        peaks = device_peaks(targets[0])
    except Exception as exc:  # noqa: BLE001 - a profile without a roof is still a profile
        peaks = None
        notes.append(f"peak bandwidth and FLOP/s could not be measured: {exc}")
    peak = peaks.gbps if peaks else None
    facts: dict = {}  # per specialisation and configuration: what every such launch shares
    launches = [_record(event, ms, start, peak, used, facts)
                for event, (ms, start) in zip(events, times, strict=True)]
    launches += [_other_record(target, row) for target, row in others]
    if not launches:
        notes.append("no kernel launches were recorded")
    if any((r.pct_of_peak or 0) > 100 for r in launches):
        notes.append("some launches moved data faster than the measured copy bandwidth: their "
                     "arrays fit in the cache (L2 on a GPU), so % of peak above 100 is cache, "
                     "not DRAM, bandwidth")
    if peaks is not None and peaks.note:
        notes.append(peaks.note)
    return {"launches": launches, "timer": timer_name, "peak_gbps": peak,
            "peak_gflops": peaks.gflops if peaks else None,
            "peak_tensor_gflops": peaks.tensor_gflops if peaks else None,
            "peak_source": peaks.source if peaks else {}, "device": peaks.device if peaks else "",
            "notes": notes, "sources": _sources(launches)}


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


def _record(event, ms, start, peak, timers: dict, facts: dict) -> LaunchRecord:
    spec = event.specialization
    key = (id(spec), event.target, event.grid, event.block, event.shared_bytes, event.shapes)
    try:
        known = facts.get(key)
    except TypeError:  # a grid or block given as a list: not memoised
        known = key = None
    if known is None:
        known = _launch_facts(spec, event)
        if key is not None:
            facts[key] = known
    grid, block, shared, nbytes, flops, registers, defined_at, occupancy = known
    gbps = nbytes / (ms * 1e-3) / 1e9 if nbytes and ms else None
    timer = timers.get(event.target)
    return LaunchRecord(
        kernel=event.kernel, defined_at=defined_at, grid=grid, block=block,
        shared_bytes=shared, registers=registers, target=event.target,
        timing=timer.timing if timer else ("host" if event.target == "cpu" else "device"),
        timer=timer.name if timer else "", time_ms=ms, bytes=nbytes, flops=flops,
        achieved_gbps=gbps, pct_of_peak=gbps / peak * 100.0 if gbps and peak else None,
        occupancy=occupancy, cache=spec.cache_event, compiled=event.new_specialization,
        start_ns=start, symbol=spec.artifact.symbol, error=event.error,
        source_file=spec.artifact.source_file)


def _launch_facts(spec, event) -> tuple:
    """What every launch of this specialisation with this configuration and shapes shares."""
    from gpunb.profiling.counts import counts_for, meta_from_types

    artifact = spec.artifact
    grid, block = _dim3(event.grid), _dim3(event.block)
    threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
    shared = artifact.resources.shared_bytes + int(event.shared_bytes or 0)
    cuda = event.target == "cuda"
    counts = counts_for(_dispatcher_of(spec), spec)
    meta = meta_from_types(spec.argtypes, event.shapes)
    nbytes = counts.bytes_for(meta) if counts is not None and meta else None
    flops = counts.flops_for(meta, threads, event.shapes, grid, block) \
        if counts is not None and meta else None
    return (grid, block, shared, nbytes, flops, artifact.resources.registers if cuda else None,
            _defined_at(artifact), _occupancy(artifact, block, shared) if cuda else None)


def _other_record(target: str, row: tuple) -> LaunchRecord:
    name, start, end, grid, block, registers, shared = row
    return LaunchRecord(kernel=name, defined_at="", grid=grid, block=block, shared_bytes=shared,
                        registers=registers, target=target, timing="device", timer="cupti",
                        time_ms=(end - start) / 1e6, bytes=None, flops=None, achieved_gbps=None,
                        pct_of_peak=None, occupancy=None, start_ns=start, source="other",
                        symbol=name)


def _dispatcher_of(spec):
    """The Dispatcher owning a specialisation (counts compile its CUDA LLVM through it)."""
    from gpunb.jit import dispatcher as jit_dispatcher

    for candidate in jit_dispatcher.live_dispatchers():
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


def _sources(launches: list) -> dict:
    """The text of each kernel's file or cell (linecache has both), for per-line heat."""
    import linecache

    out: dict = {}
    for record in launches:
        name = record.source_file
        if name and name not in out:
            lines = linecache.getlines(name)
            if lines:
                out[name] = "".join(lines)
    return out
