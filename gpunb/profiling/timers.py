"""Device timings of launches: CUPTI activity records, CUDA events as the fallback, the host clock
on the CPU target.

A timer is made when a profile starts (`stop()` when its block ends) and asked once, when the
profile's records are first read, for every launch's time (`finish`); `close()` releases it.
CUPTI and the host clock need only the LAUNCH_AFTER event of a launch (`needs_before` False), so
a profile timed by them listens to one event per launch; CUDA events are recorded on the
launch's stream before and after it (`before`, `after`). CUPTI also reports the kernels that
other libraries (CuPy, PyTorch) launched on the context meanwhile; CUDA events time gpunb's own
launches only. cupti-python is imported lazily, only when a profile starts on the GPU.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque


class HostTimer:
    """The CPU target: a launch is synchronous, so the host time of packing + launch that the
    LAUNCH_AFTER event carries (from `start_ns`, perf_counter_ns) is the kernel's own time."""

    name = "host clock"
    timing = "host"
    note = ""
    needs_before = False

    def before(self, event) -> object:
        return None

    def after(self, event, token) -> object:
        return None

    def stop(self) -> None:
        pass

    def finish(self, events: list, tokens: list) -> tuple:
        """([(time_ms, start_ns)] per launch, [other libraries' kernels])."""
        return [(event.ms, event.start_ns) for event in events], []

    def close(self) -> None:
        pass


class EventTimer:
    """A CUDA event recorded on the launch's stream before and after it: the GPU's own time
    between them, read once at the end (no synchronisation per launch)."""

    name = "cuda events"
    timing = "device"
    needs_before = True

    def __init__(self, note: str = ""):
        from gpunb.backends.cuda import driver

        driver.ensure_context()
        self._cu = driver.cuda_driver()
        self._check = driver.check
        self._pool: list = []
        self._used: list = []
        self.note = note

    def _event(self):
        event = self._pool.pop() if self._pool else \
            self._check(self._cu.cuEventCreate(0), "cuEventCreate")
        self._used.append(event)
        return event

    def _record(self, event) -> object:
        from gpunb.backends.cuda.launch import stream_handle

        handle = self._event()
        self._check(self._cu.cuEventRecord(handle, stream_handle(event.stream)), "cuEventRecord")
        return handle

    def before(self, event) -> object:
        return self._record(event)

    def after(self, event, token) -> object:
        return token, self._record(event)

    def stop(self) -> None:
        pass

    def finish(self, events: list, tokens: list) -> tuple:
        out = []
        for token in tokens:
            if token is None or token[0] is None:  # a launch whose before was not seen
                out.append((None, None))
                continue
            start, end = token
            self._check(self._cu.cuEventSynchronize(end), "cuEventSynchronize")
            ms = float(self._check(self._cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
            out.append((ms, None))
        return out, []

    def close(self) -> None:
        for event in self._used + self._pool:
            self._cu.cuEventDestroy(event)
        self._used, self._pool = [], []


# CUPTI's kernel activity stays enabled this long after the last profile block ends, so that
# back-to-back blocks (a loop of profiles, the benchmark's) enable it once: enabling it again
# makes the block's next launch pay for CUPTI setting up (a few hundred microseconds on an H100
# in benchmarks/bench_profile.py), while a launch with it enabled pays about 1 us more. After
# this idle time a thread disables it, so launches outside profiles pay nothing for CUPTI.
IDLE_DISABLE_S = 1.0
# The size of each activity buffer CUPTI asks for: when it starts recording and after each
# flush (a profile's first read), so the next kernel recorded may wait for one. cupti-python
# allocates it (libc) and frees it once its records are delivered; tens of thousands of kernel
# records fit.
ACTIVITY_BUFFER_BYTES = 8 << 20


def _no_zeroing(cupti) -> None:
    """Ask CUPTI not to zero each activity buffer it is given: records are written in order and
    delivered with their valid size, and clearing 8 MB cost the first launch after each flush
    about 0.3 ms on the H100 host (benchmarks/profile_overhead.py). Older CUPTIs lack the
    attribute: nothing changes then."""
    import ctypes

    attribute = getattr(getattr(cupti, "ActivityAttribute", None), "ATTR_ZEROED_OUT_BUFFER", None)
    if attribute is None:
        return
    value, size = ctypes.c_uint8(0), ctypes.c_size_t(1)
    try:
        cupti.activity_set_attribute(attribute, ctypes.addressof(size), ctypes.addressof(value))
    except Exception:  # noqa: BLE001 - a CUPTI that refuses it zeroes, as before
        pass


def _latency_timestamps(cupti) -> None:
    """Ask CUPTI for each kernel's `queued` time: when the host wrote the launch into the command
    buffer, inside the launch call on the launching thread (CUPTI's clock, as get_timestamp).
    That, not the GPU's start, says which profile block launched a kernel (benchmarks/
    cupti_attribution.py: on an H100 about 0.3 us more per launch). A CUPTI that refuses it
    gives no queued time: kernels are then placed by their GPU start, as before."""
    try:
        cupti.activity_enable_latency_timestamps(1)
    except Exception:  # noqa: BLE001 - older CUPTIs: the GPU start places kernels
        pass


# A kernel record as kept: (name, start, end, grid, block, registers, shared bytes) - the
# fields a profile's "other" row reads - then correlation id (launch-call order) and queued (0
# when CUPTI gave none: CUPTI_TIMESTAMP_UNKNOWN).
CORRELATION, QUEUED = 7, 8


def _kernel_row(a) -> tuple:
    return (a.name, a.start, a.end, (a.grid_x, a.grid_y, a.grid_z),
            (a.block_x, a.block_y, a.block_z), a.registers_per_thread,
            a.static_shared_memory + a.dynamic_shared_memory,
            getattr(a, "correlation_id", 0), getattr(a, "queued", 0) or 0)


def _in_block(row: tuple, since: int, until: int) -> bool:
    """A kernel whose launch call wrote it between the block's start and end was launched in
    the block, however late the GPU ran it; one without a queued time is placed, as a guess,
    by its GPU start from the block's start on (it may run after the block ends)."""
    queued = row[QUEUED]
    return since <= queued <= until if queued else row[1] >= since


def _launched_at(row: tuple) -> int:
    """When the kernel's launch call wrote it (queued), else (no queued time) its GPU start."""
    return row[QUEUED] or row[1]


class _CuptiState:
    """CUPTI's callbacks are registered once per process; records land here (any thread).

    `running` counts profiles whose block is running (CUPTI records kernels while it is not 0,
    and for IDLE_DISABLE_S after); `holders` counts profiles whose records have not been read
    yet: records arriving while it is 0 are dropped, so kernels launched outside profiles cost
    no memory. `idle` guards enabling and disabling; `lock` the records (CUPTI's buffer
    callback takes only `lock`, so a disable that flushes cannot deadlock with it).

    A block's start and end only count and note the time: the idle thread is woken when CUPTI
    is enabled, and otherwise looks again every IDLE_DISABLE_S while it is, so a loop of
    blocks does not wake it (a thread switch per block) at each block's end."""

    def __init__(self, cupti):
        self.cupti = cupti
        self.lock = threading.Lock()
        self.records: list = []
        self.holders = 0
        self.starts: list = []  # the `since` of each profile holding records, oldest first
        self.since = 0  # the oldest of them (records starting before it are dropped)
        self.idle = threading.Condition(threading.Lock())  # the toggle lock, and its wake-up
        self.running = 0
        self.enabled = False
        self.idle_since: float | None = None
        cupti.activity_register_callbacks(self._requested, self._completed)
        _no_zeroing(cupti)
        _latency_timestamps(cupti)
        threading.Thread(target=self._disable_when_idle, name="gpunb-cupti-idle",
                         daemon=True).start()

    @staticmethod
    def _requested():
        return ACTIVITY_BUFFER_BYTES, 0  # (size, no record limit): cupti-python allocates it

    def _completed(self, activities) -> None:
        if not self.holders:
            return
        kernel_kinds = (self.cupti.ActivityKind.CONCURRENT_KERNEL, self.cupti.ActivityKind.KERNEL)
        since = self.since  # kernels launched before the oldest unread profile's block: nobody's
        rows = [row for row in (_kernel_row(a) for a in activities if a.kind in kernel_kinds)
                if _launched_at(row) >= since]
        with self.lock:
            if self.holders:
                self.records.extend(rows)

    def start(self) -> int:
        """A profile's block begins: CUPTI records kernels from the returned timestamp on."""
        cupti = self.cupti
        with self.idle:
            if not self.enabled:  # raises when another profiler holds CUPTI: nothing counted
                cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
                self.enabled = True
                self.idle.notify()  # the idle thread waits for this without a time limit
            since = cupti.get_timestamp()
            self.running += 1
            self.idle_since = None
        with self.lock:
            self.holders += 1
            self.starts.append(since)
            self.since = self.starts[0]
        return since

    def stop(self) -> int:
        """A profile's block ends; CUPTI is disabled after IDLE_DISABLE_S without a block."""
        until = self.cupti.get_timestamp()
        with self.idle:
            self.running -= 1
            if not self.running:
                self.idle_since = time.monotonic()  # the idle thread reads it when it wakes
        return until

    def _disable_when_idle(self) -> None:
        """The idle thread: disables CUPTI once no block has run for IDLE_DISABLE_S."""
        cupti = self.cupti
        with self.idle:
            while True:
                if not self.enabled:
                    self.idle.wait()  # until a block enables CUPTI (start notifies)
                    continue
                if self.running or self.idle_since is None:
                    self.idle.wait(IDLE_DISABLE_S)  # a block runs: look again later
                    continue
                wait = self.idle_since + IDLE_DISABLE_S - time.monotonic()
                if wait > 0:
                    self.idle.wait(wait)
                    continue
                self.enabled = False
                try:
                    cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
                except Exception:  # noqa: BLE001 - a profile never fails for its timer
                    pass

    def release(self, since: int) -> None:
        """A profile's records were read (or it was dropped unread)."""
        with self.lock:
            self.holders -= 1
            self.starts.remove(since)
            self.since = self.starts[0] if self.starts else 0
            if not self.holders:
                self.records.clear()
            else:
                self.records = [r for r in self.records if _launched_at(r) >= self.since]


_cupti_state: _CuptiState | None = None
_cupti_error: str | None = None
_driver: list = [None]  # gpunb.backends.cuda.driver once a CuptiTimer imported it (per block)


class CuptiTimer:
    """Kernel activity records from CUPTI: every kernel on the context, timed by the GPU.

    Nothing happens per launch: CUPTI is enabled when the block begins, the block's end only
    notes the time (CUPTI is disabled later, see IDLE_DISABLE_S), and the device synchronisation
    and CUPTI flush wait until the records are read. The block's kernels are those whose launch
    call wrote them (their `queued` time) between the block's start and end: launches are
    asynchronous, so a kernel launched before the block may start on a busy GPU after the block
    began, and one launched in it after it ended; the GPU start says nothing about who launched
    it. gpunb's launches are matched to the block's kernels by entry symbol, in the order of
    their launch calls (correlation id)."""

    name = "cupti"
    timing = "device"
    note = ""
    needs_before = False

    def __init__(self, state: _CuptiState):
        driver = _driver[0]
        if driver is None:
            from gpunb.backends.cuda import driver

            _driver[0] = driver
        self._state = state
        self._driver = driver
        driver.ensure_context()
        self._since = state.start()
        self._until: int | None = None
        self._held = True

    def before(self, event) -> object:
        return None

    def after(self, event, token) -> object:
        return None

    def stop(self) -> None:
        if self._until is None:
            self._until = self._state.stop()

    def finish(self, events: list, tokens: list) -> tuple:
        self.stop()
        self._driver.synchronize()
        state = self._state
        state.cupti.activity_flush_all(1)
        since, until = self._since, self._until
        with state.lock:  # the block's kernels, in the order of their launch calls
            rows = sorted((r for r in state.records if _in_block(r, since, until)),
                          key=lambda r: r[CORRELATION])
        by_name: dict = defaultdict(deque)
        for row in rows:
            by_name[row[0]].append(row)
        out = []
        taken = set()
        for event in events:  # gpunb's launches, in launch order: the next record of its name
            queue = by_name.get(event.specialization.artifact.symbol)
            if not queue:
                out.append((None, None))
                continue
            found = queue.popleft()
            taken.add(id(found))
            out.append(((found[2] - found[1]) / 1e6, found[1]))
        others = [r[:CORRELATION] for r in rows if id(r) not in taken
                  and (r[QUEUED] or r[1] <= until)]
        return out, others

    def close(self) -> None:
        if self._held:
            self._held = False
            self.stop()
            self._state.release(self._since)


def cuda_timer(prefer: str = "auto"):
    """CuptiTimer when cupti-python loads and CUPTI is free, else EventTimer with a note."""
    global _cupti_state, _cupti_error
    if prefer == "events":
        return EventTimer()
    if _cupti_state is None and _cupti_error is None:
        try:
            from cupti import cupti  # the [profile] extra: cupti-python + nvidia-cuda-cupti

            _cupti_state = _CuptiState(cupti)
        except Exception as exc:  # noqa: BLE001 - ImportError, a missing libcupti, ...
            _cupti_error = _first_line(exc)
    if _cupti_state is None:
        return EventTimer(note=f"device times from CUDA events: CUPTI could not be loaded "
                               f"({_cupti_error}); pip install 'gpunb[profile]' for CUPTI, which "
                               "also times other libraries' kernels")
    try:
        return CuptiTimer(_cupti_state)
    except Exception as exc:  # noqa: BLE001 - CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED...
        return EventTimer(note=f"device times from CUDA events: CUPTI is in use by another "
                               f"profiler or failed to start ({_first_line(exc)})")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
