"""The pytest plugin of one suite session: imports upstream test files as `numba.cuda.tests...`,
applies the scope table, and streams one JSON line per event to the runner's log.

The log is written and flushed as each test starts and ends, so when a test hangs or kills the
process the runner knows which one it was.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from . import hook, scope
from .shims import errors
from .shims.missing import importing_test_module

_GPUNB_DIR = None
ENV_CACHE_BASE = "NUMBA_CUDA_SUITE_CACHE"  # where each test's own gpunb cache dir is made


def pytest_addoption(parser) -> None:
    group = parser.getgroup("numba_cuda_suite")
    group.addoption("--suite-log", help="JSON-lines event log written for the runner")
    group.addoption("--suite-skip", help="JSON list of node ids not to run (already done)")
    group.addoption("--suite-all", action="store_true",
                    help="also run tests the scope table marks out of scope")


class _Log:
    def __init__(self, path: str | None):
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def write(self, **event) -> None:
        if self._file is not None:
            event["time"] = time.time()
            self._file.write(json.dumps(event, default=str) + "\n")
            self._file.flush()


_log = _Log(None)


def pytest_configure(config) -> None:
    global _log
    hook.install()
    _log = _Log(config.getoption("--suite-log"))


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent):
    """Upstream directories are plain directories, not Packages: a Package node would import
    numba-cuda's own `numba/cuda/__init__.py` for its setup."""
    upstream = hook.tests_dir().resolve().parent.parent
    if Path(path).resolve().is_relative_to(upstream):
        return pytest.Dir.from_parent(parent, path=path)
    return None


def pytest_pycollect_makemodule(module_path: Path, parent):
    tests = hook.tests_dir()
    try:
        relative = Path(module_path).resolve().relative_to(tests.resolve())
    except ValueError:
        return None
    return UpstreamModule.from_parent(parent, path=module_path,
                                      name_in_package=".".join(relative.with_suffix("").parts))


class UpstreamModule(pytest.Module):
    """A test file imported by its upstream name (numba.cuda.tests.cudapy.test_x), through the
    hook, so relative and absolute imports between upstream test modules keep working."""

    @classmethod
    def from_parent(cls, parent, *, name_in_package: str, **kwargs):
        node = super().from_parent(parent, **kwargs)
        node.name_in_package = name_in_package
        return node

    def _getobj(self):
        with importing_test_module():
            module = importlib.import_module(f"numba.cuda.tests.{self.name_in_package}")
        errors.map_numba_error_names(module)
        return module


def pytest_collectreport(report) -> None:
    if report.skipped and isinstance(report.longrepr, tuple):  # pytest.importorskip at the top
        _log.write(event="collect_skip", nodeid=report.nodeid, message=str(report.longrepr[2]))
    if report.failed:
        text = str(report.longrepr)
        raised = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
        _log.write(event="collect_error", nodeid=report.nodeid,
                   message=raised[-1] if raised else _first_lines(text, 6),
                   detail=_first_lines("\n".join(raised), 12))


def pytest_collection_modifyitems(session, config, items) -> None:
    skip_file = config.getoption("--suite-skip")
    done = set(json.loads(Path(skip_file).read_text())) if skip_file else set()
    run_all = config.getoption("--suite-all")
    on_cpu = _active_target() == "cpu"
    keep, drop = [], []
    collected = []
    for item in items:
        verdict = scope.classify(item.nodeid)
        collected.append({"nodeid": item.nodeid, "scope": verdict.scope, "reason": verdict.reason})
        if item.nodeid in done or (verdict.scope == "out" and not run_all):
            drop.append(item)
            continue
        if verdict.scope == "gpu" and on_cpu:
            item.add_marker(pytest.mark.skip(reason=f"needs a real GPU: {verdict.reason}"))
        keep.append(item)
    _log.write(event="collected", items=collected)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location) -> None:
    _log.write(event="start", nodeid=nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Each test compiles into an empty gpunb cache of its own, as each of numba's cache tests
    starts with an empty `__pycache__` in a fresh copy of its module: gpunb's cache is keyed by
    content, so a kernel that an earlier test (or an earlier run, or the user) compiled from the
    same text would otherwise be a hit where the test counts a miss. Processes the test starts
    inherit the directory, as numba's subprocesses find the test's __pycache__."""
    base = os.environ.get(ENV_CACHE_BASE)
    if not base:
        yield
        return
    os.makedirs(base, mode=0o700, exist_ok=True)
    directory = tempfile.mkdtemp(prefix="test-", dir=base)
    os.environ["GPUNB_CACHE_DIR"] = directory
    try:
        yield
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
        report.suite_info = _exception_facts(call.excinfo, item)


def pytest_runtest_logreport(report) -> None:
    info = getattr(report, "suite_info", None)
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    elif report.failed and str(report.longrepr).startswith("Unexpected success"):
        outcome = "xpassed"  # a unittest expectedFailure that passed (pytest reports a failure)
    event = {"event": "report", "nodeid": report.nodeid, "when": report.when,
             "outcome": outcome, "duration": round(report.duration, 3),
             "subtest": type(report).__name__ == "SubtestReport"}
    if report.skipped and isinstance(report.longrepr, tuple):
        event["message"] = str(report.longrepr[2])
    elif report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        event["message"] = _first_lines(crash.message if crash else str(report.longrepr), 6)
        if info:
            event.update(info)
    _log.write(**event)


def _exception_facts(excinfo, item) -> dict:
    """What kind of exception, raised where: the innermost frames in gpunb and in the test file."""
    exc = excinfo.value
    facts = {"exc_type": f"{type(exc).__module__}.{type(exc).__qualname__}",
             "exc_mro": [c.__name__ for c in type(exc).__mro__],
             "message": _first_lines(str(exc), 6) or type(exc).__name__}
    test_file = str(getattr(item, "path", ""))
    gpunb_dir = _gpunb_dir()
    for entry in excinfo.traceback:
        path = str(entry.path)
        where = f"{path}:{entry.lineno + 1}"
        if path == test_file:
            facts["test_frame"] = where
            facts["test_line"] = _source_line(entry)
            facts["test_statement"] = _statement(entry)
            facts["generated_text_locals"] = _generated_text_locals(entry)
        elif gpunb_dir and path.startswith(gpunb_dir):
            facts["gpunb_frame"] = where  # innermost wins: entries go outermost first
    return facts


def _source_line(entry) -> str:
    try:
        return str(entry.statement).strip().splitlines()[0][:200]
    except Exception:
        return ""


def _statement(entry) -> str:
    """The whole failing statement of the test, one line (an assertion may span several)."""
    try:
        return " ".join(str(entry.statement).split())[:400]
    except Exception:
        return ""


# LLVM IR (llvmlite's and numba's module header) and PTX (LLVM's and NVVM's header, directives)
_GENERATED_TEXT = re.compile(r"^\s*(; ModuleID|//\s*\n//\s*Generated by|//\s*Generated by|"
                             r"\.version \d|target triple|define )")


def _generated_text_locals(entry) -> list[str]:
    """Names of the test frame's locals that hold generated code (LLVM IR or PTX text, or a
    dict of them as inspect_llvm() / inspect_asm() return): an assertion over those is about the
    compiler's text, not a kernel's values (report.classify_failure)."""
    try:
        local_values = dict(entry.frame.f_locals)
    except Exception:
        return []
    names = []
    for name, value in local_values.items():
        texts = value.values() if isinstance(value, dict) else (value,)
        if any(isinstance(text, str) and _GENERATED_TEXT.match(text) for text in texts):
            names.append(name)
    return sorted(names)


def _gpunb_dir() -> str | None:
    global _GPUNB_DIR
    if _GPUNB_DIR is None:
        module = sys.modules.get("gpunb")
        _GPUNB_DIR = os.path.dirname(module.__file__) + os.sep if module else ""
    return _GPUNB_DIR or None


def _active_target() -> str:
    value = os.environ.get("GPUNB_TARGET", "auto")
    if value != "auto":
        return value
    import gpunb.cuda

    return "cuda" if gpunb.cuda.is_available() else "cpu"


def _first_lines(text: str, n: int) -> str:
    lines = [line for line in str(text).splitlines() if line.strip()]
    return "\n".join(lines[:n])[:2000]
