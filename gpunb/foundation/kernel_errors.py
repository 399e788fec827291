"""Exceptions raised in kernel code compiled with debug=True, raised again on the host.

The kernel records which raise site fired and in which thread (the CPU target in its Status, the
CUDA target in a device global, read by backends/cuda/launch.py); the backend turns that record
into an exception that is both gpunb's LaunchError (pointing at the raise with a caret) and the
builtin class the kernel raised, so `except ValueError` works as with numba.cuda.
"""

from __future__ import annotations

import builtins

from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.errors import LaunchError, SourceLocation

_classes: dict = {}
# "module:qualname" -> a user's exception class raised in kernels compiled in this process
USER_CLASSES: dict = {}


def exception_class(name: str) -> type:
    """KernelValueError for "ValueError": a LaunchError and a ValueError; for a user's class
    ("module:qualname") a LaunchError and that class."""
    found = _classes.get(name)
    if found is None:
        base = user_class(name) if ":" in name else getattr(builtins, name)
        found = type(f"Kernel{base.__name__}", (LaunchError, base), {
            "__module__": __name__,
            "__doc__": f"{base.__name__} raised by kernel code compiled with debug=True."})
        _classes[name] = found
    return found


def user_class(name: str) -> type:
    """A user's exception class by "module:qualname": the one compiled in this process, else
    imported (a disk-cache hit in a new process); Exception when neither finds it."""
    found = USER_CLASSES.get(name)
    if found is not None:
        return found
    import importlib

    module, qualname = name.split(":", 1)
    try:
        value = importlib.import_module(module)
        for part in qualname.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return Exception
    return value if isinstance(value, type) and issubclass(value, Exception) else Exception


ZERO_STEP_MESSAGE = "range() arg 3 must not be zero"
BROADCAST_MESSAGE = "operands could not be broadcast together with the output's shape"
# raises every kernel checks, debug or not, and what to do about each
_ALWAYS_CHECKED = {
    ZERO_STEP_MESSAGE: "give range() a non-zero step; the CPU target always checks it (Python "
                       "and numba raise this ValueError), a GPU without debug=True runs no "
                       "iteration",
    BROADCAST_MESSAGE: "give every input of the numpy ufunc extents of 1 or the output's (numpy "
                       "raises this ValueError too); gpunb always checks it",
}


# checks of tensor-core operands (compiler/builtins/tensorcore_*), by the message's first word
_TENSOR_CORE_CHECKS = ("wmma.", "cuda.mma_sync", "cuda.ldmatrix", "cuda.stmatrix")
_TENSOR_CORE_HINT = ("the CPU target checks tensor-core operands and warps as the PTX ISA "
                     "requires them (a GPU with debug=True checks the tiles too); on a GPU this "
                     "is undefined behaviour: wrong results, a hang or a misaligned-address error")
# what to change, by a phrase of the check's message (the generic hint alone said only why)
_TENSOR_CORE_FIXES = (
    ("needs all 32 lanes", "launch blocks of a multiple of 32 threads and let every lane of the "
                           "warp reach the call (no return before it)"),
    ("the tile must be a", "pass a view of exactly the fragment's tile, e.g. "
                           "a[r:r + 16, k:k + 16]"),
    ("must be contiguous (", "pass a C-ordered array with row_major (Fortran-ordered with "
                             "col_major), or declare the fragment with the other layout"),
    ("leading dimension must be a multiple of 16", "make the array's rows (its columns for "
     "col_major) a multiple of 16 bytes long - 8 float16, 16 int8, 4 float32 elements - padding "
     "them if needed, and start the tile at such a boundary"),
    ("the 8-element row a lane addresses", "give each lane the start of an 8-element row inside "
     "the array, at a multiple of 8 elements, in an array whose rows are a multiple of 16 bytes"),
)


def _tensor_core_hint(message: str) -> str:
    fix = next((f for phrase, f in _TENSOR_CORE_FIXES if phrase in message), None)
    return f"{fix}. Why: {_TENSOR_CORE_HINT}" if fix else _TENSOR_CORE_HINT


def kernel_exception(artifact: KernelArtifact, site: int, tid, ctaid) -> LaunchError:
    """The host exception for raise site `site`, fired by thread `tid` of block `ctaid`."""
    exc_name, message, filename, line, col, function = artifact.raise_sites[site]
    shown = exc_name.rsplit(":", 1)[-1]
    what = "assertion failed" if exc_name == "AssertionError" else f"raised {shown}"
    text = f"{what}: {message}" if message else what
    hint = ("reported because the kernel was compiled with debug=True; without it the "
            "raising thread just ends, as in numba.cuda")
    hint = _ALWAYS_CHECKED.get(message, hint)
    if exc_name == "UnboundLocalError":  # a read no assignment reaches (lower.unbound_read)
        hint = ("assign the variable on every path that reaches this line; the CPU target always "
                "checks it (Python raises this UnboundLocalError too), a GPU without debug=True "
                "ends the thread (numba-cuda reads an undefined value)")
    if message.startswith(_TENSOR_CORE_CHECKS):
        hint = _tensor_core_hint(message)
    # numba-cuda's words too, for those who search for them
    numba_words = (f"In function '{function}', file {filename}, line {line}, "
                   f"tid={list(tid)} ctaid={list(ctaid)}" + (f": {message}" if message else ""))
    text = (f"{text} (thread {tuple(tid)}, block {tuple(ctaid)} of kernel '{artifact.name}')"
            f"\n{numba_words}")
    cls = exception_class(exc_name)
    try:
        return cls(text, SourceLocation(filename, line, col), function=function, hint=hint)
    except TypeError:  # a user's class whose __init__ takes other arguments: made without it
        base = user_class(exc_name) if ":" in exc_name else getattr(builtins, exc_name)
        made = base.__new__(base)
        made.args = (text,)
        return made
