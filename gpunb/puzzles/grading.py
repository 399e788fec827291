"""Grade a kernel against a puzzle on the CPU target: its outputs against the numpy reference at
every size the puzzle shows and at hidden sizes drawn at every attempt, with inputs drawn at
random at every attempt (a seed repeats one), and every check the CPU target has: bounds,
barrier divergence, warp masks, data races, initcheck, and the puzzle's method (rules.py).

The kernel is rebuilt for the CPU target with bounds checks on, whatever target it was written
for, and every launch records its accesses, so grading takes seconds on any machine, an
out-of-bounds access is a message rather than a crash, and a failure comes with which thread
touched which element. Feedback (feedback.py) names the size, the first wrong elements and who
wrote them, each rule broken and its hint - never a whole expected output.
"""

from __future__ import annotations

import inspect
import secrets
from dataclasses import dataclass, field

import numpy as np

from gpunb.foundation.errors import GpunbError, RaceError, WarpMaskError
from gpunb.puzzles import rules
from gpunb.puzzles.feedback import Finding, compare, describe_access
from gpunb.puzzles.model import HIDDEN_SIZES, SHARED_NONE, SHARED_REQUIRED, Puzzle


@dataclass(slots=True)
class Grade:
    """What check() found. True when the kernel passed; its repr is the feedback to read.
    `findings` lists what is wrong (each with a `kind` and a `hint`), the first being the one
    to fix first; `seed` repeats the attempt: puzzles.check(name, kernel, seed=grade.seed)."""

    puzzle: str
    passed: bool
    sizes_passed: list = field(default_factory=list)
    failure: str = ""
    access: object = None  # the AccessMap of the failing launch, when it ran
    findings: list = field(default_factory=list)
    seed: int | None = None
    size: object = None  # the size that failed
    hidden: bool = False  # ... and whether it was a hidden one

    def __bool__(self) -> bool:
        return self.passed

    @property
    def kinds(self) -> list[str]:
        """The kinds of the findings, first to fix first ('values', 'race', ...)."""
        return [f.kind for f in self.findings]

    @property
    def hint(self) -> str:
        return self.findings[0].hint if self.findings else ""

    def __repr__(self) -> str:
        if self.passed:
            sizes = ", ".join(str(s) for s in self.sizes_passed)
            return f"✔ puzzle {self.puzzle!r} passed (sizes {sizes})"
        again = (f" (seed {self.seed}: puzzles.check({self.puzzle!r}, kernel, seed={self.seed})"
                 " repeats this attempt)" if self.seed is not None else "")
        return f"✘ puzzle {self.puzzle!r} failed{again}\n{self.failure}"

    def _repr_html_(self) -> str:
        from html import escape

        color = "#1a7f37" if self.passed else "#cf222e"
        text = f'<pre style="color:{color}">{escape(repr(self))}</pre>'
        if self.access is not None:
            text += "<b>access map of the failing launch</b>" + self.access._repr_html_()
        return text


def grade(puzzle: Puzzle, kernel, seed: int | None = None) -> Grade:
    """Run `kernel` (a @cuda.jit / %%gpukernel kernel or a plain function) at every size.

    `seed` repeats an attempt, so a failure can be reproduced; a kernel that passes there is
    graded again on inputs drawn afresh, since the inputs of a known seed can be computed in
    advance and baked into a kernel that computes nothing."""
    result = _grade_at(puzzle, kernel, seed)
    if seed is None or not result.passed:
        return result
    fresh = _grade_at(puzzle, kernel, None)
    if not fresh.passed:
        fresh.failure = (f"it passed with seed={seed}, but a pass must also hold on inputs "
                         "drawn afresh, and these failed (do not tune the kernel to one seed's "
                         "inputs):\n" + fresh.failure)
    return fresh


def _grade_at(puzzle: Puzzle, kernel, seed: int | None) -> Grade:
    """One attempt: the inputs and hidden sizes of `seed` (a new random one when None)."""
    seed = secrets.randbits(32) if seed is None else int(seed)
    try:
        dispatcher = cpu_kernel(kernel)
    except GpunbError as err:
        return _failed(puzzle, [Finding("compile", str(err))], seed)
    static = _parameter_problem(puzzle, dispatcher.py_func) or _shared_problem(puzzle,
                                                                               dispatcher)
    if static:
        return _failed(puzzle, [static], seed)
    result = Grade(puzzle.name, True, seed=seed)
    rng = np.random.default_rng(seed)
    sizes = [(size, False) for size in puzzle.sizes]
    if puzzle.hidden is not None:
        sizes += [(puzzle.hidden(rng), True) for _ in range(HIDDEN_SIZES)]
    for size, hidden in sizes:
        findings, trace, where = _run_one(puzzle, dispatcher, size, hidden, rng)
        if findings:
            text = where + "\n" + _findings_text(findings)
            if trace is not None:
                text += "\n" + describe_access(trace, puzzle.params, puzzle.outputs)
            result.passed, result.failure, result.findings = False, text, findings
            result.access = None if trace is None else trace.access
            result.size, result.hidden = size, hidden
            return result
        result.sizes_passed.append(size)
    return result


def _failed(puzzle: Puzzle, findings: list, seed: int) -> Grade:
    return Grade(puzzle.name, False, failure=_findings_text(findings), findings=findings,
                 seed=seed)


def _findings_text(findings: list) -> str:
    return "\n".join(("also: " if k else "") + f.text() for k, f in enumerate(findings))


def cpu_kernel(kernel):
    """The kernel as a CPU-target dispatcher with bounds checks (its own options otherwise)."""
    from gpunb.jit.dispatcher import Dispatcher

    py_func = getattr(kernel, "py_func", kernel)
    if not callable(py_func) or getattr(kernel, "device", False):
        raise GpunbError(f"{kernel!r} is not a kernel: pass the function you wrote for the "
                         "puzzle (a @cuda.jit or %%gpukernel kernel, or its plain def)")
    options = dict(getattr(kernel, "options", {}) or {})
    options["boundscheck"] = True
    return Dispatcher(py_func, target="cpu", **options)


def _parameter_problem(puzzle: Puzzle, py_func) -> Finding | None:
    given = tuple(inspect.signature(py_func).parameters)
    if len(given) == len(puzzle.params):
        return None
    return Finding(
        "signature",
        f"the kernel takes {len(given)} arguments ({', '.join(given)}) but puzzle "
        f"{puzzle.name!r} passes {len(puzzle.params)}: ({', '.join(puzzle.params)})",
        f"start from the starter: gpunb.puzzles.get({puzzle.name!r}).starter")


def _run_one(puzzle: Puzzle, dispatcher, size, hidden: bool, rng):
    """(findings, trace or None, where) of one size: [] when the kernel is right there."""
    from gpunb.puzzles.trace import record

    args = puzzle.inputs(size, rng)
    before = {name: np.copy(value) for name, value in args.items()}
    expected = puzzle.reference({name: np.copy(value) for name, value in args.items()})
    grid, block = puzzle.launch(size)
    where = f"at {'hidden ' if hidden else ''}size {size} (launch [{grid}, {block}]):"
    try:
        trace = record(dispatcher, grid, block, [args[name] for name in puzzle.params],
                       puzzle.params)
    except GpunbError as err:
        if "recorded nothing" not in str(err):
            return [_crash(err)], None, where[:-1] + " the kernel failed:"
        trace = None  # touches no array (an empty starter): its outputs are unwritten
    findings = [] if trace is None else rules.integrity(puzzle, trace)
    findings += _changed_inputs(puzzle, before, args)
    for name in puzzle.outputs:
        wrong = compare(name, expected[name], args[name], puzzle.rtol, trace, puzzle.atol)
        if wrong is not None:
            findings.append(wrong)
    if trace is not None:
        findings += rules.method(puzzle, size, trace)
    return findings, trace, where


def _crash(err: GpunbError) -> Finding:
    if isinstance(err, IndexError):
        kind = "out_of_bounds"
    elif isinstance(err, WarpMaskError):
        kind = "warp_mask"
    elif isinstance(err, RaceError):
        kind = "race"
    elif "barrier" in str(err):
        kind = "barrier_divergence"
    else:
        kind = "crash"
    hint = getattr(err, "hint", None)
    if hint is None:
        return Finding(kind, str(err))
    return Finding(kind, rules.located(err), hint)


def _changed_inputs(puzzle: Puzzle, before: dict, args: dict) -> list[Finding]:
    for name, value in before.items():
        if name not in puzzle.outputs and isinstance(value, np.ndarray) \
                and not np.array_equal(value, args[name], equal_nan=True):
            return [Finding("changed_input", f"the kernel changed the input '{name}'",
                            f"only write the outputs ({', '.join(puzzle.outputs)}); keep "
                            "intermediate values in registers or shared memory")]
    return []


def _shared_problem(puzzle: Puzzle, dispatcher) -> Finding | None:
    used = uses_shared_memory(dispatcher.py_func)
    if puzzle.shared == SHARED_NONE and used:
        return Finding(
            "shared_forbidden",
            f"the kernel uses shared memory (cuda.shared.array); puzzle {puzzle.name!r} is "
            "solved without it (registers and global memory only)",
            "each thread reads what it needs from global memory into registers")
    if puzzle.shared == SHARED_REQUIRED and not used:
        return Finding(
            "shared_missing",
            f"puzzle {puzzle.name!r} is about shared memory, and the kernel uses none",
            "stage the values in a cuda.shared.array, cuda.syncthreads(), then read them "
            "from there")
    return None


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
