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


def observed_launch(dispatcher, spec, new: bool, griddim, blockdim, stream, sharedmem: int,
                    args: tuple) -> None:
    """Pack and launch `args` as the fast path does, with an event before and after."""
    name = dispatcher.__name__
    types = spec.type_names
    if types is None:
        types = spec.type_names = tuple(str(ty) for ty in spec.argtypes)
    shapes = tuple([getattr(value, "shape", ()) for value in args])  # nothing kept alive
    target = spec.target
    if events.has_subscribers(_BEFORE):
        events.publish(_BEFORE, _new(LaunchEvent, (
            _BEFORE, name, spec, griddim, blockdim, stream, sharedmem, types, shapes, target,
            new, 0.0, "", args, 0)))
    started = _clock()
    error = ""
    try:
        params, writeback = spec.packer.pack(args, spec.argtypes)
        spec.launch(griddim, blockdim, sharedmem, stream, params)
        for fn in writeback:
            fn()
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if events.has_subscribers(_AFTER):
            events.publish(_AFTER, _new(LaunchEvent, (
                _AFTER, name, spec, griddim, blockdim, stream, sharedmem, types, shapes, target,
                new, (_clock() - started) / 1e6, error, (), started)))
