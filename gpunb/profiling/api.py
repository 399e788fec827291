"""The replay front door: `gpunb.sanitize(fn)`, `gpunb.profiling.sanitize_launch(kernel[g, b],
*args)` and the `--ncu` step of a profile.

`sanitize` and `--ncu` run the code (the caller's function, or a notebook cell) live once with a
Snapshot listening, then replay the snapshot in a child process under the tool, so the caller's
process and GPU context never run under a profiler or sanitizer. `sanitize_launch` snapshots one
launch without running it here at all: for a kernel that would crash or hang this process.
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
    _, snapshot, failure = capture_failure(fn)
    return sanitize_snapshot(snapshot, tool, timeout=timeout, keep=keep, failure=failure)


def capture_failure(fn: Callable[[], object]) -> tuple:
    """capture(fn), but an exception of fn is returned, not raised: (result or None, the
    Snapshot, the exception or None). Launches are snapshotted before they run, so a replay
    still checks the launch that failed."""
    from gpunb.profiling.session import ProfileSession

    snapshot = Snapshot()
    try:
        with ProfileSession(snapshot=snapshot, timer="host"):
            return fn(), snapshot, None
    except Exception as exc:  # noqa: BLE001 - the caller re-raises it after the replay
        return None, snapshot, exc


def sanitize_launch(launch, *args, tool: str = "memcheck", timeout: float = 300.0,
                    keep: bool = False) -> SanitizerReport:
    """`gpunb.profiling.sanitize_launch(kernel[grid, block], *args, tool="memcheck")`: check one
    launch under compute-sanitizer in a child process WITHOUT running it here first.

    For a kernel that may crash (an illegal address loses this process's CUDA context for good)
    or hang (a divergent barrier, a shuffle waiting for lanes that never come): the arguments
    are copied as they are now, the kernel is compiled here and only the child launches it.
    Nothing in `args` is changed."""
    if tool not in TOOLS:
        raise ValueError(f"gpunb.sanitize_launch: tool {tool!r}: expected one of "
                         f"{', '.join(TOOLS)}")
    snapshot = Snapshot(limit=1)
    record_launch(snapshot, launch, *args)
    return sanitize_snapshot(snapshot, tool, timeout=timeout, keep=keep)


def record_launch(snapshot: Snapshot, launch, *args) -> None:
    """Add `kernel[grid, block](*args)` to `snapshot` without launching it: the kernel is
    compiled for the arguments' types and the arguments are copied as they are now."""
    from gpunb.foundation.events import EventKind, LaunchEvent
    from gpunb.runtime.typeof import typeof

    dispatcher = getattr(launch, "dispatcher", None)
    if dispatcher is None or not hasattr(dispatcher, "specialization_for"):
        raise TypeError("gpunb.sanitize_launch: pass a configured kernel, kernel[grid, block], "
                        f"then its arguments (got {type(launch).__name__})")
    argtypes = []
    for k, value in enumerate(args):
        try:
            argtypes.append(typeof(value))
        except TypeError as exc:
            raise TypeError(f"gpunb.sanitize_launch: argument {k + 1} of "
                            f"'{dispatcher.__name__}': {exc} (arrays, numbers and tuples "
                            "can be passed)") from None
    argtypes = tuple(argtypes)
    spec = dispatcher.specialization_for(argtypes)
    before = len(snapshot.skipped)
    snapshot.add(LaunchEvent(
        EventKind.LAUNCH_BEFORE, dispatcher.__name__, spec, launch.grid, launch.block, 0,
        int(launch.sharedmem or 0), tuple(str(ty) for ty in argtypes),
        tuple(getattr(value, "shape", ()) for value in args), spec.target, args=tuple(args)))
    if len(snapshot.skipped) > before:  # an argument that cannot be copied, or too many
        raise ValueError(f"gpunb.sanitize_launch: {snapshot.skipped[-1]}")


def sanitize_snapshot(snapshot: Snapshot, tool: str, *, timeout: float = 300.0,
                      keep: bool = False, failure: BaseException | None = None
                      ) -> SanitizerReport:
    """Replay `snapshot` under compute-sanitizer; `failure`, the exception the live run raised
    (if any), is named in the report's notes."""
    report = _sanitize_snapshot(snapshot, tool, timeout, keep)
    if failure is not None:
        first = str(failure).strip().splitlines()
        note = f"the live run raised {type(failure).__name__}: {first[0] if first else ''}"
        if not report.error:  # a replay ran (report.error: none could, e.g. the CPU target)
            note += " - the findings come from the replay in a child process"
        report.notes.insert(0, note)
    return report


# what the CPU target does in place of each compute-sanitizer tool (README: Correctness tools)
CPU_COUNTERPARTS = {
    "memcheck": "every access is bounds-checked (gpunb.KernelIndexError) on every launch",
    "racecheck": "%%gpukernel --racecheck (cuda.jit(racecheck=True)) finds data races "
                 "(gpunb.RaceError)",
    "synccheck": "barriers threads reach at different lines (a divergent syncthreads) and "
                 "syncwarp masks are checked on every launch",
    "initcheck": "%%gpukernel --racecheck (cuda.jit(racecheck=True)) also reports reads of "
                 "shared memory no thread wrote (gpunb.InitcheckError)",
}


def _sanitize_snapshot(snapshot: Snapshot, tool: str, timeout: float,
                       keep: bool) -> SanitizerReport:
    from gpunb.profiling.sanitizer import run_sanitizer

    try:
        if not snapshot.launches:
            return SanitizerReport(tool, error="no kernel launches to check"
                                   + _skipped(snapshot))
        if any(launch["target"] != "cuda" for launch in snapshot.launches):
            return SanitizerReport(tool, error="compute-sanitizer checks GPU launches; these "
                                   f"ran on the CPU target, where {CPU_COUNTERPARTS[tool]} "
                                   "(run on a GPU, --target cuda, for compute-sanitizer)")
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
