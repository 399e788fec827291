"""Launches someone listens to: LAUNCH_BEFORE, the launch, LAUNCH_AFTER (also when it fails).

The dispatcher comes here only while `gpunb.events` has launch subscribers (a profiler, the
notebook's %%gpuprofile); otherwise its fast path launches inline and publishes nothing. Each
event is built only when its kind has a subscriber (a profile timed by CUPTI or the host clock
listens to LAUNCH_AFTER alone), as a named tuple made with `tuple.__new__`, and the two events
share what they describe (the arguments' types are spelled once per specialisation, their shapes
read once per launch): a listened launch costs one or two small tuples and the subscribers' own
work.
"""

from __future__ import annotations

import time

from gpunb.foundation import events
from gpunb.foundation.events import EventKind, LaunchEvent

_BEFORE, _AFTER = EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER
_new = tuple.__new__
_clock = time.perf_counter_ns
_subscriptions = events.subscriptions  # kind -> tuple of Subscriptions (read, never mutated)


def observed_launch(dispatcher, spec, new: bool, griddim, blockdim, stream, sharedmem: int,
                    args: tuple) -> None:
    """Pack and launch `args` as the fast path does, with an event before and after."""
    name = dispatcher.__name__
    types = spec.type_names
    if types is None:
        types = spec.type_names = tuple(str(ty) for ty in spec.argtypes)
    shapes = tuple([getattr(value, "shape", ()) for value in args])  # nothing kept alive
    subscriptions = _subscriptions.get(_BEFORE)
    if subscriptions:
        event = _new(LaunchEvent, (_BEFORE, name, spec, griddim, blockdim, stream, sharedmem,
                                   types, shapes, spec.target, new, 0.0, "", args, 0))
        for subscription in subscriptions:  # events.publish, inline
            try:
                subscription.fn(event)
            except Exception as exc:  # noqa: BLE001 - a listener must not break a launch
                events.report_failure(subscription.fn, _BEFORE, exc, stacklevel=3)
    started = _clock()
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
        subscriptions = _subscriptions.get(_AFTER)
        if subscriptions:
            event = _new(LaunchEvent, (_AFTER, name, spec, griddim, blockdim, stream, sharedmem,
                                       types, shapes, spec.target, new,
                                       (_clock() - started) / 1e6, error, (), started))
            for subscription in subscriptions:
                try:
                    subscription.fn(event)
                except Exception as exc:  # noqa: BLE001 - a listener must not break a launch
                    events.report_failure(subscription.fn, _AFTER, exc, stacklevel=3)
