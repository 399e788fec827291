"""Every buggy kernel of the corpus is reported at its line; no fixed version is reported.

Out-of-bounds cases run in a child process each: the process must survive and report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.correctness.corpus import CASES
from tests.correctness.run_case import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IN_PROCESS = [c for c in CASES if c.kind != "oob"]
OOB = [c for c in CASES if c.kind == "oob"]


def test_the_corpus_is_large_and_marked():
    assert len(CASES) >= 30
    assert {c.kind for c in CASES} == {"race", "oob", "warp", "barrier", "value", "init"}
    for case in CASES:
        assert case.bug_lines(), case.name


def _check(case, report) -> None:
    assert report is not None, f"{case.name}: nothing reported"
    assert report["kind"] == case.kind, report
    assert report["line"] in case.bug_lines(), report
    if case.kind in ("race", "barrier") and len(case.bug_lines()) > 1:
        # both sides of a race / both barriers are named
        assert len(set(report["lines"]) & case.bug_lines()) >= 1, report


@pytest.mark.parametrize("case", IN_PROCESS, ids=lambda c: c.name)
def test_bug_is_reported_at_its_line(case):
    _check(case, run(case, "buggy"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fixed_version_is_clean(case):
    assert run(case, "fixed") is None


@pytest.mark.parametrize("case", OOB, ids=lambda c: c.name)
def test_out_of_bounds_case_survives_in_a_child_process(case):
    proc = subprocess.run([sys.executable, "-m", "tests.correctness.run_case", case.name,
                           "buggy"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-2000:]
    _check(case, json.loads(proc.stdout.strip().splitlines()[-1]))
