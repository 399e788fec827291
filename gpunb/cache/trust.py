"""The disk cache's trust model: which directories and files gpunb reads cached code from.

A CPU-target entry is a host object file that gpunb loads and runs, a CUDA entry a cubin the GPU
runs: whoever can write an entry can run code in every process that loads it. So:

- **private** (the default): the cache directory, and every file read from it, must be owned by
  this user (or root) and writable by neither group nor others. An untrusted directory is not read
  at all (its toolchain stamp included) and nothing is written to it.
- **shared** (`GPUNB_CACHE_SHARED=1`, `gpunb.cache.configure(shared=True)`): any owner and group
  write are accepted, but every entry must carry a MAC made with the team's key (auth.py), so a
  member without the key cannot plant code; a private file (the toolchain stamp) keeps the
  private rules.

Either way only regular files are opened: `lstat` first (a FIFO, device, socket, directory or
symbolic link is never opened), then `O_NOFOLLOW | O_NONBLOCK` and `fstat` of what was opened (a
file swapped in between is refused too), and no file is read past a size limit.
"""

from __future__ import annotations

import errno
import json
import os
import stat

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CHECKS_OWNERS = hasattr(os, "geteuid")
SHARED_HOWTO = ("a cache shared on purpose needs GPUNB_CACHE_SHARED=1 and a key "
                "(README: \"Cache security\")")


class Untrusted(Exception):
    """A directory or file the trust model refuses. `why` is short (an event's subject: "owned
    by uid 1001", "a FIFO"), `fix` says what to do; str() is the whole sentence."""

    def __init__(self, path: str, why: str, fix: str):
        super().__init__(f"{path}: {why}. Fix: {fix}")
        self.path = path
        self.why = why
        self.fix = fix


class NotAFile(Untrusted):
    """Something other than a regular file where an entry's file should be (a directory left by
    a tool, a FIFO, a device, a symbolic link)."""

    def __init__(self, path: str, kind: str):
        super().__init__(path, f"a {kind}, not a regular file",
                         f"remove it (rm -r {path}); gpunb reads only regular files it wrote")
        self.kind = kind


class TooLarge(Untrusted):
    """A file over the size limit it was read with (`size`: as far as it was seen)."""

    def __init__(self, path: str, size: int, limit: int):
        super().__init__(path, f"{size} bytes, over the {limit}-byte limit of a cache file",
                         f"remove it (rm {path}); raise GPUNB_CACHE_MAX_BYTES if entries are "
                         "this large")
        self.size = size
        self.limit = limit


def parse_json(raw: bytes | str):
    """json.loads of what was read from the cache directory; ValueError for anything that is no
    JSON Python can hold: malformed, not UTF-8, or nested deeper than the recursion limit
    (which json.loads raises as RecursionError - a file of "[[[[" is enough)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def kind_of(mode: int) -> str:
    """'regular file', 'directory', 'symbolic link', 'FIFO', 'device', 'socket'."""
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def _owner_problem(st: os.stat_result) -> str | None:
    """Why a file or directory with this status may hold what someone else wrote, or None."""
    if not _CHECKS_OWNERS:
        return None  # Windows: ACLs, not mode bits; the user's profile directory is private
    if st.st_uid not in (os.geteuid(), 0):
        return f"owned by uid {st.st_uid}, not by you (uid {os.geteuid()}) or root"
    if st.st_mode & 0o002:
        return f"writable by everyone (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_mode & 0o020:
        return f"writable by its group (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def directory_problem(path: str, shared: bool) -> Untrusted | None:
    """Why entries must not be read from the directory `path`, None when they may (an absent
    directory is no problem: there is nothing to read). A symbolic link to the directory is
    followed: the directory it names is judged."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # absent (or under a file): nothing to read; creating it will fail
    except OSError as exc:
        return Untrusted(path, f"cannot be examined ({exc.strerror or exc})",
                         "set GPUNB_CACHE_DIR to a directory of your own")
    if not stat.S_ISDIR(st.st_mode):
        return Untrusted(path, f"a {kind_of(st.st_mode)}, not a directory",
                         "set GPUNB_CACHE_DIR to a directory of your own")
    if shared:
        return None  # any owner, any write bits: every entry is authenticated instead
    problem = _owner_problem(st)
    if problem is None:
        return None
    if problem.startswith("owned"):
        fix = f"set GPUNB_CACHE_DIR to a directory of your own; {SHARED_HOWTO}"
    else:
        fix = (f"chmod go-w {path}, or set GPUNB_CACHE_DIR to a directory of your own; "
               f"{SHARED_HOWTO}")
    return Untrusted(path, f"the cache directory is {problem}", fix)


def read_file(path: str, limit: int, private: bool) -> bytes | None:
    """The bytes of the regular file `path`, None if there is none.

    Raises Untrusted for anything else at the path, TooLarge (an Untrusted) for a file over
    `limit` bytes (never read past it), and - with `private`
    - for a file that is not owned by this user (or root) or that group or others may write.
    Other OSErrors (EIO, ESTALE, a directory that vanished) propagate: they say nothing about
    who wrote the file.
    """
    try:
        seen = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(seen.st_mode):
        raise NotAFile(path, kind_of(seen.st_mode))  # never opened: a FIFO would block
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):  # swapped for a link, socket
            raise NotAFile(path, "symbolic link" if exc.errno != errno.ENXIO else "socket") \
                from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            raise NotAFile(path, kind_of(st.st_mode) if not stat.S_ISREG(st.st_mode)
                           else "file swapped while it was opened")
        if private:
            problem = _owner_problem(st)
            if problem is not None:
                raise Untrusted(path, problem,
                                f"remove it (rm {path}): gpunb writes its own entries, and "
                                f"check who can write to {os.path.dirname(path)}")
        if st.st_size > limit:
            raise TooLarge(path, st.st_size, limit)
        return _read_at_most(fd, path, st.st_size, limit)
    finally:
        os.close(fd)


def _read_at_most(fd: int, path: str, size: int, limit: int) -> bytes:
    chunks = []
    total = 0
    want = size + 1  # one more than fstat said: a file still growing is read to its end
    while True:
        chunk = os.read(fd, max(want - total, 1 << 16))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise TooLarge(path, total, limit)

