"""gpunb.access_map(kernel[grid, block], *args): who touched which element, as data.

The launch runs once on the CPU target with access recording on (the instrumentation that
racecheck uses); access_stats turns the log into an AccessMap (access_types).
"""

from __future__ import annotations

import inspect

from gpunb.backends.cpu.accesses import AccessLog
from gpunb.jit.access_stats import build_map
from gpunb.jit.access_types import AccessMap


def access_map(launch, *args) -> AccessMap:
    """Run `launch(*args)` (a `kernel[grid, block]`) once on the CPU target, recording every
    array access, and return what it did. The launch really runs: arrays change as it writes."""
    log = record_launch(launch, *args)
    names = list(inspect.signature(launch.dispatcher.py_func).parameters)
    return build_map(log, names)


def record_launch(launch, *args) -> AccessLog:
    """The raw access log of one recording launch of `launch(*args)` on the CPU target, for
    tools that read it record by record (gpunb.puzzles' grader); nothing is checked or raised
    for races or uninitialised reads: the log holds what happened."""
    from gpunb.backends.cpu.executor import capture_accesses
    from gpunb.foundation.errors import LaunchError

    dispatcher = getattr(launch, "dispatcher", None)
    if dispatcher is None or not hasattr(launch, "griddim"):
        raise LaunchError("access_map needs a configured launch: "
                          "gpunb.access_map(kernel[grid, block], *args)",
                          hint="index the kernel with its grid and block first")
    recorder = _recording_twin(dispatcher)
    with capture_accesses() as logs:
        recorder[launch.griddim, launch.blockdim, launch.stream, launch.sharedmem](*args)
    if not logs:
        raise LaunchError(f"access_map: the launch of '{dispatcher.__name__}' recorded nothing")
    return logs[-1]


def _recording_twin(dispatcher):
    """The same kernel, compiled for the CPU target with access recording (kept per kernel)."""
    twin = getattr(dispatcher, "_gpunb_recording_twin", None)
    if twin is None or twin.py_func is not dispatcher.py_func:
        from gpunb.jit.dispatcher import Dispatcher

        options = {k: v for k, v in dispatcher.options.items() if k != "racecheck"}
        twin = Dispatcher(dispatcher.py_func, target="cpu", racecheck=True, **options)
        dispatcher._gpunb_recording_twin = twin
    return twin
