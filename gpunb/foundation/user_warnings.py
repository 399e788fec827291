"""Warnings that point at the user's line (the first frame outside gpunb), and their kinds.

`warnings.warn(..., stacklevel=N)` with a fixed N names whichever gpunb function happens to be N
frames up, and a disk-cache warning is raised many frames below the launch that caused it. Here
the stack is walked to the first frame whose module is not gpunb (nor importlib's machinery, for
a warning raised while a user's module imports), and the warning is attributed to that line.
"""

from __future__ import annotations

import sys
import warnings

_shown: set = set()  # once-keys of warnings already given in this process


class CacheDirWarning(UserWarning):
    """The cache directory cannot be used (or a cache setting is not usable as given); the cache
    goes on in memory, or with the default, as the message says."""


class UntrustedCacheWarning(CacheDirWarning):
    """A cache directory or entry that others could have written was not loaded: the message
    names the path, why, and the fix (README: "Cache security")."""


class StaleSourceWarning(UserWarning):
    """A module that GPU functions came from changed on disk after it was imported: its kernels
    compile from the text as imported until the module is reloaded (importlib.reload)."""


def _is_internal(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    if name == "gpunb" or name.startswith("gpunb."):
        return True
    return frame.f_code.co_filename.startswith("<frozen importlib")


def user_stacklevel() -> int:
    """The `stacklevel` that makes a `warnings.warn` in the caller of this function name the
    first frame outside gpunb (the outermost frame when there is none: a gpunb thread)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and _is_internal(frame):
        if frame.f_back is None:
            break
        frame = frame.f_back
        level += 1
    return level


def warn_user(message: str, category: type[Warning], once: object = None) -> bool:
    """Warn at the user's line; with `once`, only the first time that key is seen in this process.
    True when the warning was issued."""
    if once is not None:
        if once in _shown:
            return False
        _shown.add(once)
    warnings.warn(message, category, stacklevel=user_stacklevel())
    return True


def forget(once: object) -> None:
    """Allow the warning of `once` again (its cause was fixed, or a test starts over)."""
    _shown.discard(once)
