"""Releases of driver objects held back while a gpunb graph capture is open.

Why: memory, modules, streams, events and graphs are released by finalizers when their Python
objects are collected - and the cyclic collector runs whenever Python allocates, also in the
middle of a `with gpunb.graph():` block. cuMemFree, cuMemFreeHost, cuModuleUnload and the like
synchronise with the device, which a capturing thread may not do: the driver refuses the call and
invalidates the capture, so the next captured launch failed with
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED "operation failed due to a previous error during capture"
at random (tests/graphs/test_graph_api.py on the H200, depending on when a previous test's
kernels and arrays were collected). While any capture is open in this process, a release is
queued here and done when the last capture ends.

The count is process-wide (a capture on another thread holds releases back too: they wait a few
milliseconds, never forever), and `driver.synchronize()` reads it to wait without
cuCtxSynchronize, which the driver refuses while any stream of the context captures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_lock = threading.Lock()
_open = 0  # captures begun and not yet ended or abandoned, in this process
_held: list = []  # (release, args) queued while a capture was open


def capturing() -> bool:
    """Whether a gpunb graph capture is open anywhere in this process."""
    return _open > 0


def release_later(release: Callable, *args) -> bool:
    """Queue release(*args) when a capture is open (True: the caller must not release now)."""
    if not _open:
        return False
    with _lock:
        if not _open:
            return False
        _held.append((release, args))
    return True


def capture_began() -> None:
    global _open
    with _lock:
        _open += 1


def capture_ended() -> None:
    """One capture ended (its graph made, or abandoned): with none open, release what waited."""
    global _open
    with _lock:
        _open = max(0, _open - 1)
        if _open:
            return
        held = _held[:]
        _held.clear()
    for release, args in held:
        release(*args)
