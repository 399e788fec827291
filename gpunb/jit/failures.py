"""A GPU function's last failed launch, kept so `%gpucache status` and the side panel can name it.

A launch can fail before anything compiles (wrong argument count or kinds, no declared signature
matching, a malformed launch configuration, a device function launched) or after (the driver
refuses the configuration, the CPU target finds an out-of-bounds index or a race). Compile
failures are kept per argument types by the dispatcher itself (`failed_compiles`); this module
keeps the other kind, one per function, until a launch of it succeeds. Only error paths call it.
"""

from __future__ import annotations

import dataclasses

from gpunb.foundation.errors import LaunchError, SourceLocation


@dataclasses.dataclass(frozen=True, slots=True)
class LaunchFailure:
    """What failed (the error's type name and message's first line), where (the error's line:
    the launch, or the kernel's line for an error inside it), the user's launch line, and for
    which argument types ("" when they could not be typed)."""

    kind: str
    message: str
    loc: SourceLocation | None
    launched_at: SourceLocation | None
    signature: str
    target: str

    def describe(self) -> str:
        """`KernelIndexError: index 99 is out of bounds ... (Cell In[1], line 3; launched at
        Cell In[3], line 1)`."""
        places = [loc.describe() for loc in (self.loc, self.launched_at) if loc is not None]
        if len(places) == 2 and places[0] == places[1]:
            places.pop()
        if len(places) == 2:
            places[1] = f"launched at {places[1]}"
        text = f"{self.kind}: {self.message}"
        return f"{text} ({'; '.join(places)})" if places else text


def note_launch_failure(dispatcher, exc: LaunchError, args: tuple | None = None) -> None:
    """Remember `exc` as `dispatcher`'s last launch failure (the exception itself is not kept:
    its traceback would hold the launch's arguments alive).

    Its launchers launch no more (its launch version moves), so the next launch of this
    function takes the Python path, whose success clears the failure.
    """
    from gpunb.jit.options import user_location

    message = getattr(exc, "message", None) or str(exc)
    launched_at = user_location()
    dispatcher.failed_launch = LaunchFailure(
        type(exc).__name__, message.splitlines()[0] if message else "",
        getattr(exc, "loc", None) or launched_at, launched_at, _signature_of(args),
        _target_of(dispatcher))
    dispatcher.version.bump()


def _signature_of(args: tuple | None) -> str:
    """The kernel-language signature of the launch's arguments, or "" where one has no type."""
    if args is None:
        return ""
    from gpunb.foundation import types as t
    from gpunb.runtime.typeof import typeof

    try:
        return str(t.Signature(t.void, tuple(typeof(a) for a in args)))
    except Exception:  # noqa: BLE001 - an argument gpunb cannot type: the message names it
        return ""


def _target_of(dispatcher) -> str:
    from gpunb.runtime.target import active_target

    try:
        return active_target(dispatcher.requested_target)
    except Exception:  # noqa: BLE001 - no usable target is itself what the message says
        return ""
