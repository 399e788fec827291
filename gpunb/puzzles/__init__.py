"""Graded GPU puzzles in the spirit of GPU-Puzzles, and the exercises that end each teaching
notebook: a statement and a starter kernel each, graded on the CPU target in seconds.

    from gpunb import puzzles
    puzzles.list()                       # the puzzles, in order
    puzzles.get("map")                   # statement, launch, limits, method, starter
    puzzles.show("map", map_kernel)      # what each thread read and wrote, drawn
    puzzles.check("map", map_kernel)     # ✔ / ✘ with what is wrong and a hint
    puzzles.hint("map")                  # the first hint; hint("map", 2) the next
    puzzles.exercises("06")              # the exercises of notebook 06

Grading draws the inputs (and hidden sizes) at random at every attempt and runs every check the
CPU target has (bounds, races, initcheck, barrier divergence, warp masks) plus the puzzle's
method (gpunb.puzzles.method). Reference solutions are not in the package (they live in the
tests).

A catalogue is a module with a PUZZLES list of Puzzle objects (model.py); adding one is adding
its module to _CATALOGUES below. Puzzle's fields up to `sizes` are required, the rest keep
their defaults, so catalogues written against an earlier Puzzle keep working.
"""

from __future__ import annotations

from gpunb.puzzles import (
    catalogue_basics,
    catalogue_capstones,
    catalogue_lessons,
    catalogue_shared,
    catalogue_tensor,
    exercises_basics,
    exercises_performance,
    exercises_tensor,
    feedback,
    grading,
    method,
    model,
    rules,
    trace,
)
from gpunb.puzzles.feedback import Finding
from gpunb.puzzles.grading import Grade, grade
from gpunb.puzzles.integrity import Snapshot
from gpunb.puzzles.method import Method
from gpunb.puzzles.model import Puzzle, PuzzleList
from gpunb.puzzles.show import Show
from gpunb.puzzles.show import show as _show

__all__ = ["Grade", "Method", "Puzzle", "Show", "check", "exercises", "get", "hint", "list",
           "show"]

_CATALOGUES = (catalogue_basics, catalogue_shared, catalogue_tensor, catalogue_lessons,
               catalogue_capstones, exercises_basics, exercises_performance, exercises_tensor)
_PUZZLES: dict[str, Puzzle] = {p.name: p for c in _CATALOGUES for p in c.PUZZLES}
# the grader as imported: check() refuses to grade once a cell has replaced part of it
_AS_IMPORTED = Snapshot([grading, rules, feedback, trace, method, model], _PUZZLES)


def list(lesson: str | None = None) -> PuzzleList:  # noqa: A001 - the name users type
    """The puzzle names in order (a table when shown in a notebook); with `lesson` ("12"),
    only that notebook's puzzles. Exercises are listed by exercises()."""
    return PuzzleList([p for p in _PUZZLES.values() if p.kind == "puzzle"
                       and (lesson is None or p.lesson == lesson)])


def exercises(lesson: str | None = None) -> PuzzleList:
    """The graded exercises that end notebook `lesson` ("01" ... ), or all of them."""
    return PuzzleList([p for p in _PUZZLES.values() if p.kind == "exercise"
                       and (lesson is None or p.lesson == lesson)])


def get(name: str) -> Puzzle:
    """The puzzle called `name`: its statement, launch, limits, method and starter kernel."""
    try:
        return _PUZZLES[name]
    except KeyError:
        from difflib import get_close_matches

        close = get_close_matches(name, _PUZZLES, n=1)
        hint_text = f"did you mean {close[0]!r}? " if close else ""
        raise LookupError(f"no puzzle called {name!r}; {hint_text}gpunb.puzzles.list() and "
                          "gpunb.puzzles.exercises() name them all") from None


def check(name: str, kernel, seed: int | None = None) -> Grade:
    """Grade `kernel` for puzzle `name` on the CPU target: a Grade, true when it passed; its repr
    says which size failed, the first wrong elements and who wrote them, each rule broken and
    what to do. Inputs (and hidden sizes) are drawn at random at every attempt; `seed`
    repeats one (a failed Grade names its seed)."""
    puzzle = get(name)
    changed = _AS_IMPORTED.changes()
    if changed:
        finding = Finding(
            "grader_changed",
            f"the grader was changed after gpunb was imported ({', '.join(changed[:3])}"
            f"{' ...' if len(changed) > 3 else ''} replaced), so no grade can be given",
            "restart the kernel and check again without assigning to gpunb.puzzles' "
            "functions or puzzles")
        return Grade(name, False, failure=finding.text(), findings=[finding])
    return grade(puzzle, kernel, seed=seed)


def show(name: str, kernel, size=None, seed: int = 0) -> Show:
    """Run `kernel` once for puzzle `name` (at its first size, or `size`) and draw what each
    thread read and wrote, shared memory included; nothing is graded."""
    return _show(get(name), kernel, size=size, seed=seed)


def hint(name: str, level: int = 1) -> str:
    """Hint number `level` (1, 2, ...) of puzzle `name`: each says a little more."""
    puzzle = get(name)
    if not puzzle.hints:
        return HintText(f"puzzle {name!r} has no hints: its statement and the check's "
                        "feedback say it all")
    level = max(1, min(int(level), len(puzzle.hints)))
    more = (f" (puzzles.hint({name!r}, {level + 1}) says more)"
            if level < len(puzzle.hints) else "")
    return HintText(f"hint {level} of {len(puzzle.hints)}: {puzzle.hints[level - 1]}{more}")


class HintText(str):
    """A hint that a notebook shows as text, not as a quoted string."""

    def __repr__(self) -> str:
        return str(self)
