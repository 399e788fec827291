"""The grader cannot be fooled: every wrong submission of the corpus (corpus_*.py) is rejected
with the finding of its mistake and the hint for it, whatever the attempt's inputs; every
puzzle's hard-coded answer is rejected; every puzzle has its corpus."""

from __future__ import annotations

import corpus_basics
import corpus_exercises
import corpus_lessons
import corpus_shared
import pytest
import wrong_submissions as corpus

from gpunb import puzzles
from gpunb.puzzles.model import SHARED_REQUIRED

pytestmark = pytest.mark.slow  # ~100 kernels to compile

ALL = list(puzzles.list()) + list(puzzles.exercises())
CASES = (corpus_basics.CASES + corpus_shared.CASES + corpus_lessons.CASES
         + corpus_exercises.CASES)
# the kinds that mean "another algorithm than the statement's"
ALGORITHM = {"step_work", "warp_ops", "shared_flow", "global_reads", "barriers", "coalescing",
             "bank_conflicts", "method"}


@pytest.mark.parametrize("case", CASES,
                         ids=[f"{c.puzzle}: {c.what}" for c in CASES])
@pytest.mark.parametrize("seed", [None, 11])
def test_wrong_submission_is_rejected_with_the_right_hint(case, seed):
    grade = puzzles.check(case.puzzle, case.kernel, seed=seed)
    assert not grade, f"{case.what}: accepted\n{grade!r}"
    assert case.kind in grade.kinds, f"{case.what}: expected {case.kind}\n{grade!r}"
    hints = [f.hint for f in grade.findings if f.kind == case.kind]
    assert any(case.hint in h for h in hints), f"{case.what}: hints {hints}"
    assert "hint: " in repr(grade)


@pytest.mark.parametrize("name", ALL)
def test_a_hard_coded_answer_is_rejected(name):
    kernel = corpus.hard_coded(name)
    grade = puzzles.check(name, kernel)
    assert not grade, repr(grade)
    if puzzles.get(name).rules.must_read == ():
        # a chunk's kernel reads only its chunk: the random values catch it
        assert "values" in grade.kinds, repr(grade)
        return
    # the unread input is the finding; the values may match the frozen ones by chance (a count
    # of positives among 32 random values often does), so they are not required to differ
    assert "unread_input" in grade.kinds, repr(grade)
    unread = next(f for f in grade.findings if f.kind == "unread_input")
    assert "drawn at random at every attempt" in unread.hint


def test_every_puzzle_has_its_wrong_submissions():
    """Besides its hard-coded answer: a puzzle about shared memory has a missing barrier,
    another algorithm and a read of unwritten shared memory; an exercise has at least its
    starter (test_exercises.py)."""
    kinds: dict = {}
    for case in CASES:
        kinds.setdefault(case.puzzle, set()).add(case.kind)
    for name in ALL:
        puzzle = puzzles.get(name)
        assert kinds.get(name) or puzzle.kind == "exercise", f"no wrong submission for {name}"
        if puzzle.kind == "puzzle" and puzzle.shared == SHARED_REQUIRED \
                and puzzle.topic != "tensor cores":
            assert kinds[name] & {"race", "barriers"}, f"{name}: no missing barrier"
            assert kinds[name] & ALGORITHM, f"{name}: no other algorithm"
            assert "uninitialised" in kinds[name], f"{name}: no unwritten shared memory"
