"""Waiting for the GPU in a way Ctrl-C and the watchdog can end.

cuStreamSynchronize and friends block inside the driver: Python's SIGINT handler cannot run
until the kernel ends, so a kernel that never ends hangs the notebook. Here the host asks
(cuStreamQuery / cuEventQuery) instead: in a tight loop for the first SPIN_SECONDS (a short
kernel is seen finished within a microsecond or two, as a blocking wait would see it), then
after sleeps of a hundredth of the time waited so far (at most POLL_SECONDS): a wait is never
more than about 1 % longer than the kernel. Between two questions Python runs its signal
handlers, so Ctrl-C raises a KeyboardInterrupt that says what it means: the kernel keeps
running on the device (the host cannot stop a GPU kernel), and what to do.
GPUNB_LAUNCH_TIMEOUT (a cell's --timeout) turns a wait longer than that into
LaunchTimeoutError.
"""

from __future__ import annotations

import time

from gpunb.backends.cuda import capture_safe
from gpunb.foundation.errors import launch_interrupted

SPIN_SECONDS = 0.01
POLL_SECONDS = 0.001


def wait_until(done, what: str, kernel: str | None = None, cu=None) -> None:
    """Return once `done()` (a query: True when the work waited for has finished) is true;
    `kernel`: the latest kernel launched, named if the wait is interrupted. With `cu` (the
    driver module) the queries run in this thread's relaxed capture mode: a query of a stream
    or event that does not capture is then no error while another library captures in global
    mode (torch.cuda.graph), where the driver would refuse it and invalidate that capture."""
    if cu is None:
        _wait(done, what, kernel)
        return
    previous = capture_safe.relax(cu)
    try:
        _wait(done, what, kernel)
    finally:
        capture_safe.restore(cu, previous)


def _wait(done, what: str, kernel: str | None) -> None:
    if done():
        return
    from gpunb.foundation import config

    limit = config.launch_timeout()
    start = time.monotonic()
    try:
        while not done():
            waited = time.monotonic() - start
            if limit is not None and waited > limit:
                raise _timeout(what, limit, kernel)
            if waited > SPIN_SECONDS:
                time.sleep(min(POLL_SECONDS, waited / 100))
    except KeyboardInterrupt:
        raise launch_interrupted(f"interrupted while waiting for the GPU ({what})"
                                 f"{_running(kernel)}: {STILL_RUNNING}") from None


STILL_RUNNING = ("the kernel keeps running on the device (the host cannot stop a GPU kernel); "
                 "its results are not ready, and the next copy, launch or synchronize waits "
                 "behind it. If it never ends (a loop whose condition no thread changes), "
                 "restart the Python process (Jupyter: Kernel > Restart) to free the GPU; "
                 "GPUNB_LAUNCH_TIMEOUT or %%gpukernel --timeout S turn such a wait into an error, "
                 "and the CPU target (GPUNB_TARGET=cpu) runs the same kernel where Ctrl-C stops "
                 "it")


def _running(kernel: str | None) -> str:
    return f"; the latest kernel launched: '{kernel}'" if kernel else ""


def _timeout(what: str, limit: float, kernel: str | None):
    from gpunb.foundation.errors import LaunchTimeoutError

    return LaunchTimeoutError(
        f"the GPU was still busy after {limit:g} s ({what}){_running(kernel)}: the watchdog "
        f"(GPUNB_LAUNCH_TIMEOUT or %%gpukernel --timeout) gave up waiting; {STILL_RUNNING}",
        hint="look for a loop that never ends, or raise the limit for kernels that need longer")


def stream_done(cu, check, stream_handle: int):
    """A query for wait_until: all work queued on the stream has finished (`cu`: the driver
    module, `check`: driver.check, which raises the driver's errors)."""
    not_ready = cu.CUresult.CUDA_ERROR_NOT_READY

    def done() -> bool:
        (err,) = cu.cuStreamQuery(stream_handle)
        if err == not_ready:
            return False
        check((err,), "cuStreamQuery")
        return True

    return done


def event_done(cu, check, event_handle):
    """A query for wait_until: the work before the event's recorded point has finished."""
    not_ready = cu.CUresult.CUDA_ERROR_NOT_READY

    def done() -> bool:
        (err,) = cu.cuEventQuery(event_handle)
        if err == not_ready:
            return False
        check((err,), "cuEventQuery")
        return True

    return done
