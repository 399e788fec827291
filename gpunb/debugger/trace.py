"""Record and replay: every line the traced threads ran in one launch, with their variables.

A tracing launch (DebugRequest(trace=True)) runs to its end without stopping; at each line
check of a traced thread the compiled code appends a copy of that thread's debug area to a
buffer. Afterwards each step can be decoded into that thread's variables at that moment, so a
viewer can scrub back and forth through the launch (time travel). Array *contents* are not
recorded (only each array variable's address, shape and strides): a step shows numbers.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np

from gpunb.backends.cpu import debug_abi as dbg
from gpunb.debugger.request import unlinear
from gpunb.debugger.tables import DebugTables, Frame
from gpunb.debugger.values import Readable, Variable, decode

_last: list = []  # the Trace of the last tracing launch in this process


def last():
    return _last[0] if _last else None


def remember(trace) -> None:
    _last[:] = [trace]


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One line one traced thread was about to run (or its end)."""

    index: int  # in the trace
    record: int  # in the recorded buffer
    block: tuple
    thread: tuple
    global_index: int
    site: int
    line: int
    filename: str
    exited: bool  # the thread's end, not a line


class Trace:
    """The steps of a traced launch, in the order they ran (threads interleaved as the CPU
    target ran them: one thread to its next barrier, then the next)."""

    def __init__(self, tables: DebugTables, grid: tuple, block: tuple, raw: bytes,
                 asked_bytes: int, kernel: str):
        self.tables, self.grid, self.block, self.kernel = tables, grid, block, kernel
        self.record_bytes = dbg.TRACE_HEADER + tables.area_bytes
        self.raw = raw
        self.truncated = asked_bytes > len(raw)
        self.per_block = math.prod(block)
        self.steps: list[TraceStep] = []
        last_site: dict = {}  # thread -> the site of its previous record
        for k in range(len(raw) // self.record_bytes):
            g, site, event = np.frombuffer(raw, np.int64, 1, k * self.record_bytes)[0], \
                *np.frombuffer(raw, np.int32, 2, k * self.record_bytes + 8)
            g, site, exited = int(g), int(site), event == dbg.EV_EXIT
            if not exited and last_site.get(g) == site:
                continue  # a loop's first header check right after its statement's: one step
            last_site[g] = site
            blk, tid = divmod(g, self.per_block)
            s = tables.site(site)
            self.steps.append(TraceStep(len(self.steps), k, unlinear(blk, grid),
                                        unlinear(tid, block), g, site, s.line, s.filename,
                                        exited))
        self._buffer = ctypes.create_string_buffer(raw, len(raw)) if raw else None

    @classmethod
    def from_control(cls, session) -> Trace:
        control = session.control_block.control
        used = int(control.trace_len)
        kept = min(used, int(control.trace_cap))
        kept -= kept % (dbg.TRACE_HEADER + session.tables.area_bytes)
        raw = ctypes.string_at(ctypes.addressof(session.control_block.trace), kept)
        return cls(session.tables, session.grid, session.block, raw, used, session.kernel)

    def __len__(self) -> int:
        return len(self.steps)

    def threads(self) -> list[int]:
        """Global indices of the threads that have steps, in order."""
        return sorted({s.global_index for s in self.steps})

    def of_thread(self, global_index: int) -> list[TraceStep]:
        return [s for s in self.steps if s.global_index == global_index]

    def variables(self, step: TraceStep | int) -> list[Variable]:
        """The thread's variables as they were when it reached the step's line."""
        step = self.steps[step] if isinstance(step, int) else step
        if not step.site or self._buffer is None:
            return []
        stack = self.tables.stack(step.site)
        body = self.tables.bodies[stack[-1].body]
        area = ctypes.addressof(self._buffer) + step.record * self.record_bytes + \
            dbg.TRACE_HEADER
        nothing = Readable([], local=False, unreadable="contents not recorded")
        out = []
        for name, offset in sorted(body.names.items()):
            number = ctypes.c_int32.from_address(area + offset).value
            if 0 < number <= len(body.definitions):
                d = body.definitions[number - 1]
                out.append(Variable(name, d.type, decode(d.layout, area, nothing, d.type),
                                    d.kind, body.function))
        return out

    def stack(self, step: TraceStep | int) -> list[Frame]:
        step = self.steps[step] if isinstance(step, int) else step
        return self.tables.stack(step.site)

    def history(self, name: str, global_index: int) -> list[tuple[int, object]]:
        """(line, value) of one variable of one thread at each of its steps where it has one."""
        out = []
        for step in self.of_thread(global_index):
            if step.exited:
                continue
            for variable in self.variables(step):
                if variable.name == name:
                    out.append((step.line, variable.value))
        return out

    def __repr__(self) -> str:
        more = " (truncated: raise trace_bytes)" if self.truncated else ""
        return (f"<gpunb trace of '{self.kernel}': {len(self.steps)} steps of "
                f"{len(self.threads())} thread(s){more}>")
