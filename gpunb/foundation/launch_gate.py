"""One process-wide counter that every native launcher compares against before it launches.

A native launcher (runtime/native_pack.py) bakes in what was true when it was built: the target,
that nobody listened to launch events, that the process had one CUDA context, that the kernel
had no numba `extensions`. Anything that can make one of those false calls `bump()`; each
launcher then declines (one integer compare, in machine code) and the Python launch path, which
checks everything, takes over and builds a fresh launcher when it may.
"""

from __future__ import annotations

import ctypes
import threading

_word = ctypes.c_int64(0)  # read by native launchers at this address; written only under _lock
_lock = threading.Lock()
address: int = ctypes.addressof(_word)


def current() -> int:
    """The counter's value now (a launcher built now bakes this in)."""
    return _word.value


def bump() -> None:
    """Invalidate every native launcher built so far (they rebuild on a later launch)."""
    with _lock:
        _word.value += 1
