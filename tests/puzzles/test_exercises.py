"""The exercises that end each teaching notebook: every notebook 01-11 has two or three, each
starter (the kernel to fix or to speed up) is rejected for the mistake the exercise is about,
with that finding's hint, and each solution (exercise_solutions.py) passes; hints come in tiers.
"""

from __future__ import annotations

import types

import exercise_solutions
import pytest

from gpunb import cuda, puzzles

EXERCISES = list(puzzles.exercises())
LESSONS = [f"{k:02d}" for k in range(1, 12)]


def starter_kernel(name: str):
    """The starter as a %%gpukernel cell would define it: every def a GPU function, the last
    one the kernel."""
    puzzle = puzzles.get(name)
    namespace = {"cuda": cuda}
    exec(compile(puzzle.starter, f"<starter {name}>", "exec"), namespace)
    for key, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and key != puzzle.kernel_name:
            namespace[key] = cuda.jit(device=True)(value)
    return namespace[puzzle.kernel_name]


def test_every_notebook_ends_with_two_or_three_exercises():
    for lesson in LESSONS:
        names = list(puzzles.exercises(lesson))
        assert 2 <= len(names) <= 3, (lesson, names)
        assert all(puzzles.get(n).kind == "exercise" for n in names)
    assert sorted(exercise_solutions.SOLUTIONS) == sorted(EXERCISES)
    assert not set(EXERCISES) & set(puzzles.list())  # exercises are not in the puzzle list


@pytest.mark.parametrize("name", EXERCISES)
def test_the_starter_is_rejected_for_what_the_exercise_is_about(name):
    grade = puzzles.check(name, starter_kernel(name))
    expected = exercise_solutions.STARTER_KINDS[name]
    assert not grade and expected in grade.kinds, repr(grade)
    assert "hint" in repr(grade)


@pytest.mark.parametrize("name", EXERCISES)
def test_the_solution_passes(name):
    grade = puzzles.check(name, exercise_solutions.SOLUTIONS[name])
    assert grade, repr(grade)


@pytest.mark.parametrize("name", EXERCISES)
def test_each_exercise_has_three_tiers_of_hints_and_a_statement(name):
    puzzle = puzzles.get(name)
    assert len(puzzle.hints) == 3
    assert puzzles.hint(name, 1).startswith("hint 1 of 3: ")
    assert puzzles.hint(name, 3).startswith("hint 3 of 3: ")
    text = repr(puzzle)
    assert f"Puzzle '{name}'" in text and puzzle.starter.splitlines()[-1] in text
    verbs = ("Fix this kernel", "Make it", "Remove the bank conflict")
    assert puzzle.statement.lstrip().startswith(verbs), puzzle.statement[:40]


def test_exercises_are_listed_per_notebook_as_a_table():
    table = puzzles.exercises("06")._repr_markdown_()
    assert "`ex06_coalesced_scale`" in table and "`ex07_" not in table
