"""Generated host code that runs a range of blocks: plain loops, or a coroutine block scheduler.

`void <symbol>(ptr launch, ptr guard)` is the entry the guard's job calls once per host thread
(abi.Launch; guard_ir.py: the host thread's guard record, where the runner notes what it
allocates so that a launch abandoned mid-way - a stop, a fault - still frees it).
For barrier kernels it starts every thread of a block (each runs to its first suspend point), then
repeatedly resumes the threads that may run: a warp whose live lanes all wait at a warp barrier,
else - when every live thread waits at the same block barrier - the whole block. Threads that
exited count as arrived (as on the GPU). Threads waiting at different barriers, or at a warp
barrier their warp cannot complete, are a deadlock on a GPU: the scheduler stops and reports both
barrier sites in the launch status instead of hanging. The scheduler is the same for every
kernel: runtime_lib.py compiles it once per process and the runner calls it by name.
"""

from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from gpunb.backends.cpu import abi, cluster_runner, cluster_schedule
from gpunb.backends.cpu.launch_memory import (
    aligned_shared,
    check_allocations,
    free_all,
    note_allocations,
    note_current,
    publish_group,
    shared_block_stride,
)
from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import declare


def _at(b, base, offset):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def _i32(v):
    return ir.Constant(dm.i32, v)


def _i64(v):
    return ir.Constant(dm.i64, v)


@contextmanager
def _loop(b: ir.IRBuilder, start, stop, name: str, step=None):
    """for i in range(start, stop, step): ... ; yields (i, break_block)."""
    fn = b.function
    pre = b.block
    head = fn.append_basic_block(f"{name}.head")
    body = fn.append_basic_block(f"{name}.body")
    done = fn.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(start.type, name=name)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, stop), body, done)
    b.position_at_end(body)
    yield i, done
    if not b.block.is_terminated:
        nxt = b.add(i, step if step is not None else ir.Constant(i.type, 1))
        i.add_incoming(nxt, b.block)
        b.branch(head)
    b.position_at_end(done)


# void gpunb_schedule(handles, ctxs, i32 n, i32 per_block, status, cancel, guard)
SCHEDULER_ARGS = (dm.ptr, dm.ptr, dm.i32, dm.i32, dm.ptr, dm.ptr, dm.ptr)


def emit_runner(module: ir.Module, symbol: str, body: ir.Function, slot_types: list,
                coroutine: bool, cooperative: bool = False,
                workgroup: bool = False, scratch_per_thread: int = 0,
                async_state: bool = False, scheduler: str = "",
                debug_area: int = 0, location=None, cluster: tuple | None = None,
                record: bool = False) -> ir.Function:
    """The entry: per block, one body call per thread (coroutines), or one call per block whose
    body loops over the threads itself (workgroup mode: the context carries threadIdx 0, and
    `scratch_per_thread` bytes per thread of the block hold its per-thread variables: allocated
    here once, reused by every block this host thread runs). With `async_state` each thread
    also gets an area for its queued asynchronous copies (async_state.py), cleared per block.
    The debug variant (coroutines) gives each thread `debug_area` bytes, zeroed per block, and
    tells the launch's DebugControl which threads run now. `scheduler`: the name of the
    coroutines' scheduler, declared here (runtime_lib.scheduler_symbol). `location(fn)`: the
    debug location of the runner's own code, where the module has line tables. `cluster`: the
    cluster dims (x, y, z) of a kernel whose clusters run as one group each (cluster_runner.py:
    the group's blocks are the cluster's, in rank order)."""
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, dm.ptr]), symbol)
    launch, guard = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if location is not None:  # (fn) -> the runner's debug location (codesites.py)
        b.debug_metadata = location(fn)
    lo = abi.LAUNCH_OFFSETS
    grid = [b.load(_at(b, launch, lo["grid"] + 4 * k), typ=dm.i32) for k in range(3)]
    block = [b.load(_at(b, launch, lo["block"] + 4 * k), typ=dm.i32) for k in range(3)]
    begin = b.load(_at(b, launch, lo["block_begin"]), typ=dm.i64)
    end = b.load(_at(b, launch, lo["block_end"]), typ=dm.i64)
    shared_bytes = b.load(_at(b, launch, lo["shared_bytes"]), typ=dm.i64)
    shared_stride = shared_block_stride(b, shared_bytes, cooperative or cluster is not None)
    dyn_shared = b.load(_at(b, launch, lo["dyn_shared"]), typ=dm.i64)
    status = b.load(_at(b, launch, lo["status"]), typ=dm.ptr)
    params = b.load(_at(b, launch, lo["params"]), typ=dm.ptr)
    slots = []
    for k, st in enumerate(slot_types):
        slot_ptr = b.load(b.gep(params, [_i64(k)], source_etype=dm.ptr), typ=dm.ptr)
        slots.append(b.load(slot_ptr, typ=st))
    nthreads = b.mul(b.mul(block[0], block[1]), block[2])
    chunk = b.load(_at(b, launch, lo["chunk"]), typ=dm.i64)
    # blocks scheduled together: one, (grid sync) every block of the launch (one chunk), or
    # (clusters) the blocks of one cluster
    per_group = b.sub(end, begin) if cooperative else _i64(1)
    if cluster is not None:
        per_group = _i64(cluster_runner.cluster_size(cluster))
        chunk = cluster_runner.whole_clusters(b, chunk, per_group)  # claims of whole clusters
    malloc = declare(module, "malloc", dm.ptr, [dm.i64])
    free = declare(module, "free", dm.void, [dm.ptr])
    memset = declare(module, "llvm.memset.p0.i64", dm.void, [dm.ptr, dm.i8, dm.i64, dm.i1])
    shared_total = b.mul(shared_stride, per_group)
    shared_block, shared = aligned_shared(b, malloc, shared_total)
    group_threads = b.mul(b.zext(nthreads, dm.i64), per_group)
    n_ctx = group_threads if coroutine else _i64(1)
    ctx_bytes = b.mul(n_ctx, _i64(abi.CTX_SIZE))
    ctxs = b.call(malloc, [ctx_bytes])
    b.call(memset, [ctxs, ir.Constant(dm.i8, 0), ctx_bytes, ir.Constant(dm.i1, 0)])
    handles = b.call(malloc, [b.mul(group_threads, _i64(8))]) if coroutine else None
    scratch = None
    if scratch_per_thread:
        scratch = b.call(malloc, [b.mul(b.zext(nthreads, dm.i64), _i64(scratch_per_thread))])
    areas = areas_bytes = None
    if async_state:
        from gpunb.backends.cpu import async_state as st

        areas_bytes = b.mul(group_threads, _i64(st.AREA_BYTES))
        areas = b.call(malloc, [areas_bytes])
    debug_areas = debug_bytes = control = None
    if debug_area:
        debug_bytes = b.mul(group_threads, _i64(debug_area))
        debug_areas = b.call(malloc, [debug_bytes])
        control = b.load(_at(b, status, abi.STATUS_OFFSETS["debug"]), typ=dm.ptr)
    # the debug areas (coroutine mode: no scratch) take the scratch's place in the guard record
    assert scratch is None or debug_areas is None, "the debug variant runs coroutines"
    per_thread = scratch if scratch is not None else debug_areas
    note_allocations(b, guard, shared_block, ctxs, n_ctx, handles, per_thread, areas)
    check_allocations(b, status, free, shared_block, ctxs, handles, per_thread, areas)
    cancel = _at(b, launch, lo["cancel"])
    # claim `chunk` blocks at a time until the launch has none left (every host thread of the
    # launch runs this function on the same Launch)
    claim_bb, claimed_bb, finish_bb = (fn.append_basic_block(n) for n in
                                       ("claim", "claimed", "finish"))
    b.branch(claim_bb)
    b.position_at_end(claim_bb)
    first_claimed = b.atomic_rmw("add", _at(b, launch, lo["next_block"]), chunk, "monotonic")
    b.cbranch(b.icmp_signed("<", first_claimed, end), claimed_bb, finish_bb)
    b.position_at_end(claimed_bb)
    claim_end = b.add(first_claimed, chunk)
    claim_end = b.select(b.icmp_signed("<", claim_end, end), claim_end, end)
    with _loop(b, first_claimed, claim_end, "group", step=per_group) as (first, _):
        b.call(memset, [shared, ir.Constant(dm.i8, 0), shared_total, ir.Constant(dm.i1, 0)])
        if areas is not None:
            b.call(memset, [areas, ir.Constant(dm.i8, 0), areas_bytes, ir.Constant(dm.i1, 0)])
        if debug_areas is not None:
            publish_group(b, memset, control, ctxs, debug_areas, debug_bytes, group_threads,
                          first)
        with _loop(b, _i64(0), per_group, "block") as (local, _):
            blk = b.add(first, local)
            cx, cy, cz = cluster_runner.block_of(b, blk, grid, cluster)
            block_shared = b.gep(shared, [b.mul(local, shared_stride)], source_etype=dm.i8)
            calls = _i32(1) if workgroup else nthreads
            with _loop(b, _i32(0), calls, "thread") as (tid, _):
                index = b.add(b.mul(local, b.zext(nthreads, dm.i64)), b.zext(tid, dm.i64))
                ctx = b.gep(ctxs, [b.mul(index, _i64(abi.CTX_SIZE))] if coroutine
                            else [_i64(0)], source_etype=dm.i8)
                tx = b.urem(tid, block[0])
                ty = b.urem(b.udiv(tid, block[0]), block[1])
                tz = b.udiv(tid, b.mul(block[0], block[1]))
                for k, v in enumerate((tx, ty, tz)):
                    b.store(v, _at(b, ctx, abi.CTX_TID + 4 * k))
                for k, v in enumerate((cx, cy, cz)):
                    b.store(v, _at(b, ctx, abi.CTX_CTAID + 4 * k))
                for k in range(3):
                    b.store(block[k], _at(b, ctx, abi.CTX_NTID + 4 * k))
                    b.store(grid[k], _at(b, ctx, abi.CTX_NCTAID + 4 * k))
                b.store(block_shared, _at(b, ctx, abi.CTX_SHARED))
                b.store(status, _at(b, ctx, abi.CTX_STATUS))
                b.store(dyn_shared, _at(b, ctx, abi.CTX_DYN_SHARED))
                b.store(b.urem(tid, _i32(32)), _at(b, ctx, abi.CTX_LANE))
                b.store(b.udiv(tid, _i32(32)), _at(b, ctx, abi.CTX_WARP))
                b.store(tid, _at(b, ctx, abi.CTX_LINEAR))
                if scratch is not None:
                    b.store(scratch, _at(b, ctx, abi.CTX_SCRATCH))
                if areas is not None:
                    area = b.gep(areas, [b.mul(index, _i64(st.AREA_BYTES))], source_etype=dm.i8)
                    b.store(area, _at(b, ctx, abi.CTX_ASYNC))
                    b.store(shared_bytes, _at(b, area, st.AREA_SHARED_BYTES))
                if debug_areas is not None:
                    area = b.gep(debug_areas, [b.mul(index, _i64(debug_area))],
                                 source_etype=dm.i8)
                    b.store(area, _at(b, ctx, abi.CTX_DEBUG_AREA))
                b.store(_i32(abi.WAIT_NONE), _at(b, ctx, abi.CTX_WAIT_KIND))
                for offset in (abi.CTX_BAR_EPOCH, abi.CTX_WARP_EPOCH, abi.CTX_GRID_EPOCH):
                    b.store(_i32(0), _at(b, ctx, offset))
                if cluster is not None:
                    cluster_runner.start_thread(b, ctx, record)
                b.store(cancel, _at(b, ctx, abi.CTX_CANCEL))
                b.store(guard, _at(b, ctx, abi.CTX_GUARD))
                # a coroutine's context holds its own thread; a work-group one only the block's
                b.store(_i32(int(coroutine)), _at(b, ctx, abi.CTX_TID_KNOWN))
                note_current(b, guard, ctx)
                result = b.call(body, [ctx] + slots)
                if coroutine:
                    b.store(result, b.gep(handles, [index], source_etype=dm.ptr))
        if coroutine:
            schedule = declare(module, scheduler, dm.void, list(SCHEDULER_ARGS))
            b.call(schedule, [handles, ctxs, b.trunc(group_threads, dm.i32), nthreads, status,
                               cancel, guard])
        code = b.load(status, typ=dm.i32)
        # an error, or the launch is to stop (a stop within a block jumps out of the kernel;
        # between blocks it is seen here)
        stopping = b.icmp_signed("!=", b.load_atomic(cancel, "monotonic", 4, typ=dm.i32),
                                 _i32(0))
        stop = b.or_(b.icmp_signed("!=", code, _i32(0)), stopping)
        cont = fn.append_basic_block("group.continue")
        early = fn.append_basic_block("group.error")
        b.cbranch(stop, early, cont)
        b.position_at_end(early)
        free_all(b, free, shared_block, ctxs, handles, per_thread, areas)
        b.ret_void()
        b.position_at_end(cont)
    b.branch(claim_bb)
    b.position_at_end(finish_bb)
    free_all(b, free, shared_block, ctxs, handles, per_thread, areas)
    b.ret_void()
    return fn


class _Scheduler:
    """Builds gpunb_schedule: resumes warps, blocks and the grid as their barriers complete."""

    def __init__(self, module: ir.Module, fn: ir.Function):
        self.module, self.fn = module, fn
        self.handles, self.ctxs, self.n, self.per_block, self.status, self.cancel, self.guard = \
            fn.args
        self.done_fn = declare(module, "llvm.coro.done", dm.i1, [dm.ptr])
        self.resume_fn = declare(module, "llvm.coro.resume", dm.void, [dm.ptr])
        self.destroy_fn = declare(module, "llvm.coro.destroy", dm.void, [dm.ptr])
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        b = self.b
        self.slots = {name: b.alloca(dm.i32, name=name) for name in
                      ("progressed", "ready", "any", "lanes", "live", "waiting", "count", "site",
                       "site2")}

    def handle(self, i):
        b = self.b
        return b.load(b.gep(self.handles, [b.zext(i, dm.i64)], source_etype=dm.ptr), typ=dm.ptr)

    def ctx(self, i):
        b = self.b
        return b.gep(self.ctxs, [b.mul(b.zext(i, dm.i64), _i64(abi.CTX_SIZE))],
                     source_etype=dm.i8)

    def get(self, name):
        return self.b.load(self.slots[name])

    def put(self, name, value):
        if value.type == dm.i1:
            value = self.b.zext(value, dm.i32)
        self.b.store(value, self.slots[name])

    def for_live(self, lo, hi, name, body):
        """for i in [lo, hi) with a live (not finished) coroutine: body(i)."""
        b = self.b
        with _loop(b, lo, hi, name) as (i, _):
            live_bb = self.fn.append_basic_block(f"{name}.live")
            next_bb = self.fn.append_basic_block(f"{name}.next")
            b.cbranch(b.call(self.done_fn, [self.handle(i)]), next_bb, live_bb)
            b.position_at_end(live_bb)
            body(i)
            b.branch(next_bb)
            b.position_at_end(next_bb)

    def scan(self, lo, hi, kind: int, name: str):
        """Count live threads in [lo, hi), those waiting at `kind`, their true predicates and
        whether they wait at one barrier site (site2 == -1)."""
        b = self.b
        for slot, v in (("live", 0), ("waiting", 0), ("count", 0), ("site", -1), ("site2", -1)):
            self.put(slot, _i32(v))

        def visit(i):
            c = self.ctx(i)
            self.put("live", b.add(self.get("live"), _i32(1)))
            at = b.icmp_signed("==", b.load(_at(b, c, abi.CTX_WAIT_KIND), typ=dm.i32),
                               _i32(kind))
            self.put("waiting", b.add(self.get("waiting"), b.zext(at, dm.i32)))
            pred = b.icmp_signed("!=", b.load(_at(b, c, abi.CTX_PRED), typ=dm.i32), _i32(0))
            self.put("count", b.add(self.get("count"), b.zext(b.and_(at, pred), dm.i32)))
            s = b.load(_at(b, c, abi.CTX_SITE), typ=dm.i32)
            first = self.get("site")
            unset = b.icmp_signed("==", first, _i32(-1))
            self.put("site", b.select(unset, s, first))
            differs = b.and_(b.not_(unset), b.icmp_signed("!=", s, first))
            self.put("site2", b.select(differs, s, self.get("site2")))

        self.for_live(lo, hi, name, visit)
        live = self.get("live")
        return b.and_(b.and_(b.icmp_signed(">", live, _i32(0)),
                             b.icmp_signed("==", self.get("waiting"), live)),
                      b.icmp_signed("==", self.get("site2"), _i32(-1)))

    def resume(self, i) -> None:
        note_current(self.b, self.guard, self.ctx(i))
        self.b.call(self.resume_fn, [self.handle(i)])

    def release(self, lo, hi, name: str):
        b = self.b
        count, live = self.get("count"), self.get("live")

        def wake(i):
            c = self.ctx(i)
            b.store(count, _at(b, c, abi.CTX_RESULT))
            b.store(live, _at(b, c, abi.CTX_WAITING))
            b.store(_i32(abi.WAIT_NONE), _at(b, c, abi.CTX_WAIT_KIND))

        self.for_live(lo, hi, name + ".wake", wake)
        self.for_live(lo, hi, name + ".resume", self.resume)
        self.put("progressed", _i32(1))

    def lane_bit(self, i, lo):
        return self.b.shl(_i32(1), self.b.sub(i, lo))

    def at_warp_site(self, i, site):
        b = self.b
        c = self.ctx(i)
        kind = b.load(_at(b, c, abi.CTX_WAIT_KIND), typ=dm.i32)
        same = b.icmp_signed("==", b.load(_at(b, c, abi.CTX_SITE), typ=dm.i32), site)
        return b.and_(b.icmp_signed("==", kind, _i32(abi.WAIT_WARP)), same)

    def warps(self, n_blocks):
        """Per warp, per warp-collective site with waiting lanes: the lanes waiting there form
        the group; it runs once every live lane its mask names is in it (lanes that exited or
        do not exist cannot arrive: exited ones named by the mask are reported)."""
        b = self.b
        warps_per_block = b.udiv(b.add(self.per_block, _i32(31)), _i32(32))
        with _loop(b, _i32(0), b.mul(n_blocks, warps_per_block), "warp") as (w, _):
            blk = b.udiv(w, warps_per_block)
            block_end = b.mul(b.add(blk, _i32(1)), self.per_block)
            lo = b.add(b.mul(blk, self.per_block), b.mul(b.urem(w, warps_per_block), _i32(32)))
            hi = b.add(lo, _i32(32))
            hi = b.select(b.icmp_signed("<", hi, block_end), hi, block_end)
            self.put("live", _i32(0))
            self.for_live(lo, hi, "wlive", lambda i: self.put(
                "live", b.or_(self.get("live"), self.lane_bit(i, lo))))
            self.put("any", _i32(0))  # lanes already grouped this round
            with _loop(b, lo, hi, "leader") as (i, _):
                lead_bb = self.fn.append_basic_block("leader.try")
                next_bb = self.fn.append_basic_block("leader.next")
                bit = self.lane_bit(i, lo)
                fresh = b.icmp_signed("==", b.and_(self.get("any"), bit), _i32(0))
                c = self.ctx(i)
                waits = b.icmp_signed("==", b.load(_at(b, c, abi.CTX_WAIT_KIND), typ=dm.i32),
                                      _i32(abi.WAIT_WARP))
                alive = b.icmp_unsigned("!=", b.and_(self.get("live"), bit), _i32(0))
                b.cbranch(b.and_(b.and_(fresh, waits), alive), lead_bb, next_bb)
                b.position_at_end(lead_bb)
                site = b.load(_at(b, c, abi.CTX_SITE), typ=dm.i32)
                mask = b.load(_at(b, c, abi.CTX_MASK), typ=dm.i32)
                self.put("lanes", _i32(0))

                def join(j):
                    hit = b.zext(self.at_warp_site(j, site), dm.i32)
                    self.put("lanes", b.or_(self.get("lanes"),
                                            b.mul(hit, self.lane_bit(j, lo))))

                self.for_live(lo, hi, "wgroup", join)
                group = self.get("lanes")
                self.put("any", b.or_(self.get("any"), group))
                missing = b.and_(b.and_(mask, self.get("live")), b.not_(group))
                run_bb = self.fn.append_basic_block("wgroup.run")
                b.cbranch(b.icmp_signed("==", missing, _i32(0)), run_bb, next_bb)
                b.position_at_end(run_bb)
                self.release_group(lo, hi, group, mask, site, i)
                b.branch(next_bb)
                b.position_at_end(next_bb)

    def release_group(self, lo, hi, group, mask, site, leader):
        """Snapshot every member's contribution first (members that run ahead to the next
        collective cannot overwrite what the others still read), then wake and resume them."""
        b = self.b
        n = b.sub(hi, lo)
        exists = b.select(b.icmp_signed(">=", n, _i32(32)), _i32(-1),
                          b.sub(b.shl(_i32(1), n), _i32(1)))
        exited = b.and_(b.and_(mask, exists), b.not_(self.get("live")))
        report_bb = self.fn.append_basic_block("wgroup.exited")
        go_bb = self.fn.append_basic_block("wgroup.go")
        b.cbranch(b.icmp_signed("!=", exited, _i32(0)), report_bb, go_bb)
        b.position_at_end(report_bb)
        self.warp_error(site, exited, b.sub(leader, lo), leader)
        b.branch(go_bb)
        b.position_at_end(go_bb)

        def member(i):
            return b.icmp_unsigned("!=", b.and_(group, self.lane_bit(i, lo)), _i32(0))

        def for_members(name, body):
            def visit(i):
                yes = self.fn.append_basic_block(f"{name}.member")
                no = self.fn.append_basic_block(f"{name}.skip")
                b.cbranch(member(i), yes, no)
                b.position_at_end(yes)
                body(i)
                b.branch(no)
                b.position_at_end(no)
            self.for_live(lo, hi, name, visit)

        def snapshot(i):
            c = self.ctx(i)
            b.store(b.load(_at(b, c, abi.CTX_XCHG), typ=dm.i64), _at(b, c, abi.CTX_SNAPSHOT))

        def wake(i):
            c = self.ctx(i)
            b.store(group, _at(b, c, abi.CTX_RESULT))
            b.store(_i32(abi.WAIT_NONE), _at(b, c, abi.CTX_WAIT_KIND))

        for_members("wsnap", snapshot)
        for_members("wwake", wake)
        for_members("wresume", self.resume)
        self.put("progressed", _i32(1))

    def warp_error(self, site, missing, lane, thread, how: int = 0):
        """Record a warp-mask error (first error of the launch wins); threads keep running."""
        b = self.b
        so = abi.STATUS_OFFSETS
        pair = b.cmpxchg(self.status, _i32(0), _i32(abi.ERROR_WARP_MASK), "seq_cst", "seq_cst")
        record_bb = self.fn.append_basic_block("warperr.record")
        done_bb = self.fn.append_basic_block("warperr.done")
        b.cbranch(b.extract_value(pair, 1), record_bb, done_bb)
        b.position_at_end(record_bb)
        b.store(site, _at(b, self.status, so["site"]))
        b.store(missing, _at(b, self.status, so["mask"]))
        b.store(lane, _at(b, self.status, so["lane"]))
        b.store(_i32(how), _at(b, self.status, so["count"]))
        c = self.ctx(thread)
        for k in range(3):
            b.store(b.load(_at(b, c, abi.CTX_TID + 4 * k), typ=dm.i32),
                    _at(b, self.status, so["tid"] + 4 * k))
            b.store(b.load(_at(b, c, abi.CTX_CTAID + 4 * k), typ=dm.i32),
                    _at(b, self.status, so["ctaid"] + 4 * k))
        b.branch(done_bb)
        b.position_at_end(done_bb)

    def blocks(self, n_blocks):
        b = self.b
        with _loop(b, _i32(0), n_blocks, "blk") as (blk, _):
            lo = b.mul(blk, self.per_block)
            hi = b.add(lo, self.per_block)
            ok = self.scan(lo, hi, abi.WAIT_BLOCK, "bscan")
            run_bb = self.fn.append_basic_block("blk.run")
            skip_bb = self.fn.append_basic_block("blk.skip")
            b.cbranch(ok, run_bb, skip_bb)
            b.position_at_end(run_bb)
            self.release(lo, hi, "brel")
            b.branch(skip_bb)
            b.position_at_end(skip_bb)

    def grid(self):
        b = self.b
        ok = self.scan(_i32(0), self.n, abi.WAIT_GRID, "gscan")
        run_bb = self.fn.append_basic_block("grid.run")
        skip_bb = self.fn.append_basic_block("grid.skip")
        b.cbranch(ok, run_bb, skip_bb)
        b.position_at_end(run_bb)
        self.release(_i32(0), self.n, "grel")
        b.branch(skip_bb)
        b.position_at_end(skip_bb)

    def diagnose_warp(self):
        """A lane stuck at a warp collective: its mask names lanes that wait elsewhere (a
        WarpMaskError naming them, rather than a deadlock)."""
        b = self.b
        self.put("site2", _i32(-1))

        def visit(i):
            c = self.ctx(i)
            waits = b.icmp_signed("==", b.load(_at(b, c, abi.CTX_WAIT_KIND), typ=dm.i32),
                                  _i32(abi.WAIT_WARP))
            first = b.icmp_signed("==", self.get("site2"), _i32(-1))
            self.put("site2", b.select(b.and_(waits, first), i, self.get("site2")))

        self.for_live(_i32(0), self.n, "dwarp", visit)
        stuck = self.get("site2")
        found_bb = self.fn.append_basic_block("dwarp.found")
        done_bb = self.fn.append_basic_block("dwarp.done")
        b.cbranch(b.icmp_signed(">=", stuck, _i32(0)), found_bb, done_bb)
        b.position_at_end(found_bb)
        c = self.ctx(stuck)
        lane = b.load(_at(b, c, abi.CTX_LANE), typ=dm.i32)
        lo = b.sub(stuck, lane)
        block_end = b.mul(b.add(b.udiv(stuck, self.per_block), _i32(1)), self.per_block)
        hi = b.add(lo, _i32(32))
        hi = b.select(b.icmp_signed("<", hi, block_end), hi, block_end)
        site = b.load(_at(b, c, abi.CTX_SITE), typ=dm.i32)
        mask = b.load(_at(b, c, abi.CTX_MASK), typ=dm.i32)
        self.put("lanes", _i32(0))

        def elsewhere(j):
            away = b.zext(b.not_(self.at_warp_site(j, site)), dm.i32)
            self.put("lanes", b.or_(self.get("lanes"), b.mul(away, self.lane_bit(j, lo))))

        self.for_live(lo, hi, "dwaway", elsewhere)
        self.warp_error(site, b.and_(mask, self.get("lanes")), lane, stuck, how=2)
        b.branch(done_bb)
        b.position_at_end(done_bb)

    def deadlock(self, finish_bb):
        """Nothing can run and something is still waiting: report the barrier sites."""
        b = self.b
        so = abi.STATUS_OFFSETS
        self.diagnose_warp()
        # diagnose with the waiting kind of the first live thread
        self.scan(_i32(0), self.n, abi.WAIT_BLOCK, "dscan")
        pair = b.cmpxchg(self.status, _i32(0), _i32(abi.ERROR_BARRIER), "seq_cst", "seq_cst")
        record_bb = self.fn.append_basic_block("deadlock.record")
        b.cbranch(b.extract_value(pair, 1), record_bb, finish_bb)
        b.position_at_end(record_bb)
        b.store(self.get("site"), _at(b, self.status, so["site"]))
        b.store(self.get("site2"), _at(b, self.status, so["site2"]))
        b.store(self.get("waiting"), _at(b, self.status, so["count"]))
        b.store(self.get("live"), _at(b, self.status, so["total"]))
        b.branch(finish_bb)


def emit_scheduler(module: ir.Module, async_state: bool = False, record: bool = False,
                   name: str = "", grid: bool = True, cluster: bool = False) -> ir.Function:
    """void gpunb_schedule(handles, ctxs, i32 n, i32 per_block, status, cancel, guard): run
    threads to the end (runtime_lib.py's module, one per process; kernels call it by name).

    Each round resumes, in order: warps whose live lanes all wait at a warp collective; blocks
    whose live threads all wait at the same block barrier; the grid when every live thread waits
    at the same grid barrier (with `async_state`, async_schedule.py's waits too, and an idle
    round first lands the queued TMA loads). A round without progress while threads still wait
    is a deadlock. A launch told to stop (its cancel word) ends at the next round: every thread
    is destroyed. Without `grid` (a kernel that never calls grid.sync()) no grid step. With
    `cluster` the group is one thread-block cluster and a step runs its cluster barrier
    (cluster_schedule.py).
    """
    name = name or ("gpunb_schedule_async" if async_state else "gpunb_schedule")
    fn = ir.Function(module, ir.FunctionType(dm.void, list(SCHEDULER_ARGS)), name)
    sched = _Scheduler(module, fn)
    b = sched.b
    if cluster:
        cluster_schedule.start(sched, record)
    round_bb = fn.append_basic_block("round")
    finish_bb = fn.append_basic_block("finish")
    b.branch(round_bb)
    b.position_at_end(round_bb)
    go_bb = fn.append_basic_block("round.go")
    stopping = b.load_atomic(sched.cancel, "monotonic", 4, typ=dm.i32)
    b.cbranch(b.icmp_signed("!=", stopping, _i32(0)), finish_bb, go_bb)
    b.position_at_end(go_bb)
    sched.put("progressed", _i32(0))
    n_blocks = b.udiv(sched.n, sched.per_block)
    sched.warps(n_blocks)
    sched.blocks(n_blocks)
    if grid:
        sched.grid()
    if cluster:
        cluster_schedule.step(sched)
    if async_state:
        from gpunb.backends.cpu import async_schedule

        async_schedule.resume_waiters(sched, n_blocks)
    again_bb = fn.append_basic_block("round.again")
    idle_bb = fn.append_basic_block("round.idle")
    b.cbranch(b.icmp_signed("!=", sched.get("progressed"), _i32(0)), again_bb, idle_bb)
    b.position_at_end(again_bb)
    b.branch(round_bb)
    b.position_at_end(idle_bb)
    if async_state:
        async_schedule.land_copies(sched, record, round_bb)
    sched.put("live", _i32(0))
    sched.for_live(_i32(0), sched.n, "alive",
                   lambda i: sched.put("live", b.add(sched.get("live"), _i32(1))))
    stuck_bb = fn.append_basic_block("stuck")
    b.cbranch(b.icmp_signed("==", sched.get("live"), _i32(0)), finish_bb, stuck_bb)
    b.position_at_end(stuck_bb)
    if async_state:
        async_schedule.diagnose(sched)
    if cluster:
        cluster_schedule.diagnose(sched, finish_bb)
    sched.deadlock(finish_bb)
    b.position_at_end(finish_bb)
    with _loop(b, _i32(0), sched.n, "destroy") as (i, _):
        b.call(sched.destroy_fn, [sched.handle(i)])
    b.ret_void()
    return fn
