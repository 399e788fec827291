"""File operations in the cache directory: atomic writes, clearing an entry's path, leftovers.

- Every file is written to a temporary file named after its writer (writers.temp_prefix: host,
  machine, pid and start time) and `os.replace`d into place, so readers see the old file or the
  new one, and a writer that died is recognised from the name alone.
- Whatever stands where an entry's file should be (a directory left by a tool, a FIFO, a link) is
  removed before the entry is written, so one broken path costs one entry, not the disk tier.
- In a folder others may change (a shared cache's `by-name`), files are written through a
  descriptor of the folder opened without following a link (open_folder, atomic_write_at), so a
  symbolic link swapped in for it at any moment redirects nothing.
- Errors are sorted: a read-only or full filesystem, or no permission, is persistent (the cache
  goes on in memory); anything else (a directory removed under us, a stale NFS handle) costs the
  one operation.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys

from gpunb.cache import writers

# errors that mean the directory cannot take writes: later writes would fail the same way
_PERSISTENT = {errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM,
               getattr(errno, "EDQUOT", errno.ENOSPC)}
FOREIGN_TEMP_AGE_S = 600  # a temporary file of another host or gpunb version: left for this long


def is_persistent(exc: OSError) -> bool:
    """Whether `exc` says the directory cannot be written at all (not just this once)."""
    return exc.errno in _PERSISTENT


def atomic_write(path: str, data: bytes, mode: int | None = None) -> None:
    """Write to a temporary file in the same directory, then os.replace: readers see old or new.

    The temporary name starts with writers.temp_prefix() before mkstemp's random part (created
    O_EXCL, mode 0600): writers on several nodes of a shared filesystem never pick the same
    name (numba#7952), and a dead writer's file is known by its pid. `mode` widens the file's
    permissions (a shared cache's group read bit) before it appears under `path`."""
    folder = os.path.dirname(path)
    import tempfile  # writes only: a disk hit never pays for importing it

    fd, tmp = tempfile.mkstemp(prefix=writers.temp_prefix(), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_FOLDER_FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))
_NEW_FILE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                   | getattr(os, "O_CLOEXEC", 0))


def open_folder(path: str) -> int:
    """A descriptor of the directory at `path` itself: OSError (ELOOP, ENOTDIR) when a
    symbolic link or anything but a directory is there."""
    return os.open(path, _FOLDER_FLAGS)


def atomic_write_at(folder_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """atomic_write of `name` in the directory `folder_fd` (open_folder): the temporary file is
    made, and renamed over `name`, relative to the descriptor, so every step stays in that
    directory whatever is done to its path meanwhile. A directory at `name` is removed first."""
    import shutil  # writes only: a disk hit never pays for importing it

    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode) \
                and sys.version_info >= (3, 11):  # rmtree's dir_fd; on 3.10 os.replace fails
            shutil.rmtree(name, dir_fd=folder_fd)  # os.replace cannot put a file over it
    tmp = f"{writers.temp_prefix()}{os.urandom(6).hex()}"
    fd = os.open(tmp, _NEW_FILE_FLAGS, 0o600, dir_fd=folder_fd)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder_fd)
        raise


def clear_path(path: str) -> None:
    """Remove whatever is at `path` (a file, a symbolic link, a FIFO, a directory tree);
    nothing there is fine. OSError when it cannot be removed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        import shutil  # only here: a disk hit never pays for importing it

        shutil.rmtree(path)  # never follows symbolic links inside the tree
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def leftover_to_remove(name: str, mtime: float, now: float) -> bool:
    """Whether the temporary file `name` was abandoned: its writer ran on this machine and is
    gone (at once, whatever its age), or - a writer that cannot be checked (another host) - it
    is older than FOREIGN_TEMP_AGE_S."""
    state = writers.temp_writer_state(name)
    if state != "unknown":
        return state == "dead"
    return now - mtime > FOREIGN_TEMP_AGE_S
