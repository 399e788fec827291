"""Launches someone listens to or records: events before and after, or one compact entry.

The dispatcher comes here only while `gpunb.events` has launch observers: subscribers (the
replay snapshot, the CUDA-event timer, a user's hook) or recorders (a profile timed by CUPTI or
the host clock, `events.record_launches`); otherwise its fast path launches inline and
publishes nothing. Each event is built only when its kind has a subscriber, as a named tuple
made with `tuple.__new__`, and the two events share what they describe (the arguments' types
are spelled once per specialisation, their shapes read once per launch).

Recorders do not stop the native launchers: `recording_launcher` wraps the one a configuration
binds while recorders are active, so a recorded launch costs the native launch, two clock reads
and one `(site, shapes, start_ns, end_ns, error)` tuple appended to each recorder's list. It
looks the recorders up when it launches, so one profile block after another arms it again as
it is rather than binding a new one.
"""

from __future__ import annotations

import time

import numpy as np

from gpunb.foundation import events
from gpunb.foundation.events import EventKind, LaunchEvent, LaunchSite

_BEFORE, _AFTER = EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER
_new = tuple.__new__
_clock = time.perf_counter_ns
_subscriptions = events.subscriptions  # kind -> tuple of Subscriptions (read, never mutated)
_DECLINED = -1  # a native launcher's "take the Python path" (runtime/native_plan_code.DECLINED)


def type_names(spec) -> tuple:
    """The specialisation's argument types as text, spelled once."""
    types = spec.type_names
    if types is None:
        types = spec.type_names = tuple(str(ty) for ty in spec.argtypes)
    return types


def observed_launch(dispatcher, spec, new: bool, griddim, blockdim, stream, sharedmem: int,
                    args: tuple):
    """Pack and launch `args` as the fast path does, with an event before and after and an
    entry for each recorder. Returns `spec` when only recorders observe (the caller may bind
    a native launcher, which records too), else None."""
    name = dispatcher.__name__
    types = type_names(spec)
    shapes = tuple([getattr(value, "shape", ()) for value in args])  # nothing kept alive
    subscriptions = _subscriptions.get(_BEFORE)
    if subscriptions:
        event = _new(LaunchEvent, (_BEFORE, name, spec, griddim, blockdim, stream, sharedmem,
                                   types, shapes, spec.target, new, 0.0, "", args, 0))
        for subscription in subscriptions:  # events.publish, inline
            try:
                subscription.fn(event)
            except Exception as exc:  # noqa: BLE001 - a listener must not break a launch
                events.report_failure(subscription.fn, _BEFORE, exc)
    started = _clock()
    # the recorders the launch is recorded by: those active once it has begun (read after its
    # clock, so that its times overlap their blocks; read at its end, a launch that ended
    # just before a block began in another thread would be recorded by that block)
    append = events.launch_append
    error = ""
    try:
        params, writeback = spec.packer.pack(args, spec.argtypes)
        spec.launch(griddim, blockdim, sharedmem, stream, params)
        if writeback:
            for fn in writeback:
                fn()
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        ended = _clock()
        if append is not None:
            site = _new(LaunchSite, (name, spec, griddim, blockdim, stream, sharedmem, types,
                                     spec.target, new, None))
            append((site, shapes, started, ended, error))
        subscriptions = _subscriptions.get(_AFTER)
        if subscriptions:
            event = _new(LaunchEvent, (_AFTER, name, spec, griddim, blockdim, stream, sharedmem,
                                       types, shapes, spec.target, new, (ended - started) / 1e6,
                                       error, (), started))
            for subscription in subscriptions:
                try:
                    subscription.fn(event)
                except Exception as exc:  # noqa: BLE001 - a listener must not break a launch
                    events.report_failure(subscription.fn, _AFTER, exc)
    return None if events.launch_subscribers else spec


def recording_launcher(native, after, site: LaunchSite):
    """`native` (a bound native launcher, `f(args) -> status`) that also appends an entry per
    launch to the log of each recorder active when it launches (`events.launch_append`);
    `after(status)` runs a packed CPU grid or handles a driver failure, here rather than in the
    caller, so the entry's times and error cover it. Returns 0 (launched) or _DECLINED, as
    `native` does, or raises what `after` raised; declines while nothing records. The entries
    hold the shapes of the arguments at `site.shape_at` (see shape_positions).

    The recorders are looked up at each launch, not bound in: a configuration keeps this
    launcher from one profile block to the next (the block's start re-arms it, fast_launch).
    They are read before `native` checks the launch gate, which every change of the recorders
    moves after making it: a launch that passes the check was recorded by the recorders of the
    gate value it passed at (or by one starting or stopping in that instant)."""
    clock = _clock
    shapes_of = _shape_reader(site.shape_at)
    declined = _DECLINED

    def launch(args: tuple) -> int:
        append = events.launch_append
        if append is None:
            return declined  # nothing records: the plain launcher is armed again instead
        started = clock()
        status = native(args)
        if status:  # (0: launched, on a GPU)
            if status == declined:
                return status
            error = ""
            try:
                after(status)
            except BaseException as exc:
                error = f"{type(exc).__name__}: {exc}"
                _locate(exc)
                raise
            finally:
                append((site, shapes_of(args), started, clock(), error))
            return 0
        append((site, shapes_of(args), started, clock(), ""))
        return 0

    return launch


def shape_positions(args: tuple) -> tuple:
    """Which of a launch's arguments have a shape to record: arrays, not scalars (a native
    launcher accepts only arguments of the exact classes it was built for, so these positions
    hold for every launch it makes)."""
    return tuple(k for k, value in enumerate(args)
                 if hasattr(value, "shape") and not isinstance(value, np.generic))


def _shape_reader(positions: tuple):
    """A function `args -> the shapes at positions`: indexing and attribute reads only (a
    comprehension over the arguments costs several times as much per launch)."""
    if not positions:
        return lambda args: ()
    if len(positions) == 1:
        (p,) = positions
        return lambda args: (args[p].shape,)
    if len(positions) == 2:
        p, q = positions
        return lambda args: (args[p].shape, args[q].shape)
    if len(positions) == 3:
        p, q, r = positions
        return lambda args: (args[p].shape, args[q].shape, args[r].shape)
    if len(positions) == 4:
        p, q, r, u = positions
        return lambda args: (args[p].shape, args[q].shape, args[r].shape, args[u].shape)
    return lambda args: tuple([args[k].shape for k in positions])


def _locate(exc: BaseException) -> None:
    """A LaunchError from `after` points at the user's launch line, as the dispatcher's own
    native path does (_LaunchConfig._after_native)."""
    from gpunb.foundation.errors import LaunchError

    if isinstance(exc, LaunchError) and exc.loc is None:
        from gpunb.jit.options import user_location

        exc.loc = user_location()
