"""What one stop of a debug launch shows: the focused thread, its variables and call stack,
the same variable across its warp and block, shared memory, who waits at which barrier, the
source around the line. Read lazily from memory while the launch stays stopped.
"""

from __future__ import annotations

import linecache
from collections import Counter
from dataclasses import dataclass

import numpy as np

from gpunb.debugger import threads as th
from gpunb.debugger.errors import DebuggerError
from gpunb.debugger.request import unlinear
from gpunb.debugger.values import ArrayValue, RecordValue, Variable, same_value
from gpunb.foundation.errors import describe_filename


@dataclass(frozen=True, slots=True)
class Row:
    """One thread in a warp or block table."""

    state: th.ThreadState
    value: object  # None: the name holds no value in this thread
    differs: bool  # another value than the focused thread's
    diverged: bool  # elsewhere in the code than the focused thread


_REASONS = {"breakpoint()": "breakpoint()", "breakpoint": "a breakpoint", "step": "a step",
            "barrier": "its next barrier", "error": "an error", "raise": "a raise",
            "exit": "its end", "pause": "a pause", "interrupt": "an interrupt (Ctrl-C)"}


class StopView:
    """The state of a stopped launch; made by DebugSession.view()."""

    def __init__(self, session):
        self.session = session
        self.tables = session.tables
        stop = session.stop
        self.stop = stop
        self.group = th.Group(session.control_block.control, self.tables, stop.ctx,
                              session.shared_bytes, session.arguments, session.grid,
                              session.block)
        self._threads: dict = {}

    # ---- threads -------------------------------------------------------------------------------

    def thread(self, index: int) -> th.ThreadState:
        found = self._threads.get(index)
        if found is None:
            found = self._threads[index] = self.group.thread(index)
        return found

    def focus_state(self) -> th.ThreadState:
        """The focused thread; a placeholder (status "not started" or "exited", no variables)
        when its block is not the one running."""
        index = self.group.index_of(self.session.focus)
        if index is not None:
            return self.thread(index)
        block, tid = divmod(self.session.focus, self.session.per_block)
        status = th.EXITED if block < self.group.first_block else th.NOT_STARTED
        return th.ThreadState(-1, unlinear(block, self.session.grid),
                              unlinear(tid, self.session.block), tid, self.session.focus,
                              status, 0, 0, None, 0, 0)

    def focus_note(self) -> str:
        """Why the focused thread shows nothing, when it does not."""
        state = self.focus_state()
        if state.index >= 0:
            return ""
        if state.status == th.EXITED:
            return (f"block {state.block} has finished (blocks run one after another on the "
                    "CPU target): its threads' variables are gone")
        return (f"block {state.block} has not started yet (blocks run one after another on the "
                "CPU target): step or continue to run until this thread begins")

    def warp(self, state: th.ThreadState | None = None) -> list[th.ThreadState]:
        state = state or self.focus_state()
        if state.index < 0:
            return []
        first = state.index - state.lane
        block_end = (state.index // self.session.per_block + 1) * self.session.per_block
        return [self.thread(k) for k in range(first, min(first + 32, block_end,
                                                          self.group.count))]

    def block_threads(self, state: th.ThreadState | None = None) -> list[th.ThreadState]:
        state = state or self.focus_state()
        if state.index < 0:
            return []
        first = state.index - state.linear
        return [self.thread(k) for k in range(first, first + self.session.per_block)]

    def where(self):
        """The focused thread's call stack, outermost first."""
        state = self.focus_state()
        return self.tables.stack(state.site) if state.site else []

    # ---- variables -----------------------------------------------------------------------------

    def variables(self, state: th.ThreadState | None = None) -> list[Variable]:
        state = state or self.focus_state()
        level = self.session.frame_level if state.global_index == self.session.focus else None
        return self.group.variables(state, level)

    def lookup(self, name: str, state: th.ThreadState | None = None) -> Variable | None:
        for variable in self.variables(state):
            if variable.name == name:
                return variable
        return None

    def across(self, name: str, threads: list[th.ThreadState]) -> list[Row]:
        """`name` in each of `threads` beside the focused thread: which hold another value,
        and which have diverged (are elsewhere in the code, or exited, or not started)."""
        focus = self.focus_state()
        mine = self.lookup(name, focus) if focus.index >= 0 else None
        rows = []
        for state in threads:
            var = self.lookup(name, state) if state.site else None
            value = None if var is None else var.value
            differs = (mine is None) != (var is None) or (
                var is not None and not same_value(var.value, mine.value))
            diverged = state.site != focus.site or \
                (state.status in (th.EXITED, th.NOT_STARTED)) != \
                (focus.status in (th.EXITED, th.NOT_STARTED))
            rows.append(Row(state, value, differs, diverged))
        return rows

    def shared_arrays(self) -> list[tuple[str, ArrayValue]]:
        """The focused thread's variables that are views of its block's shared memory."""
        state = self.focus_state()
        if state.index < 0:
            return []
        out, seen = [], set()
        for variable in self.variables(state):
            value = variable.value
            if isinstance(value, ArrayValue) and value.space == "shared" and \
                    (value.data, value.shape) not in seen:
                seen.add((value.data, value.shape))
                out.append((variable.name, value))
        return out

    def barrier_waits(self) -> list[tuple[str, int, int]]:
        """(what, line, threads waiting there) for the focused block's barriers, plus how many
        threads exited or have not started ("exited"/"not started", 0, count)."""
        counts: Counter = Counter()
        for state in self.block_threads():
            if state.barrier is not None and state.status == th.WAITING:
                counts[(state.barrier[3], state.barrier[1])] += 1
            elif state.status in (th.EXITED, th.NOT_STARTED):
                counts[(state.status, 0)] += 1
        return [(what, line, n) for (what, line), n in sorted(counts.items(),
                                                               key=lambda kv: kv[0][1])]

    def evaluate(self, expression: str):
        """A Python expression over the focused thread's variables (arrays as read-only numpy
        views, numbers as numpy scalars), e.g. `a[i] * 2` or `tile.sum()`."""
        namespace = {"np": np}
        for variable in self.variables():
            namespace[variable.name] = _python_value(variable.value)
        try:
            return eval(compile(expression, "<debugger>", "eval"), {"__builtins__": __builtins__},
                        namespace)
        except SyntaxError as exc:
            raise DebuggerError(f"cannot read {expression!r}: {exc.msg}",
                                hint="write a Python expression, e.g. p a[i] + 1") from None

    # ---- text ----------------------------------------------------------------------------------

    def headline(self) -> str:
        """One sentence: which thread stopped where and why, and who else waits."""
        stop = self.stop
        site = self.tables.site(stop.site)
        where = f"line {site.line} of {describe_filename(site.filename)}" if site.line else \
            "its start"
        text = (f"'{self.session.kernel}' stopped at {_REASONS.get(stop.reason, stop.reason)}: "
                f"thread {stop.thread} of block {stop.block}, {where}")
        if stop.reason == "barrier" and stop.barrier is not None:
            text += f", about to wait at {stop.barrier[3]} (line {stop.barrier[1]})"
        if stop.error is not None:
            text += f"\n{type(stop.error).__name__}: {getattr(stop.error, 'message', stop.error)}"
        return f"{text}\n{self.others()}"

    def others(self) -> str:
        """How many other threads wait, and where: this block, blocks not started, done."""
        s = self.session
        in_group = [self.thread(k) for k in range(self.group.count)]
        alive = sum(1 for st in in_group
                    if st.status != th.EXITED and st.global_index != self.stop.global_index)
        done_blocks = self.group.first_block
        group_blocks = max(1, self.group.count // s.per_block)
        later = s.total_threads - (done_blocks + group_blocks) * s.per_block
        exited = sum(1 for st in in_group if st.status == th.EXITED
                     and st.global_index != self.stop.global_index)
        waiting = alive + later
        return (f"{waiting:,} other thread{'s' if waiting != 1 else ''} of {s.total_threads:,} "
                f"wait ({alive:,} in the running block{'s' if group_blocks > 1 else ''}, "
                f"{later:,} in blocks not started yet); "
                f"{done_blocks * s.per_block + exited:,} other{'s' if exited != 1 else ''} "
                "finished")

    def source(self, context: int = 5) -> list[tuple[int, str, bool]]:
        """(line, text, is the focused thread's line) around the focused thread's line."""
        state = self.focus_state()
        site = self.tables.site(state.site or self.stop.site)
        first = max(1, site.line - context)
        return [(n, linecache.getline(site.filename, n).rstrip("\n"), n == site.line)
                for n in range(first, site.line + context + 1)
                if linecache.getline(site.filename, n)]


def _python_value(value):
    """A variable as `p` expressions see it: arrays as read-only numpy views (of records with
    fields as attributes, `recs[i].x`), a record as a numpy record (`r.x`), tuples item by
    item; what cannot be read stays the debugger's own value (its repr says why)."""
    if isinstance(value, tuple):
        return tuple(_python_value(item) for item in value)
    if isinstance(value, RecordValue):
        record = value.record()
        return record if record is not None else value
    if isinstance(value, ArrayValue):
        view = value.numpy()
        if view is None:
            return value
        return view.view(np.recarray) if view.dtype.names else view
    return value
