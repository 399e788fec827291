"""Driver calls that stay legal while a stream captures a CUDA graph - in any thread, whichever
library (gpunb.graph, torch.cuda.graph, CuPy) captures.

What the driver refuses, measured on the H200 (driver 580; RESULTS.md, graphs8): while a stream
captures, a thread in CUDA's default capture-interaction mode may not call cuMemFree,
cuMemFreeHost, cuMemFreeAsync, cuModuleUnload, cuGraphExecDestroy, cuStreamQuery or
cuEventQuery - neither the capturing thread (whatever its capture's mode) nor any thread while
another captures in global mode (torch.cuda.graph's default): the call fails with
CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture is invalidated. Finalizers make the
releases whenever the collector runs, in whatever thread allocated, so a capture failed at
random. With the calling thread's mode RELAXED (cuThreadExchangeStreamCaptureMode) every one of
those calls succeeds and the capture stays valid: `relaxed()` makes each release so, and waits
poll under `relax()`.

Two things no mode allows: cuCtxSynchronize while any stream of the context captures, and the
legacy default stream while a blocking stream captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT).
For the first, gpunb's own open captures are counted here (driver.synchronize waits stream by
stream while one is open); for the second, `legacy_stream_usable()` asks the driver with a
query that invalidates nothing. The driver module is passed in (`cu`): this module sits below
driver.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

CU_STREAM_LEGACY = 1
CU_STREAM_PER_THREAD = 2

_lock = threading.Lock()
_capturing: set = set()  # handles of the streams gpunb's captures are open on, any thread
_streams: set = set()  # handles of the streams gpunb created and has not destroyed


def relax(cu):
    """Set this thread's capture-interaction mode to RELAXED: the previous mode, for
    `restore` (None when the driver refused, e.g. before cuInit)."""
    try:
        err, previous = cu.cuThreadExchangeStreamCaptureMode(
            cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
    except Exception:  # noqa: BLE001 - a finished driver at exit: the call itself will tell
        return None
    return None if err else previous


def restore(cu, previous) -> None:
    """Give this thread back the mode `relax` returned."""
    if previous is not None:
        cu.cuThreadExchangeStreamCaptureMode(previous)


def relaxed(cu, call: Callable, *args):
    """call(*args) with this thread's capture mode relaxed: a release a collector's finalizer
    makes during someone's capture neither fails nor invalidates that capture."""
    previous = relax(cu)
    try:
        return call(*args)
    finally:
        restore(cu, previous)


def legacy_stream_usable(cu) -> bool:
    """False while a blocking stream captures: every use of the legacy default stream (a
    launch, a copy, a query) would then be refused and invalidate that capture."""
    try:
        result = cu.cuStreamGetCaptureInfo(CU_STREAM_LEGACY)
    except Exception:  # noqa: BLE001 - no driver to ask: nothing captures
        return True
    return result[0] != cu.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT


def capture_began(stream: int) -> None:
    with _lock:
        _capturing.add(int(stream))


def capture_ended(stream: int) -> None:
    """The capture on `stream` ended (its graph made, invalidated or abandoned)."""
    with _lock:
        _capturing.discard(int(stream))


def capturing_streams() -> frozenset:
    """The streams gpunb's open captures are on (any thread)."""
    return frozenset(_capturing) if _capturing else frozenset()


def stream_captures(cu, stream: int) -> bool:
    """Whether `stream` (a created one: the default streams never capture a whole graph of
    gpunb's) is capturing now - for gpunb (counted here) or another library (asked of the
    driver, which invalidates nothing). Querying or synchronizing it would be invalid then:
    its work does not run until a replay, and the driver refuses and ends that capture."""
    handle = int(stream)
    if handle in (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD):
        return False
    if handle in _capturing:
        return True
    try:
        result = cu.cuStreamGetCaptureInfo(handle)
    except Exception:  # noqa: BLE001 - no driver to ask: nothing captures
        return False
    return not result[0] and int(result[1]) != 0  # ACTIVE, or INVALIDATED and not yet ended


def stream_created(handle: int) -> None:
    with _lock:
        _streams.add(int(handle))


def stream_destroyed(handle: int) -> None:
    with _lock:
        _streams.discard(int(handle))


def created_streams() -> tuple:
    """The streams gpunb created that still exist (what a synchronize around an open capture
    waits for, besides the default streams)."""
    with _lock:
        return tuple(_streams)


def streams_outside(cu, capturing: frozenset) -> list:
    """The streams cuda.synchronize() waits for while `capturing` streams capture: the legacy
    default stream (whose wait covers every blocking stream) unless a blocking stream captures,
    this thread's per-thread default stream, and the streams gpunb made that do not capture.
    (Streams other libraries made are not known here: their non-blocking streams are not
    waited for in that window.)"""
    streams = [0] if legacy_stream_usable(cu) else []
    streams.append(CU_STREAM_PER_THREAD)
    for handle in created_streams():
        if handle in capturing:
            continue
        result = cu.cuStreamGetCaptureInfo(handle)
        if not result[0] and int(result[1]) == 0:  # CU_STREAM_CAPTURE_STATUS_NONE
            streams.append(handle)
    return streams
