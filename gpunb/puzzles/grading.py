"""Grade a kernel against a puzzle on the CPU target: its outputs against the numpy reference at
every size the puzzle names (ragged ones included), and the puzzle's rules: global reads and
writes per thread, shared memory only where allowed, no data races.

The kernel is rebuilt for the CPU target with bounds checks on, whatever target it was written
for, and every launch runs with access recording (gpunb.access_map), so grading takes seconds on
any machine, an out-of-bounds access is a message rather than a crash, and a failure comes with
which thread touched which element. A failure says which size, which launch, which elements are
wrong (expected vs got) or which rule was broken, and by which thread.
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
    access: object = None  # the AccessMap of the failing launch, when it ran

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if self.passed:
            sizes = ", ".join(str(s) for s in self.sizes_passed)
            return f"✔ puzzle {self.puzzle!r} passed (sizes {sizes})"
        return f"✘ puzzle {self.puzzle!r} failed\n{self.failure}"

    def _repr_html_(self) -> str:
        from html import escape

        color = "#1a7f37" if self.passed else "#cf222e"
        text = f'<pre style="color:{color}">{escape(repr(self))}</pre>'
        if self.access is not None:
            text += "<b>access map of the failing launch</b>" + self.access._repr_html_()
        return text


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
        failure, access = _run_one(puzzle, dispatcher, size, rng)
        if failure:
            result.passed, result.failure, result.access = False, failure, access
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


def _run_one(puzzle: Puzzle, dispatcher, size, rng) -> tuple[str, object]:
    """('', map) when the kernel is right at this size, else (feedback, map or None)."""
    from gpunb.jit.access_map import access_map

    args = puzzle.inputs(size, rng)
    before = {name: np.copy(value) for name, value in args.items()}
    expected = puzzle.reference({name: np.copy(value) for name, value in args.items()})
    grid, block = puzzle.launch(size)
    where = f"at size {size} (launch [{grid}, {block}])"
    launch_args = [args[name] for name in puzzle.params]
    try:
        access = access_map(dispatcher[grid, block], *launch_args)
    except GpunbError as err:
        if "recorded nothing" not in str(err):
            return f"{where} the kernel failed:\n{err}", None
        # a kernel that touches no array (an empty starter): nothing to map; its outputs
        # are still unwritten, which the comparison below says
        access = None
    for name, value in before.items():
        if name not in puzzle.outputs and isinstance(value, np.ndarray) \
                and not np.array_equal(value, args[name], equal_nan=True):
            return (f"{where}: the kernel changed the input '{name}' (only write the outputs: "
                    f"{', '.join(puzzle.outputs)})", access)
    problems = [wrong for name in puzzle.outputs
                if (wrong := compare(name, expected[name], args[name], puzzle.rtol))]
    if access is not None:
        rule = _rule_problem(puzzle, size, access)
        problems += [("also: " if problems else "") + rule] if rule else []
    if problems:
        if access is not None:
            problems.append(describe_access(puzzle, access))
        return f"{where}:\n" + "\n".join(problems), access
    return "", access


def _rule_problem(puzzle: Puzzle, size, access) -> str:
    """A data race, a thread over the puzzle's global read/write limit, or the puzzle's method
    not kept: '' when none."""
    if access.races:
        race = access.races[0]
        return f"data race: {race}\nhint: a cuda.syncthreads() between the write and the read " \
               "of another thread, or cuda.atomic for updates many threads make"
    for which, counts in (("reads", access.global_reads), ("writes", access.global_writes)):
        limit = puzzle.limit(which, size)
        if limit is None or not len(counts) or counts.max() <= limit:
            continue
        worst = int(np.argmax(counts))
        return (f"thread {_thread_name(access, worst)} made {int(counts[worst])} global {which}; "
                f"puzzle {puzzle.name!r} allows at most {limit} per thread "
                f"({int((counts > limit).sum())} threads are over)\n"
                + ("hint: read each value once into shared memory and share it from there"
                   if which == "reads" else "hint: write each output element once"))
    return puzzle.method(size, access) if puzzle.method is not None else ""


def _thread_name(access, thread: int) -> str:
    """A global linear thread id as 'threadIdx (x, y, z) of blockIdx (x, y, z)'."""
    bx, by, _ = access.block
    gx, gy, _ = access.grid
    block, local = divmod(thread, access.threads_per_block)
    return (f"{thread} (threadIdx {(local % bx, local // bx % by, local // (bx * by))}, "
            f"blockIdx {(block % gx, block // gx % gy, block // (gx * gy))})")


def describe_access(puzzle: Puzzle, access) -> str:
    """The access map as text: per thread, global reads and writes; per output element, the
    thread that wrote it last; per input element, how many reads."""
    lines = [f"access map ({access.kernel}[{access.grid}, {access.block}], thread ids are "
             "blockIdx * threads per block + threadIdx):",
             f"  global reads per thread:  {_flat(access.global_reads)}",
             f"  global writes per thread: {_flat(access.global_writes)}"]
    for name in puzzle.params:
        entry = access.arrays.get(name)
        if entry is None or entry.memory != "global":
            continue
        if name in puzzle.outputs:
            lines.append(f"  {name}: thread that wrote each element last (-1: none):")
            lines.append(_indent(entry.last_writer, 4))
        else:
            lines.append(f"  {name}: reads of each element:")
            lines.append(_indent(entry.reads, 4))
    return "\n".join(lines)


def _flat(values: np.ndarray) -> str:
    with np.printoptions(linewidth=200, threshold=64):
        return str(np.asarray(values))


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


def _indent(array: np.ndarray, spaces: int = 2) -> str:
    with np.printoptions(linewidth=96, threshold=200):
        return "\n".join(" " * spaces + line for line in str(array).splitlines())
