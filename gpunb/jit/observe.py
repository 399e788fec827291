"""Launches someone listens to: LAUNCH_BEFORE, the launch, LAUNCH_AFTER (also when it fails).

The dispatcher comes here only while `gpunb.events` has launch subscribers (a profiler, the
notebook's %%gpuprofile); otherwise its fast path launches inline and publishes nothing.
"""

from __future__ import annotations

import dataclasses
import time

from gpunb.foundation import events
from gpunb.foundation.events import ArgumentInfo, EventKind, LaunchEvent


def observed_launch(dispatcher, spec, new: bool, griddim, blockdim, stream, sharedmem: int,
                    args: tuple) -> None:
    """Pack and launch `args` as the fast path does, with an event before and after."""
    before = LaunchEvent(EventKind.LAUNCH_BEFORE, dispatcher.__name__, spec, griddim, blockdim,
                         stream, sharedmem, arguments(spec.argtypes, args), spec.target, new)
    events.publish(EventKind.LAUNCH_BEFORE, before)
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
        after = dataclasses.replace(before, kind=EventKind.LAUNCH_AFTER, error=error,
                                    ms=(time.perf_counter() - started) * 1000.0)
        events.publish(EventKind.LAUNCH_AFTER, after)


def arguments(argtypes: tuple, args: tuple) -> tuple:
    """Each argument's kernel-language type and shape; nothing that keeps the argument alive."""
    return tuple(ArgumentInfo(str(ty), tuple(getattr(value, "shape", ())))
                 for ty, value in zip(argtypes, args, strict=False))
