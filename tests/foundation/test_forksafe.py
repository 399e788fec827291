"""foundation/forksafe.py: a lock another thread holds when the process forks is unlocked in the
child (a plain threading lock stays held there by a thread the child does not have)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import os, threading, time
    from gpunb.foundation import forksafe

    plain, safe, safe_r = threading.Lock(), forksafe.lock(), forksafe.lock(reentrant=True)
    held, done = threading.Event(), threading.Event()

    def hold():
        with plain, safe, safe_r:
            held.set()
            done.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        got = [lock.acquire(timeout=1) for lock in (plain, safe, safe_r)]
        os._exit(sum(bit << k for k, bit in enumerate(got)))
    done.set()
    thread.join()
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_lock_held_by_another_thread_is_free_in_a_forked_child():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(0b110)  # the plain lock stays held: forksafe's do not
