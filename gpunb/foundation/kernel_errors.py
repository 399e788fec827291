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


def exception_class(name: str) -> type:
    """KernelValueError for "ValueError": a LaunchError and a ValueError."""
    found = _classes.get(name)
    if found is None:
        base = getattr(builtins, name)
        found = type(f"Kernel{name}", (LaunchError, base), {
            "__module__": __name__,
            "__doc__": f"{name} raised by kernel code compiled with debug=True."})
        _classes[name] = found
    return found


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


def kernel_exception(artifact: KernelArtifact, site: int, tid, ctaid) -> LaunchError:
    """The host exception for raise site `site`, fired by thread `tid` of block `ctaid`."""
    exc_name, message, filename, line, col, function = artifact.raise_sites[site]
    what = "assertion failed" if exc_name == "AssertionError" else f"raised {exc_name}"
    text = f"{what}: {message}" if message else what
    hint = ("reported because the kernel was compiled with debug=True; without it the "
            "raising thread just ends, as in numba.cuda")
    hint = _ALWAYS_CHECKED.get(message, hint)
    if message.startswith(_TENSOR_CORE_CHECKS):
        hint = _TENSOR_CORE_HINT
    return exception_class(exc_name)(
        f"{text} (thread {tuple(tid)}, block {tuple(ctaid)} of kernel '{artifact.name}')",
        SourceLocation(filename, line, col), function=function, hint=hint)
