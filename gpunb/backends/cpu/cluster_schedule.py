"""The coroutine scheduler's part for thread-block clusters (runner.emit_scheduler with
`cluster`): the group is one cluster, and its barrier (barrier.cluster.arrive / wait) is run
here as the PTX ISA defines it.

Each thread counts its arrivals (abi.cluster_slots: CTX_CLUSTER_ARRIVED, a recording
kernel's CTX_REC_CLUSTER_ARRIVED); the scheduler counts the completed
phases. A phase completes when every non-exited thread of the cluster has arrived for it (an
exited thread counts as arrived, as on the GPU); then every thread learns the new count
(abi.CTX_CLUSTER_PHASE: its arrive checks against it that it arrives once per phase) and the
threads waiting for that phase resume. A round in which nothing can run while some thread
waits at the cluster barrier is a deadlock, reported with the barrier's line and how many of
the cluster's live threads arrived.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm


def _i32(v: int) -> ir.Constant:
    return ir.Constant(dm.i32, v)


def _field(b: ir.IRBuilder, ctx, offset: int):
    return b.load(b.gep(ctx, [ir.Constant(dm.i64, offset)], source_etype=dm.i8), typ=dm.i32)


def _put_field(b: ir.IRBuilder, value, ctx, offset: int) -> None:
    b.store(value, b.gep(ctx, [ir.Constant(dm.i64, offset)], source_etype=dm.i8))


def start(sched, record: bool = False) -> None:
    """The scheduler's count of completed phases (a slot of its own, in the entry block), and
    where the threads keep their counts (a recording kernel's: abi.cluster_slots)."""
    sched.cluster_arrived_slot, _, sched.cluster_phase_slot = abi.cluster_slots(record)
    sched.slots["cluster_phase"] = sched.b.alloca(dm.i32, name="cluster_phase")
    sched.slots["cluster_arrived"] = sched.b.alloca(dm.i32, name="cluster_arrived")
    sched.put("cluster_phase", _i32(0))


def _count_arrived(sched):
    """(live threads, those that arrived for the phase after the completed ones) of the group."""
    b = sched.b
    phase = sched.get("cluster_phase")
    sched.put("live", _i32(0))
    sched.put("cluster_arrived", _i32(0))

    def visit(i):
        arrived = b.icmp_signed(">", _field(b, sched.ctx(i), sched.cluster_arrived_slot), phase)
        sched.put("live", b.add(sched.get("live"), _i32(1)))
        sched.put("cluster_arrived", b.add(sched.get("cluster_arrived"), b.zext(arrived, dm.i32)))

    sched.for_live(_i32(0), sched.n, "clcount", visit)
    return sched.get("live"), sched.get("cluster_arrived")


def step(sched) -> None:
    """Complete the phase every live thread has arrived for; resume the threads waiting for a
    completed phase."""
    b = sched.b
    live, arrived = _count_arrived(sched)
    complete = b.and_(b.icmp_signed(">", live, _i32(0)), b.icmp_signed("==", arrived, live))
    with b.if_then(complete):
        phase = b.add(sched.get("cluster_phase"), _i32(1))
        sched.put("cluster_phase", phase)
        sched.for_live(_i32(0), sched.n, "clphase",
                       lambda i: _put_field(b, phase, sched.ctx(i), sched.cluster_phase_slot))
        sched.put("progressed", _i32(1))
    phase = sched.get("cluster_phase")

    def wake(i):
        c = sched.ctx(i)
        waits = b.icmp_signed("==", _field(b, c, abi.CTX_WAIT_KIND), _i32(abi.WAIT_CLUSTER))
        done = b.icmp_signed("<=", _field(b, c, sched.cluster_arrived_slot), phase)
        with b.if_then(b.and_(waits, done)):
            _put_field(b, _i32(abi.WAIT_NONE), c, abi.CTX_WAIT_KIND)
            sched.resume(i)
            sched.put("progressed", _i32(1))

    sched.for_live(_i32(0), sched.n, "clwake", wake)


def diagnose(sched, finish_bb) -> None:
    """Nothing can run and a thread waits at the cluster barrier: the launch's error names that
    barrier (site), a site where a thread that has not arrived waits instead (site2, or -1),
    how many live threads arrived (count) of how many (total)."""
    b = sched.b
    so = abi.STATUS_OFFSETS
    sched.put("site", _i32(-1))
    sched.put("site2", _i32(-1))
    phase = sched.get("cluster_phase")

    def visit(i):
        c = sched.ctx(i)
        site = _field(b, c, abi.CTX_SITE)
        waits = b.icmp_signed("==", _field(b, c, abi.CTX_WAIT_KIND), _i32(abi.WAIT_CLUSTER))
        first = b.icmp_signed("<", sched.get("site"), _i32(0))
        sched.put("site", b.select(b.and_(waits, first), site, sched.get("site")))
        behind = b.icmp_signed("<=", _field(b, c, sched.cluster_arrived_slot), phase)
        other = b.icmp_signed("<", sched.get("site2"), _i32(0))
        sched.put("site2", b.select(b.and_(behind, other), site, sched.get("site2")))

    sched.for_live(_i32(0), sched.n, "cldiag", visit)
    found = b.icmp_signed(">=", sched.get("site"), _i32(0))
    with b.if_then(found):
        live, arrived = _count_arrived(sched)
        pair = b.cmpxchg(sched.status, _i32(0), _i32(abi.ERROR_BARRIER), "seq_cst", "seq_cst")
        with b.if_then(b.extract_value(pair, 1)):
            for name, value in (("site", sched.get("site")), ("site2", sched.get("site2")),
                                ("count", arrived), ("total", live)):
                b.store(value, b.gep(sched.status, [ir.Constant(dm.i64, so[name])],
                                     source_etype=dm.i8))
        b.branch(finish_bb)
