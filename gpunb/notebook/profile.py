"""`%%gpuprofile`: time every kernel launch of one cell, first launches (compiles) kept apart.

For the cell's duration `Dispatcher.launch` is wrapped (and restored after, even on error): each
launch is timed host-side and, on the CUDA target, synchronised so the time is the kernel's.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from gpunb.notebook import render


@dataclass(frozen=True, slots=True)
class LaunchRecord:
    kernel: str
    grid: str
    block: str
    ms: float
    compiled: bool  # this launch compiled a new specialisation (its time includes the compile)


class LaunchRecorder:
    """Context manager that records launches made while it is active."""

    def __init__(self):
        self.records: list[LaunchRecord] = []
        self._original = None

    def __enter__(self) -> LaunchRecorder:
        from gpunb.jit.dispatcher import Dispatcher

        original = Dispatcher.launch
        records = self.records

        def timed_launch(dispatcher, griddim, blockdim, stream, sharedmem, args):
            before = len(dispatcher.specializations)
            _synchronize(dispatcher)
            start = time.perf_counter()
            try:
                return original(dispatcher, griddim, blockdim, stream, sharedmem, args)
            finally:
                _synchronize(dispatcher)
                ms = (time.perf_counter() - start) * 1000.0
                records.append(LaunchRecord(dispatcher.__name__, str(griddim), str(blockdim), ms,
                                            len(dispatcher.specializations) != before))

        self._original = original
        Dispatcher.launch = timed_launch
        return self

    def __exit__(self, *exc) -> None:
        from gpunb.jit.dispatcher import Dispatcher

        Dispatcher.launch = self._original

    def records_json(self) -> list[dict]:
        return [asdict(r) for r in self.records]

    def report(self) -> ProfileReport:
        return ProfileReport(list(self.records))


def _synchronize(dispatcher) -> None:
    """Wait for the GPU when the kernel runs there (CPU launches are synchronous already)."""
    if not any(target == "cuda" for target, _ in dispatcher.specializations):
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
