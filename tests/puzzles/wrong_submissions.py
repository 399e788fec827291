"""The corpus of wrong submissions, the kinds an instructor tried against the grader: reads of
shared memory no thread wrote, hard-coded answers, another algorithm than the statement's (one
thread doing a block's work, an O(n²) scan, shuffles where shared memory is required, a register
copy instead of shared memory), missing barriers, off-by-ones, races, missing guards.

This module is the corpus's frame: a Case names its puzzle, the finding kind the grader must
report and words its hint must contain. The kernels are in corpus_basics.py (puzzles 1-10),
corpus_shared.py (11-22), corpus_lessons.py (notebooks 11-16) and corpus_exercises.py.
`hard_coded(name)` builds, for any puzzle, its reference solution with the inputs replaced by
the arrays of one fixed attempt: right for that attempt, blind to the real inputs.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from dataclasses import dataclass

import exercise_solutions
import numpy as np
import solutions


@dataclass(frozen=True)
class Case:
    puzzle: str
    kind: str  # a finding kind the grade must list ('race', 'uninitialised', ...)
    hint: str  # words the hint of that finding must contain
    kernel: object
    what: str  # which mistake, for test ids


def collector(cases: list):
    """`wrong = collector(CASES)`: a decorator that adds a kernel to `cases` as a Case."""
    def wrong(puzzle: str, kind: str, hint: str, what: str):
        def register(kernel):
            cases.append(Case(puzzle, kind, hint, kernel, what))
            return kernel
        return register
    return wrong


def hard_coded(name: str, reference=None):
    """The reference solution of `name` reading fixed arrays (one earlier attempt's inputs,
    frozen into the code as constants) instead of its input arguments."""
    from gpunb import puzzles

    puzzle = puzzles.get(name)
    module = solutions if name in solutions.SOLUTIONS else exercise_solutions
    reference = reference or module.SOLUTIONS[name]
    args = puzzle.inputs(puzzle.sizes[0], np.random.default_rng(12345))
    inputs = [p for p in puzzle.params
              if p not in puzzle.outputs and isinstance(args[p], np.ndarray)]
    tree = ast.parse(textwrap.dedent(inspect.getsource(reference)))
    function = tree.body[0]
    function.decorator_list = []
    for arg in function.args.args:
        if arg.arg in inputs:
            arg.arg += "_given"
    source = ast.unparse(tree)
    filename = f"<hard-coded {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(vars(module))
    namespace.update({p: args[p] for p in inputs})
    exec(compile(source, filename, "exec"), namespace)
    return namespace[function.name]


HARD_CODED_HINT = "computed from them"
BARRIER_HINT = "cuda.syncthreads()"
UNSET_HINT = "still store their slot"


HARD_CODED = [*solutions.SOLUTIONS, *exercise_solutions.SOLUTIONS]
