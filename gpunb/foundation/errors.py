"""The typed errors gpunb raises, each able to point at the user's source line with a caret.

Every error a user can cause in kernel code or at a launch ends up here, so that messages look the
same everywhere: what was found, where (file or notebook cell, line, column), and what to do.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import dataclass, field

_IPYTHON_CELL = re.compile(r"<ipython-input-(\d+)-[0-9a-f]+>")
_IPYKERNEL_CELL = re.compile(r".*/ipykernel_\d+/(\d+)\.py$")


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """Where a piece of kernel source came from: file (or cell) name, 1-based line, 0-based col."""

    filename: str
    line: int
    col: int = 0
    end_col: int | None = None
    # the line's text where linecache cannot have it (code exec'd from a string: `<string>`)
    text: str | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        """`Cell In[7], line 3` for notebook cells, `File "x.py", line 3` for files."""
        return f"{describe_filename(self.filename)}, line {self.line}"

    def source_line(self) -> str:
        if self.text is not None:
            return self.text.rstrip("\n")
        return linecache.getline(self.filename, self.line).rstrip("\n")


def describe_filename(filename: str) -> str:
    """Name a file the way IPython names cells, so users recognise where an error points."""
    from gpunb.foundation.sources import (
        cell_label,  # local: sources is tiny and has no heavy imports
    )

    label = cell_label(filename)
    if label is not None:
        return label
    m = _IPYTHON_CELL.match(filename)
    if m:
        return f"Cell In[{m.group(1)}]"
    return f'File "{filename}"'


def render_caret(loc: SourceLocation) -> str:
    """The offending line and a caret under the column (or a tilde run under the span)."""
    text = loc.source_line()
    if not text:
        return ""
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    col = max(loc.col - indent, 0)
    width = 1
    if loc.end_col is not None and loc.end_col > loc.col:
        width = min(loc.end_col - loc.col, max(len(stripped) - col, 1))
    marker = "^" + "~" * (width - 1)
    return f"    {stripped}\n    {' ' * col}{marker}"


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gpunb/
_SKIPPED_FILES = ("contextlib.py", "functools.py")
# libraries that call gpunb for the user (PyTorch's operator dispatch calls a
# gpunb.torch.custom_op kernel): their frames are not the user's line either
_SKIPPED_DIRS: list[str] = [_PACKAGE_DIR + os.sep]


def skip_frames_under(directory: str) -> None:
    """Errors point past the frames of `directory` (a library dispatching to gpunb) to the
    user's line that called it."""
    directory = os.path.abspath(directory) + os.sep
    if directory not in _SKIPPED_DIRS:
        _SKIPPED_DIRS.append(directory)


def user_location() -> SourceLocation | None:
    """The line of user code that called into gpunb (a decorator line, a launch, a call)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(tuple(_SKIPPED_DIRS)) and \
                not filename.endswith(_SKIPPED_FILES):
            return _frame_location(frame)
        frame = frame.f_back
    return None


def _frame_location(frame) -> SourceLocation:
    import inspect

    positions = getattr(inspect.getframeinfo(frame, context=0), "positions", None)  # 3.11+
    if positions is not None and positions.col_offset is not None and \
            positions.lineno == frame.f_lineno:
        end = positions.end_col_offset if positions.end_lineno == positions.lineno else None
        return SourceLocation(frame.f_code.co_filename, frame.f_lineno, positions.col_offset, end)
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno, 0)


class GpunbError(Exception):
    """Base of all gpunb errors."""


def launch_interrupted(message: str) -> KeyboardInterrupt:
    """The KeyboardInterrupt gpunb raises when Ctrl-C stops (or abandons the wait for) a launch:
    a KeyboardInterrupt as Python's, marked so that the notebook shows its message and the
    user's lines, not the launcher's frames it passed through (notebook/hooks.py)."""
    interrupt = KeyboardInterrupt(message)
    interrupt.gpunb_launch_interrupted = True
    return interrupt


def is_launch_interrupt(value: BaseException) -> bool:
    """Whether `value` is a launch_interrupted() KeyboardInterrupt."""
    return isinstance(value, KeyboardInterrupt) and \
        getattr(value, "gpunb_launch_interrupted", False)


class LocatedError(GpunbError):
    """An error with an optional source location, a message and a hint, rendered together."""

    def __init__(self, message: str, loc: SourceLocation | None = None, hint: str | None = None,
                 function: str | None = None):
        self.message = message
        self.loc = loc
        self.hint = hint
        self.function = function
        self.context: list = []  # "During: ..." lines: the calls that led here, innermost first
        super().__init__(self.render())

    def add_context(self, line: str) -> None:
        """Note a step that led to the error (numba's "During: resolving callee type ...")."""
        self.context.append(line)
        self.args = (self.render(),)

    def render(self) -> str:
        parts = []
        head = self.message
        if self.function:
            head = f"in GPU function '{self.function}': {head}"
        parts.append(head)
        if self.loc is not None:
            parts.append(f"  {self.loc.describe()}, column {self.loc.col + 1}:")
            caret = render_caret(self.loc)
            if caret:
                parts.append(caret)
        if self.hint:
            parts.append(f"  hint: {self.hint}")
        parts.extend(f"  {line}" for line in getattr(self, "context", ()))
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


class InvalidConfigWarning(UserWarning):
    """A combination of options that works but not as asked (numba's NumbaInvalidConfigWarning):
    debug=True with optimisation on."""


class PerformanceWarning(UserWarning):
    """gpunb did something slow on your behalf (e.g. copied host arrays to the GPU and back),
    or compiled code that will run slower than it reads (wgmma that ptxas serialises)."""


class CompileWarning(UserWarning):
    """Kernel code that compiles but will not do all it says (numba's NumbaWarning): print()
    with more than CUDA's 32 arguments prints its format instead."""


class CompileError(LocatedError):
    """Kernel source that gpunb cannot compile: unsupported syntax, unknown names, type errors."""


class SignatureError(CompileError, TypeError):
    """A signature (`@cuda.jit("void(float32[:])")`, compile_ptx's sig) that cannot be read; also a
    TypeError, what numba raises, so code catching that keeps working."""


class JitOptionError(CompileError, TypeError, ValueError):
    """An unknown option or an unusable option value (cuda.jit, compile_ptx, set_target); also a
    TypeError (unknown keyword) and ValueError (bad value), as Python and numba raise them."""


class KernelReturnError(CompileError, TypeError):
    """A kernel that returns a value (or is declared with a non-void return type); also a
    TypeError, what numba raises for it ("CUDA kernel must have void return type")."""


class LaunchError(LocatedError):
    """A launch that cannot run: bad grid/block, wrong arguments, driver failures, deadlocks."""


class GraphError(LaunchError):
    """Work that a graph cannot capture or replay (gpunb.graph): a synchronisation, an
    allocation or a pageable host copy inside the capture, a replay after an argument's memory
    was freed, an update with arguments of other types or shapes."""


class RaceError(LaunchError):
    """Two threads touched the same address without a barrier (or warp synchronisation) between
    them, at least one writing and not both atomically: found by the CPU target's racecheck.
    `accesses` holds both sides: (kind, line, thread, block) tuples, the earlier first."""

    def __init__(self, message: str, loc: SourceLocation | None = None, hint: str | None = None,
                 function: str | None = None, accesses: tuple = (), array: str = "",
                 index: tuple = ()):
        self.accesses = accesses
        self.array = array
        self.index = index
        super().__init__(message, loc, hint=hint, function=function)


class InitcheckError(LaunchError):
    """A thread read shared memory that no thread of its block had written (racecheck on the
    CPU target): on a GPU that read returns whatever the memory held."""


class WarpMaskError(LaunchError):
    """A warp collective (*_sync, syncwarp) whose mask leaves out the calling lane or names
    lanes that never arrive there: undefined behaviour on a GPU, found by the CPU target."""


class LaunchTimeoutError(LaunchError, TimeoutError):
    """A launch that ran (CPU target), or a kernel the host waited for (GPU), longer than the
    watchdog's limit (GPUNB_LAUNCH_TIMEOUT, `%%gpukernel --timeout S`); also a TimeoutError."""


class KernelFaultError(LaunchError):
    """Kernel code that faulted on the CPU target (an invalid address with bounds checks off,
    a stack overflow from deep recursion): the launch was abandoned, the process lives on."""


class AsyncCopyError(LaunchError):
    """A misuse of the asynchronous machinery found by the CPU target: data of a cp.async or a
    TMA copy read before the wait that completes it, an mbarrier waited on a phase that never
    completes, a wgmma issued by part of a warpgroup, a misaligned asynchronous copy."""


class TensorMapError(LaunchError, ValueError):
    """A TMA descriptor that cannot be made (cuda.tma.descriptor): a box that does not fit the
    array or the hardware's limits, an unsupported swizzle, strides TMA cannot express."""


class LaunchConfigError(LaunchError, TypeError, ValueError):
    """A launch configuration that is malformed (too many dimensions, non-integer sizes, a
    negative forall count) or missing; a TypeError/ValueError too, as numba raises them."""


class NotAKernelError(LaunchError, RuntimeError):
    """A device function used as a kernel (launched, SASS inspected); a RuntimeError too, as in
    numba ("Cannot compile a device function as a kernel")."""


class NoMatchingSignatureError(LaunchError, TypeError):
    """Launch arguments that no declared signature accepts, or that two accept equally well;
    also a TypeError, what numba raises ("No matching definition", "Ambiguous overloading")."""


class UnsupportedArrayError(LocatedError, NotImplementedError):
    """An array gpunb cannot use as it is described (a masked __cuda_array_interface__); also a
    NotImplementedError, what numba-cuda raises."""


class ToolchainError(GpunbError):
    """A required NVIDIA tool or library (libdevice, ptxas, nvdisasm, the driver) is missing."""


class CudaUnavailableError(ToolchainError):
    """No usable CUDA driver or device; the CPU target can run the same kernels."""


def did_you_mean(name: str, candidates) -> str:
    """`did you mean 'grid'?` for the closest of `candidates` to a misspelt `name` (difflib),
    else ''."""
    import difflib

    words = sorted({str(c) for c in candidates if not str(c).startswith("__")})
    close = difflib.get_close_matches(name, words, n=1, cutoff=0.7)
    return f"did you mean '{close[0]}'? " if close else ""
