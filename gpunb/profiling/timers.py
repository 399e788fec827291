"""Device timings of launches: CUPTI activity records, CUDA events as the fallback, the host clock
on the CPU target.

A timer sees each gpunb launch twice (`before`, `after`: the launch events) and is asked once at
the end of the profile for every launch's time (`finish`). CUPTI also reports the kernels that
other libraries (CuPy, PyTorch) launched on the context meanwhile; CUDA events time gpunb's own
launches only. cupti-python is imported lazily, only when a profile starts on the GPU.
"""

from __future__ import annotations

import threading
import time


class HostTimer:
    """The CPU target: a launch is synchronous, so the host clock times the kernel itself."""

    name = "host clock"
    timing = "host"
    note = ""

    def before(self, event) -> object:
        return time.perf_counter_ns()

    def after(self, event, token) -> object:
        return token, time.perf_counter_ns()

    def finish(self, tokens: list) -> tuple:
        """([(time_ms, start_ns)] per launch, [other libraries' kernels])."""
        return [((end - start) / 1e6, start) for start, end in tokens], []

    def close(self) -> None:
        pass


class EventTimer:
    """A CUDA event recorded on the launch's stream before and after it: the GPU's own time
    between them, read once at the end (no synchronisation per launch)."""

    name = "cuda events"
    timing = "device"

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

    def finish(self, tokens: list) -> tuple:
        out = []
        for start, end in tokens:
            self._check(self._cu.cuEventSynchronize(end), "cuEventSynchronize")
            ms = float(self._check(self._cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
            out.append((ms, None))
        return out, []

    def close(self) -> None:
        for event in self._used + self._pool:
            self._cu.cuEventDestroy(event)
        self._used, self._pool = [], []


class _CuptiState:
    """CUPTI's callbacks are registered once per process; records land here (any thread)."""

    def __init__(self, cupti):
        self.cupti = cupti
        self.lock = threading.Lock()
        self.records: list = []
        self.sessions = 0  # records arriving while no profile runs are dropped
        cupti.activity_register_callbacks(self._requested, self._completed)

    @staticmethod
    def _requested():
        return 8 << 20, 0

    def _completed(self, activities) -> None:
        kernel_kinds = (self.cupti.ActivityKind.CONCURRENT_KERNEL, self.cupti.ActivityKind.KERNEL)
        rows = [(a.name, a.start, a.end, (a.grid_x, a.grid_y, a.grid_z),
                 (a.block_x, a.block_y, a.block_z), a.registers_per_thread,
                 a.static_shared_memory + a.dynamic_shared_memory)
                for a in activities if a.kind in kernel_kinds]
        with self.lock:
            if self.sessions:
                self.records.extend(rows)


_cupti_state: _CuptiState | None = None
_cupti_error: str | None = None


class CuptiTimer:
    """Kernel activity records from CUPTI: every kernel on the context, timed by the GPU."""

    name = "cupti"
    timing = "device"
    note = ""

    def __init__(self, state: _CuptiState):
        from gpunb.backends.cuda import driver

        self._state = state
        self._driver = driver
        cupti = state.cupti
        driver.ensure_context()
        # kernels that ran before this instant belong to no launch of the profile: records
        # starting earlier are dropped at the end (no synchronisation or flush needed here)
        self._since = cupti.get_timestamp()
        cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
        with state.lock:
            state.sessions += 1

    def before(self, event) -> object:
        return None

    def after(self, event, token) -> object:
        return event.specialization.artifact.symbol

    def finish(self, tokens: list) -> tuple:
        self._driver.synchronize()
        cupti = self._state.cupti
        cupti.activity_flush_all(1)
        with self._state.lock:
            rows = sorted((r for r in self._state.records if r[1] >= self._since),
                          key=lambda r: r[1])
            self._state.records.clear()
        unmatched = list(rows)
        out = []
        for symbol in tokens:  # gpunb's launches, in launch order: the first record of its name
            found = next((r for r in unmatched if r[0] == symbol), None)
            if found is None:
                out.append((None, None))
                continue
            unmatched.remove(found)
            out.append(((found[2] - found[1]) / 1e6, found[1]))
        return out, unmatched

    def close(self) -> None:
        cupti = self._state.cupti
        with self._state.lock:
            self._state.sessions -= 1
            last = self._state.sessions == 0
        if last:  # launches outside a profile pay nothing for CUPTI again
            try:
                cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
            except Exception:  # noqa: BLE001 - closing must not mask the profile's result
                pass


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
