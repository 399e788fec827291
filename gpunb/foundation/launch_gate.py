"""One process-wide counter that every native launcher compares against before it launches.

A native launcher (runtime/native_pack.py) bakes in what was true when it was built: the target,
that nobody listened to launch events, that the process had one CUDA context, that the kernel
had no numba `extensions`. Anything that can make one of those false calls `bump()`; each
launcher then declines (one integer compare, in machine code) and the Python launch path, which
checks everything, takes over and builds a fresh launcher when it may.

A launch recorder starting or stopping (a profile block's start and end) moves the counter too,
with `bump_recorders()`: plain launchers must not launch unrecorded while one records, nor
recording ones once it stops. Nothing a launcher was built on changed then, so a launcher armed
at a value after which only recorders moved it (`unchanged_since`) may be armed again without
its checks, when its recording mode fits the recorders of the moment (jit/fast_launch.py).
"""

from __future__ import annotations

import ctypes
import threading

_word = ctypes.c_int64(0)  # read by native launchers at this address; written only under _lock
_lock = threading.Lock()
address: int = ctypes.addressof(_word)
# the counter's value after the last bump() (not bump_recorders); written before the counter,
# so a reader that sees the counter's new value sees this one's too (both under the GIL)
_last_full = 0


def current() -> int:
    """The counter's value now (a launcher built now bakes this in)."""
    return _word.value


def bump() -> None:
    """Invalidate every native launcher built so far (they rebuild on a later launch)."""
    global _last_full
    with _lock:
        _last_full = _word.value + 1
        _word.value = _last_full


def bump_recorders() -> None:
    """The launch recorders changed, nothing else: every launcher declines, and one armed at a
    value `unchanged_since` still holds may be armed again as it is."""
    with _lock:
        _word.value += 1


def unchanged_since(value: int) -> bool:
    """Whether only `bump_recorders` moved the counter after it read `value` (a launcher's
    armed value; -1, disarmed, never qualifies). Read the counter before asking: a bump after
    this answer moves it past what the caller arms with."""
    return value >= _last_full
