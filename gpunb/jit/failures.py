"""A GPU function's last failed launch, kept so `%gpucache status` and the side panel can name it.

A launch can fail before anything compiles (wrong argument count or kinds, no declared signature
matching, a malformed launch configuration, a device function launched) or after (the driver
refuses the configuration, the CPU target finds an out-of-bounds index or a race). Compile
failures are kept per argument types by the dispatcher itself (`failed_compiles`); this module
keeps the other kind, one per function, until a launch of it succeeds. Both are published as
FAILED events, and new specialisations as SPECIALIZED ones (the side panel's). Only error paths
and the slow path call it.
"""

from __future__ import annotations

import dataclasses
import weakref

from gpunb.foundation import events
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


def note_launch_failure(dispatcher, exc: LaunchError, args: tuple | None = None,
                        launch=None) -> None:
    """Remember `exc` as `dispatcher`'s last launch failure (the exception itself is not kept:
    its traceback would hold the launch's arguments alive). With the launch (`kernel[grid,
    block]`) and its arguments, also what replaying it under the debugger needs (%gpudebug):
    numbers as they are, arrays held while they are small (see _kept_arrays), larger ones
    weakly.

    Its launchers launch no more (its launch version moves), so the next launch of this
    function takes the Python path, whose success clears the failure.
    """
    from gpunb.jit.options import user_location

    message = getattr(exc, "message", None) or str(exc)
    launched_at = user_location()
    failure = dispatcher.failed_launch = LaunchFailure(
        type(exc).__name__, message.splitlines()[0] if message else "",
        getattr(exc, "loc", None) or launched_at, launched_at, _signature_of(args),
        _target_of(dispatcher))
    if launch is not None and args is not None:
        global _last_replay
        _last_replay = Replay(weakref.ref(dispatcher), (launch.grid, launch.block, launch.stream,
                                                        launch.sharedmem),
                              _kept_arrays(args), failure)
    dispatcher.version.bump()
    if events.has_subscribers(events.EventKind.FAILED):  # the side panel lists it
        events.publish(events.EventKind.FAILED, events.KernelEvent(
            events.EventKind.FAILED, dispatcher.__name__, failure.signature, failure.target,
            dispatcher, None, "launch", failure.describe()))


_last_replay = None  # the Replay of the last failed launch with arguments


@dataclasses.dataclass(frozen=True, slots=True)
class Replay:
    """A failed launch, as it can be run again: its kernel and configuration held weakly or
    by value, its arguments as `_kept` made them."""

    dispatcher: object  # weakref
    config: tuple  # (grid, block, stream, shared bytes)
    kept: tuple
    failure: LaunchFailure

    def arguments(self) -> tuple | None:
        """The arguments again, or None when one of them is gone (deleted since)."""
        out = []
        for how, value in self.kept:
            if how == "gone":
                return None
            if how == "weak":
                value = value()
                if value is None:
                    return None
            out.append(value)
        return tuple(out)


def last_replay() -> Replay | None:
    return _last_replay


# arrays of a failed launch held for %gpudebug, up to this many bytes together: an array made in
# the launch's own line (`k[1, 32](np.zeros(4))`) has no other reference, and held weakly it was
# gone before %gpudebug could replay it; larger ones are held weakly, so nothing large is kept
# alive by a failure
HELD_ARRAY_BYTES = 64 << 20


def _kept_arrays(args: tuple) -> tuple:
    kept, held = [], 0
    for value in args:
        how, item = _kept(value)
        size = _bytes_kept_alive(value)
        if how == "weak" and size is not None and held + size <= HELD_ARRAY_BYTES:
            how, item, held = "value", value, held + size
        kept.append((how, item))
    return tuple(kept)


def _bytes_kept_alive(value) -> int | None:
    """The bytes holding `value` keeps alive: a view's whole base chain (a small slice of a
    large array keeps all of it), None for what is not an array."""
    size = None
    try:
        while value is not None:
            nbytes = getattr(value, "nbytes", None)
            if not isinstance(nbytes, int):
                break
            size = max(size or 0, nbytes)
            base = getattr(value, "base", None)
            value = base if base is not value else None
    except Exception:  # noqa: BLE001 - an argument whose attributes raise (a tensor subclass's
        return None  # __torch_function__): held weakly; the launch's own error is what counts
    return size


def _kept(value) -> tuple:
    """("value", v) for numbers (numpy scalars too) and tuples of them, else ("weak", ref);
    ("gone", None) for what can be neither (no replay then: nothing large is kept alive)."""
    import numpy as np

    if isinstance(value, (int, float, complex, bool, np.generic, type(None))) or \
            (isinstance(value, tuple) and all(isinstance(v, (int, float, complex, bool,
                                                             np.generic)) for v in value)):
        return ("value", value)
    try:
        return ("weak", weakref.ref(value))
    except TypeError:
        return ("gone", None)


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


def at_user_line(exc: LaunchError) -> LaunchError:
    """`exc`, or the same error pointing at the user's line (`kernel[2.5, 256]`: a caret under
    the launch) when the check that raised it had no location to give."""
    from gpunb.foundation.errors import LaunchConfigError, NotAKernelError

    if exc.loc is not None or type(exc) not in (LaunchError, LaunchConfigError, NotAKernelError):
        return exc
    from gpunb.jit.options import user_location

    loc = user_location()
    if loc is None:
        return exc
    return type(exc)(exc.message, loc, hint=exc.hint, function=exc.function)


def note_compile_failure(dispatcher, target: str, argtypes: tuple, exc: Exception) -> None:
    """Keep a failed compile for these argument types (until one works) and publish it."""
    kind, message = type(exc).__name__, getattr(exc, "message", None) or str(exc)
    loc = getattr(exc, "loc", None)
    dispatcher.failed_compiles[(target, argtypes)] = (kind, message, loc)
    if not events.has_subscribers(events.EventKind.FAILED):
        return
    text = f"{kind}: {message.splitlines()[0] if message else ''}"
    error = f"{text} ({loc.describe()})" if loc is not None else text
    events.publish(events.EventKind.FAILED, events.KernelEvent(
        events.EventKind.FAILED, dispatcher.__name__, _signature_text(argtypes), target,
        dispatcher, None, "compile", error))


def announce_specialization(dispatcher, target: str, argtypes: tuple, spec) -> None:
    """SPECIALIZED: the dispatcher has new code for these types (the side panel lists it)."""
    if events.has_subscribers(events.EventKind.SPECIALIZED):
        events.publish(events.EventKind.SPECIALIZED, events.KernelEvent(
            events.EventKind.SPECIALIZED, dispatcher.__name__, _signature_text(argtypes),
            target, dispatcher, spec))


def _signature_text(argtypes: tuple) -> str:
    from gpunb.foundation import types as t

    return str(t.Signature(t.void, argtypes))
