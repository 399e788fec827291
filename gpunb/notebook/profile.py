"""`%%gpuprofile`: time every kernel launch of one cell, first launches (compiles) kept apart.

For the cell's duration a LaunchRecorder subscribes to gpunb's launch events (`gpunb.events`:
launch before / after): each launch is timed host-side from just before its arguments are packed
to just after it returns and, on the CUDA target, synchronised on both sides so the time is the
kernel's. Compiles happen before the first event, so a launch that compiled is timed without its
compile (it is counted apart, and its compile time is in its cache event).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from gpunb.foundation.events import EventKind, LaunchEvent, subscribe
from gpunb.notebook import render


@dataclass(frozen=True, slots=True)
class LaunchRecord:
    kernel: str
    grid: str
    block: str
    ms: float
    compiled: bool  # this launch made its specialisation (compiled, or loaded it from the cache)


class LaunchRecorder:
    """Context manager that records launches made while it is active (any thread)."""

    def __init__(self):
        self.records: list[LaunchRecord] = []
        self._subscription = None
        self._started = threading.local()  # a stack per thread: a launch inside a launch hook

    def __enter__(self) -> LaunchRecorder:
        self._subscription = subscribe((EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER),
                                       self._on_launch)
        return self

    def __exit__(self, *exc) -> None:
        self._subscription.unsubscribe()

    def _on_launch(self, event: LaunchEvent) -> None:
        stack = getattr(self._started, "stack", None)
        if stack is None:
            stack = self._started.stack = []
        if event.kind is EventKind.LAUNCH_BEFORE:
            _synchronize(event.target)
            stack.append(time.perf_counter())
            return
        _synchronize(event.target)
        ms = (time.perf_counter() - stack.pop()) * 1000.0 if stack else event.ms
        self.records.append(LaunchRecord(event.kernel, str(event.grid), str(event.block), ms,
                                         event.new_specialization))

    def records_json(self) -> list[dict]:
        return [asdict(r) for r in self.records]

    def report(self) -> ProfileReport:
        return ProfileReport(list(self.records))


def _synchronize(target: str) -> None:
    """Wait for the GPU when the kernel runs there (CPU launches are synchronous already)."""
    if target != "cuda":
        return
    from gpunb import cuda

    cuda.synchronize()


class ProfileReport:
    """Per kernel: launches, compile launches, total/mean/min/max ms of the warm launches."""

    HEADERS = ("kernel", "launches", "compiling launches", "warm total ms", "warm mean ms",
               "min ms", "max ms")

    def __init__(self, records: list[LaunchRecord]):
        self.records = records

    def rows(self) -> list[list]:
        by_kernel: dict = {}
        for r in self.records:
            by_kernel.setdefault(r.kernel, []).append(r)
        rows = []
        for name, recs in by_kernel.items():
            warm = [r.ms for r in recs if not r.compiled]
            compiled = sum(r.compiled for r in recs)
            stats = (f"{sum(warm):.3f}", f"{sum(warm) / len(warm):.3f}", f"{min(warm):.3f}",
                     f"{max(warm):.3f}") if warm else ("", "", "", "")
            rows.append([name, len(recs), compiled, *stats])
        return rows

    def text(self) -> str:
        if not self.records:
            return "no kernel launches in this cell"
        return render.text_table(self.HEADERS, self.rows())

    def _repr_html_(self) -> str:
        if not self.records:
            return render.wrap('<div class="muted">no kernel launches in this cell</div>')
        return render.wrap(render.table(self.HEADERS, self.rows()))

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())
