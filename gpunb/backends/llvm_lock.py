"""One process-wide lock around work done in LLVM (compiling, loading host code into MCJIT).

llvmlite calls LLVM through ctypes, which releases the GIL, and parses every module into LLVM's
one global context, which is not thread-safe; numba holds a global compiler lock for the same
reason. Launches never take it: only compiles and loads of new code do.

A fork waits for the lock (as the logging module's lock does): a child forked while another
thread compiled (multiprocessing's default start method on Linux, a Dask or joblib pool) got the
lock held by a thread it does not have, and its first compile waited forever, and LLVM would be
copied in the middle of the work.
"""

from __future__ import annotations

import os
import threading

LLVM_LOCK = threading.RLock()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=LLVM_LOCK.acquire, after_in_parent=LLVM_LOCK.release,
                        after_in_child=LLVM_LOCK.release)
