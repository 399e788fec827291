"""Launches someone listens to: LAUNCH_BEFORE, the launch, LAUNCH_AFTER (also when it fails).

The dispatcher comes here only while `gpunb.events` has launch subscribers (a profiler, the
notebook's %%gpuprofile); otherwise its fast path launches inline and publishes nothing. The two
events share what they describe (the arguments' types are spelled once per specialisation, their
shapes read once per launch), so a listened launch costs two small records and the subscribers'
own work.
"""

from __future__ import annotations

import time

from gpunb.foundation import events
from gpunb.foundation.events import EventKind, LaunchEvent


def observed_launch(dispatcher, spec, new: bool, griddim, blockdim, stream, sharedmem: int,
                    args: tuple) -> None:
    """Pack and launch `args` as the fast path does, with an event before and after."""
    name = dispatcher.__name__
    types = spec.type_names
    if types is None:
        types = spec.type_names = tuple(str(ty) for ty in spec.argtypes)
    shapes = tuple([getattr(value, "shape", ()) for value in args])  # nothing kept alive
    events.publish(EventKind.LAUNCH_BEFORE, LaunchEvent(
        EventKind.LAUNCH_BEFORE, name, spec, griddim, blockdim, stream, sharedmem, types, shapes,
        spec.target, new, args=args))
    started = time.perf_counter()
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
        events.publish(EventKind.LAUNCH_AFTER, LaunchEvent(
            EventKind.LAUNCH_AFTER, name, spec, griddim, blockdim, stream, sharedmem, types,
            shapes, spec.target, new, (time.perf_counter() - started) * 1000.0, error))
