"""Whether the grader is still the one gpunb shipped: a check, before each grade, that no
function or class of the grader's modules was rebound and no puzzle was altered since import.

A learner's cell runs in the grader's process, so a cell could replace `feedback.compare` with
a function that finds nothing, or give a puzzle a reference that matches any answer (frozen
dataclasses yield to object.__setattr__). Grading then refuses with the name of what changed.
This catches changes made through the grader's modules and puzzles; code that replaces
`gpunb.puzzles.check` itself never reaches the grader at all, so no check in it can see that.
"""

from __future__ import annotations

import dataclasses
import types


def _members(module: types.ModuleType) -> dict[str, object]:
    """The functions and classes the module's code calls by name (its own and those it
    imported: `compare` in grading is feedback's), and the methods of its own classes."""
    found = {}
    for name, value in vars(module).items():
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
            found[name] = value
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attribute, member in vars(value).items():
                    found[f"{name}.{attribute}"] = member
    return found


def _fields(puzzle) -> tuple:
    return tuple(getattr(puzzle, f.name) for f in dataclasses.fields(puzzle))


class Snapshot:
    """The grader's modules' members and every puzzle's field values, as imported."""

    def __init__(self, modules: list[types.ModuleType], puzzles: dict) -> None:
        self._modules = modules
        self._members = {m.__name__: _members(m) for m in modules}
        self._catalogue = puzzles
        self._puzzles = {name: (p, _fields(p)) for name, p in puzzles.items()}

    def changes(self) -> list[str]:
        """What was rebound or altered since the snapshot (empty when nothing was)."""
        changed = []
        for module in self._modules:
            now = _members(module)
            for name, value in self._members[module.__name__].items():
                if now.get(name) is not value:
                    changed.append(f"{module.__name__}.{name}")
        for name, (puzzle, values) in self._puzzles.items():
            current = self._catalogue.get(name)
            if current is not puzzle or any(
                    a is not b for a, b in zip(_fields(puzzle), values, strict=True)):
                changed.append(f"puzzle {name!r}")
        return changed


__all__ = ["Snapshot"]
