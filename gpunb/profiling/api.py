"""The replay front door: `gpunb.sanitize(fn)` and the `--ncu` step of a profile.

Both run the code (the caller's function, or a notebook cell) live once with a Snapshot
listening, then replay the snapshot in a child process under the tool, so the caller's process
and GPU context never run under a profiler or sanitizer.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from gpunb.profiling.sanitizer import TOOLS, SanitizerReport
from gpunb.profiling.snapshot import Snapshot
from gpunb.profiling.tools import ReplayError


def capture(fn: Callable[[], object], limit: int = 16) -> tuple:
    """Run fn() with a Snapshot listening to its launches: (fn's result, the Snapshot)."""
    from gpunb.profiling.session import ProfileSession

    snapshot = Snapshot(limit=limit)
    session = ProfileSession(snapshot=snapshot, timer="host")
    with session:
        result = fn()
    return result, snapshot, session.profile


def sanitize(fn: Callable[[], object], tool: str = "memcheck", *, timeout: float = 300.0,
             keep: bool = False) -> SanitizerReport:
    """Run `fn()` (which launches kernels), then replay its launches under compute-sanitizer
    `--tool memcheck|racecheck|synccheck|initcheck` in a child process; the report's findings
    name the kernel's source line, thread and block. Problems running the tool are reported
    in `report.error` as one line, never raised."""
    if tool not in TOOLS:
        raise ValueError(f"gpunb.sanitize: tool {tool!r}: expected one of {', '.join(TOOLS)}")
    _, snapshot, _ = capture(fn)
    return sanitize_snapshot(snapshot, tool, timeout=timeout, keep=keep)


def sanitize_snapshot(snapshot: Snapshot, tool: str, *, timeout: float = 300.0,
                      keep: bool = False) -> SanitizerReport:
    from gpunb.profiling.sanitizer import run_sanitizer

    try:
        if not snapshot.launches:
            return SanitizerReport(tool, error="no kernel launches to check"
                                   + _skipped(snapshot))
        if any(launch["target"] != "cuda" for launch in snapshot.launches):
            return SanitizerReport(tool, error="compute-sanitizer checks GPU launches; these "
                                   "ran on the CPU target, which checks bounds itself (run "
                                   "on a GPU, --target cuda, for compute-sanitizer)")
        return run_sanitizer(snapshot.path, tool, timeout)
    except ReplayError as exc:
        return SanitizerReport(tool, error=str(exc))
    finally:
        if not keep:
            shutil.rmtree(snapshot.path, ignore_errors=True)


def ncu_snapshot(snapshot: Snapshot, *, timeout: float = 300.0, keep: bool = False):
    from gpunb.profiling.ncu import NcuReport, run_ncu

    try:
        if not snapshot.launches:
            return NcuReport(error="no kernel launches to replay" + _skipped(snapshot))
        if any(launch["target"] != "cuda" for launch in snapshot.launches):
            return NcuReport(error="Nsight Compute measures GPU launches; these ran on the CPU "
                                   "target (reduced mode: host timings and static counts)")
        return run_ncu(snapshot.path, timeout)
    except ReplayError as exc:
        return NcuReport(error=str(exc))
    finally:
        if not keep:
            shutil.rmtree(snapshot.path, ignore_errors=True)


def _skipped(snapshot: Snapshot) -> str:
    return f" ({'; '.join(snapshot.skipped)})" if snapshot.skipped else ""
