"""Per-key lock files in the cache directory, safe across processes and hosts (NFS included).

Why not fcntl/flock: on NFS those depend on the lock manager (absent on `nolock` mounts, lost with
a node), and a lock that dies with its holder tells a waiter nothing about *why* it is free.
Why not the `filelock` package: its SoftFileLock breaks a lock only when the holder is provably
dead on the *same* host; a lock left by a node that is gone would block every waiter until its
timeout. Here:

- **Acquire**: write the holder's identity (host, machine, pid, process start time, nonce) to a
  private `.tmp-<host>+<machine>+<pid>+<start>+<random>` file (temp_prefix), then `link()` it
  to `<key>.lock`. link is atomic on every NFS version and the lock appears with its content
  complete. (Where hard links are not supported, `O_CREAT | O_EXCL` and a write.)
- **Heartbeat**: while compiling, one daemon thread per process touches each held lock every
  `stale / 5` seconds (`utime` without times: NFS sets the server's clock); the period is
  written in the lock, so a waiter configured with a shorter stale time still waits 3 periods.
- **Stale**: a waiter takes a lock over when its holder runs on this machine (same host, boot and
  pid namespace) and that process is gone, a zombie, or a newer process with the same pid; or
  when the lock's mtime has not moved for `stale` seconds of the waiter's own monotonic clock.
  mtimes are compared with each other, never with the local clock, so clock skew is harmless.
  Any other holder (another node, container, or boot) is judged by its heartbeat alone.
  The lock is read through `open` + `fstat` so NFS revalidates its attributes (close-to-open).
- **Break / release**: rename the lock to a private name, check it is the one observed (or ours),
  unlink it; if it is not, put it back. A lost race costs a duplicate compile, never a bad entry:
  entries are written atomically and verified by checksum (store.py), whoever writes them.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import stat
import threading
from collections import namedtuple

from gpunb.cache.trust import parse_json
from gpunb.cache.writers import (  # noqa: F401 - who we are: keylock's API since it began
    host_tag,
    identity,
    process_start,
    temp_prefix,
    temp_writer_state,
)

LockState = namedtuple("LockState", "text mtime_ns")
LockState.__doc__ = "What a waiter saw of a lock file: its raw content and its mtime."

_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EXDEV,
                  errno.EMLINK}
_MAX_LOCK_BYTES = 4096


def holder_of(state: LockState | None) -> dict | None:
    """The identity written in a lock, None if the lock is absent or unreadable."""
    if state is None:
        return None
    try:
        holder = parse_json(state.text)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) else None


def stale_after(holder: dict | None, stale_s: float) -> float:
    """How long an unmoving mtime means a dead holder: our setting, but never less than three of
    the holder's own heartbeat periods (its GPUNB_CACHE_LOCK_STALE_SECONDS may be larger)."""
    beat = holder.get("beat_s") if holder else None
    if isinstance(beat, (int, float)) and beat > 0:
        return max(stale_s, 3.0 * beat)
    return stale_s


def holder_gone(holder: dict | None) -> bool:
    """True only on proof: the holder ran on this machine and its process no longer does."""
    if not holder:
        return False
    me = identity()
    if holder.get("host") != me["host"]:
        return False  # another node: only its heartbeat can tell
    if holder.get("machine") != me["machine"]:
        # the same host name on another kernel or pid namespace: a container, another machine
        # misnamed alike, or this node before a reboot - its pids mean nothing here
        return False
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    started = process_start(pid)
    if started is None:
        return True
    return bool(started and holder.get("started") and started != holder.get("started"))


# ---- the lock file ----------------------------------------------------------------------------

def _private_name(folder: str, what: str) -> str:
    return os.path.join(folder, f"{temp_prefix()}{os.urandom(6).hex()}.{what}")


def observe(path: str) -> LockState | None:
    """The lock's content and mtime, None if there is no lock."""
    try:  # O_NONBLOCK: a FIFO put in a lock's place must not block the waiter
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError:
        try:  # a symlink or an unreadable file: judge it by its mtime alone
            return LockState(b"", os.lstat(path).st_mtime_ns)
        except OSError:
            return None
    try:
        st = os.fstat(fd)
        text = os.read(fd, _MAX_LOCK_BYTES) if stat.S_ISREG(st.st_mode) else b""
    finally:
        os.close(fd)
    return LockState(text, st.st_mtime_ns)


class KeyLock:
    """A held lock: touched by the heartbeat until released."""

    def __init__(self, path: str, text: bytes, interval: float):
        self.path = path
        self.text = text
        self.interval = interval  # seconds between touches, written in the lock as beat_s
        self.released = False

    def touch(self) -> None:
        """The heartbeat: the lock file's mtime. A symbolic link someone put in its place is
        touched itself, never the file it names."""
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(self.path, follow_symlinks=False)

    def release(self) -> bool:
        """Remove the lock if it is still ours (True), stop its heartbeat either way."""
        if self.released:
            return False
        self.released = True
        _heartbeat.remove(self)
        return _remove_if(self.path, lambda seen: seen.text == self.text)

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"<KeyLock {os.path.basename(self.path)} {state}>"


def acquire(path: str, stale_s: float) -> KeyLock | None:
    """Take the lock at `path`: a KeyLock, None if someone holds it; OSError if the directory
    cannot hold files (read-only, full, gone) - the caller then compiles without a lock."""
    beat_s = max(0.02, stale_s / 5)
    holder = dict(identity(), nonce=os.urandom(8).hex(), beat_s=beat_s)
    text = json.dumps(holder, sort_keys=True).encode()
    private = _private_name(os.path.dirname(path), "lock")
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
        won = _link(private, path, text)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(private)
    if not won:
        return None
    lock = KeyLock(path, text, beat_s)
    _heartbeat.add(lock)
    return lock


def _link(private: str, path: str, text: bytes) -> bool:
    try:
        os.link(private, path)
        return True
    except FileExistsError:
        pass
    except OSError as exc:
        if exc.errno in _NO_HARD_LINKS:
            return _create_exclusive(path, text)
        # NFS: a retransmitted LINK may report an error for a link that was made
        with contextlib.suppress(OSError):
            if os.stat(private).st_nlink == 2:
                return True
        raise
    with contextlib.suppress(OSError):
        return os.stat(private).st_nlink == 2  # the same lost-reply case, reported as EEXIST
    return False


def _create_exclusive(path: str, text: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    try:
        os.write(fd, text)
    finally:
        os.close(fd)
    return True


def break_lock(path: str, seen: LockState) -> bool:
    """Remove a stale lock, only if it is still exactly the one observed (content and mtime)."""
    return _remove_if(path, lambda now: now == seen)


def _remove_if(path: str, expected) -> bool:
    """Rename the lock aside, then unlink it if `expected(state)`; else put it back."""
    aside = _private_name(os.path.dirname(path), "unlock")
    try:
        os.rename(path, aside)
    except OSError:
        return False  # gone already (or the directory became unwritable)
    try:
        state = observe(aside)
        if state is not None and expected(state):
            return True
        with contextlib.suppress(OSError):  # not the lock we meant: it belongs where it was
            os.link(aside, path)
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(aside)


# ---- the heartbeat ------------------------------------------------------------------------------

class _Heartbeat:
    """One daemon thread per process that touches every held lock; started on first need."""

    def __init__(self):
        self.locks: set[KeyLock] = set()
        self.wakeup = threading.Condition()
        self.thread: threading.Thread | None = None

    def add(self, lock: KeyLock) -> None:
        with self.wakeup:
            self.locks.add(lock)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="gpunb-cache-heartbeat",
                                               daemon=True)
                self.thread.start()
            self.wakeup.notify()

    def remove(self, lock: KeyLock) -> None:
        with self.wakeup:
            self.locks.discard(lock)

    def held(self) -> list[KeyLock]:
        with self.wakeup:
            return list(self.locks)

    def _run(self) -> None:
        while True:
            with self.wakeup:
                while not self.locks:
                    self.wakeup.wait()
                self.wakeup.wait(min(lock.interval for lock in self.locks))
                locks = list(self.locks)
            for lock in locks:
                lock.touch()


_heartbeat = _Heartbeat()


def held_locks() -> list[KeyLock]:
    """The locks this process holds (for tests and diagnostics)."""
    return _heartbeat.held()


def _forget_in_child() -> None:
    """A forked child holds none of its parent's locks and has no heartbeat thread."""
    global _heartbeat
    _heartbeat = _Heartbeat()


def _release_all() -> None:
    for lock in _heartbeat.held():
        with contextlib.suppress(OSError):
            lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_release_all)
