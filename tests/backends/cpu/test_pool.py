"""The CPU target's native thread pool (backends/cpu/pool.py) and the runner's block claiming.

Every block of a launch runs exactly once whatever the number of host threads, errors found on
a pool thread are reported like those of the launching thread, launches from several Python
threads at once (the pool then serves one of them) and from a forked child all finish correctly.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.backends.cpu import pool as native_pool
from gpunb.backends.cpu.executor import KernelIndexError


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@cuda.jit
def count_blocks(counts, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(counts, cuda.blockIdx.x, 1)
    if i < out.size:
        out[i] = i * 2 + 1


@cuda.jit
def index_out_of_range(out, bad_block):
    i = cuda.grid(1)
    j = i
    if cuda.blockIdx.x == bad_block and cuda.threadIdx.x == 3:
        j = out.size + 5
    out[j] = 1.0


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("blocks", [1, 17, 300, 4099])
def test_every_block_runs_once(monkeypatch, threads, blocks):
    monkeypatch.setenv("GPUNB_CPU_THREADS", str(threads))
    counts = np.zeros(blocks, np.int32)
    n = blocks * 64 - 13
    out = np.zeros(n, np.int64)
    count_blocks[blocks, 64](counts, out)
    np.testing.assert_array_equal(counts, np.ones(blocks, np.int32))
    np.testing.assert_array_equal(out, np.arange(n) * 2 + 1)


@pytest.mark.parametrize("threads", [2, 5])
def test_index_error_on_a_pool_thread_names_the_thread(monkeypatch, threads):
    monkeypatch.setenv("GPUNB_CPU_THREADS", str(threads))
    blocks = 400  # 400 x 64 threads: the pool takes the launch
    out = np.zeros(blocks * 64, np.float32)
    with pytest.raises(KernelIndexError) as err:
        index_out_of_range[blocks, 64](out, 377)
    assert "(thread (3, 0, 0), block (377, 0, 0))" in str(err.value)
    assert f"index {blocks * 64 + 5}" in str(err.value)
    index_out_of_range[blocks, 64](out, -1)  # the pool is usable after a failed launch
    assert out.sum() == blocks * 64


def test_late_workers_never_touch_a_finished_launch(monkeypatch):
    """More pool threads than cores and launches short enough that the calling thread often
    runs out of blocks before every worker has woken: it closes the job, and a worker that wakes
    after that must skip it (the launch's memory is gone once the call returns). Every block
    still runs exactly once, launch after launch, and after each launch the pool is closed with
    no worker inside it."""
    import ctypes

    monkeypatch.setenv("GPUNB_CPU_THREADS", "12")
    blocks = 70  # 70 x 64 threads: more than the small-launch limit, so the pool takes them
    for _ in range(150):
        counts = np.zeros(blocks, np.int32)
        out = np.zeros(blocks * 64, np.int64)
        count_blocks[blocks, 64](counts, out)
        np.testing.assert_array_equal(counts, np.ones(blocks, np.int32))
        np.testing.assert_array_equal(out, np.arange(out.size) * 2 + 1)
        base = native_pool.host_pool().address
        assert ctypes.c_int32.from_address(base + native_pool.OPEN).value == 0
        assert ctypes.c_int32.from_address(base + native_pool.PENDING).value == 0


def test_launches_from_several_python_threads(monkeypatch):
    monkeypatch.setenv("GPUNB_CPU_THREADS", "3")
    blocks, failures = 257, []

    def work(seed: int) -> None:
        try:
            for _ in range(15):
                counts = np.zeros(blocks, np.int32)
                out = np.zeros(blocks * 64, np.int64)
                count_blocks[blocks, 64](counts, out)
                if not (counts == 1).all() or not (out == np.arange(out.size) * 2 + 1).all():
                    failures.append(seed)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []


def test_pool_grows_when_more_threads_are_asked_for(monkeypatch):
    blocks = 600
    for threads in (2, 4):
        monkeypatch.setenv("GPUNB_CPU_THREADS", str(threads))
        counts = np.zeros(blocks, np.int32)
        count_blocks[blocks, 64](counts, np.zeros(blocks * 64, np.int64))
        assert (counts == 1).all()
        assert len(native_pool.host_pool().workers) >= threads - 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_gets_a_pool_of_its_own(monkeypatch):
    monkeypatch.setenv("GPUNB_CPU_THREADS", "3")
    blocks = 500
    count_blocks[blocks, 64](np.zeros(blocks, np.int32), np.zeros(blocks * 64, np.int64))
    parent = native_pool.host_pool()
    pid = os.fork()
    if pid == 0:  # the child: its copy of the parent's pool has no threads
        code = 1
        try:
            counts = np.zeros(blocks, np.int32)
            count_blocks[blocks, 64](counts, np.zeros(blocks * 64, np.int64))
            code = 0 if (counts == 1).all() and native_pool.host_pool() is not parent else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert native_pool.host_pool() is parent


def test_shutdown_ends_the_workers_before_exit():
    """At exit the workers leave before the interpreter frees their code and the pool's memory
    (atexit); checked in a child process so this process keeps its pool."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import ctypes, numpy as np, gpunb
        from gpunb import cuda
        from gpunb.backends.cpu import pool as P
        gpunb.set_target("cpu")

        @cuda.jit
        def fill(out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = i

        out = np.zeros(1 << 16, np.float32)
        fill[256, 256](out)
        pool = P.host_pool()
        live = ctypes.c_int32.from_address(pool.address + P.LIVE)
        assert len(pool.workers) == 3 and live.value == 3, (len(pool.workers), live.value)
        pool.shutdown()
        assert live.value == 0, live.value
        print("ok", out[-1])
    """)
    env = {**os.environ, "GPUNB_CPU_THREADS": "4"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok 65535.0"
