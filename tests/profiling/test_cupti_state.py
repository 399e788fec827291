"""The CUPTI timer's bookkeeping (profiling/timers.py _CuptiState) without a GPU: when kernel
activity is enabled and disabled, and which records a profile keeps. CUPTI itself is replaced by
a recorder of the calls gpunb makes to it (the real library is exercised by the gpu tests)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from gpunb.profiling import timers


class RecordingCupti:
    """The part of cupti-python's API that _CuptiState calls, logging each call."""

    ActivityKind = SimpleNamespace(CONCURRENT_KERNEL="concurrent_kernel", KERNEL="kernel")

    def __init__(self):
        self.calls: list = []
        self.completed = None
        self.toggled = threading.Event()

    def activity_register_callbacks(self, requested, completed):
        self.completed = completed

    def activity_enable(self, kind):
        self.calls.append(("enable", kind))
        self.toggled.set()

    def activity_disable(self, kind):
        self.calls.append(("disable", kind))
        self.toggled.set()

    def activity_enable_latency_timestamps(self, enable):
        self.latency = enable

    @staticmethod
    def get_timestamp():
        return time.monotonic_ns()


def _kernel(name: str, start: int):
    return SimpleNamespace(kind="concurrent_kernel", name=name, start=start, end=start + 1000,
                           grid_x=1, grid_y=1, grid_z=1, block_x=32, block_y=1, block_z=1,
                           registers_per_thread=8, static_shared_memory=0,
                           dynamic_shared_memory=0)


@pytest.fixture
def state(monkeypatch):
    monkeypatch.setattr(timers, "IDLE_DISABLE_S", 0.05)
    return timers._CuptiState(RecordingCupti())


def _wait_for_disable(cupti, timeout=2.0):
    deadline = time.monotonic() + timeout
    while cupti.calls[-1][0] != "disable" and time.monotonic() < deadline:
        cupti.toggled.wait(0.01)
        cupti.toggled.clear()


def test_back_to_back_blocks_enable_once_and_idle_disables(state):
    cupti = state.cupti
    for _ in range(5):  # a loop of profile blocks
        state.start()
        state.stop()
    assert [c[0] for c in cupti.calls] == ["enable"]  # not once per block
    _wait_for_disable(cupti)
    assert [c[0] for c in cupti.calls] == ["enable", "disable"]
    state.start()  # a block after the idle time enables it again
    assert [c[0] for c in cupti.calls] == ["enable", "disable", "enable"]
    time.sleep(0.15)
    assert cupti.calls[-1][0] == "enable"  # never disabled while a block runs
    state.stop()
    _wait_for_disable(cupti)
    assert cupti.calls[-1][0] == "disable"


def test_records_are_kept_for_unread_profiles_only_from_their_start(state):
    old = _kernel("before", time.monotonic_ns())
    state.cupti.completed([old])  # nobody holds records: dropped
    assert state.records == []
    since = state.start()
    state.stop()
    state.cupti.completed([old, _kernel("mine", since + 10)])
    assert [r[0] for r in state.records] == ["mine"]  # older than the block: dropped
    state.release(since)
    assert state.records == [] and state.holders == 0


def test_a_failed_enable_counts_no_profile(state):
    def refuse(kind):
        raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")

    state.cupti.activity_enable = refuse
    with pytest.raises(RuntimeError):
        state.start()
    assert (state.running, state.holders, state.enabled) == (0, 0, False)


def test_a_loop_of_blocks_does_not_wake_the_idle_thread(monkeypatch):
    # a block's end only notes the time: waking the idle thread at each would cost every block
    # of a profiled loop a thread switch (with the GIL), for a decision due a second later
    monkeypatch.setattr(timers, "IDLE_DISABLE_S", 30.0)
    state = timers._CuptiState(RecordingCupti())
    waits: list = []
    real_wait = state.idle.wait

    def counting_wait(timeout=None):
        waits.append(timeout)
        return real_wait(timeout)

    state.idle.wait = counting_wait
    since = state.start()  # enables CUPTI: wakes the idle thread, once
    deadline = time.monotonic() + 2.0
    while not waits and time.monotonic() < deadline:
        time.sleep(0.01)
    state.stop()
    state.release(since)
    time.sleep(0.1)
    settled = len(waits)  # back to sleep, for the idle time
    assert 1 <= settled <= 2 and all(w is not None and w > 29 for w in waits)
    for _ in range(200):  # a profiled loop
        since = state.start()
        state.stop()
        state.release(since)
    time.sleep(0.1)
    assert len(waits) == settled and state.enabled
    assert [c[0] for c in state.cupti.calls] == ["enable"]


class ZeroingCupti(RecordingCupti):
    """cupti-python with ATTR_ZEROED_OUT_BUFFER: reads the value and size gpunb passes (by
    address, as cupti-python's low-level binding takes them)."""

    ActivityAttribute = SimpleNamespace(ATTR_ZEROED_OUT_BUFFER=31)

    def activity_set_attribute(self, attr, value_size, value):
        import ctypes

        size = ctypes.c_size_t.from_address(value_size).value
        self.calls.append(("set", attr, size, ctypes.c_uint8.from_address(value).value))


def test_cupti_is_asked_not_to_zero_its_buffers_before_recording_starts(monkeypatch):
    monkeypatch.setattr(timers, "IDLE_DISABLE_S", 0.05)
    cupti = ZeroingCupti()
    state = timers._CuptiState(cupti)
    assert cupti.calls == [("set", 31, 1, 0)]
    state.start()
    assert cupti.calls[1] == ("enable", "concurrent_kernel")


def test_a_cupti_without_the_attribute_or_refusing_it_still_records(monkeypatch):
    monkeypatch.setattr(timers, "IDLE_DISABLE_S", 0.05)

    class Refusing(ZeroingCupti):
        def activity_set_attribute(self, attr, value_size, value):
            raise RuntimeError("CUPTI_ERROR_INVALID_PARAMETER")

    for cupti in (RecordingCupti(), Refusing()):
        state = timers._CuptiState(cupti)
        state.start()
        assert cupti.calls == [("enable", "concurrent_kernel")]


class BusyGpu(RecordingCupti):
    """CUPTI and the driver over a GPU busy with other work: a launch is only queued (its
    record gets the correlation id and queued time of its launch call, on CUPTI's clock); the
    queued kernels run, one after another, when the device is synchronised - after every block
    of the test has begun, as on an H100 shared by pytest-xdist workers
    (benchmarks/cupti_attribution.py)."""

    def __init__(self):
        super().__init__()
        self.clock = 1_000_000
        self.correlation = 0
        self.queued: list = []  # kernels launched, not yet run
        self.ran: list = []  # their records, not yet delivered
        self.delivered: list = []

    def get_timestamp(self):
        self.clock += 1000
        return self.clock

    def launch(self, name: str) -> int:
        self.correlation += 1
        self.queued.append((name, self.correlation, self.get_timestamp()))
        self.get_timestamp()  # the rest of the launch call
        return self.correlation

    def synchronize(self):
        for name, correlation, queued in self.queued:
            kernel = _kernel(name, self.get_timestamp() + 50_000)
            kernel.correlation_id, kernel.queued = correlation, queued
            self.ran.append(kernel)
        self.queued = []

    def ensure_context(self):
        pass

    def activity_flush_all(self, flag):
        ran, self.ran = self.ran, []
        self.delivered += ran
        self.completed(ran)


def _launch_event(symbol: str):
    return SimpleNamespace(specialization=SimpleNamespace(artifact=SimpleNamespace(
        symbol=symbol)))


def test_a_block_holds_the_kernels_its_launch_calls_queued_however_late_they_run(monkeypatch):
    """A kernel belongs to the block its launch call ran in: kernels queued before a block
    (still waiting on a busy GPU) start after the block began, and the block's own kernels may
    run after it ended; the GPU's start times say nothing about who launched them."""
    monkeypatch.setattr(timers, "IDLE_DISABLE_S", 30.0)
    gpu = BusyGpu()
    monkeypatch.setattr(timers, "_driver", [gpu])
    state = timers._CuptiState(gpu)
    assert gpu.latency == 1  # queued times asked for once, when CUPTI is loaded
    first = timers.CuptiTimer(state)
    mine = [gpu.launch("saxpy") for _ in range(5)]
    foreign = gpu.launch("cupy_add")  # another library's kernel, launched in the block
    first.stop()
    for _ in range(3):  # outside any profile
        gpu.launch("saxpy")
    gpu.launch("cupy_add")
    second = timers.CuptiTimer(state)
    late = gpu.launch("saxpy")
    second.stop()
    [(late_ms, late_start)], second_others = second.finish([_launch_event("saxpy")], [None])
    first_times, first_others = first.finish([_launch_event("saxpy")] * 5, [None] * 5)
    by_correlation = {kernel.start: kernel.correlation_id for kernel in gpu.delivered}

    def started(measured):
        return [by_correlation[start] for _, start in measured]

    assert started([(late_ms, late_start)]) == [late] and second_others == []
    assert started(first_times) == mine and all(ms == 0.001 for ms, _ in first_times)
    assert [r[0] for r in first_others] == ["cupy_add"] and len(first_others[0]) == 7
    assert by_correlation[first_others[0][1]] == foreign
    first.close()
    second.close()
    assert state.records == [] and state.holders == 0


def test_kernels_without_a_queued_time_are_placed_by_their_gpu_start(monkeypatch):
    # a CUPTI that gives no queued time (CUPTI_TIMESTAMP_UNKNOWN, 0): the GPU start decides
    monkeypatch.setattr(timers, "IDLE_DISABLE_S", 30.0)
    gpu = BusyGpu()
    monkeypatch.setattr(timers, "_driver", [gpu])
    state = timers._CuptiState(gpu)
    early = _kernel("saxpy", 10)  # ran before the block
    timer = timers.CuptiTimer(state)
    gpu.launch("saxpy")
    gpu.launch("other")
    timer.stop()
    gpu.synchronize()
    for kernel in gpu.ran:
        kernel.queued = 0
    gpu.ran.insert(0, early)
    saxpy_start = gpu.ran[1].start
    times, others = timer.finish([_launch_event("saxpy")], [None])
    assert [start for _, start in times] == [saxpy_start]
    assert others == []  # "other" started after the block ended: not placed in it
    timer.close()
