"""The coroutine scheduler's part for asynchronous kernels (runner.emit_scheduler calls these
with its _Scheduler): threads waiting at mbarriers resume when their phase completes, a
warpgroup's 128 threads resume together from a wgmma rendezvous, an idle round lands the queued
TMA loads, and a deadlock among these waits is named (the phase that never completes, the part
of a warpgroup that never arrives) before the generic barrier diagnosis."""

from __future__ import annotations

from gpunb.backends.cpu import abi
from gpunb.backends.cpu import async_state as st
from gpunb.backends.cpu import async_tma as tma
from gpunb.compiler import datamodel as dm

WARPGROUP = 128


def _kind(b, ctx):
    return st.load(b, ctx, abi.CTX_WAIT_KIND, dm.i32)


def _wake(b, sched, i) -> None:
    st.store(b, st.i32(abi.WAIT_NONE), sched.ctx(i), abi.CTX_WAIT_KIND)


def resume_waiters(sched, n_blocks) -> None:
    """mbarrier waiters whose phase completed, then complete warpgroups at a rendezvous."""
    b = sched.b

    def mbarrier(i):
        c = sched.ctx(i)
        waits = b.icmp_signed("==", _kind(b, c), st.i32(abi.WAIT_MBARRIER))
        with b.if_then(waits):
            bar = b.inttoptr(st.load(b, c, abi.CTX_XCHG, dm.i64), dm.ptr)
            with b.if_then(st.mbarrier_done(b, bar, st.load(b, c, abi.CTX_PRED, dm.i32))):
                _wake(b, sched, i)
                sched.resume(i)
                sched.put("progressed", st.i32(1))

    sched.for_live(st.i32(0), sched.n, "mbwait", mbarrier)
    groups = b.udiv(b.add(sched.per_block, st.i32(WARPGROUP - 1)), st.i32(WARPGROUP))
    with st.loop(b, st.i32(0), b.mul(n_blocks, groups), "wgroup") as g:
        blk = b.udiv(g, groups)
        lo = b.add(b.mul(blk, sched.per_block), b.mul(b.urem(g, groups), st.i32(WARPGROUP)))
        hi = b.add(lo, st.i32(WARPGROUP))
        whole = b.icmp_signed("<=", hi, b.mul(b.add(blk, st.i32(1)), sched.per_block))
        with b.if_then(whole):
            count = _at_rendezvous(sched, lo, hi, st.load(b, sched.ctx(lo), abi.CTX_SITE, dm.i32))
            with b.if_then(b.icmp_signed("==", count, st.i32(WARPGROUP))):
                sched.for_live(lo, hi, "wgwake", lambda i: _wake(b, sched, i))
                sched.for_live(lo, hi, "wgrun", sched.resume)
                sched.put("progressed", st.i32(1))


def _at_rendezvous(sched, lo, hi, site):
    """How many live threads of [lo, hi) wait at the wgmma rendezvous of `site`."""
    b = sched.b
    sched.put("count", st.i32(0))

    def visit(i):
        c = sched.ctx(i)
        here = b.and_(b.icmp_signed("==", _kind(b, c), st.i32(abi.WAIT_WARPGROUP)),
                      b.icmp_signed("==", st.load(b, c, abi.CTX_SITE, dm.i32), site))
        sched.put("count", b.add(sched.get("count"), b.zext(here, dm.i32)))

    sched.for_live(lo, hi, "wgcount", visit)
    return sched.get("count")


def land_copies(sched, record: bool, round_bb) -> None:
    """Idle: do every queued TMA load of the group; when any landed, run another round. When
    every thread of the group has finished, a load still queued is one nobody waited for: an
    error at its line (on a GPU its reads saw the old tile, or the block exited under it)."""
    b = sched.b
    sched.put("live", st.i32(0))
    sched.for_live(st.i32(0), sched.n, "tmalive",
                   lambda i: sched.put("live", b.add(sched.get("live"), st.i32(1))))
    with b.if_then(b.icmp_signed("==", sched.get("live"), st.i32(0))):
        b.call(tma.unawaited_function(b.module), [sched.ctxs, sched.n])
    landed = b.call(tma.drain_block_function(b.module, record), [sched.ctxs, sched.n])
    again = sched.fn.append_basic_block("idle.landed")
    still = sched.fn.append_basic_block("idle.still")
    b.cbranch(b.icmp_signed(">", landed, st.i32(0)), again, still)
    b.position_at_end(again)
    b.branch(round_bb)
    b.position_at_end(still)


def diagnose(sched) -> None:
    """Nothing can run: the first thread stuck at an mbarrier wait or a wgmma rendezvous is
    the error (a phase that never completes; a warpgroup that never gathers)."""
    b = sched.b
    sched.put("ready", st.i32(-1))

    def visit(i):
        kind = _kind(b, sched.ctx(i))
        ours = b.or_(b.icmp_signed("==", kind, st.i32(abi.WAIT_MBARRIER)),
                     b.icmp_signed("==", kind, st.i32(abi.WAIT_WARPGROUP)))
        first = b.icmp_signed("<", sched.get("ready"), st.i32(0))
        sched.put("ready", b.select(b.and_(ours, first), i, sched.get("ready")))

    sched.for_live(st.i32(0), sched.n, "adiag", visit)
    stuck = sched.get("ready")
    with b.if_then(b.icmp_signed(">=", stuck, st.i32(0))):
        c = sched.ctx(stuck)
        site = st.load(b, c, abi.CTX_SITE, dm.i32)
        error = st.error_function(b.module)
        with b.if_else(b.icmp_signed("==", _kind(b, c), st.i32(abi.WAIT_MBARRIER))) as (mb, wg):
            with mb:
                bar = b.inttoptr(st.load(b, c, abi.CTX_XCHG, dm.i64), dm.ptr)
                b.call(error, [c, site, st.i32(st.Reason.MBAR_NEVER_COMPLETES),
                               b.zext(st.load(b, c, abi.CTX_PRED, dm.i32), dm.i64),
                               b.load(bar, typ=dm.i64)])
            with wg:
                block_start = b.mul(b.udiv(stuck, sched.per_block), sched.per_block)
                lo = b.add(block_start, b.mul(b.udiv(b.sub(stuck, block_start),
                                                     st.i32(WARPGROUP)), st.i32(WARPGROUP)))
                end = b.add(block_start, sched.per_block)
                hi = b.add(lo, st.i32(WARPGROUP))
                hi = b.select(b.icmp_signed("<", hi, end), hi, end)
                count = _at_rendezvous(sched, lo, hi, site)
                b.call(error, [c, site, st.i32(st.Reason.WARPGROUP_PARTIAL),
                               b.zext(count, dm.i64),
                               b.zext(b.udiv(b.sub(lo, block_start), st.i32(WARPGROUP)),
                                      dm.i64)])
