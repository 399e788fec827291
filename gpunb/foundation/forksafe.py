"""Locks that a forked child gets back unlocked.

A child forked while another thread held a lock (multiprocessing's default start method on
Linux, a Dask or joblib pool forked while a thread compiles) has the lock held by a thread it
does not have: its first use waited forever. Locks made here are reset in the child (as
CPython's own threading and logging locks are); what they guarded is left as the other thread
left it, so they are used for work a child may simply redo (a compile, a lookup).
"""

from __future__ import annotations

import os
import threading
import weakref

_locks: weakref.WeakSet = weakref.WeakSet()


def lock(reentrant: bool = False):
    """A new threading.Lock (RLock with `reentrant`) that is unlocked again in a forked child."""
    made = threading.RLock() if reentrant else threading.Lock()
    _locks.add(made)
    return made


def _reset_in_child() -> None:
    for made in list(_locks):
        made._at_fork_reinit()  # what threading and logging do for their own locks


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
