"""The threads of a stopped debug launch, read from their contexts and debug areas.

A debug launch runs one group of blocks at a time (one block, or the whole grid for a grid-sync
kernel) on one host thread; the runner tells the DebugControl where that group's thread contexts
and debug areas are. At a stop everything else is suspended, so this reads them directly: each
thread's ids, whether it has started, where it is (its last line, or the barrier it waits at),
and its variables as the compiled code last stored them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpunb.backends.cpu import abi
from gpunb.backends.cpu import debug_abi as dbg
from gpunb.debugger.request import unlinear
from gpunb.debugger.tables import DebugTables
from gpunb.debugger.values import Readable, Region, Variable, decode, read_i32, read_i64

# SUSPENDED: between two of its lines, waiting for its turn (released from a barrier, or
# started before the stopped thread's turn came)
NOT_STARTED, STOPPED, WAITING, EXITED, SUSPENDED = (
    "not started", "stopped", "waiting", "exited", "suspended")
_WAITS = {abi.WAIT_BLOCK: "block barrier", abi.WAIT_WARP: "warp", abi.WAIT_GRID: "grid barrier"}


@dataclass(frozen=True, slots=True)
class ThreadState:
    """One thread of the running group, as of the stop."""

    index: int  # in the group
    block: tuple
    thread: tuple
    linear: int  # threadIdx as one number (x fastest)
    global_index: int
    status: str  # NOT_STARTED, STOPPED, WAITING, EXITED or SUSPENDED
    site: int  # the last line site it reached (0: none)
    line: int
    barrier: tuple | None  # (file, line, col, what) of the barrier it waits at
    ctx: int
    area: int

    @property
    def lane(self) -> int:
        return self.linear % 32

    @property
    def warp(self) -> int:
        return self.linear // 32

    def where(self) -> str:
        """"at line 12", "waiting at cuda.syncthreads (line 9)", "exited after line 14"..."""
        if self.status == NOT_STARTED:
            return "not started"
        if self.status == WAITING and self.barrier is not None:
            return f"waiting at {self.barrier[3]} (line {self.barrier[1]})"
        if self.status == EXITED:
            return f"exited (last at line {self.line})" if self.line else "exited"
        if self.status == SUSPENDED:
            return f"at line {self.line} (waits for its turn)"
        return f"at line {self.line}"


class Group:
    """The threads of the blocks running at a stop; `current` is the context of the thread that
    stopped (its local memory is readable)."""

    def __init__(self, control, tables: DebugTables, current_ctx: int, shared_bytes: int,
                 arguments: list[Region], grid: tuple, block: tuple):
        self.tables = tables
        self.grid, self.block = grid, block
        self.per_block = block[0] * block[1] * block[2]
        self.ctxs = control.group_ctxs or 0
        self.areas = control.group_areas or 0
        self.count = int(control.group_threads)
        self.first_block = int(control.group_first_block)
        self.current_ctx = current_ctx
        self.shared_bytes = shared_bytes
        self.arguments = arguments

    def thread(self, index: int) -> ThreadState:
        ctx = self.ctxs + index * abi.CTX_SIZE
        area = self.areas + index * self.tables.area_bytes
        site = read_i32(area + dbg.H_SITE)
        state = read_i32(area + dbg.H_STATE)
        block_index, linear_tid = divmod(index, self.per_block)
        block_index += self.first_block
        if state == dbg.STATE_NOT_STARTED:  # the runner has not filled its context yet
            return ThreadState(index, unlinear(block_index, self.grid),
                               unlinear(linear_tid, self.block), linear_tid,
                               block_index * self.per_block + linear_tid, NOT_STARTED, 0, 0,
                               None, ctx, area)
        tid = tuple(read_i32(ctx + abi.CTX_TID + 4 * k) for k in range(3))
        block = tuple(read_i32(ctx + abi.CTX_CTAID + 4 * k) for k in range(3))
        wait = read_i32(ctx + abi.CTX_WAIT_KIND)
        barrier = None
        if state == dbg.STATE_EXITED:
            status = EXITED
        elif ctx == self.current_ctx:
            status = STOPPED
        elif wait != abi.WAIT_NONE:
            status = WAITING
            barrier = self.tables.barrier(read_i32(ctx + abi.CTX_SITE))
        else:
            status = SUSPENDED
        if ctx == self.current_ctx and wait != abi.WAIT_NONE:  # stopped at its barrier
            barrier = self.tables.barrier(read_i32(ctx + abi.CTX_SITE))
        return ThreadState(index, block, tid, read_i32(ctx + abi.CTX_LINEAR),
                           read_i64(area + dbg.H_GLOBAL), status, site,
                           self.tables.site(site).line, barrier, ctx, area)

    def threads(self) -> list[ThreadState]:
        return [self.thread(k) for k in range(self.count)]

    def index_of(self, global_index: int) -> int | None:
        """The group index of a thread by its global index, when it runs in this group."""
        block, tid = divmod(global_index, self.per_block)
        k = (block - self.first_block) * self.per_block + tid
        return k if block >= self.first_block and 0 <= k < self.count else None

    def readable(self, state: ThreadState) -> Readable:
        """Memory readable for this thread's variables: the arguments, its block's shared
        memory, and - for the stopped thread - its own local memory."""
        shared = read_i64(state.ctx + abi.CTX_SHARED) & (2**64 - 1)
        regions = list(self.arguments)
        if shared and self.shared_bytes:
            regions.append(Region(shared, shared + self.shared_bytes, "shared",
                                  f"shared memory of block {state.block}"))
        return Readable(regions, local=state.ctx == self.current_ctx)

    def variables(self, state: ThreadState, level: int | None = None) -> list[Variable]:
        """The variables of one of the thread's frames (None: the innermost) that hold a
        value, in name order."""
        if state.status == NOT_STARTED or not state.site:
            return []
        stack = self.tables.stack(state.site)
        if not stack:
            return []
        frame = stack[-1] if level is None else stack[max(0, min(level, len(stack) - 1))]
        body = self.tables.bodies[frame.body]
        readable = self.readable(state)
        out = []
        for name, offset in sorted(body.names.items()):
            number = read_i32(state.area + offset)
            if not 0 < number <= len(body.definitions):
                continue
            definition = body.definitions[number - 1]
            value = decode(definition.layout, state.area, readable, definition.type)
            out.append(Variable(name, definition.type, value, definition.kind, body.function))
        return out
