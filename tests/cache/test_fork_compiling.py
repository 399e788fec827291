"""A process forked while one of its threads compiles a kernel (multiprocessing's default
start method on Linux, a Dask or joblib pool): the child launches the same kernel. Each case
runs in a fresh process: forking pytest's own process with its threads is not what is tested."""

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
    from gpunb.backends import pipeline

    gpunb.set_target("cpu")
    compiling = threading.Event()
    real_compile = pipeline.compile

    def slow_compile(*args, **kwargs):  # a kernel whose compile takes a second
        compiling.set()
        time.sleep(1.0)
        return real_compile(*args, **kwargs)

    pipeline.compile = slow_compile

    @cuda.jit
    def add_one(out):
        out[cuda.threadIdx.x] += 1

    thread = threading.Thread(target=lambda: add_one[1, 4](np.zeros(4)))
    thread.start()
    compiling.wait()
    pid = os.fork()
    if pid == 0:
        out = np.zeros(4)
        add_one[1, 4](out)
        print("child", out.tolist(), add_one.cache_info()[-1]["event"].outcome, flush=True)
        os._exit(0)
    thread.join()
""") + WAIT_FOR_CHILD


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
@pytest.mark.parametrize("cache", ["1", "0"])
def test_a_child_forked_while_a_thread_compiles_the_kernel_launches_it(tmp_path, cache):
    """The child inherited the dispatcher's lock (and the cache's claim on the key) held by the
    compiling thread, which it does not have: its launch waited forever (the claim alone for
    GPUNB_CACHE_WAIT_SECONDS, 300 s). Now it compiles the kernel, or with the cache on takes
    the entry its parent stores."""
    env = dict(os.environ, GPUNB_CACHE=cache, GPUNB_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "child exit 0", proc.stdout + proc.stderr
    assert lines[0].startswith("child [1.0, 1.0, 1.0, 1.0]")
    # the parent's compile is still waited for through its lock file, once
    assert "hit (disk, waited" in lines[0] if cache == "1" else "miss (disabled)" in lines[0]


STORING = textwrap.dedent("""
    import os, threading, time
    import numpy as np
    import gpunb
    from gpunb import cuda, cache

    gpunb.set_target("cpu")
    disk = cache.default_cache().disk
    disk._ensure_dir()
    held = threading.Event()

    def storing():  # a thread in the middle of a store: it holds the writers' lock a while
        with disk._locked():
            held.set()
            time.sleep(1.0)

    thread = threading.Thread(target=storing)
    thread.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        @cuda.jit
        def add_one(out):
            out[cuda.threadIdx.x] += 1

        out = np.zeros(4)
        add_one[1, 4](out)
        print("child", out.tolist(), add_one.cache_info()[-1]["event"].outcome, flush=True)
        os._exit(0)
    thread.join()
""") + WAIT_FOR_CHILD


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_child_forked_while_a_thread_stores_an_entry_stores_its_own(tmp_path):
    """The writers' flock belongs to the open lock file, which the child shared and never
    closed: the child's first store waited forever for its own copy (and the parent's next
    store for the child to exit). A fork now waits for a store in progress to end."""
    env = dict(os.environ, GPUNB_CACHE="1", GPUNB_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", STORING], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines == ["child [1.0, 1.0, 1.0, 1.0] miss (new)", "child exit 0"], proc.stdout
