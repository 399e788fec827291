"""One process-wide lock around work done in LLVM (compiling, loading host code into MCJIT).

llvmlite calls LLVM through ctypes, which releases the GIL, and parses every module into LLVM's
one global context, which is not thread-safe; numba holds a global compiler lock for the same
reason. Launches never take it: only compiles and loads of new code do.
"""

from __future__ import annotations

import threading

LLVM_LOCK = threading.RLock()
