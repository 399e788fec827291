"""compute-sanitizer without a GPU: the replay's command line, the reports of each tool (texts in
the formats compute-sanitizer prints, kernels named as gpunb names them), the corpus's mapping
to tools, and launches snapshotted without running them."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.backends.cpu.executor import KernelIndexError
from gpunb.profiling import api, sanitizer
from gpunb.profiling.snapshot import Snapshot
from tests.correctness.corpus import CASES, SANITIZER_TOOLS

DATA = Path(__file__).parents[1] / "profiling" / "data"


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@cuda.jit
def fill_past_end(out):
    i = cuda.grid(1)
    out[i + 1] = 1.0


# ---- the command line -------------------------------------------------------------------------


def test_each_tool_gets_its_options_then_the_replay_child(tmp_path):
    command = sanitizer.sanitizer_command(tmp_path, "racecheck", "/opt/cs")
    assert command == ["/opt/cs", "--tool", "racecheck", "--show-backtrace", "no",
                       "--print-limit", "1000", "--racecheck-report", "hazard",
                       sys.executable, "-m", "gpunb.profiling.replay", str(tmp_path)]
    initcheck = sanitizer.sanitizer_options("initcheck")
    assert initcheck[-2:] == ["--initcheck-address-space", "all"]
    assert "--initcheck-address-space" not in sanitizer.sanitizer_options("initcheck", False)
    for tool in ("memcheck", "synccheck"):
        assert sanitizer.sanitizer_options(tool) == ["--tool", tool, "--show-backtrace", "no",
                                                     "--print-limit", "1000"]
    with pytest.raises(sanitizer.tools.ReplayError, match="expected one of memcheck"):
        sanitizer.sanitizer_options("leakcheck")


FAKE_SANITIZER = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if "--initcheck-address-space" in args and os.environ.get("FAKE_OLD") == "1":
    print("Error: unrecognised option '--initcheck-address-space'")
    sys.exit(1)
child = args[args.index("-m") - 1:]
done = subprocess.run(child)
print("========= COMPUTE-SANITIZER")
print("========= ERROR SUMMARY: 0 errors")
sys.exit(done.returncode)
"""


def _fake_sanitizer(tmp_path, monkeypatch, old: bool) -> Path:
    """A compute-sanitizer stand-in on PATH that runs the replay child it is given (on the CPU
    target) and logs its arguments; `old` makes it refuse initcheck's address-space option as
    compute-sanitizer before 2025.4 does."""
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text(FAKE_SANITIZER.format(python=sys.executable))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_OLD", "1" if old else "0")
    return log


def _snapshot_of_a_launch() -> Snapshot:
    out = np.zeros(65, np.float32)
    snapshot = Snapshot()
    api.record_launch(snapshot, fill_past_end[1, 64], out)
    return snapshot


def test_the_replay_runs_under_the_tool_and_an_old_initcheck_falls_back(tmp_path, monkeypatch):
    log = _fake_sanitizer(tmp_path, monkeypatch, old=True)
    snapshot = _snapshot_of_a_launch()
    report = sanitizer.run_sanitizer(snapshot.path, "initcheck", timeout=240)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 2 and "--initcheck-address-space" in runs[0]
    assert "--initcheck-address-space" not in runs[1]
    assert runs[1][-3:] == ["-m", "gpunb.profiling.replay", str(snapshot.path)]
    assert report.clean and report.summary == "error summary: 0 errors"
    assert "global memory only" in report.notes[0] and "2025.4" in report.text()
    assert "launch(es) replayed" in (snapshot.path / "sanitizer_initcheck.txt").read_text()


def test_a_replay_launch_that_fails_unreported_is_the_reports_error(tmp_path, monkeypatch):
    _fake_sanitizer(tmp_path, monkeypatch, old=False)
    snapshot = _snapshot_of_a_launch()
    (snapshot.path / "launch0_arg0.npy").write_bytes(b"not numpy")
    report = sanitizer.run_sanitizer(snapshot.path, "memcheck", timeout=240)
    assert not report.clean
    assert report.error.startswith("gpunb replay: launch 0 (fill_past_end) failed:")


# ---- reports ------------------------------------------------------------------------------------


def test_synccheck_divergent_barrier_at_its_line_without_the_host_side_failure():
    report = sanitizer.parse_text((DATA / "synccheck_divergent.txt").read_text(), "synccheck")
    [finding] = report.findings  # two threads, one line: folded; the host API error dropped
    assert finding.what == "Barrier error detected. Divergent thread(s) in warp"
    assert (finding.file, finding.line, finding.count) == \
        ("barrier_in_divergent_branch_buggy.py", 5, 2)
    assert (finding.kernel, finding.thread, finding.block) == ("kernel__float321", "0,0,0",
                                                               "0,0,0")
    assert report.summary == "error summary: 3 errors"


def test_initcheck_uninitialised_shared_read_names_line_thread_and_address():
    report = sanitizer.parse_text((DATA / "initcheck_shared.txt").read_text(), "initcheck")
    [finding] = report.findings
    assert finding.what == "Uninitialized __shared__ memory read of size 4 bytes"
    assert (finding.line, finding.thread, finding.count) == (8, "32,0,0", 2)
    assert finding.detail == "Address 0x80"
    assert "shared_read_before_any_write_buggy.py:8" in report.text()


def test_memcheck_atomic_in_a_demangled_kernel_and_a_shared_overrun():
    report = sanitizer.parse_text((DATA / "memcheck_demangled.txt").read_text(), "memcheck")
    atomic, shared = report.findings
    assert atomic.what == "Invalid __global__ atomic of size 4 bytes"
    assert atomic.kernel == "hist_broken(const unsigned int *, unsigned long long, " \
                            "unsigned int *, int)"
    assert (atomic.file, atomic.line, atomic.block) == ("exercise03.cu", 112, "1,0,0")
    assert atomic.detail.startswith("Access to 0x7f1c2e800414 is out of bounds")
    assert shared.what == "Invalid __shared__ write of size 4 bytes"
    assert (shared.line, shared.thread, shared.detail) == (5, "31,0,0",
                                                            "Address 0x80 is out of bounds")


# ---- the corpus's mapping to tools -------------------------------------------------------------


def test_every_case_has_a_tool_or_says_why_none_sees_it_on_a_gpu():
    assert set(SANITIZER_TOOLS) == {c.kind for c in CASES}
    for case in CASES:
        if case.sanitizer is None:
            assert case.no_gpu, case.name  # no tool: it must say why
    gaps = [c for c in CASES if c.no_gpu]
    # shared races, out-of-bounds, barriers and uninitialised shared memory stay checked
    checked = {c.kind for c in CASES if not c.no_gpu}
    assert checked == {"race", "oob", "barrier", "init"}
    assert len(CASES) - len(gaps) >= 20
    assert all(c.kind == "race" for c in gaps if "global memory" in c.no_gpu)


# ---- launches snapshotted without running them ------------------------------------------------


def test_sanitize_launch_never_runs_the_kernel_here():
    out = np.zeros(64, np.float32)  # the kernel writes one past the end: never run here
    report = api.sanitize_launch(fill_past_end[1, 64], out, tool="memcheck")
    assert "CPU target" in report.error
    assert not out.any()
    with pytest.raises(TypeError, match=r"kernel\[grid, block\]"):
        api.sanitize_launch(fill_past_end, out)
    with pytest.raises(ValueError, match="expected one of"):
        api.sanitize_launch(fill_past_end[1, 64], out, tool="leakcheck")


def test_record_launch_copies_the_arguments_as_they_are_now():
    out = np.arange(65, dtype=np.float32)
    snapshot = Snapshot()
    api.record_launch(snapshot, fill_past_end[1, 64], out)
    [launch] = snapshot.launches
    assert (launch["kernel"], launch["grid"], launch["block"]) == ("fill_past_end", [1], [64])
    np.testing.assert_array_equal(np.load(snapshot.path / launch["args"][0]["file"]), out)
    with pytest.raises(TypeError, match="argument 1 of 'fill_past_end': cannot pass a list"):
        api.record_launch(Snapshot(), fill_past_end[1, 64], [1.0, 2.0])


def test_sanitize_reports_what_the_live_run_raised():
    out = np.zeros(64, np.float32)
    report = gpunb.sanitize(lambda: fill_past_end[1, 64](out), "memcheck")
    assert "CPU target" in report.error  # the replay itself needs a GPU
    assert report.notes and report.notes[0].startswith(f"the live run raised "
                                                       f"{KernelIndexError.__name__}")
    assert "replay" not in report.notes[0]  # nothing was replayed: no findings to point at
    assert "index 64 is out of bounds" in report.text()
