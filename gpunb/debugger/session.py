"""A debug launch: the kernel's debug variant on a worker thread, stopped and resumed on demand.

The launch runs on its own Python thread (`gpunb-debug`), one host thread for the whole grid.
When generated code calls the hook and the debugger wants that event (a breakpoint, the
focused thread's next line while stepping, a pause, the first error), the hook publishes a Stop
and blocks until a command resumes it; meanwhile the controlling thread (a script, the terminal
front end, a notebook widget's callbacks) reads the stopped state (view.py). Every thread of
the launch waits while one is stopped, as on a GPU under a debugger.

At most one session is open per process: starting another (a cell run again, a new launch)
abandons the open one first, so a forgotten session never hangs the notebook. Abandoning sets a
flag that every line check sees: each thread ends at its next statement.
"""

from __future__ import annotations

import atexit
import ctypes
import math
import queue
import threading
import time
import weakref
from dataclasses import dataclass

from gpunb.backends.cpu import abi
from gpunb.backends.cpu import debug_abi as dbg
from gpunb.debugger.errors import DebuggerError, DebugQuit
from gpunb.debugger.request import DebugRequest, check_inside, dim3, linear, trace_ranges
from gpunb.debugger.tables import DebugTables
from gpunb.debugger.values import Region, read_i32, read_i64

RUNNING, STOPPED, FINISHED, FAILED, ABORTED = "running", "stopped", "finished", "failed", \
    "aborted"
STEP, NEXT, RETURN, BARRIER, CONTINUE = "step", "next", "return", "barrier", "continue"
# how long abandoning a session waits for its threads to end before saying it could not
ABANDON_SECONDS = 10.0
_open: weakref.WeakSet = weakref.WeakSet()  # sessions not finished yet
# the launch's `held` word, from the address of its cancel word (a thread's context has that)
_HELD_FROM_CANCEL = abi.Launch.held.offset - abi.Launch.cancel.offset


@dataclass(frozen=True, slots=True)
class Stop:
    """Why and where the launch stopped."""

    reason: str  # "breakpoint()", "breakpoint", "step", "barrier", "error", "raise", "exit",
    #              "pause"
    event: int
    site: int  # the line site of the stopped thread
    block: tuple
    thread: tuple
    global_index: int
    ctx: int
    barrier: tuple | None  # the barrier it is about to wait at (reason "barrier")
    error: Exception | None  # the launch's error (reason "error")


@dataclass(frozen=True, slots=True)
class Finished:
    """The launch ended: normally, with `error`, or abandoned (state ABORTED)."""

    state: str
    error: BaseException | None


class DebugSession:
    """One debug launch of a loaded debug variant (backends/cpu CpuProgram)."""

    def __init__(self, program, grid: tuple, block: tuple, dynamic_shared: int,
                 params_address: int, request: DebugRequest, arg_names: tuple = ()):
        self.program = program
        self.artifact = program.artifact
        self.kernel = self.artifact.name
        self.tables = DebugTables(self.artifact)
        self.grid, self.block = tuple(grid), tuple(block)
        self.per_block = math.prod(self.block)
        self.total_threads = self.per_block * math.prod(self.grid)
        self.dynamic_shared = dynamic_shared
        self.shared_bytes = (dynamic_shared + 15) // 16 * 16 + \
            self.artifact.resources.shared_bytes
        self.params = params_address
        self.request = request
        self.arg_names = arg_names
        self.arguments: list[Region] = []  # read at the first stop (view.py reads them)
        self._arguments_read = False
        self.control_block = dbg.ControlBlock(self.artifact)
        self.control_block.set_hook(self._hook)
        self.state = "new"
        self.stop: Stop | None = None
        self.error: BaseException | None = None
        self.ended_by = ""  # why the launch was abandoned
        self.focus = -1  # global index of the focused thread
        self.frame_level: int | None = None  # pdb's up/down: None is the innermost frame
        self.trace = None  # trace.Trace once a tracing launch ended
        self.listeners: list = []  # fn(session, event) on every stop and the end (widgets)
        self._events: queue.Queue = queue.Queue()
        self._resume: queue.Queue = queue.Queue()
        self._mode = CONTINUE
        self._step_depth = 0
        self._step_site = 0
        self._step_fresh = False
        self._view = None
        self._worker: threading.Thread | None = None
        self._wait_lock = threading.Lock()  # one thread takes events at a time
        self._apply_request(request)

    # ---- setup ---------------------------------------------------------------------------------

    def _apply_request(self, request: DebugRequest) -> None:
        c = self.control_block.control
        for filename, line in request.breaks:
            for site in self.tables.check_line(filename, line):
                self.control_block.armed[site] = dbg.ARMED_ALL
        if request.thread is not None or request.block is not None:
            if request.thread is not None:
                thread = dim3(request.thread, "thread")
                check_inside(thread, self.block, "thread", self.kernel)
                c.filter_tid = linear(thread, self.block)
            if request.block is not None:
                blk = dim3(request.block, "block")
                check_inside(blk, self.grid, "block", self.kernel)
                c.filter_block = linear(blk, self.grid)
            for k in range(len(self.tables.sites)):
                if self.control_block.armed[k] == dbg.ARMED_ALL:
                    self.control_block.armed[k] = dbg.ARMED_FILTERED
        c.breakpoints = int(request.breakpoints)
        c.stop_on_error = int(request.stop_on_error)
        if request.trace:
            ranges = trace_ranges(request.trace_threads, self.grid, self.block, self.kernel)
            self.control_block.set_trace(ranges, request.trace_bytes)
            c.breakpoints = 0
            c.stop_on_error = 0
        self.control_block.refresh()

    def start(self, timeout: float | None = None):
        """Start the launch; return its first event (a Stop or Finished), or None when it is
        still running after `timeout` seconds."""
        abandon_open_sessions("a new debug launch began")
        self.state = RUNNING
        _open.add(self)
        self._worker = threading.Thread(target=self._run, name="gpunb-debug", daemon=True)
        self._worker.start()
        return self.wait(timeout)

    def _run(self) -> None:
        error = None
        try:
            self.program.loaded.launch(self.grid, self.block, self.dynamic_shared, self.params,
                                       debug=self.control_block)
        except BaseException as exc:  # noqa: BLE001 - handed to the controlling thread
            error = exc
        self._events.put(("end", error))

    # ---- the hook (on the launch's thread) -----------------------------------------------------

    def _hook(self, ctx: int, event: int, site: int) -> int:
        try:
            return self._on_event(ctx, event, site)
        except BaseException as exc:  # noqa: BLE001 - never out of a ctypes callback
            self.error = DebuggerError(f"the debugger failed while stopping '{self.kernel}': "
                                       f"{type(exc).__name__}: {exc}", function=self.kernel)
            self._set_abort()
            return dbg.HOOK_ABORT

    def _on_event(self, ctx: int, event: int, site: int) -> int:
        c = self.control_block.control
        if c.abort:
            return dbg.HOOK_ABORT
        area = read_i64(ctx + abi.CTX_DEBUG_AREA)
        global_index = read_i64(area + dbg.H_GLOBAL)
        line_site = site if event in (dbg.EV_LINE, dbg.EV_BREAKPOINT, dbg.EV_ERROR,
                                      dbg.EV_RAISE) else read_i32(area + dbg.H_SITE)
        reason = self._reason(event, site, line_site, area, global_index)
        if reason is None:
            return dbg.HOOK_CONTINUE
        if reason == "timeout":  # the watchdog: end the launch with its error, naming the line
            self.error = self._timeout_error(line_site, ctx)
            self._set_abort()
            return dbg.HOOK_ABORT
        barrier = self.tables.barrier(site) if event == dbg.EV_BARRIER else None
        error = None
        if event == dbg.EV_ERROR:
            status = abi.Status.from_address(read_i64(ctx + abi.CTX_STATUS))
            error = self.program.loaded.error_from_status(status)
        if not self._arguments_read:  # the first stop comes before start() returns: the packed
            self._arguments_read = True  # parameters are still this launch's
            self.arguments = _argument_regions(self.artifact.signature, self.params,
                                               self.arg_names)
        blk = tuple(read_i32(ctx + abi.CTX_CTAID + 4 * k) for k in range(3))
        tid = tuple(read_i32(ctx + abi.CTX_TID + 4 * k) for k in range(3))
        stop = Stop(reason, event, line_site, blk, tid, global_index, ctx, barrier, error)
        held = ctypes.c_int32.from_address(read_i64(ctx + abi.CTX_CANCEL) + _HELD_FROM_CANCEL)
        held.value = 1  # the watchdog's clock stands still while the user looks
        try:
            self._events.put(("stop", stop))
            self._resume.get()  # the controlling thread set the control block for what is next
        finally:
            held.value = 0
        return dbg.HOOK_ABORT if c.abort else dbg.HOOK_CONTINUE

    def _timeout_error(self, line_site: int, ctx: int) -> BaseException:
        from gpunb.backends.cpu.stops import stopped_error

        error = stopped_error(self.artifact, abi.CANCEL_TIMEOUT)
        site = self.tables.site(line_site)
        tid = tuple(read_i32(ctx + abi.CTX_TID + 4 * k) for k in range(3))
        blk = tuple(read_i32(ctx + abi.CTX_CTAID + 4 * k) for k in range(3))
        return type(error)(f"{error.message} (thread {tid} of block {blk} was at line "
                           f"{site.line})", hint=error.hint)

    def _reason(self, event: int, site: int, line_site: int, area: int,
                global_index: int) -> str | None:
        """Whether this event stops the launch, and why (None: it runs on)."""
        c = self.control_block.control
        focused = global_index == c.focus
        if event == dbg.EV_BREAKPOINT:
            return "breakpoint()"
        if event in (dbg.EV_ERROR, dbg.EV_RAISE):
            c.stop_on_error = 0  # the first error only: the others are the same story
            return "error" if event == dbg.EV_ERROR else "raise"
        if event == dbg.EV_BARRIER:
            return "barrier" if focused and self._mode == BARRIER else None
        if event == dbg.EV_EXIT:
            return "exit" if focused and self._mode != CONTINUE else None
        if c.pause:
            why = {dbg.PAUSE_INTERRUPT: "interrupt", dbg.PAUSE_TIMEOUT: "timeout"}.get(
                c.pause, "pause")
            c.pause = 0
            self.control_block.refresh()
            return why
        if self._armed_for(site, area):
            return "breakpoint"
        if not (focused and c.step):
            return None
        if self._step_fresh:
            self._step_fresh = False
            if site == self._step_site:  # a loop's header after its statement: the same line
                return None
        depth = self.tables.depth(site)
        if self._mode == STEP or (self._mode == NEXT and depth <= self._step_depth) or \
                (self._mode == RETURN and depth < self._step_depth):
            return "step"
        return None

    def _armed_for(self, site: int, area: int) -> bool:
        mark = self.control_block.armed[site] if 0 < site < len(self.tables.sites) else 0
        if mark == dbg.ARMED_ALL:
            return True
        if mark != dbg.ARMED_FILTERED:
            return False
        c = self.control_block.control
        return (c.filter_tid < 0 or c.filter_tid == read_i32(area + dbg.H_TID)) and \
            (c.filter_block < 0 or c.filter_block == read_i64(area + dbg.H_BLOCK))

    # ---- the controlling thread ----------------------------------------------------------------

    def wait(self, timeout: float | None = None):
        """The next event (Stop or Finished), or None after `timeout` seconds of running."""
        if self.state in (FINISHED, FAILED, ABORTED):
            return Finished(self.state, self.error)
        if not self._wait_lock.acquire(timeout=-1 if timeout is None else timeout):
            return None  # another thread is waiting for this event
        try:
            try:
                kind, payload = self._events.get(timeout=timeout)
            except queue.Empty:
                return None
            return self._take(kind, payload)
        finally:
            self._wait_lock.release()

    def _take(self, kind: str, payload):
        self._view = None
        if kind == "stop":
            self.state, self.stop = STOPPED, payload
            self.focus = payload.global_index
            self.frame_level = None
            event = payload
        else:
            self._end(payload)
            event = Finished(self.state, self.error)
        for listener in list(self.listeners):
            listener(self, event)
        return event

    def _end(self, error: BaseException | None) -> None:
        self.stop = None
        if self.control_block.control.abort:
            self.state = ABORTED
            if self.error is None:
                self.error = DebugQuit(
                    f"the launch of '{self.kernel}' was abandoned from the debugger "
                    f"({self.ended_by or 'quit'}); its threads ended early, so what its "
                    "outputs hold is undefined", function=self.kernel,
                    hint="launch it again to get its results")
        else:
            self.error = self.error or error
            self.state = FAILED if self.error is not None else FINISHED
        if self.control_block.trace is not None:
            from gpunb.debugger.trace import Trace, remember

            self.trace = Trace.from_control(self)
            remember(self.trace)
        _open.discard(self)

    @property
    def finished(self) -> bool:
        return self.state in (FINISHED, FAILED, ABORTED)

    def require_stopped(self, what: str) -> None:
        if self.state != STOPPED:
            state = {RUNNING: "is running", "new": "has not started"}.get(
                self.state, "has ended")
            raise DebuggerError(f"cannot {what}: the launch of '{self.kernel}' {state}",
                                function=self.kernel,
                                hint="wait for it to stop (session.wait()), or start a new "
                                     "debug launch")

    def view(self):
        """What the stop shows (view.StopView): threads, variables, tables, shared memory."""
        self.require_stopped("inspect the launch")
        if self._view is None:
            from gpunb.debugger.view import StopView

            self._view = StopView(self)
        return self._view

    def _resume_with(self, mode: str, timeout: float | None):
        self.require_stopped(f"{mode}")
        c = self.control_block.control
        self._mode = mode
        c.focus = self.focus
        c.step = int(mode in (STEP, NEXT, RETURN))
        c.barrier_step = int(mode == BARRIER)
        focus_site = self.view().focus_state().site if self.focus >= 0 else 0
        self._step_depth = self.tables.depth(focus_site)
        self._step_site = focus_site
        self._step_fresh = True
        self.control_block.refresh()
        self.state, self.stop, self._view = RUNNING, None, None
        self._resume.put(mode)
        return self.wait(timeout)

    def step(self, timeout: float | None = None):
        """Run the focused thread to its next line, into device functions (pdb's `s`)."""
        return self._resume_with(STEP, timeout)

    def next(self, timeout: float | None = None):
        """To its next line in this function or a caller (pdb's `n`)."""
        return self._resume_with(NEXT, timeout)

    def step_out(self, timeout: float | None = None):
        """Until it returns from the device function it is in (pdb's `r`)."""
        return self._resume_with(RETURN, timeout)

    def continue_to_barrier(self, timeout: float | None = None):
        """Until the focused thread reaches its next barrier or warp collective."""
        return self._resume_with(BARRIER, timeout)

    def continue_(self, timeout: float | None = None):
        """Until the next breakpoint, error or the end of the launch (pdb's `c`)."""
        return self._resume_with(CONTINUE, timeout)

    def run_to_end(self, timeout: float | None = None):
        """Clear every breakpoint (breakpoint() too) and finish the launch."""
        self.clear_breakpoints()
        return self.continue_(timeout)

    def clear_breakpoints(self) -> None:
        for k in range(len(self.tables.sites)):
            self.control_block.armed[k] = dbg.ARMED_NONE
        self.control_block.control.breakpoints = 0

    def set_breakpoint(self, line: int, filename: str | None = None) -> list[int]:
        """Stop at `line` (of the kernel's file, or `filename`) in any thread; its sites."""
        sites = self.tables.check_line(filename, line)
        for site in sites:
            self.control_block.armed[site] = dbg.ARMED_ALL
        return sites

    def switch(self, thread=None, block=None) -> None:
        """Focus another thread (x, y, z) of the focused block, or of another block; nothing
        runs. Its state shows at once when its block is running, else `step` runs to it."""
        self.require_stopped("switch threads")
        current_block, current_tid = divmod(self.focus, self.per_block)
        if block is not None:
            blk = dim3(block, "block")
            check_inside(blk, self.grid, "block", self.kernel)
            current_block = linear(blk, self.grid)
        if thread is not None:
            tid = dim3(thread, "thread")
            check_inside(tid, self.block, "thread", self.kernel)
            current_tid = linear(tid, self.block)
        self.focus = current_block * self.per_block + current_tid
        self.frame_level = None
        self._view = None

    def pause(self, interrupt: bool = False) -> None:
        """Stop the next thread that reaches a line; `interrupt`: asked by a Ctrl-C, which the
        stop then names (as when the CPU target's own SIGINT handler reaches the thread first)."""
        c = self.control_block.control
        c.pause = dbg.PAUSE_INTERRUPT if interrupt else dbg.PAUSE_ASKED
        self.control_block.refresh()

    def abort(self, why: str = "quit", timeout: float = ABANDON_SECONDS) -> bool:
        """Abandon the launch: every thread ends at its next statement. True once it ended."""
        if self.finished:
            return True
        self.ended_by = self.ended_by or why
        self._set_abort()
        if self.state == STOPPED:
            self.state = RUNNING
            self._resume.put("abort")
        if self._wait_lock.locked():  # another thread waits (a widget's watcher): it sees the end
            deadline = time.monotonic() + timeout
            while not self.finished and time.monotonic() < deadline:
                time.sleep(0.02)
            return self.finished
        while not self.finished:
            event = self.wait(timeout)
            if event is None:
                return False
            if isinstance(event, Stop):  # a stop already published before the abort
                self._resume.put("abort")
                self.state = RUNNING
        return True

    def _set_abort(self) -> None:
        c = self.control_block.control
        c.abort = 1
        self.control_block.refresh()

    def result(self):
        """After the launch: raise its error (DebugQuit when abandoned), else return None."""
        if not self.finished:
            raise DebuggerError(f"the launch of '{self.kernel}' has not finished",
                                function=self.kernel, hint="continue it first")
        if self.error is not None:
            raise self.error

    def __repr__(self) -> str:
        where = ""
        if self.stop is not None:
            where = f", stopped at line {self.tables.site(self.stop.site).line}"
        return f"<gpunb debug session of '{self.kernel}': {self.state}{where}>"


def _argument_regions(signature: str, params_address: int, names: tuple) -> list[Region]:
    """The launch's argument arrays (readable at every stop), read once at the start: the
    packed parameters may be reused by a later launch."""
    from gpunb.backends.cpu.accesses import decode_arguments

    out = []
    for arg in decode_arguments(signature, params_address):
        lo, hi = arg.span()
        name = names[arg.position] if arg.position < len(names) else f"#{arg.position + 1}"
        out.append(Region(lo, hi, "global", f"argument '{name}'"))
    return out


def open_sessions() -> list[DebugSession]:
    return [s for s in list(_open) if not s.finished]


def abandon_open_sessions(why: str) -> None:
    """End every open session (their launches are abandoned); a DebuggerError when one does
    not end in time (a thread stuck where no line check runs)."""
    for session in open_sessions():
        if not session.abort(why):
            raise DebuggerError(
                f"the open debug session of '{session.kernel}' did not end within "
                f"{ABANDON_SECONDS:.0f} s of being abandoned ({why})", function=session.kernel,
                hint="a thread is stuck where the debugger cannot stop it (a recursive device "
                     "function); restart the kernel")


atexit.register(lambda: [s.abort("the process is exiting", 2.0) for s in open_sessions()])
