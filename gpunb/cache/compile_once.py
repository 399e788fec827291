"""Compile once across processes: on a miss, claim the key's lock or wait for its holder's entry.

Several processes sharing a cache directory (the GPUs of one host, Dask or Ray workers on a shared
filesystem) that miss on the same key would each compile it. The first to claim `<key>.lock`
compiles; the others poll for the entry it stores and load it. Threads of one process (a Dask
worker running several partitions at once) first agree among themselves (ThreadClaims): one
thread claims the key for the process, the others wait for its result in memory. Waiting is
bounded: a waiter whose holder died takes the lock over (keylock.py says how death is noticed,
across nodes too), and one that waited `wait_s` compiles itself. Correctness never rests on the
lock - entries are atomic and checksummed - only the number of compiles does.
"""

from __future__ import annotations

import threading
import time
from collections import namedtuple
from collections.abc import Callable

from gpunb.cache import keylock

Claim = namedtuple("Claim", "lock found waited_ms outcome")
Claim.__doc__ = """What a miss should do next.

outcome 'found': another process stored the entry (`found` is what the probe returned);
'compile': compile and store - this process holds `lock` (None when the directory could not hold
one); 'timed out': the holder is alive but did not finish within the wait, compile without a lock.
waited_ms: time spent waiting for another process (0 when the lock was free).
"""

_FIRST_PAUSE_S = 0.005
_LONGEST_PAUSE_S = 0.1  # polls of a shared filesystem stay cheap: ~10 per second per waiter


def claim(lock_path: str, probe: Callable[[], object | None], wait_s: float, stale_s: float,
          clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> Claim:
    """Claim the key whose lock is `lock_path`, or wait for the entry `probe()` finds.

    OSError from taking the lock means the directory cannot hold files: the caller compiles
    without one (and stores nothing there).
    """
    started = clock()
    lock = keylock.acquire(lock_path, stale_s)
    if lock is not None:
        return _owned(lock, probe, 0.0)
    seen: keylock.LockState | None = None
    seen_since = started
    pause = _FIRST_PAUSE_S
    while True:
        sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_S)
        found = probe()
        now = clock()
        waited_ms = (now - started) * 1000.0
        if found is not None:
            return Claim(None, found, waited_ms, "found")
        state = keylock.observe(lock_path)
        holder = keylock.holder_of(state)
        if state is None or keylock.holder_gone(holder) \
                or (state == seen and now - seen_since >= keylock.stale_after(holder, stale_s)):
            # released without an entry (a failed compile), or its holder is gone: take over
            if state is not None:
                keylock.break_lock(lock_path, state)
            lock = keylock.acquire(lock_path, stale_s)
            if lock is not None:
                return _owned(lock, probe, waited_ms)
            seen = None  # someone else took it over first: watch the new holder
        elif state != seen:
            seen, seen_since = state, now  # a live holder's heartbeat moves the mtime
        if now - started >= wait_s:
            return Claim(None, None, waited_ms, "timed out")


def _owned(lock: keylock.KeyLock, probe: Callable[[], object | None], waited_ms: float) -> Claim:
    """Holding the lock: the entry may have been stored between the caller's read and our
    claim (the previous holder finished just then) - then there is nothing to compile."""
    found = probe()
    if found is not None:
        lock.release()
        return Claim(None, found, waited_ms, "found")
    return Claim(lock, None, waited_ms, "compile")


class Compiling:
    """This process is compiling a key: the thread that does it, the file lock it holds (None
    without one), and an event set when it stored the entry or gave up."""

    __slots__ = ("owner", "lock", "done")

    def __init__(self):
        self.owner = threading.get_ident()
        self.lock: keylock.KeyLock | None = None
        self.done = threading.Event()


class ThreadClaims:
    """The keys threads of this process are compiling: the first thread to miss a key compiles
    it, the others wait on its Compiling.done."""

    def __init__(self):
        self._guard = threading.Lock()
        self._keys: dict[str, Compiling] = {}

    def enter(self, key: str) -> tuple[Compiling, bool]:
        """(the key's Compiling, True if this thread just claimed it)."""
        with self._guard:
            current = self._keys.get(key)
            if current is not None:
                return current, False
            current = self._keys[key] = Compiling()
            return current, True

    def leave(self, key: str, compiling: Compiling) -> None:
        """The compile is stored or abandoned: wake the waiting threads, free the file lock."""
        with self._guard:
            if self._keys.get(key) is compiling:
                del self._keys[key]
        compiling.done.set()
        lock, compiling.lock = compiling.lock, None
        if lock is not None:
            lock.release()
