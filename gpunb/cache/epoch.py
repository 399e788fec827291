"""The global epoch: a counter meaning "names may have been rebound or mutated since you looked".

Identity checks (see fingerprint.still_valid) catch rebinding; the epoch catches what identity
cannot see (an array mutated in place, a function's `__code__` swapped by autoreload). It is bumped
after every notebook cell, by `gpunb.cache.invalidate()`, and when the content of a tracked module
file changes. Nothing is installed at import: module files are re-checked, by (size, mtime_ns) as a
trigger and content as the decision, when a fingerprint is recomputed in a new epoch.
"""

from __future__ import annotations

import os

from gpunb.cache.encode import blake2b
from gpunb.foundation import forksafe, loaded_sources
from gpunb.foundation.user_warnings import StaleSourceWarning  # noqa: F401 - re-exported

# A dict, not a global int, so that a watch entry (_state.get, "epoch", <int object>) is checked by
# the same `get(name) is obj` loop as every global: a bump stores a new int object, so the identity
# check fails exactly when the epoch moved on (values only grow, so no old object ever returns).
_state: dict = {"epoch": 0}
_lock = forksafe.lock()  # (a child forked while a thread held it: free)

# path -> (size, mtime_ns, content digest) as first seen; content digest decides, stat triggers.
_files: dict[str, tuple[int, int, str]] = {}
_changed_files: dict[str, str] = {}  # path -> the new content digest seen on disk
_checked_at: list = [None]  # the epoch object at the last check_module_files()


def current() -> int:
    """The current epoch number."""
    return _state["epoch"]


def bump() -> int:
    """Start a new epoch (every kernel re-checks its dependencies on its next launch)."""
    with _lock:
        _state["epoch"] = _state["epoch"] + 1
        return _state["epoch"]


def watch_entry() -> tuple:
    """The watch-list entry that stays valid while the epoch does not change."""
    return (_state.get, "epoch", _state["epoch"])


def is_watch_entry(entry: tuple) -> bool:
    """Whether a watch-list entry is the epoch's own (see watch_entry)."""
    get, name, _ = entry
    return name == "epoch" and getattr(get, "__self__", None) is _state


def _digest_file(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return blake2b(f.read(), digest_size=16).hexdigest()
    except OSError:
        return None


def track_module_files(paths) -> None:
    """Remember (size, mtime_ns, content digest) of module files that GPU functions came from:
    of the text kept when the module ran (foundation/loaded_sources.py), else of the file now."""
    for path in paths:
        if path in _files:
            continue
        kept = loaded_sources.loaded_text_of(path)
        if kept is not None:
            _files[path] = kept.stamp()
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        digest = _digest_file(path)
        if digest is not None:
            _files[path] = (st.st_size, st.st_mtime_ns, digest)


def check_module_files() -> tuple[str, ...]:
    """Files whose content changed since first tracked; bumps the epoch when one newly changed.

    Runs at most once per epoch (the caller's cost is one `os.stat` per tracked file); a file whose
    (size, mtime_ns) moved is re-hashed, and only a different content counts as a change (a `touch`
    or a save without edits changes nothing). A change means the source on disk no longer matches
    the imported module: the running code stays the imported one until the module is reloaded, so
    a one-time StaleSourceWarning says so.
    """
    marker = _state["epoch"]
    if _checked_at[0] is marker:
        return tuple(_changed_files)
    _checked_at[0] = marker
    newly = []
    for path, (size, mtime_ns, digest) in list(_files.items()):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_size, st.st_mtime_ns) == (size, mtime_ns):
            continue
        content = _digest_file(path)
        if content is None:
            continue
        if content == digest:
            _files[path] = (st.st_size, st.st_mtime_ns, digest)  # touched, not edited
            _changed_files.pop(path, None)
            continue
        kept = loaded_sources.loaded_text_of(path)
        if kept is not None and kept.digest == content:
            # the module ran again from this text (importlib.reload, %autoreload) before any of
            # its new functions was fingerprinted: the new baseline, not an edit to warn about
            _files[path] = kept.stamp()
            _changed_files.pop(path, None)
            newly.append(None)  # kernels re-check what they read: the module's names are new
            continue
        _files[path] = (st.st_size, st.st_mtime_ns, digest)
        if _changed_files.get(path) != content:
            _changed_files[path] = content
            newly.append(path)
    if newly:
        for path in newly:
            if path is not None:
                _warn_changed(path, _changed_files[path])
        bump()
    return tuple(_changed_files)


def _warn_changed(path: str, digest: str) -> None:
    kept = loaded_sources.loaded_text_of(path)
    if kept is not None:  # the same once-only warning the frontend gives for this content
        loaded_sources.warn_stale(kept, "edited", digest)
        return
    from gpunb.foundation.user_warnings import warn_user

    warn_user(f"{path} changed on disk after it was imported; GPU functions keep the imported "
              "code until the module is reloaded (importlib.reload)", StaleSourceWarning,
              once=("stale", path, digest))


def changed_module_files() -> tuple[str, ...]:
    """Files reported by the last check_module_files() as edited since import."""
    return tuple(_changed_files)


def forget_module_file(path: str) -> None:
    """Re-baseline a file (after a reload its current content is the imported one)."""
    _files.pop(path, None)
    _changed_files.pop(path, None)
