"""Generated host code that runs a range of blocks: plain loops, or a coroutine block scheduler.

`void <symbol>(ptr launch)` is the entry the launcher calls once per host worker (abi.Launch).
For barrier kernels it starts every thread of a block (each runs to its first suspend point), then
repeatedly resumes the threads that may run: a warp whose live lanes all wait at a warp barrier,
else - when every live thread waits at the same block barrier - the whole block. Threads that
exited count as arrived (as on the GPU). Threads waiting at different barriers, or at a warp
barrier their warp cannot complete, are a deadlock on a GPU: the scheduler stops and reports both
barrier sites in the launch status instead of hanging.
"""

from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler.targets import cpu_abi as abi


def _at(b, base, offset):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def _i32(v):
    return ir.Constant(dm.i32, v)


def _i64(v):
    return ir.Constant(dm.i64, v)


@contextmanager
def _loop(b: ir.IRBuilder, start, stop, name: str):
    """for i in range(start, stop): ... ; yields (i, break_block)."""
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
        nxt = b.add(i, ir.Constant(i.type, 1))
        i.add_incoming(nxt, b.block)
        b.branch(head)
    b.position_at_end(done)


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


def emit_runner(module: ir.Module, symbol: str, body: ir.Function, slot_types: list,
                coroutine: bool) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr]), symbol)
    launch = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    lo = abi.LAUNCH_OFFSETS
    grid = [b.load(_at(b, launch, lo["grid"] + 4 * k), typ=dm.i32) for k in range(3)]
    block = [b.load(_at(b, launch, lo["block"] + 4 * k), typ=dm.i32) for k in range(3)]
    begin = b.load(_at(b, launch, lo["block_begin"]), typ=dm.i64)
    end = b.load(_at(b, launch, lo["block_end"]), typ=dm.i64)
    shared_bytes = b.load(_at(b, launch, lo["shared_bytes"]), typ=dm.i64)
    dyn_shared = b.load(_at(b, launch, lo["dyn_shared"]), typ=dm.i64)
    status = b.load(_at(b, launch, lo["status"]), typ=dm.ptr)
    params = b.load(_at(b, launch, lo["params"]), typ=dm.ptr)
    slots = []
    for k, st in enumerate(slot_types):
        slot_ptr = b.load(b.gep(params, [_i64(k)], source_etype=dm.ptr), typ=dm.ptr)
        slots.append(b.load(slot_ptr, typ=st))
    nthreads = b.mul(b.mul(block[0], block[1]), block[2])
    malloc = _declare(module, "malloc", dm.ptr, [dm.i64])
    free = _declare(module, "free", dm.void, [dm.ptr])
    memset = _declare(module, "llvm.memset.p0.i64", dm.void, [dm.ptr, dm.i8, dm.i64, dm.i1])
    alloc_shared = b.icmp_signed(">", shared_bytes, _i64(0))
    shared = b.call(malloc, [b.select(alloc_shared, shared_bytes, _i64(16))])
    n_ctx = nthreads if coroutine else _i32(1)
    ctxs = b.call(malloc, [b.mul(b.zext(n_ctx, dm.i64), _i64(abi.CTX_SIZE))])
    b.call(memset, [ctxs, ir.Constant(dm.i8, 0), b.mul(b.zext(n_ctx, dm.i64),
                                                        _i64(abi.CTX_SIZE)),
                    ir.Constant(dm.i1, 0)])
    handles = b.call(malloc, [b.mul(b.zext(nthreads, dm.i64), _i64(8))]) if coroutine else None
    gx, gxy = b.zext(grid[0], dm.i64), b.zext(b.mul(grid[0], grid[1]), dm.i64)
    with _loop(b, begin, end, "block") as (blk, _):
        cx = b.trunc(b.urem(blk, gx), dm.i32)
        cy = b.trunc(b.urem(b.udiv(blk, gx), b.zext(grid[1], dm.i64)), dm.i32)
        cz = b.trunc(b.udiv(blk, gxy), dm.i32)
        b.call(memset, [shared, ir.Constant(dm.i8, 0), shared_bytes, ir.Constant(dm.i1, 0)])
        with _loop(b, _i32(0), nthreads, "thread") as (tid, _):
            ctx = b.gep(ctxs, [b.mul(b.zext(tid, dm.i64), _i64(abi.CTX_SIZE))] if coroutine
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
            b.store(shared, _at(b, ctx, abi.CTX_SHARED))
            b.store(status, _at(b, ctx, abi.CTX_STATUS))
            b.store(dyn_shared, _at(b, ctx, abi.CTX_DYN_SHARED))
            b.store(b.urem(tid, _i32(32)), _at(b, ctx, abi.CTX_LANE))
            b.store(b.udiv(tid, _i32(32)), _at(b, ctx, abi.CTX_WARP))
            b.store(tid, _at(b, ctx, abi.CTX_LINEAR))
            b.store(_i32(abi.WAIT_NONE), _at(b, ctx, abi.CTX_WAIT_KIND))
            result = b.call(body, [ctx] + slots)
            if coroutine:
                b.store(result, b.gep(handles, [b.zext(tid, dm.i64)], source_etype=dm.ptr))
        if coroutine:
            scheduler = emit_scheduler(module)
            b.call(scheduler, [handles, ctxs, nthreads, status])
        code = b.load(status, typ=dm.i32)
        stop = b.icmp_signed("!=", code, _i32(0))
        cont = fn.append_basic_block("block.continue")
        early = fn.append_basic_block("block.error")
        b.cbranch(stop, early, cont)
        b.position_at_end(early)
        _free_all(b, free, shared, ctxs, handles)
        b.ret_void()
        b.position_at_end(cont)
    _free_all(b, free, shared, ctxs, handles)
    b.ret_void()
    return fn


def _free_all(b, free, shared, ctxs, handles):
    b.call(free, [shared])
    b.call(free, [ctxs])
    if handles is not None:
        b.call(free, [handles])


def emit_scheduler(module: ir.Module) -> ir.Function:
    """void gpunb_schedule(ptr handles, ptr ctxs, i32 n, ptr status): run one block to the end."""
    name = "gpunb_schedule"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, dm.ptr, dm.i32, dm.ptr]), name)
    fn.linkage = "internal"
    handles, ctxs, n, status = fn.args
    done_fn = _declare(module, "llvm.coro.done", dm.i1, [dm.ptr])
    resume_fn = _declare(module, "llvm.coro.resume", dm.void, [dm.ptr])
    destroy_fn = _declare(module, "llvm.coro.destroy", dm.void, [dm.ptr])
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    progressed, ready, anyw = b.alloca(dm.i1), b.alloca(dm.i1), b.alloca(dm.i1)
    live_n, block_n, count = b.alloca(dm.i32), b.alloca(dm.i32), b.alloca(dm.i32)
    site, site2, lanes = b.alloca(dm.i32), b.alloca(dm.i32), b.alloca(dm.i32)
    round_bb = fn.append_basic_block("round")
    finish_bb = fn.append_basic_block("finish")
    b.branch(round_bb)
    b.position_at_end(round_bb)

    def handle(i):
        return b.load(b.gep(handles, [b.zext(i, dm.i64)], source_etype=dm.ptr), typ=dm.ptr)

    def ctx_of(i):
        return b.gep(ctxs, [b.mul(b.zext(i, dm.i64), _i64(abi.CTX_SIZE))], source_etype=dm.i8)

    # pass 1: warps whose live lanes all wait at a warp barrier run on
    n_warps = b.udiv(b.add(n, _i32(31)), _i32(32))
    b.store(ir.Constant(dm.i1, 0), progressed)
    with _loop(b, _i32(0), n_warps, "warp") as (w, _):
        lo = b.mul(w, _i32(32))
        hi = b.add(lo, _i32(32))
        hi = b.select(b.icmp_signed("<", hi, n), hi, n)
        b.store(ir.Constant(dm.i1, 1), ready)
        b.store(ir.Constant(dm.i1, 0), anyw)
        with _loop(b, lo, hi, "lane") as (i, _):
            live = b.not_(b.call(done_fn, [handle(i)]))
            kind = b.load(_at(b, ctx_of(i), abi.CTX_WAIT_KIND), typ=dm.i32)
            at_warp = b.icmp_signed("==", kind, _i32(abi.WAIT_WARP))
            b.store(b.and_(b.load(ready), b.or_(b.not_(live), at_warp)), ready)
            b.store(b.or_(b.load(anyw), b.and_(live, at_warp)), anyw)
        go = b.and_(b.load(ready), b.load(anyw))
        run_bb = fn.append_basic_block("warp.run")
        skip_bb = fn.append_basic_block("warp.skip")
        b.cbranch(go, run_bb, skip_bb)
        b.position_at_end(run_bb)
        # participants: live lanes (all of them wait here); snapshot every contribution first,
        # so lanes that run ahead to the next collective cannot overwrite what others read
        b.store(_i32(0), lanes)
        with _loop(b, lo, hi, "wmask") as (i, _):
            live = b.not_(b.call(done_fn, [handle(i)]))
            bit = b.shl(_i32(1), b.sub(i, lo))
            b.store(b.or_(b.load(lanes), b.select(live, bit, _i32(0))), lanes)
            c = ctx_of(i)
            b.store(b.load(_at(b, c, abi.CTX_XCHG), typ=dm.i64), _at(b, c, abi.CTX_SNAPSHOT))
        with _loop(b, lo, hi, "wlane") as (i, _):
            h = handle(i)
            live_bb = fn.append_basic_block("wlane.live")
            next_bb = fn.append_basic_block("wlane.next")
            b.cbranch(b.call(done_fn, [h]), next_bb, live_bb)
            b.position_at_end(live_bb)
            c = ctx_of(i)
            b.store(b.load(lanes), _at(b, c, abi.CTX_RESULT))
            b.store(_i32(abi.WAIT_NONE), _at(b, c, abi.CTX_WAIT_KIND))
            b.branch(next_bb)
            b.position_at_end(next_bb)
        with _loop(b, lo, hi, "wresume") as (i, _):
            h = handle(i)
            live_bb = fn.append_basic_block("wresume.live")
            next_bb = fn.append_basic_block("wresume.next")
            b.cbranch(b.call(done_fn, [h]), next_bb, live_bb)
            b.position_at_end(live_bb)
            b.call(resume_fn, [h])
            b.branch(next_bb)
            b.position_at_end(next_bb)
        b.store(ir.Constant(dm.i1, 1), progressed)
        b.branch(skip_bb)
        b.position_at_end(skip_bb)
    again_bb = fn.append_basic_block("round.again")
    block_bb = fn.append_basic_block("round.block")
    b.cbranch(b.load(progressed), again_bb, block_bb)
    b.position_at_end(again_bb)
    b.branch(round_bb)

    # pass 2: classify live threads for the block barrier
    b.position_at_end(block_bb)
    for slot, v in ((live_n, 0), (block_n, 0), (count, 0), (site, -1), (site2, -1)):
        b.store(_i32(v), slot)
    with _loop(b, _i32(0), n, "scan") as (i, _):
        live_bb = fn.append_basic_block("scan.live")
        next_bb = fn.append_basic_block("scan.next")
        b.cbranch(b.call(done_fn, [handle(i)]), next_bb, live_bb)
        b.position_at_end(live_bb)
        c = ctx_of(i)
        b.store(b.add(b.load(live_n), _i32(1)), live_n)
        kind = b.load(_at(b, c, abi.CTX_WAIT_KIND), typ=dm.i32)
        s = b.load(_at(b, c, abi.CTX_SITE), typ=dm.i32)
        at_block = b.icmp_signed("==", kind, _i32(abi.WAIT_BLOCK))
        b.store(b.add(b.load(block_n), b.zext(at_block, dm.i32)), block_n)
        pred = b.load(_at(b, c, abi.CTX_PRED), typ=dm.i32)
        nonzero = b.icmp_signed("!=", pred, _i32(0))
        b.store(b.add(b.load(count), b.zext(b.and_(at_block, nonzero), dm.i32)), count)
        first = b.load(site)
        unset = b.icmp_signed("==", first, _i32(-1))
        b.store(b.select(unset, s, first), site)
        differs = b.and_(b.not_(unset), b.icmp_signed("!=", s, first))
        b.store(b.select(differs, s, b.load(site2)), site2)
        b.branch(next_bb)
        b.position_at_end(next_bb)
    all_done = b.icmp_signed("==", b.load(live_n), _i32(0))
    check_bb = fn.append_basic_block("check")
    b.cbranch(all_done, finish_bb, check_bb)
    b.position_at_end(check_bb)
    ok = b.and_(b.icmp_signed("==", b.load(block_n), b.load(live_n)),
                b.icmp_signed("==", b.load(site2), _i32(-1)))
    release_bb = fn.append_basic_block("release")
    deadlock_bb = fn.append_basic_block("deadlock")
    b.cbranch(ok, release_bb, deadlock_bb)

    b.position_at_end(release_bb)
    with _loop(b, _i32(0), n, "release") as (i, _):
        h = handle(i)
        live_bb = fn.append_basic_block("release.live")
        next_bb = fn.append_basic_block("release.next")
        b.cbranch(b.call(done_fn, [h]), next_bb, live_bb)
        b.position_at_end(live_bb)
        c = ctx_of(i)
        b.store(b.load(count), _at(b, c, abi.CTX_RESULT))
        b.store(b.load(live_n), _at(b, c, abi.CTX_WAITING))
        b.store(_i32(abi.WAIT_NONE), _at(b, c, abi.CTX_WAIT_KIND))
        b.call(resume_fn, [h])
        b.branch(next_bb)
        b.position_at_end(next_bb)
    b.branch(round_bb)

    b.position_at_end(deadlock_bb)
    so = abi.STATUS_OFFSETS
    pair = b.cmpxchg(status, _i32(0), _i32(abi.ERROR_BARRIER), "seq_cst", "seq_cst")
    record_bb = fn.append_basic_block("deadlock.record")
    b.cbranch(b.extract_value(pair, 1), record_bb, finish_bb)
    b.position_at_end(record_bb)
    b.store(b.load(site), _at(b, status, so["site"]))
    b.store(b.load(site2), _at(b, status, so["site2"]))
    b.store(b.load(block_n), _at(b, status, so["count"]))
    b.store(b.load(live_n), _at(b, status, so["total"]))
    b.branch(finish_bb)

    b.position_at_end(finish_bb)
    with _loop(b, _i32(0), n, "destroy") as (i, _):
        b.call(destroy_fn, [handle(i)])
    b.ret_void()
    return fn
