"""Every reference solution (puzzles and exercises) also compiles for the GPU: PTX for sm_90 from
the same source, accepted by ptxas - so a kernel that passes the CPU-target grader is one a GPU
runs, and the device needs no test of its own for each puzzle."""

from __future__ import annotations

import exercise_solutions
import numpy as np
import pytest
import solutions

from gpunb import cuda, puzzles
from gpunb.runtime.typeof import typeof

pytestmark = pytest.mark.slow  # a compile per solution

REFERENCES = {**solutions.SOLUTIONS, **exercise_solutions.SOLUTIONS}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_solution_compiles_to_ptx_that_ptxas_accepts(name, ptxas):
    puzzle = puzzles.get(name)
    args = puzzle.inputs(puzzle.sizes[0], np.random.default_rng(0))
    signature = tuple(typeof(args[p]) for p in puzzle.params)
    ptx, _ = cuda.compile_ptx(REFERENCES[name], signature, cc=(9, 0))
    ptxas(ptx, "sm_90")
    if puzzle.shared != "none" and "cuda.shared.array" in puzzle.starter:
        assert ".shared" in ptx
