"""The corpus on a GPU (`gpu` marker): compute-sanitizer finds the same bugs and maps them to
their lines.

Each buggy kernel is replayed in a child process under the tool its kind maps to
(corpus.SANITIZER_TOOLS) and must be reported at one of its `# BUG` lines; a case whose bug no
tool sees on a GPU is skipped with its `no_gpu` reason (test_gpu_gaps.py checks those reasons
against the compiled code). Every fixed version must come back clean. Nothing runs in the test's
own process: `record_launch` compiles and snapshots a launch without launching it, so an
illegal address cannot lose this process's context and a divergent barrier cannot hang it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpunb
from gpunb.profiling.api import record_launch, sanitize_launch, sanitize_snapshot
from gpunb.profiling.snapshot import Snapshot
from tests.correctness.corpus import CASES, SANITIZER_TOOLS, make_args
from tests.correctness.run_case import HEADER

pytestmark = pytest.mark.gpu

TIMEOUT = 120.0  # a run that hangs is stopped and reported as an error, failing the test


@pytest.fixture(autouse=True)
def _cuda():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


def _launch(case, which: str, directory: Path) -> tuple:
    """(kernel[grid, block], its arguments on the GPU) for the buggy or fixed source, compiled
    from a file named after the case, the name compute-sanitizer's reports give."""
    from gpunb import cuda

    path = directory / f"{case.name}_{which}.py"
    text = HEADER + (case.source if which == "buggy" else case.fixed)
    path.write_text(text)
    namespace: dict = {"__name__": f"corpus_gpu_{case.name}_{which}"}
    exec(compile(text, str(path), "exec"), namespace)  # noqa: S102 - the corpus is our own
    kernel = cuda.jit(namespace["kernel"])
    args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in make_args(case.args)]
    return kernel[case.grid, case.block], args


def _skip_without_shared_initcheck(report) -> None:
    if any("global memory only" in note for note in report.notes):
        pytest.skip("this compute-sanitizer checks global memory only: " + report.notes[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_sanitizer_reports_the_bug_at_its_line(case, tmp_path):
    if case.no_gpu:
        pytest.skip(f"no GPU equivalent ({case.sanitizer or 'no tool'}): {case.no_gpu}")
    launch, args = _launch(case, "buggy", tmp_path)
    report = sanitize_launch(launch, *args, tool=case.sanitizer, timeout=TIMEOUT)
    assert not report.error, report.text()
    if case.kind == "init":
        _skip_without_shared_initcheck(report)
    mine = [f for f in report.findings if Path(f.file).name == f"{case.name}_buggy.py"]
    lines = {f.line for f in mine} | {f.other_line for f in mine if f.other_line}
    assert lines & case.bug_lines(), (sorted(case.bug_lines()), report.text())


@pytest.mark.parametrize("tool", sorted(set(filter(None, SANITIZER_TOOLS.values()))))
def test_every_fixed_version_is_clean(tool, tmp_path):
    """One replay per tool holds every fixed kernel of its kinds (a case without a tool, under
    memcheck): none may be reported."""
    cases = [c for c in CASES if (c.sanitizer or "memcheck") == tool]
    snapshot = Snapshot(limit=len(cases))
    for case in cases:
        launch, args = _launch(case, "fixed", tmp_path)
        record_launch(snapshot, launch, *args)
    assert len(snapshot.launches) == len(cases), snapshot.skipped
    report = sanitize_snapshot(snapshot, tool, timeout=TIMEOUT * 2)
    assert not report.error, report.text()
    assert report.clean, report.text()
    assert "0 errors" in report.summary or "0 hazards" in report.summary, report.summary
