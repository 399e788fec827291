"""Memory layouts shared by the CPU target's debug variant and the debugger that drives it.

A debug launch hands generated code one DebugControl (through the launch Status): what makes a
thread stop, the breakpoint table, the hook the code calls to stop, the trace buffer. Every
thread has a debug area (allocated by the runner, its address in the thread context): a header
saying where the thread is, then the shadow copies of its variables (debug_lower.py lays them
out; the artifact's debug tables describe them). Offsets are in bytes.
"""

from __future__ import annotations

import ctypes

# ---- a thread's debug area: header ----
H_SITE = 0  # i32: the line site the thread reached last (0: it has not started)
H_STATE = 4  # i32: STATE_*
H_TRACED = 8  # i32: 1 when the launch traces this thread's lines
H_TID = 12  # i32: linear thread index in its block
H_BLOCK = 16  # i64: linear block index
H_GLOBAL = 24  # i64: global linear thread index (block * threads per block + tid)
H_CONTROL = 32  # ptr: the launch's DebugControl
H_BYTES = 48  # the variables start here

STATE_NOT_STARTED, STATE_RUNNING, STATE_EXITED = 0, 1, 2

# ---- events: why generated code calls the debugger ----
EV_LINE = 1  # before a statement (a line site), or at the top of a loop iteration
EV_BREAKPOINT = 2  # breakpoint()
EV_BARRIER = 3  # about to wait at a barrier or warp collective (its barrier site)
EV_ERROR = 4  # the launch's first error (index out of bounds, a reported raise)
EV_RAISE = 5  # a raise that ends the thread silently (as a GPU without debug=True does)
EV_EXIT = 6  # the thread is about to end

# the hook's answer: go on, or end the thread at once (the launch is being abandoned)
HOOK_CONTINUE, HOOK_ABORT = 0, 1
HOOK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)

# DebugControl.pause: a pause asked for by the debugger, made of an interrupt (Ctrl-C), or the
# watchdog's limit reached while the launch ran (time held stopped does not count)
PAUSE_ASKED, PAUSE_INTERRUPT, PAUSE_TIMEOUT = 1, 2, 3

# armed[site] values
ARMED_NONE, ARMED_ALL, ARMED_FILTERED = 0, 1, 2

# one trace record: i64 global thread, i32 site, i32 event, then the thread's debug area
TRACE_HEADER = 16


class DebugControl(ctypes.Structure):
    """One per debug launch; generated code reads it at every line check, Python writes it."""

    _fields_ = [
        ("any", ctypes.c_int32),  # nonzero: every line check calls the helper (step, pause...)
        ("abort", ctypes.c_int32),  # end every thread at its next check
        ("pause", ctypes.c_int32),  # stop the next thread that reaches a line
        ("step", ctypes.c_int32),  # the focused thread's lines call the hook
        ("barrier_step", ctypes.c_int32),  # the focused thread's barrier waits call the hook
        ("breakpoints", ctypes.c_int32),  # breakpoint() stops
        ("stop_on_error", ctypes.c_int32),  # the first error stops (post-mortem)
        ("tracing", ctypes.c_int32),  # traced threads' lines are recorded
        ("focus", ctypes.c_int64),  # global index of the focused thread, -1: none
        ("filter_tid", ctypes.c_int64),  # ARMED_FILTERED sites: this thread index (-1: any)
        ("filter_block", ctypes.c_int64),  # ... and this block index (-1: any)
        ("armed", ctypes.c_void_p),  # u8 per line site: ARMED_*
        ("hook", ctypes.c_void_p),  # HOOK: int32 hook(ctx, event, site)
        ("trace_ranges", ctypes.c_void_p),  # i64 [lo, hi) pairs of traced global indices
        ("n_trace_ranges", ctypes.c_int64),
        ("trace_buf", ctypes.c_void_p),
        ("trace_cap", ctypes.c_int64),  # bytes
        ("trace_len", ctypes.c_int64),  # bytes written (more than trace_cap: truncated)
        ("area_bytes", ctypes.c_int64),  # one thread's debug area
        ("group_ctxs", ctypes.c_void_p),  # the thread contexts of the blocks running now
        ("group_areas", ctypes.c_void_p),  # their debug areas
        ("group_threads", ctypes.c_int64),  # how many threads they are
        ("group_first_block", ctypes.c_int64),  # linear index of the first of those blocks
    ]


CONTROL_OFFSETS = {name: getattr(DebugControl, name).offset for name, _ in DebugControl._fields_}


def _no_stop(ctx: int, event: int, site: int) -> int:
    return HOOK_CONTINUE


_NO_STOP = HOOK(_no_stop)


class ControlBlock:
    """A DebugControl with the memory it points at (breakpoint table, trace ranges and buffer,
    the hook), kept alive together for one launch. Made for an artifact's debug tables; as
    made, nothing stops (a launch of the debug variant without a debugger)."""

    def __init__(self, artifact):
        self.control = DebugControl()
        self.armed = (ctypes.c_uint8 * max(1, len(artifact.debug_sites)))()
        self.control.armed = ctypes.addressof(self.armed)
        self.control.area_bytes = artifact.debug_area
        self.control.focus = self.control.filter_tid = self.control.filter_block = -1
        self.hook = _NO_STOP
        self.control.hook = ctypes.cast(self.hook, ctypes.c_void_p).value
        self.ranges = None
        self.trace = None

    def set_hook(self, fn) -> None:
        """fn(ctx, event, site) -> HOOK_*; called on the launching host thread."""
        self.hook = HOOK(fn)
        self.control.hook = ctypes.cast(self.hook, ctypes.c_void_p).value

    def set_trace(self, ranges: list, capacity: int) -> None:
        """Record the lines of the threads whose global index is in one of the [lo, hi)."""
        flat = [v for lo_hi in ranges for v in lo_hi]
        self.ranges = (ctypes.c_int64 * max(1, len(flat)))(*flat)
        self.control.trace_ranges = ctypes.addressof(self.ranges)
        self.control.n_trace_ranges = len(ranges)
        self.trace = ctypes.create_string_buffer(max(1, capacity))
        self.control.trace_buf = ctypes.addressof(self.trace)
        self.control.trace_cap = capacity
        self.control.trace_len = 0
        self.control.tracing = 1
        self.refresh()

    def refresh(self) -> None:
        """`any`: whether every line check must ask the helper."""
        c = self.control
        c.any = int(bool(c.step or c.barrier_step or c.pause or c.abort or c.tracing))
