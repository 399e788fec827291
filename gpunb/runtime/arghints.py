"""numba.cuda's argument hints `cuda.In(a)`, `cuda.Out(a)`, `cuda.InOut(a)`: how a host array
passed to a kernel travels. A bare host array is copied in and back (InOut); `In` copies it in
only (the kernel's writes do not reach it), `Out` copies it back only.

On the CPU target a host array is the kernel's own memory, so `In` passes a copy and the others
pass the array itself. Hints are unwrapped in the launch's slow path (their class has no fast-path
type key), never on the fast path.
"""

from __future__ import annotations


class ArgHint:
    """A host array and the directions it is copied in; `value` is the array."""

    copy_in = True
    copy_out = True

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"cuda.{type(self).__name__}({self.value!r})"


class In(ArgHint):
    """Copied to the kernel, not back."""

    copy_out = False


class Out(ArgHint):
    """Copied back after the kernel, not to it (its contents before the launch are not read)."""

    copy_in = False


class InOut(ArgHint):
    """Copied to the kernel and back (what a bare host array gets)."""


def wrap_arg(value, default=InOut):
    """`value` if it is already a hint, else `default(value)`: numba-cuda's helper for dispatcher
    extensions whose `prepare_args` choose how a bare array travels (`wrap_arg(a, cuda.In)`)."""
    return value if isinstance(value, ArgHint) else default(value)
