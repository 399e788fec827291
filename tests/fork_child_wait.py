"""The parent's half of the fork tests' child scripts (tests/cache/test_fork_compiling.py,
tests/backends/test_llvm_lock.py): after `pid = os.fork()` and its own thread's join, wait up
to 120 s for the child and print "child exit N", or kill it and print "child hung" - a child
that deadlocks on a lock inherited from another thread must fail the test, not hang it."""

from __future__ import annotations

import textwrap

WAIT_FOR_CHILD = textwrap.dedent("""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print("child exit", os.waitstatus_to_exitcode(status))
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("child hung")
""")
