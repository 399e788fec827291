"""Graded GPU puzzles in the spirit of GPU-Puzzles: a statement and a starter kernel each, graded
on the CPU target against numpy in seconds.

    from gpunb import puzzles
    puzzles.list()                       # the puzzles, in order
    puzzles.get("map")                   # statement, launch, limits, starter
    puzzles.check("map", map_kernel)     # ✔ / ✘ with which elements are wrong

Reference solutions are not in the package (they live in the tests).
"""

from __future__ import annotations

from gpunb.puzzles import catalogue_basics, catalogue_shared, catalogue_tensor
from gpunb.puzzles.grading import Grade, grade
from gpunb.puzzles.model import Puzzle, PuzzleList

__all__ = ["Grade", "Puzzle", "check", "get", "list"]

_PUZZLES: dict[str, Puzzle] = {p.name: p for p in (*catalogue_basics.PUZZLES,
                                                  *catalogue_shared.PUZZLES,
                                                  *catalogue_tensor.PUZZLES)}


def list() -> PuzzleList:  # noqa: A001 - the name the puzzles' users type
    """The puzzle names in order (a table when shown in a notebook)."""
    return PuzzleList([*_PUZZLES.values()])


def get(name: str) -> Puzzle:
    """The puzzle called `name`: its statement, launch, limits and starter kernel."""
    try:
        return _PUZZLES[name]
    except KeyError:
        from difflib import get_close_matches

        close = get_close_matches(name, _PUZZLES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise LookupError(f"no puzzle called {name!r}; {hint}gpunb.puzzles.list() names them "
                       "all") from None


def check(name: str, kernel, seed: int = 0) -> Grade:
    """Grade `kernel` for puzzle `name` on the CPU target: a Grade, true when it passed; its repr
    says which size and which elements failed, expected vs got."""
    return grade(get(name), kernel, seed=seed)
