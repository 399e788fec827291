"""What a puzzle is: a statement, a starter kernel, inputs, a numpy reference, a launch, limits,
the method the grader enforces (gpunb.puzzles.method) and tiered hints.

A Puzzle is plain frozen data; gpunb.puzzles.grading runs a kernel against it. Its `repr` and
`_repr_markdown_` are the statement a learner reads in a notebook (launch shape, limits, method,
starter). Catalogues build Puzzles with keyword arguments; every field after `sizes` has a
default, so new fields never break a catalogue (the tensor-core one included).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpunb.puzzles.method import FLOW_OWN, Method

# what a puzzle says about shared memory: solved without it, may use it, or is about it
SHARED_NONE, SHARED_ALLOWED, SHARED_REQUIRED = "none", "allowed", "required"

Launch = tuple[Any, Any]  # (grid, block) as kernel[grid, block] takes them
HIDDEN_SIZES = 2  # sizes drawn with Puzzle.hidden at every attempt


@dataclass(frozen=True, slots=True)
class Puzzle:
    """One graded exercise. `inputs(size, rng)` gives every kernel argument by name (outputs
    included, already filled with their start value); `reference(args)` gives the expected
    value of each output; `launch(size)` the (grid, block) the grader uses.

    `sizes` are graded and shown; `hidden(rng)`, when given, draws more sizes at every attempt
    (never shown in advance). `method` holds the rules beyond the values (None: the defaults
    for the puzzle's `shared` setting). `initial_outputs` names outputs whose start value the
    statement gives (reading them before writing is then no uninitialised read). `hints` are
    tiered: gpunb.puzzles.hint(name, level) shows them one at a time. `lesson` names the
    notebook an exercise belongs to (e.g. "06"); `kind` is "puzzle" or "exercise".
    """

    name: str
    title: str
    statement: str
    starter: str
    inputs: Callable[[Any, np.random.Generator], dict]
    reference: Callable[[dict], dict]
    launch: Callable[[Any], Launch]
    launch_text: str
    sizes: tuple
    outputs: tuple[str, ...] = ("out",)
    max_reads: int | Callable[[Any], int] | None = 1
    max_writes: int | Callable[[Any], int] | None = 1
    shared: str = SHARED_NONE
    rtol: float = 0.0
    atol: float = 0.0
    topic: str = ""
    constants: dict = field(default_factory=dict)
    method: Method | None = None
    hidden: Callable[[np.random.Generator], Any] | None = None
    initial_outputs: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    lesson: str = ""
    kind: str = "puzzle"

    @property
    def rules(self) -> Method:
        """The method the grader enforces: `method`, or the defaults for `shared` (a puzzle
        about shared memory: threads read back from shared memory what they write out)."""
        if self.method is not None:
            return self.method
        return Method(shared_flow=FLOW_OWN) if self.shared == SHARED_REQUIRED else Method()

    @property
    def kernel_name(self) -> str:
        """The kernel's name: the starter's last top-level `def` (device functions it calls,
        if any, come before it)."""
        head = [line for line in self.starter.splitlines() if line.startswith("def ")][-1]
        return head[4:head.index("(")].strip()

    @property
    def params(self) -> tuple[str, ...]:
        """The kernel's parameters, in order: those of the starter's last `def`."""
        head = [line for line in self.starter.splitlines() if line.startswith("def ")][-1]
        inside = head[head.index("(") + 1:head.rindex(")")]
        return tuple(p.strip() for p in inside.split(",") if p.strip())

    def limit(self, which: str, size) -> int | None:
        """The most global reads (`which="reads"`) or writes one thread may make at `size`."""
        value = self.max_reads if which == "reads" else self.max_writes
        return value(size) if callable(value) else value

    def _limits_lines(self) -> list[str]:
        shared = {SHARED_NONE: "not allowed (registers and global memory only)",
                  SHARED_ALLOWED: "allowed",
                  SHARED_REQUIRED: "required (the point of the puzzle)"}[self.shared]
        lines = [f"launch: {self.launch_text}", f"shared memory: {shared}"]
        size = self.sizes[0]
        for which in ("reads", "writes"):
            n = self.limit(which, size)
            if n is not None:
                more = "" if not callable(self.max_reads if which == "reads" else
                                          self.max_writes) else f" (at size {size})"
                lines.append(f"global {which} per thread: at most {n}{more}")
        lines += [f"method: {line}" for line in self.rules.describe(size)]
        hidden = f" and {HIDDEN_SIZES} hidden sizes drawn at every attempt" if self.hidden else ""
        lines.append("graded at sizes: " + ", ".join(str(s) for s in self.sizes) + hidden
                     + ", with inputs drawn at random at every attempt")
        return lines

    def __repr__(self) -> str:
        body = [f"Puzzle {self.name!r}: {self.title}", "",
                textwrap.fill(" ".join(self.statement.split()), 96), ""]
        body += self._limits_lines()
        body += ["", "starter:", textwrap.indent(self.starter.rstrip(), "    ")]
        return "\n".join(body)

    def _repr_markdown_(self) -> str:
        limits = "\n".join(f"* {line}" for line in self._limits_lines())
        return (f"### Puzzle `{self.name}`: {self.title}\n\n{self.statement.strip()}\n\n"
                f"{limits}\n\n```python\n%%gpukernel\n{self.starter.rstrip()}\n```\n")


class PuzzleList(list):
    """gpunb.puzzles.list(): the puzzle names in order, shown as a table in a notebook."""

    def __init__(self, puzzles: list[Puzzle]):
        super().__init__(p.name for p in puzzles)
        self._puzzles = puzzles

    def _repr_markdown_(self) -> str:
        rows = [f"| {k} | `{p.name}` | {p.title} | {p.topic} |"
                for k, p in enumerate(self._puzzles, 1)]
        return "| # | name | puzzle | topic |\n|---|---|---|---|\n" + "\n".join(rows)


def cdiv(a: int, b: int) -> int:
    """Blocks of `b` threads needed to cover `a` elements."""
    return -(-a // b)
