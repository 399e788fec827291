"""Runs each upstream cudapy test file in its own pytest subprocess and gathers one result per
test: passed / failed / error / skipped / xfailed / crashed / timeout / not_run.

A test that hangs past --test-timeout, or kills its process, is recorded and the file's session
is started again without the tests already done, so one bad test costs only itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from . import scope, source, statictests

HARNESS = Path(__file__).resolve().parent
REPO = HARNESS.parent.parent
ENV_SRC = "NUMBA_CUDA_SRC"


@dataclass(frozen=True, slots=True)
class RunOptions:
    tests_dir: Path  # upstream numba/cuda/tests
    out_dir: Path
    target: str
    test_timeout: float
    file_timeout: float
    run_all: bool
    cpu_threads: int


def find_tests_dir(src: str | None) -> Path:
    """numba-cuda's `numba/cuda/tests` from a checkout root, its numba_cuda/ dir, or below; from
    a wheel file; or, when neither --src nor $NUMBA_CUDA_SRC names one, the pinned release."""
    value = src or os.environ.get(ENV_SRC)
    if not value:
        return source.pinned_tests_dir()
    root = Path(value).expanduser().resolve()
    if root.suffix == ".whl" and root.is_file():
        return source.wheel_tests_dir(root)
    for candidate in (root / "numba_cuda/numba/cuda/tests", root / "numba/cuda/tests",
                      root / "cuda/tests", root / "tests", root, root.parent):
        if (candidate / "cudapy").is_dir():
            return candidate
    raise SystemExit(f"no numba/cuda/tests/cudapy under {root}")


def child_env(opts: RunOptions) -> dict:
    env = dict(os.environ)
    paths = [str(HARNESS / "boot"), str(HARNESS.parent), str(REPO)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["NUMBA_CUDA_SUITE_TESTS"] = str(opts.tests_dir)
    env["GPUNB_TARGET"] = opts.target
    if opts.cpu_threads:
        env["GPUNB_CPU_THREADS"] = str(opts.cpu_threads)
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONPYCACHEPREFIX"] = str(opts.out_dir / "pycache")  # nothing written into the checkout
    # gpunb's cache: one empty directory per test under this one (plugin.pytest_runtest_protocol),
    # never the user's: no result depends on what an earlier run or the user compiled
    env["NUMBA_CUDA_SUITE_CACHE"] = str(opts.out_dir.resolve() / "gpunb-cache")
    env["GPUNB_CACHE_DIR"] = str(opts.out_dir.resolve() / "gpunb-cache" / "session")
    return env


def run_file(path: Path, opts: RunOptions) -> dict:
    """All results of one test file: {"tests": {nodeid: result}, "collect_error": str | None}."""
    results: dict[str, dict] = {}
    collected: dict[str, dict] = {}
    collect_error = collect_skip = None
    started = time.monotonic()
    log_dir = opts.out_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    output_path = log_dir / f"{path.stem}.out"
    output_path.write_text("")
    for _attempt in range(200):  # each attempt finishes at least one test or stops
        budget = opts.file_timeout - (time.monotonic() - started)
        if budget <= 0:
            break
        session = _run_session(path, opts, set(results), budget, output_path)
        collected.update({c["nodeid"]: c for c in session.collected})
        collect_error = collect_error or session.collect_error
        collect_skip = collect_skip or session.collect_skip
        results.update(session.results)
        if session.unfinished is None:
            break
        nodeid, status, message = session.unfinished
        results[nodeid] = {"status": status, "message": message}
    for nodeid, info in collected.items():
        result = results.setdefault(nodeid, {"status": "not_run",
                                             "message": "file time budget spent"})
        if info["scope"] == scope.OUT and result["status"] == "not_run" and not opts.run_all:
            result["message"] = "out of scope: not run"
    if not collected:
        status, message = "error", collect_error or "nothing collected"
        if collect_skip and not collect_error:
            status, message = "skipped", collect_skip
        for nodeid in statictests.enumerate_tests(path):
            results[nodeid] = {"status": status, "message": message, "phase": "collect"}
    for nodeid, result in results.items():
        verdict = scope.classify(nodeid)
        result["scope"], result["scope_reason"] = verdict.scope, verdict.reason
    return {"tests": results, "collect_error": collect_error,
            "seconds": round(time.monotonic() - started, 1)}


@dataclass
class _Session:
    collected: list
    results: dict
    collect_error: str | None
    unfinished: tuple | None  # (nodeid, "crashed" | "timeout", message) when it did not finish
    collect_skip: str | None = None  # the module skipped itself (pytest.importorskip)


def _run_session(path: Path, opts: RunOptions, done: set, budget: float,
                 output_path: Path) -> _Session:
    with tempfile.TemporaryDirectory(prefix="ncs-") as tmp:
        log = Path(tmp) / "events.jsonl"
        skip = Path(tmp) / "skip.json"
        skip.write_text(json.dumps(sorted(done)))
        cmd = [sys.executable, "-m", "pytest", str(path), "-p", "numba_cuda_suite.plugin",
               "--noconftest", "-c", str(HARNESS / "pytest.ini"),
               "--rootdir", str(path.parent), "-q", "-p", "no:randomly",
               "--suite-log", str(log), "--suite-skip", str(skip)]
        if opts.run_all:
            cmd.append("--suite-all")
        with open(output_path, "a", encoding="utf-8") as output:
            output.write(f"\n$ {' '.join(cmd)}\n")
            output.flush()
            proc = subprocess.Popen(cmd, cwd=tmp, env=child_env(opts), stdout=output,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            timed_out = _watch(proc, log, opts.test_timeout, budget)
        return _read_session(log, proc.returncode, timed_out, output_path)


def _watch(proc: subprocess.Popen, log: Path, test_timeout: float, budget: float) -> str | None:
    """Wait for the session; kill it when one test runs too long or the file's budget is spent."""
    begun = time.monotonic()
    current, current_since, offset = None, begun, 0
    while proc.poll() is None:
        time.sleep(0.25)
        if log.exists():
            with open(log, encoding="utf-8") as f:
                f.seek(offset)
                chunk = f.read()
            complete = chunk[: chunk.rfind("\n") + 1]
            offset += len(complete.encode("utf-8"))
            for line in complete.splitlines():
                event = json.loads(line)
                if event["event"] == "start":
                    current, current_since = event["nodeid"], time.monotonic()
        now = time.monotonic()
        reason = None
        if current is not None and now - current_since > test_timeout:
            reason = f"test ran longer than {test_timeout:.0f} s"
        elif now - begun > budget:
            reason = "file time budget spent"
        if reason:
            _kill(proc)
            return reason
    return None


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session and whatever its tests started
    except ProcessLookupError:
        pass
    proc.wait()


def _read_session(log: Path, returncode: int, timed_out: str | None,
                  output_path: Path) -> _Session:
    events = []
    if log.exists():
        events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()
                  if line.strip()]
    collected, results, collect_error, collect_skip = [], {}, None, None
    started, finished = [], set()
    for event in events:
        kind = event["event"]
        if kind == "collected":
            collected = event["items"]
        elif kind == "collect_error":
            collect_error = event["message"]
        elif kind == "collect_skip":
            collect_skip = event["message"]
        elif kind == "start":
            started.append(event["nodeid"])
        elif kind == "report":
            _merge_report(results, event)
            if event["when"] == "teardown" and not event["subtest"]:
                finished.add(event["nodeid"])
    for nodeid in finished:
        results[nodeid].pop("_phases", None)
    unfinished = None
    pending = [n for n in started if n not in finished]
    if pending:
        nodeid = pending[-1]
        for n in pending:
            results.pop(n, None)
        if timed_out:
            unfinished = (nodeid, "timeout", timed_out)
        else:
            unfinished = (nodeid, "crashed", _crash_message(returncode, output_path))
    elif timed_out:  # killed between tests (collection or teardown of the session)
        collect_error = collect_error or f"session killed: {timed_out}"
    return _Session(collected, results, collect_error, unfinished, collect_skip)


_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "failed": 4, "error": 5}


def _merge_report(results: dict, event: dict) -> None:
    """Fold a phase (setup/call/teardown) or subtest report into the test's one result."""
    nodeid = event["nodeid"]
    outcome = event["outcome"]
    if outcome == "failed" and event["when"] != "call":
        outcome = "error"  # a failing fixture, setUp or tearDown
    if outcome == "xpassed":  # upstream marks a numba limitation expectedFailure; gpunb passes
        event = {**event, "message": "unexpected success: upstream expects a numba limitation"}
    result = results.setdefault(nodeid, {"status": "passed", "duration": 0.0})
    result["duration"] = round(result["duration"] + event.get("duration", 0.0), 3)
    if _RANK.get(outcome, 0) > _RANK.get(result["status"], 0) or (
            outcome in ("skipped", "xfailed", "xpassed") and result["status"] == "passed"):
        result["status"] = outcome
        for key in ("message", "exc_type", "exc_mro", "test_frame", "test_line", "gpunb_frame",
                    "test_statement", "generated_text_locals"):
            if key in event:
                result[key] = event[key]
        result["phase"] = event["when"]
        if event.get("subtest"):
            result["subtest"] = True


def _crash_message(returncode: int, output_path: Path) -> str:
    if returncode is not None and returncode < 0:
        head = f"process killed by signal {signal.Signals(-returncode).name}"
    else:
        head = f"process exited with status {returncode} inside the test"
    tail = output_path.read_text(encoding="utf-8", errors="replace").splitlines()[-8:]
    return head + ("\n" + "\n".join(tail) if tail else "")


def run_all(files: list[Path], opts: RunOptions, jobs: int, progress=print,
            on_file=None) -> dict:
    """Run the files `jobs` at a time; return {"files": {name: {...}}, "tests": {id: {...}}}.
    `on_file(partial)` is called with each finished file's part of that dict."""
    report = {"files": {}, "tests": {}}

    def one(path: Path) -> tuple[Path, dict]:
        return path, run_file(path, opts)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in as_completed([pool.submit(one, path) for path in files]):
            path, outcome = future.result()
            report["files"][path.name] = {"collect_error": outcome["collect_error"],
                                          "seconds": outcome["seconds"]}
            report["tests"].update(outcome["tests"])
            if on_file is not None:
                on_file({"files": {path.name: report["files"][path.name]},
                         "tests": outcome["tests"]})
            counts = {}
            for result in outcome["tests"].values():
                counts[result["status"]] = counts.get(result["status"], 0) + 1
            progress(f"{path.name:40s} {outcome['seconds']:7.1f}s  "
                     + " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return report
