"""CUDA streams and events, and their CPU-target twins (synchronous; events read perf_counter).

The API is numba.cuda's: `cuda.stream()`, `stream.synchronize()`, `with stream.auto_synchronize()`,
`cuda.event()`, `evt.record(stream)`, `evt.elapsed_time(other)` in milliseconds.
"""

from __future__ import annotations

import contextlib
import time
import weakref

from gpunb.backends.cuda import capture_safe, driver, graphs
from gpunb.backends.cuda.launch import stream_handle
from gpunb.foundation.errors import GraphError, LaunchError, user_location
from gpunb.runtime import capture, stream_callbacks

CU_STREAM_LEGACY = 1
CU_STREAM_PER_THREAD = 2


def sync_producer_stream(handle) -> None:
    """Honour a __cuda_array_interface__ 'stream' entry before using the memory.

    None, 0 and the default streams (1 legacy, 2 per-thread) need nothing: gpunb works on the
    legacy default stream or on blocking streams, which are ordered after them. Any other stream
    is synchronized, so the producer's pending writes are visible."""
    if handle is None or handle in (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD):
        return
    if capture.open_captures and capture.current() is not None:
        return  # nothing runs while a graph is captured: its replay is ordered on its stream
    if graphs.capture_state(int(handle))[0] != "none":
        return  # a stream that captures (torch.cuda.graph, CuPy): its work does not run now
    Stream(int(handle))._wait("stream.synchronize()")  # (its capture state just asked)


class Stream:
    """A CUDA stream; created streams are destroyed when garbage collected."""

    def __init__(self, handle: int = 0, _owned_handle=None, _external: bool = False):
        self.handle = int(handle)
        self.external = _external
        self._cu_stream = _owned_handle
        if _owned_handle is not None:
            finalizer = weakref.finalize(self, _destroy_stream, driver.cuda_driver(),
                                         _owned_handle)
            finalizer.atexit = False

    @classmethod
    def create(cls, non_blocking: bool = False) -> Stream:
        """A new stream (blocking by default: it orders with the legacy default stream)."""
        driver.ensure_context()
        cu = driver.cuda_driver()
        flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING if non_blocking else \
            cu.CUstream_flags.CU_STREAM_DEFAULT
        handle = driver.check(cu.cuStreamCreate(int(flags)), "cuStreamCreate")
        capture_safe.stream_created(int(handle))  # cuda.synchronize() around a capture waits for it
        return cls(int(handle), _owned_handle=handle)

    @property
    def is_default(self) -> bool:
        return self.handle in (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished (Ctrl-C and the watchdog can
        end the wait: backends/cuda/waits.py)."""
        capture.refuse_synchronize("stream.synchronize()")
        driver.ensure_context()
        self._refuse_while_capturing(driver.cuda_driver(), "stream.synchronize()")
        self._wait("stream.synchronize()")

    def _wait(self, what: str) -> None:
        from gpunb.backends.cuda import waits

        cu = driver.cuda_driver()
        waits.wait_until(waits.stream_done(cu, driver.check, self.handle), what,
                         driver.last_launch.kernel, cu)

    def query(self) -> bool:
        """True when all work queued on this stream has finished (does not wait)."""
        capture.refuse_synchronize("stream.query()")
        driver.ensure_context()
        cu = driver.cuda_driver()
        self._refuse_while_capturing(cu, "stream.query()")
        (err,) = capture_safe.relaxed(cu, cu.cuStreamQuery, self.handle)  # (as waits poll)
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        driver.check((err,), "cuStreamQuery")
        return True

    def _refuse_while_capturing(self, cu, what: str) -> None:
        """GraphError for a wait on this stream while it captures a graph (another thread's
        gpunb.graph(), torch.cuda.graph...): the driver would refuse it and end that capture."""
        if capture_safe.stream_captures(cu, self.handle):
            raise GraphError(
                f"{what}: this stream captures a graph (on another thread, or for another "
                "library), so its work does not run until a replay; the driver would refuse "
                "the wait and end that capture", user_location(),
                hint="wait after the capture ends (after the `with gpunb.graph():` block or "
                     "torch.cuda.graph), or wait for the stream the replay runs on")

    @contextlib.contextmanager
    def auto_synchronize(self):
        """`with stream.auto_synchronize():` synchronizes the stream when the block ends."""
        yield self
        self.synchronize()

    def add_callback(self, callback, arg=None) -> None:
        """Call `callback(stream, status, arg)` from a driver thread once all work queued on
        this stream before has finished (numba-cuda's Stream.add_callback). The callback must
        not call CUDA functions."""
        stream_callbacks.add_callback_cuda(self, callback, arg)

    def async_done(self):
        """An asyncio future that resolves to this stream once its queued work has finished."""
        return stream_callbacks.async_done(self)

    def __int__(self) -> int:
        return self.handle

    def __eq__(self, other) -> bool:
        if isinstance(other, (Stream, int)):
            return self.handle == int(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.handle)

    def __repr__(self) -> str:
        kind = "default " if self.handle == 0 else "external " if self.external else ""
        return f"<CUDA {kind}stream {self.handle:#x}>"


def _destroy_stream(cu, handle) -> None:
    capture_safe.stream_destroyed(int(handle))
    try:
        cu.cuStreamDestroy(handle)
    except Exception:  # noqa: BLE001 - a destroyed context has no streams left to free
        pass


class Event:
    """A CUDA event: record it on a stream, wait for it, time between two of them."""

    def __init__(self, timing: bool = True):
        driver.ensure_context()
        cu = driver.cuda_driver()
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT if timing else \
            cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        self.handle = driver.check(cu.cuEventCreate(int(flags)), "cuEventCreate")
        self.timing = timing
        finalizer = weakref.finalize(self, _destroy_event, cu, self.handle)
        finalizer.atexit = False

    def record(self, stream=0) -> None:
        _refuse_event_record()
        driver.check(driver.cuda_driver().cuEventRecord(self.handle, stream_handle(stream)),
                     "cuEventRecord")

    def synchronize(self) -> None:
        from gpunb.backends.cuda import waits

        capture.refuse_synchronize("event.synchronize()")
        cu = driver.cuda_driver()
        waits.wait_until(waits.event_done(cu, driver.check, self.handle),
                         "event.synchronize()", driver.last_launch.kernel, cu)

    def wait(self, stream=0) -> None:
        """Make `stream` wait for this event (no host blocking)."""
        driver.check(driver.cuda_driver().cuStreamWaitEvent(stream_handle(stream), self.handle,
                                                            0), "cuStreamWaitEvent")

    def query(self) -> bool:
        """True when the work before the recorded point has finished."""
        capture.refuse_synchronize("event.query()")
        cu = driver.cuda_driver()
        (err,) = capture_safe.relaxed(cu, cu.cuEventQuery, self.handle)  # (as waits poll)
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        driver.check((err,), "cuEventQuery")
        return True

    def elapsed_time(self, other: Event) -> float:
        """Milliseconds from this event to `other` (both recorded and completed)."""
        if not (self.timing and other.timing):
            raise LaunchError("elapsed_time needs events created with timing=True")
        return float(driver.check(driver.cuda_driver().cuEventElapsedTime(self.handle,
                                                                           other.handle),
                                  "cuEventElapsedTime"))

    def __repr__(self) -> str:
        return f"<CUDA event {int(self.handle):#x}>"


def _destroy_event(cu, handle) -> None:
    try:
        cu.cuEventDestroy(handle)
    except Exception:  # noqa: BLE001 - see _destroy_stream
        pass


class CpuStream:
    """The CPU target's stream: work runs synchronously at launch, so nothing is ever pending.
    `is_default`: it stands for a default stream (cuda.default_stream() and the like), which a
    graph cannot be captured on, as on a GPU."""

    handle = 0
    external = False

    def __init__(self, is_default: bool = False):
        self.is_default = is_default

    def synchronize(self) -> None:
        capture.refuse_synchronize("stream.synchronize()")  # as on a GPU

    def query(self) -> bool:
        capture.refuse_synchronize("stream.query()")
        return True

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self

    def add_callback(self, callback, arg=None) -> None:
        """`callback(stream, status, arg)` at once (nothing is pending), on a helper thread."""
        stream_callbacks.add_callback_now(self, callback, arg)

    def async_done(self):
        """An asyncio future that resolves to this stream (already done)."""
        return stream_callbacks.async_done(self)

    def __int__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<gpunb CPU {'default ' if self.is_default else ''}stream (synchronous)>"


class CpuEvent:
    """The CPU target's event: `record` reads time.perf_counter(), which is when the work ended."""

    def __init__(self, timing: bool = True):
        self.timing = timing
        self.time: float | None = None

    def record(self, stream=0) -> None:
        _refuse_event_record()  # as on a GPU
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        capture.refuse_synchronize("event.synchronize()")  # as on a GPU

    def wait(self, stream=0) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: CpuEvent) -> float:
        if not (self.timing and other.timing):  # as on a GPU, where the driver keeps no time
            raise LaunchError("elapsed_time needs events created with timing=True")
        if self.time is None or other.time is None:
            raise LaunchError("elapsed_time needs both events recorded (event.record())")
        return (other.time - self.time) * 1000.0

    def __repr__(self) -> str:
        return "<gpunb CPU event>"


def _refuse_event_record() -> None:
    capture.refuse("recording an event", "a graph is timed from outside: record events around "
                   "g.replay() (start.record(); g.replay(); end.record())")


def event_elapsed_time(start, end) -> float:
    """Milliseconds between two recorded events (numba's cuda.event_elapsed_time)."""
    return start.elapsed_time(end)
