"""How a puzzle must be solved, as data the grader checks from the access log of every launch.

A right answer computed the wrong way (one thread doing a block's work, an O(n²) scan, shuffles
where the puzzle is about shared memory, a shared array written and never read) is a failure:
each Method field is a rule, and `describe()` is the method in words for the statement.

Every limit may be a number or a function of the puzzle's size (the argument of its `inputs`,
`launch` and `reference`); None means no limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# how shared memory must carry the data (Method.shared_flow)
FLOW_ANY = "any"  # no rule
FLOW_OWN = "own"  # every thread that writes an output read shared memory before
FLOW_BETWEEN = "between"  # ... and in every block, values move between threads through it

Limit = int | float | Callable[[Any], int | float] | None


@dataclass(frozen=True, slots=True)
class Method:
    """The rules a solution must follow beyond the right values (see the module docstring).

    shared_flow: FLOW_ANY, FLOW_OWN or FLOW_BETWEEN (see above).
    max_step_reads: the most shared-memory reads one thread may make between two barriers
        (a tree step reads 2; one thread summing a block in one step reads the whole block).
    max_shared_reads: the most shared-memory reads one thread may make in all.
    min_barriers / max_barriers: how many cuda.syncthreads() a block passes (before its last
        memory access); a tree over n values needs log2(n) steps.
    max_warp_ops: the most warp-collective operations (shuffles, votes, syncwarp, tensor-core
        fragment operations) a thread may pass; 0 forbids them.
    min_warp_ops: the fewest a thread that writes an output must have passed.
    min_efficiency: every global-memory line's coalescing efficiency (ideal / moved sectors)
        must be at least this (only checked at sizes whose warps are full).
    max_bank_conflicts: the most shared-memory bank conflicts any line may have (in all).
    max_atomics_per_block: the most atomic operations on global memory one block may make
        (privatisation: one per bin or per block, not one per element).
    must_read: inputs of which every element must be read (None: every array input).
    rule: a puzzle's own check, `rule(trace, size) -> message` ('' when it holds).
    rule_hint: the hint shown when `rule` fails.
    text: the method in words (the statement shows it under "method").
    hints: a finding kind -> the hint this puzzle gives for it instead of the general one.
    """

    shared_flow: str = FLOW_ANY
    max_step_reads: Limit = None
    max_shared_reads: Limit = None
    min_barriers: Limit = None
    max_barriers: Limit = None
    max_warp_ops: Limit = None
    min_warp_ops: Limit = None
    min_efficiency: float | None = None
    max_bank_conflicts: Limit = None
    max_atomics_per_block: Limit = None
    must_read: tuple[str, ...] | None = None
    rule: Callable | None = None
    rule_hint: str = ""
    text: str = ""
    hints: dict = field(default_factory=dict)

    def limit(self, name: str, size) -> int | float | None:
        """The value of limit `name` at `size`."""
        value = getattr(self, name)
        return value(size) if callable(value) else value

    def describe(self, size) -> list[str]:
        """The rules in words, at `size` (for the statement's list of limits)."""
        lines = [self.text] if self.text else []
        flows = {FLOW_OWN: "shared memory carries the data: a thread reads it back before "
                           "writing its output",
                 FLOW_BETWEEN: "shared memory carries the data: threads read values other "
                               "threads of the block stored there"}
        if self.shared_flow in flows:
            lines.append(flows[self.shared_flow])
        worded = (("max_step_reads", "shared-memory reads per thread between two barriers: "
                                     "at most {}"),
                  ("max_shared_reads", "shared-memory reads per thread: at most {}"),
                  ("min_barriers", "barriers (cuda.syncthreads) per block: at least {}"),
                  ("max_barriers", "barriers (cuda.syncthreads) per block: at most {}"),
                  ("max_warp_ops", "warp-collective operations per thread: at most {}"),
                  ("min_warp_ops", "warp-collective operations per thread: at least {}"),
                  ("max_bank_conflicts", "shared-memory bank conflicts per line: at most {}"),
                  ("max_atomics_per_block", "atomic operations on global memory per block: at "
                                            "most {}"))
        for name, words in worded:
            value = self.limit(name, size)
            if value is not None:
                lines.append(words.format(value) if not (name == "max_warp_ops" and value == 0)
                             else "no warp-collective operations (shuffles, votes, syncwarp)")
        if self.min_efficiency is not None:
            lines.append(f"every global access coalesced: at least {self.min_efficiency:.0%} "
                         "of the bytes moved are used")
        return lines
