"""Stopping a runaway CPU-target launch: SIGINT in a script, the watchdog, nothing left behind.

Each SIGINT case runs in a child process (a real signal, as Ctrl-C sends it): the child launches
a kernel that never ends, the test signals it once the launch runs, and the child reports how it
ended, then launches again. Times are checked against the 1 s the issue allows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))

CHILD = textwrap.dedent('''
    import os, sys, time, threading
    import numpy as np
    import gpunb
    from gpunb import cuda
    gpunb.set_target("cpu")

    def tasks():
        return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0

    @cuda.jit(cpu_mode=MODE)
    def spin(o):
        while o[0] >= 0:
            o[1] += 1

    @cuda.jit(cpu_mode=MODE)
    def spin_barrier(o):
        while o[0] >= 0:
            o[1] += 1
            cuda.syncthreads()

    @cuda.jit
    def count_far(o):
        # a counted loop that would take days (o[3] = 10**15): stopped between chunks
        i = cuda.grid(1)
        for k in range(o[3]):
            o[i % 3] += k & 1

    @cuda.jit(device=True)
    def deep_loop(o):
        while o[0] >= 0:
            o[2] += 1

    @cuda.jit
    def spin_in_device_function(o):
        deep_loop(o)

    @cuda.jit
    def add_one(o):
        i = cuda.grid(1)
        if i < o.size:
            o[i] += 1

    kernel = {"spin": spin, "barrier": spin_barrier, "counted": count_far,
              "device": spin_in_device_function}[KERNEL]
    kernel[1, 32](np.array([-1, 0, 0, 1], np.int64))  # compiled (and run) beforehand
    big = cuda.to_device(np.zeros(1 << 16))
    add_one[256, 256](big)  # the native pool's workers started
    before, python_threads = tasks(), threading.active_count()
    o = cuda.to_device(np.array([0, 0, 0, 10 ** 15], np.int64))
    print("launching", flush=True)
    try:
        kernel[GRID, 32](o)
        print("finished?!", flush=True)
    except KeyboardInterrupt as exc:
        print("stopped at", repr(time.monotonic()), flush=True)
        print("message:", exc, flush=True)
    x = np.zeros(1000)
    add_one[4, 256](x)
    assert (x == 1).all(), x
    add_one[256, 256](big)  # on the native pool again
    assert (big.copy_to_host() == 2).all()
    print("after", tasks() - before, threading.active_count() - python_threads, flush=True)
''')


def _interrupt_child(kernel: str, mode: str = "auto", grid: int = 1, wait: float = 0.5):
    code = CHILD.replace("MODE", repr(mode)).replace("KERNEL", repr(kernel)).replace(
        "GRID", str(grid))
    env = dict(os.environ, PYTHONPATH=REPO, GPUNB_NOTICES="0")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()
        assert line.strip() == "launching", line + child.stderr.read()
        time.sleep(wait)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, out + err
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)
    stopped = float(lines["stopped"].split()[-1])
    return stopped - sent, lines["message:"], lines["after"].split()


@pytest.mark.parametrize(("kernel", "mode", "grid"), [
    ("spin", "auto", 1),  # work-group loops, on the launching thread
    ("spin", "coroutine", 1),  # each GPU thread a coroutine
    ("spin", "auto", 2048),  # 65536 threads: the native pool's workers run it too
    ("barrier", "coroutine", 512),  # a barrier in the loop: threads suspend and resume
    ("counted", "auto", 1),  # a for loop of 10**15 iterations
    ("device", "auto", 1),  # the loop in a device function
])
def test_sigint_stops_a_runaway_launch_within_a_second(kernel, mode, grid):
    seconds, message, (tasks, threads) = _interrupt_child(kernel, mode, grid)
    assert seconds < 1.0
    name = {"spin": "spin", "barrier": "spin_barrier", "counted": "count_far",
            "device": "spin_in_device_function"}[kernel]
    assert message.startswith(f"kernel '{name}' interrupted"), message
    assert "abandoned" in message and "undefined" in message
    # nothing left behind: the same host threads (pool workers, monitor) as before the launch
    assert (tasks, threads) == ("0", "0")


def test_sigint_soon_after_a_launch_starts():
    seconds, message, _ = _interrupt_child("spin", "auto", 1, wait=0.05)
    assert seconds < 1.0 and message.startswith("kernel 'spin' interrupted")


def test_sigint_outside_a_launch_still_raises_keyboard_interrupt():
    code = textwrap.dedent('''
        import time, numpy as np, gpunb
        from gpunb import cuda
        gpunb.set_target("cpu")
        @cuda.jit
        def add_one(o):
            o[cuda.grid(1)] += 1
        add_one[1, 4](np.zeros(4))  # the guard's SIGINT handler is in place now
        print("ready", flush=True)
        try:
            time.sleep(30)
        except KeyboardInterrupt as exc:
            print("python", repr(str(exc)), flush=True)
    ''')
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=REPO))
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert out.strip() == "python ''"  # Python's own KeyboardInterrupt, untouched


def test_a_program_that_ignores_sigint_keeps_ignoring_it():
    code = textwrap.dedent('''
        import signal, numpy as np, gpunb
        from gpunb import cuda
        gpunb.set_target("cpu")
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        @cuda.jit
        def count(o, n):
            for k in range(n):
                o[0] += 1
        o = np.zeros(1, np.int64)
        print("ready", flush=True)
        count[1, 1](o, 300_000_000)
        print("done", o[0], flush=True)
    ''')
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=REPO))
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=120)
    assert out.strip() == "done 300000000"


# ---- the watchdog ---------------------------------------------------------------------------

@pytest.fixture
def cpu():
    import gpunb

    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _spin_kernels():
    from gpunb import cuda

    @cuda.jit
    def spin(o):
        while o[0] >= 0:
            o[1] += 1

    @cuda.jit(cpu_mode="coroutine")
    def spin_coroutine(o):
        while o[0] >= 0:
            o[1] += 1
            cuda.syncthreads()

    @cuda.jit
    def add_one(o):
        i = cuda.grid(1)
        if i < o.size:
            o[i] += 1

    return spin, spin_coroutine, add_one


def test_watchdog_turns_a_hang_into_an_error_and_the_next_launch_works(cpu):
    import gpunb
    from gpunb.foundation import config

    spin, spin_coroutine, add_one = _spin_kernels()
    for kernel, grid in ((spin, 1), (spin, 1024), (spin_coroutine, 64)):
        kernel[1, 1](np.array([-1, 0], np.int64))  # compiled outside the limit
        add_one[256, 256](np.zeros(1 << 16))  # the pool's workers started
        before = _threads()
        start = time.monotonic()
        with config.launch_timeout_for(0.5), pytest.raises(gpunb.LaunchTimeoutError) as info:
            kernel[grid, 32](np.zeros(2, np.int64))
        took = time.monotonic() - start
        assert 0.45 < took < 1.5, took
        message = str(info.value)
        assert f"kernel '{kernel.__name__}' ran longer than 0.5 s" in message
        assert "abandoned" in message and "GPUNB_LAUNCH_TIMEOUT" in message
        assert isinstance(info.value, TimeoutError)
        x = np.zeros(300)
        add_one[2, 256](x)
        assert (x == 1).all()
        assert _threads() == before


def _threads() -> tuple:
    """Python threads (bar the cache's compile-lock heartbeat, which comes and goes with
    compiles) and the process's host threads."""
    names = sorted(t.name for t in threading.enumerate() if t.name != "gpunb-cache-heartbeat")
    tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0
    heartbeat = any(t.name == "gpunb-cache-heartbeat" for t in threading.enumerate())
    return names, tasks - heartbeat


def test_watchdog_reads_gpunb_launch_timeout(cpu, monkeypatch):
    import gpunb

    spin, _, _ = _spin_kernels()
    spin[1, 1](np.array([-1, 0], np.int64))
    monkeypatch.setenv("GPUNB_LAUNCH_TIMEOUT", "0.3")
    with pytest.raises(gpunb.LaunchTimeoutError, match="0.3 s"):
        spin[1, 32](np.zeros(2, np.int64))


def test_no_limit_lets_a_long_launch_finish(cpu, monkeypatch):
    from gpunb import cuda
    from gpunb.foundation import config

    @cuda.jit
    def count(o, n):
        for _ in range(n):
            o[0] += 1

    monkeypatch.setenv("GPUNB_LAUNCH_TIMEOUT", "0.2")
    o = np.zeros(1, np.int64)
    with config.launch_timeout_for(0):  # 0: no limit here, whatever the environment says
        count[1, 1](o, 200_000_000)
    assert o[0] == 200_000_000


def test_bad_timeouts_are_refused(monkeypatch):
    from gpunb.foundation import config

    with pytest.raises(ValueError):
        config.launch_timeout_for(-1)
    monkeypatch.setenv("GPUNB_LAUNCH_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="GPUNB_LAUNCH_TIMEOUT"):
        config.launch_timeout()
    monkeypatch.setenv("GPUNB_LAUNCH_TIMEOUT", "0")
    assert config.launch_timeout() is None


def test_stopping_points_compile_out_with_gpunb_cpu_interrupt_0(cpu, monkeypatch):
    """The benchmarks' A/B switch: same results, a kernel of its own in the cache."""
    from gpunb import cuda

    def body(o, n):
        for k in range(n):
            o[k] = k * 2
        j = 0
        while j < n:
            o[j] += 1
            j += 1

    with_points = cuda.jit(body)
    monkeypatch.setenv("GPUNB_CPU_INTERRUPT", "0")
    without = cuda.jit(body)
    a, b = np.zeros(10000, np.int64), np.zeros(10000, np.int64)
    without[1, 1](b, 10000)
    monkeypatch.delenv("GPUNB_CPU_INTERRUPT")
    with_points[1, 1](a, 10000)
    assert (a == b).all() and a[-1] == 2 * 9999 + 1

    def ir(dispatcher) -> str:
        found = dispatcher.inspect_host_llvm()  # the CPU target's host IR
        return "\n".join(found.values()) if isinstance(found, dict) else found

    assert "load atomic" in ir(with_points) and "gpunb_stop" in ir(with_points)
    assert "gpunb_stop" not in ir(without)


# ---- loops around the stopping points keep Python's meaning ---------------------------------

def _loops(o, n, stop_at):
    # a plain while loop (two copies: the first 4096 iterations without polls), with continue,
    # break and else
    k = 0
    total = 0
    while k < n:
        k += 1
        if k % 3 == 0:
            continue
        if k == stop_at:
            break
        total += k
    else:
        total += 1000000
    o[0] = total
    # a counted loop in chunks of 4096, stepping down, with break and else
    s = 0
    for j in range(n, 0, -2):
        if j == stop_at:
            break
        s += j
    else:
        s -= 1
    o[1] = s
    # a while loop whose condition calls something: one poll per iteration
    m = 0
    while min(m, n) < n:
        m += 2
    o[2] = m


@pytest.mark.parametrize("mode", ["auto", "coroutine"])
@pytest.mark.parametrize(("n", "stop_at"), [(10, 7), (10000, 9001), (10000, -1), (4096, 4096),
                                            (4097, -1), (0, -1)])
def test_chunked_loops_give_pythons_answers(cpu, mode, n, stop_at):
    from gpunb import cuda

    kernel = cuda.jit(cpu_mode=mode)(_loops)
    o = np.zeros(3, np.int64)
    kernel[1, 1](o, n, stop_at)
    expected = np.zeros(3, np.int64)
    _loops(expected, n, stop_at)
    assert o.tolist() == expected.tolist()
