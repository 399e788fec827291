"""What every benchmark module shares: the Row it returns, timing helpers, fresh subprocesses.

A benchmark never fakes a figure: a tool that is absent or fails yields an `na` cell that says
why, and the table prints "n/a" beside that reason.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True, slots=True)
class Cell:
    """One tool's figure: a value (None for n/a) with its printed text and an optional note."""

    value: float | None
    text: str
    note: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    """One line of the table; `anchor` holds the anchor and target, `verdict` the comparison."""

    figure: str
    unit: str
    gpunb: Cell
    numba: Cell
    cupy: Cell
    anchor: str
    verdict: str
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
    """Run-wide settings from run_all's command line."""

    suite: str = "cpu"  # "gpu" or "cpu": the figures that need a GPU, or the host-only ones
    quick: bool = False
    numba_python: str = sys.executable
    sim_budget_s: float = 30.0
    sim_full: bool = False


def na(reason: str) -> Cell:
    return Cell(None, "n/a", reason)


def cell(value: float, fmt: str, note: str = "") -> Cell:
    return Cell(value, fmt.format(value), note)


def missing_module(module: str, pip_name: str) -> str | None:
    """None when `module` can be imported here, else the reason a column is n/a."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else f"{pip_name} is not installed (pip install {pip_name})"


def median(values: list[float]) -> float:
    return statistics.median(values)


def per_call_seconds(call: Callable[[], object], sync: Callable[[], object], calls: int,
                     repeats: int) -> float:
    """Median over `repeats` of (wall time of `calls` back-to-back calls + one sync) / calls.

    Host wall time is the right clock for launch overhead: the launches are asynchronous, and
    the single sync at the end only makes sure no queued work is left to the next repeat.
    """
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        samples.append((time.perf_counter() - started) / calls)
    return median(samples)


def fresh_process(task: str, tool: str, workdir: Path, env: dict | None = None,
                  python: str | None = None, timeout: float = 600.0) -> dict:
    """Run `python -m benchmarks.fresh TASK TOOL WORKDIR` in a new process; its JSON result.

    Each measurement that must see a new process (cold compile, disk-cache hit, import time)
    goes through here, so no state of this process (imports, contexts, caches) leaks into it.
    """
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    full_env.setdefault("GPUNB_NOTICES", "0")
    full_env.update(env or {})
    proc = subprocess.run([python or sys.executable, "-m", "benchmarks.fresh", task, tool,
                           str(workdir)], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"{task}/{tool} failed (exit {proc.returncode}): " + " | ".join(tail))
    return json.loads(lines[-1])


def verdict_at_most(value: float | None, target: float, unit: str) -> str:
    if value is None:
        return "n/a"
    if value <= target:
        return f"met: {value:.3g} <= {target:g} {unit}"
    return f"MISSED: {value / target:.2f}x the target"


def verdict_at_least(value: float | None, target: float, unit: str) -> str:
    if value is None:
        return "n/a"
    if value >= target:
        return f"met: {value:.4g} >= {target:.4g}"
    return f"MISSED: {100 * value / target:.0f}% of the target"


def attempt(measure: Callable[[], Cell], absent: str | None = None) -> Cell:
    """One tool's cell: n/a with `absent` when the tool is missing, n/a with the error if the
    measurement fails (one broken tool must not hide the others' figures)."""
    if absent:
        return na(absent)
    try:
        return measure()
    except Exception as exc:  # noqa: BLE001 - reported in the table, never swallowed silently
        return na(f"error: {type(exc).__name__}: {str(exc)[:300]}")


def numba_python_missing(python: str, module: str = "numba.cuda") -> str | None:
    """None when `python` can import numba-cuda, else why the numba column is n/a."""
    code = f"import importlib.util as u, sys; sys.exit(0 if u.find_spec({module.split('.')[0]!r}) "\
           f"and u.find_spec({module!r}) else 1)"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {python}: {exc}"
    if proc.returncode != 0:
        return f"numba-cuda is not installed for {python} (pip install numba-cuda)"
    return None


def gpu_missing() -> str | None:
    """None when a CUDA GPU is usable here (device 0's primary context), else the reason."""
    try:
        from benchmarks import bare_driver

        bare_driver.ensure_context()
    except Exception as exc:  # noqa: BLE001 - any failure means: no GPU figures here
        return f"no usable CUDA GPU ({type(exc).__name__}: {str(exc)[:120]})"
    return None


def gpu_event_ms(launch: Callable[[], object], start, end, elapsed_ms: Callable, iters: int,
                 repeats: int) -> float:
    """Median over `repeats` of the device time per launch, from events around `iters` launches.

    `start`/`end` are the tool's own events, recorded on the default stream its launches use;
    `end.synchronize()` waits for the work, so the host clock plays no part.
    """
    launch()  # warm-up (and compile, for a JIT)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(iters):
            launch()
        end.record()
        end.synchronize()
        samples.append(elapsed_ms(start, end) / iters)
    return median(samples)
