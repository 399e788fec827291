"""Profiling costs: the launch fast path with and without a launch subscriber, a profile of 100
short launches against the same launches unprofiled (blocks back to back, and on a GPU one
block after CUPTI has gone idle), the first read of that profile's records (made then, not when
the block ends) and the time to render its pane.

"No subscriber costs nothing": the fast path tests nothing about observers (their coming or
going moves every dispatcher's launch version, so launchers are bound again with the hooks
that apply); a launch with no subscriber is compared with one that an idle subscriber observes
(the path a profiler takes).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import Cell, Options, Row, attempt, cell, gpu_missing, median, na

OVERHEAD_TARGET = 1.5
GROUPS = 3  # alternating groups of plain and profiled samples in the overhead row
NONE = "no equivalent"


def _setup(target: str, workdir: Path):
    import gpunb
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    gpunb.set_target(target)
    # bench_launch's kernel, from a module of its own, so that plain launches take the fast
    # path users get (a kernel defined in this function would read `cuda` from a closure cell,
    # which keeps every launch, plain or profiled, on the Python path)
    kernel = load_kernels("gpunb", workdir).scale3
    if target == "cuda":
        x, out = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32)
        sync = cuda.synchronize
    else:
        x, out = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32)

        def sync():
            return None
    a = np.float32(2.0)

    def launch():
        kernel[1, 32](out, x, a)

    deadline = time.monotonic() + 10.0  # a cache hit loads llvmlite in the background first
    launch()
    while kernel[1, 32].launcher is None and time.monotonic() < deadline:
        launch()
        time.sleep(0.001)
    sync()
    launch.path = "native launcher" if kernel[1, 32].launcher is not None else "Python path"
    return launch, sync


def _launches_seconds(launch, sync, calls: int, repeats: int, around=None) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        if around is None:
            for _ in range(calls):
                launch()
            sync()
        else:
            with around():
                for _ in range(calls):
                    launch()
                sync()
        samples.append(time.perf_counter() - started)
    return median(samples)


def _subscriber_rows(launch, sync, calls: int, repeats: int, target: str) -> list[Row]:
    import gpunb

    bare = _launches_seconds(launch, sync, calls, repeats) / calls * 1e6
    with gpunb.events.subscribe("launch_after", lambda event: None):
        idle = _launches_seconds(launch, sync, calls, repeats) / calls * 1e6
    note = (f"{target} target, {launch.path}; the fast path tests nothing about subscribers; "
            f"with one idle subscriber (the Python path, publishing) {idle:.2f} us")
    return [Row(f"launch, no subscriber ({target})", "us", cell(bare, "{:.2f} us", note),
                na(NONE), na(NONE), f"idle subscriber {idle:.2f} us",
                "no check on the fast path", (note,))]


def _cupti_idle() -> None:
    """Wait until CUPTI has been disabled after the last block (plain launches with it enabled
    pay for it too, and must not be the reference)."""
    from gpunb.profiling import timers

    deadline = time.monotonic() + timers.IDLE_DISABLE_S + 2.0
    while timers._cupti_state is not None and timers._cupti_state.enabled and \
            time.monotonic() < deadline:
        time.sleep(0.05)


def _overhead_row(launch, sync, repeats: int, target: str) -> tuple:
    """Plain and profiled samples in alternating groups (a plain group only once CUPTI has gone
    idle), so that a slow spell of a shared host does not land on one side only."""
    import gpunb

    holder = {}

    def around():
        class Scope:
            def __enter__(self):
                self.cm = gpunb.profile()
                holder["prof"] = self.cm.__enter__()

            def __exit__(self, *exc):
                self.cm.__exit__(*exc)

        return Scope()

    with gpunb.profile() as first:  # the process's peaks are measured on the first read
        launch()
    first.launches  # noqa: B018 - a read
    plains, profileds = [], []
    for _ in range(GROUPS):
        _cupti_idle()
        plains.append(_launches_seconds(launch, sync, 100, repeats))
        _launches_seconds(launch, sync, 100, 1, around)  # CUPTI enabled again: not counted
        profileds.append(_launches_seconds(launch, sync, 100, repeats, around))
    plain, profiled = median(plains), median(profileds)
    prof = holder["prof"]
    ratio = profiled / plain
    spread = ", ".join(f"{b / a:.2f}" for a, b in zip(plains, profileds, strict=True))
    # the records are made when first read (gpunb/profiling/build.py): timed in their own row
    note = f"{target} target; 100 launches + sync: {plain * 1e3:.3f} ms plain ({launch.path}), " \
           f"{profiled * 1e3:.3f} ms inside gpunb.profile() (entering and leaving the block " \
           f"included; medians of {GROUPS} alternating groups of {repeats}, whose own ratios " \
           f"were {spread}; the records are made on first read, next row)"
    verdict = "meets" if ratio <= OVERHEAD_TARGET else "misses"
    row = Row(f"profiling overhead, 100 short launches ({target})", "x",
              cell(ratio, "{:.2f}x", note), na(NONE), na(NONE),
              f"<= {OVERHEAD_TARGET}x (issue 10)", f"{verdict} ({ratio:.2f}x)", (note,))
    return row, prof, plain


def _idle_row(launch, sync, plain: float) -> Row:
    """One block after CUPTI has gone idle (disabled): it pays for enabling CUPTI again."""
    import gpunb
    from gpunb.profiling import timers

    samples = []
    for _ in range(3):
        time.sleep(timers.IDLE_DISABLE_S + 0.3)
        samples.append(_launches_seconds(launch, sync, 100, 1, gpunb.profile))
    ratio = median(samples) / plain
    note = f"cuda target; a block after {timers.IDLE_DISABLE_S:.1f} s without one (CUPTI " \
           f"disabled meanwhile, enabled again by the block): {median(samples) * 1e3:.3f} ms " \
           f"for 100 launches + sync, {plain * 1e3:.3f} ms plain (median of 3)"
    return Row("profiling overhead, first block after idle (cuda)", "x",
               cell(ratio, "{:.2f}x", note), na(NONE), na(NONE), "back-to-back blocks above",
               "", (note,))


def _read_row(prof, target: str) -> Row:
    started = time.perf_counter()
    launches = prof.launches  # the first read: synchronise, CUPTI flush, records, peaks
    ms = (time.perf_counter() - started) * 1e3
    note = f"{target} target, timer: {prof.timer}; the first read of .launches of the 100 " \
           f"launches' profile: {len(launches)} records (timer flush and records; the peaks " \
           "were measured by an earlier profile of the process)"
    return Row(f"profile records, first read ({target})", "ms", cell(ms, "{:.2f} ms", note),
               na(NONE), na(NONE), "", "", (note,))


def _render_row(prof, target: str) -> Row:
    started = time.perf_counter()
    html = prof._repr_html_()
    ms = (time.perf_counter() - started) * 1e3
    note = f"{len(prof.launches)} launches, {len(html)} characters of HTML"
    return Row(f"profile pane render ({target})", "ms", cell(ms, "{:.2f} ms", note), na(NONE),
               na(NONE), "", "", (note,))


def run(opts: Options) -> list[Row]:
    target = "cuda" if opts.suite == "gpu" else "cpu"
    if target == "cuda":
        missing = gpu_missing()
        if missing:
            return [Row("profiling overhead", "x", na(missing), na(NONE), na(NONE), "", "n/a")]
    calls, repeats = (200, 3) if opts.quick else (2000, 7)
    with tempfile.TemporaryDirectory(prefix="gpunb-bench-") as tmp:
        return _run(target, Path(tmp), calls, repeats)


def _run(target: str, workdir: Path, calls: int, repeats: int) -> list[Row]:
    launch, sync = _setup(target, workdir)
    rows = _subscriber_rows(launch, sync, calls, repeats, target)
    result: dict = {}

    def overhead() -> Cell:
        row, prof, plain = _overhead_row(launch, sync, repeats, target)
        result["row"], result["prof"], result["plain"] = row, prof, plain
        return row.gpunb

    failed = attempt(overhead)
    if "row" in result:
        rows.append(result["row"])
        if target == "cuda" and result["prof"].timer == "cupti":
            rows.append(_idle_row(launch, sync, result["plain"]))
        rows.append(_read_row(result["prof"], target))
        rows.append(_render_row(result["prof"], target))
    else:
        rows.append(Row("profiling overhead", "x", failed, na(NONE), na(NONE), "", "n/a"))
    return rows
