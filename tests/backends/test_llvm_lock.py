"""The process-wide LLVM lock (gpunb/backends/llvm_lock.py) and fork: a child forked while
another thread holds the lock (compiles a kernel) must be able to compile. Runs in a fresh
process: forking pytest's own process with its threads is not what is tested."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from fork_child_wait import WAIT_FOR_CHILD

CHILD = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    import gpunb
    from gpunb import cuda
    from gpunb.backends.llvm_lock import LLVM_LOCK

    gpunb.set_target("cpu")
    held = threading.Event()

    def compiling():  # what a thread compiling a kernel does with the lock, for long enough
        with LLVM_LOCK:
            held.set()
            time.sleep(0.5)

    thread = threading.Thread(target=compiling)
    thread.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        @cuda.jit
        def add_one(out):
            out[cuda.threadIdx.x] += 1

        out = np.zeros(4)
        add_one[1, 4](out)
        os._exit(0 if out.tolist() == [1.0] * 4 else 1)
    thread.join()
""") + WAIT_FOR_CHILD


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_child_forked_while_another_thread_compiles_can_compile():
    """multiprocessing's fork (Linux's default start method), a Dask or joblib pool forked
    while a thread compiles (or the first compile's warm-up thread loads LLVM): the child got
    the lock held by a thread it does not have, and its first compile waited forever."""
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          env=dict(os.environ, GPUNB_CACHE="0"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "child exit 0"
