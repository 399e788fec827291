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

What no mode allows: the legacy default stream while a blocking stream captures
(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); `legacy_stream_usable()` asks the driver with a query that
invalidates nothing. The driver module is passed in (`cu`): this module sits below driver.py.
"""

from __future__ import annotations

from collections.abc import Callable

CU_STREAM_LEGACY = 1


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
