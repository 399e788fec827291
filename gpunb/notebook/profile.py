"""`%%gpuprofile [--repeat N] [--warmup N] [--ncu] [--timer auto|events|host]`: a cell's profile.

The cell runs `--warmup` times unrecorded, then `--repeat` times inside one profile session
(gpunb.profiling: CUPTI or CUDA-event device times, host times on the CPU target); with `--ncu`
its launches are also snapshotted and replayed in a child process under Nsight Compute. The
Profile is displayed, sent to the side panel and kept for `gpunb.last_profile()`. Every problem
with the options or the tools is one line; the cell's own results are never affected.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments


class ProfileOptionError(ValueError):
    """An unusable %%gpuprofile line (shown as a UsageError, one line, no traceback)."""


@dataclass(frozen=True, slots=True)
class ProfileOptions:
    repeat: int = 1
    warmup: int = 0
    ncu: bool = False
    timer: str = "auto"
    timeout: float = 300.0


@magic_arguments()
@argument("--repeat", type=int, default=1, help="runs of the cell inside the profile")
@argument("--warmup", type=int, default=0, help="runs of the cell before it, unrecorded")
@argument("--ncu", action="store_true", help="also replay the launches under Nsight Compute")
@argument("--timer", choices=("auto", "events", "host"), default="auto")
@argument("--timeout", type=float, default=300.0, help="seconds the Nsight Compute replay may take")
def gpuprofile(line: str = "", cell: str = ""):
    """%%gpuprofile: the cell's kernel launches, profiled (its options, for IPython's
    magic_arguments: `gpuprofile.parser` parses them, `gpuprofile.__doc__` lists them)."""


def parse_profile_options(line: str) -> ProfileOptions:
    from gpunb.notebook.options import usage

    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise ProfileOptionError(f"%%gpuprofile: {exc}") from None
    try:
        ns = gpuprofile.parser.parse_args(argv)  # IPython's MagicArgumentParser: raises
    except UsageError as exc:
        raise ProfileOptionError(f"%%gpuprofile: {exc}; {usage(gpuprofile)}") from None
    if ns.repeat < 1:
        raise ProfileOptionError(f"%%gpuprofile: --repeat {ns.repeat}: the cell must run at "
                                 "least once (--repeat 1 or more)")
    if ns.warmup < 0:
        raise ProfileOptionError(f"%%gpuprofile: --warmup {ns.warmup}: expected 0 or more")
    if ns.timeout <= 0:
        raise ProfileOptionError("%%gpuprofile: --timeout must be positive (seconds)")
    return ProfileOptions(ns.repeat, ns.warmup, ns.ncu, ns.timer, ns.timeout)


def profile_cell(run, options: ProfileOptions):
    """Run `run()` (the cell) as the options say; returns (its last value, the Profile, None),
    or where the profiled cell raised (its launches before the error are still a profile, the
    one the user needs to see what ran): (None, that Profile, the exception) - the caller shows
    the profile, then raises it."""
    from gpunb.profiling.api import ncu_snapshot
    from gpunb.profiling.session import ProfileSession
    from gpunb.profiling.snapshot import Snapshot

    for _ in range(options.warmup):
        run()
    snapshot = Snapshot() if options.ncu else None
    session = ProfileSession(timer=options.timer, snapshot=snapshot)
    value, error = None, None
    try:
        with session:
            for _ in range(options.repeat):
                value = run()
    except Exception as exc:  # (a KeyboardInterrupt stops the cell, profile unseen)
        error = exc
    profile = session.profile
    profile.repeat, profile.warmup = options.repeat, options.warmup
    if error is not None:
        profile.notes.append(f"the cell raised {type(error).__name__}: these are the "
                             f"{len(profile.launches)} launches before it")
        return None, profile, error
    if snapshot is not None:
        profile.ncu = ncu_snapshot(snapshot, timeout=options.timeout)
        if profile.ncu.error:
            profile.notes.append(f"--ncu: {profile.ncu.error}")
    return value, profile, None


MAX_LAUNCH_KERNELS = 50  # rows of one cell's launch summary: the most launched kernels


def launches_message(profile) -> dict:
    """comm.py's `launches` message of a profiled cell: one summary row (record L) per kernel,
    in one pass over the launches, so its size follows the kernels, never the launches (a
    record per launch was ~1 KB: 20 000 launches made ~19 MB of JSON)."""
    rows: dict = {}
    for record in profile.launches:
        row = rows.get(record.kernel)
        if row is None:
            row = rows[record.kernel] = {"kernel": record.kernel, "launches": 0, "compiling": 0,
                                         "timed": 0, "total": 0.0, "min_ms": None,
                                         "max_ms": None}
        row["launches"] += 1
        ms = record.time_ms
        if record.compiled:
            row["compiling"] += 1  # its time is the compile's: not a kernel time
        elif ms is not None:
            row["timed"] += 1
            row["total"] += ms
            row["min_ms"] = ms if row["min_ms"] is None else min(row["min_ms"], ms)
            row["max_ms"] = ms if row["max_ms"] is None else max(row["max_ms"], ms)
    busiest = sorted(rows.values(), key=lambda r: -r["launches"])  # stable: first seen first
    kept = []
    for row in busiest[:MAX_LAUNCH_KERNELS]:
        timed, total = row.pop("timed"), row.pop("total")
        row["mean_ms"] = total / timed if timed else None
        kept.append(row)
    message = {"type": "launches", "launches": kept}
    if len(busiest) > len(kept):
        message["omitted_kernels"] = len(busiest) - len(kept)
    return message
