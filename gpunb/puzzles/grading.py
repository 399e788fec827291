"""Grade a kernel against a puzzle on the CPU target: its outputs against the numpy reference at
every size the puzzle names (ragged ones included), and the puzzle's rules on shared memory.

The kernel is rebuilt for the CPU target with bounds checks on, whatever target it was written
for, so grading takes seconds on any machine and an out-of-bounds access is a message, not a
crash. A failure says which size, which launch, and which elements are wrong (expected vs got).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from gpunb.foundation.errors import GpunbError
from gpunb.puzzles.model import SHARED_NONE, SHARED_REQUIRED, Puzzle

SHOWN_ELEMENTS = 8  # wrong elements listed one by one before "... and N more"


@dataclass(slots=True)
class Grade:
    """What check() found. True when the kernel passed; its repr is the feedback to read."""

    puzzle: str
    passed: bool
    sizes_passed: list = field(default_factory=list)
    failure: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if self.passed:
            sizes = ", ".join(str(s) for s in self.sizes_passed)
            return f"✔ puzzle {self.puzzle!r} passed (sizes {sizes})"
        return f"✘ puzzle {self.puzzle!r} failed\n{self.failure}"


def grade(puzzle: Puzzle, kernel, seed: int = 0) -> Grade:
    """Run `kernel` (a @cuda.jit / %%gpukernel kernel or a plain function) on every size."""
    try:
        dispatcher = _cpu_kernel(kernel)
    except GpunbError as err:
        return Grade(puzzle.name, False, failure=str(err))
    problem = _parameter_problem(puzzle, dispatcher.py_func) or _shared_problem(puzzle, dispatcher)
    if problem:
        return Grade(puzzle.name, False, failure=problem)
    result = Grade(puzzle.name, True)
    rng = np.random.default_rng(seed)
    for size in puzzle.sizes:
        failure = _run_one(puzzle, dispatcher, size, rng)
        if failure:
            result.passed, result.failure = False, failure
            return result
        result.sizes_passed.append(size)
    return result


def _cpu_kernel(kernel):
    """The kernel as a CPU-target dispatcher with bounds checks (its own options otherwise)."""
    from gpunb.jit.dispatcher import Dispatcher

    py_func = getattr(kernel, "py_func", kernel)
    if not callable(py_func) or getattr(kernel, "device", False):
        raise GpunbError(f"{kernel!r} is not a kernel: pass the function you wrote for the "
                         "puzzle (a @cuda.jit or %%gpukernel kernel, or its plain def)")
    options = dict(getattr(kernel, "options", {}) or {})
    options["boundscheck"] = True
    return Dispatcher(py_func, target="cpu", **options)


def _parameter_problem(puzzle: Puzzle, py_func) -> str:
    given = tuple(inspect.signature(py_func).parameters)
    if len(given) == len(puzzle.params):
        return ""
    return (f"the kernel takes {len(given)} arguments ({', '.join(given)}) but puzzle "
            f"{puzzle.name!r} passes {len(puzzle.params)}: ({', '.join(puzzle.params)})\n"
            f"hint: start from the starter: gpunb.puzzles.get({puzzle.name!r}).starter")


def _run_one(puzzle: Puzzle, dispatcher, size, rng) -> str:
    """'' when the kernel is right at this size, else the feedback."""
    args = puzzle.inputs(size, rng)
    before = {name: np.copy(value) for name, value in args.items()}
    expected = puzzle.reference({name: np.copy(value) for name, value in args.items()})
    grid, block = puzzle.launch(size)
    where = f"at size {size} (launch [{grid}, {block}])"
    try:
        dispatcher[grid, block](*[args[name] for name in puzzle.params])
    except GpunbError as err:
        return f"{where} the kernel failed:\n{err}"
    for name in puzzle.outputs:
        wrong = compare(name, expected[name], args[name], puzzle.rtol)
        if wrong:
            return f"{where}:\n{wrong}"
    for name, value in before.items():
        if name not in puzzle.outputs and isinstance(value, np.ndarray) \
                and not np.array_equal(value, args[name], equal_nan=True):
            return f"{where}: the kernel changed the input '{name}' (only write the outputs: " \
                   f"{', '.join(puzzle.outputs)})"
    return ""


def _shared_problem(puzzle: Puzzle, dispatcher) -> str:
    used = uses_shared_memory(dispatcher.py_func)
    if puzzle.shared == SHARED_NONE and used:
        return (f"the kernel uses shared memory (cuda.shared.array); puzzle {puzzle.name!r} is "
                "solved without it (registers and global memory only)")
    if puzzle.shared == SHARED_REQUIRED and not used:
        return (f"puzzle {puzzle.name!r} is about shared memory, and the kernel uses none: "
                "stage the values in a cuda.shared.array")
    return ""


def uses_shared_memory(py_func) -> bool:
    """Whether the kernel's code names `shared.array` (read from its code object: the compiled
    code may have optimised a needless shared array away, and it needs no ptxas)."""
    pending = [py_func.__code__]
    while pending:
        code = pending.pop()
        names = code.co_names
        if "shared" in names and "array" in names:
            return True
        pending += [c for c in code.co_consts if hasattr(c, "co_names")]
    return False


def compare(name: str, expected: np.ndarray, got: np.ndarray, rtol: float = 0.0) -> str:
    """'' when equal, else which elements of `name` are wrong: expected vs got, unwritten ones
    marked (outputs start as NaN)."""
    expected = np.asarray(expected)
    if expected.shape != got.shape:
        return f"'{name}' has shape {got.shape}, expected {expected.shape}"
    if rtol:
        ok = np.isclose(got, expected, rtol=rtol, atol=0.0)
    else:
        ok = got == expected
    bad = np.argwhere(~ok)
    if not len(bad):
        return ""
    lines = [f"'{name}' is wrong at {len(bad)} of {expected.size} elements:"]
    for index in bad[:SHOWN_ELEMENTS]:
        key = tuple(int(k) for k in index)
        label = ", ".join(str(k) for k in key)
        value = got[key]
        note = " (never written)" if isinstance(value, np.floating) and np.isnan(value) else ""
        lines.append(f"  {name}[{label}]: expected {expected[key].item()!r}, "
                     f"got {value.item()!r}{note}")
    if len(bad) > SHOWN_ELEMENTS:
        lines.append(f"  ... and {len(bad) - SHOWN_ELEMENTS} more")
    lines.append(f"expected {name}:\n{_indent(expected)}\ngot:\n{_indent(got)}")
    return "\n".join(lines)


def _indent(array: np.ndarray) -> str:
    with np.printoptions(linewidth=96, threshold=200):
        return "\n".join("  " + line for line in str(array).splitlines())
