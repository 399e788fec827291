"""The CPU target's lowering of thread-block clusters (CpuTarget's cluster methods): the
cluster's special registers, its barrier's arrive and wait, and the address of a shared
variable in another block of the cluster (distributed shared memory).

A cluster kernel's blocks run as one group of coroutines (runner.py with `cluster`,
cluster_runner.py), their shared memories in rank order one stride apart (the block's shared
bytes, launch_memory.SHARED_ALIGN-rounded, as the runner lays them out): the same variable of
block r is r strides from the rank-0 block's. The barrier's phases are the scheduler's
(cluster_schedule.py); a thread checks here that it arrives once per phase and waits only after
arriving, as the PTX ISA requires of barrier.cluster. Misuse (a rank outside the cluster, a
pointer outside the cluster's shared memory, a block that has exited) is an AsyncCopyError
naming the line (async_state.Reason).
"""

from __future__ import annotations

from gpunb.backends.cpu import abi
from gpunb.backends.cpu import async_state as st
from gpunb.backends.cpu.launch_memory import SHARED_ALIGN
from gpunb.compiler import datamodel as dm


def cluster_size(target) -> int:
    """Blocks in the kernel's cluster (1 without cluster_dims)."""
    dims = target.cluster_dims
    return dims[0] * dims[1] * dims[2]


def sreg(target, low, kind: str, axis: str):
    """%cluster_ctaid (this block's index in its cluster) or %cluster_nctaid (the cluster's
    dims, compile-time constants) along `axis`."""
    extent = target.cluster_dims["xyz".index(axis)]
    if kind == "cluster_nctaid" or extent == 1:
        return st.i32(extent if kind == "cluster_nctaid" else 0)
    return low.builder.urem(target.sreg(low, "ctaid", axis), st.i32(extent))


def rank(target, low):
    """%cluster_ctarank: the block's rank, x + y*cx + z*cx*cy of its index in the cluster (the
    runner's order)."""
    b = low.builder
    cx, cy, _ = target.cluster_dims
    x, y, z = (sreg(target, low, "cluster_ctaid", axis) for axis in "xyz")
    return b.add(x, b.add(b.mul(y, st.i32(cx)), b.mul(z, st.i32(cx * cy))))


def _stride(low):
    """Bytes between two blocks' shared memories (the runner's layout, from the launch's
    shared bytes per block)."""
    b = low.builder
    status = st.load(b, low.ctx, abi.CTX_STATUS, dm.ptr)
    shared = st.load(b, status, abi.STATUS_OFFSETS["rec_shared"], dm.i64)
    return b.and_(b.add(shared, st.i64(SHARED_ALIGN - 1)), st.i64(-SHARED_ALIGN))


def barrier(target, low, node, arrive: bool, wait: bool) -> None:
    """barrier.cluster.arrive and/or .wait: an arrive counts this thread for the phase after the
    completed ones (a second arrive before that phase completes is an error); a wait needs an
    arrive of its own before it and suspends the thread until the phase it arrived for
    completes (at once when it already has)."""
    b, ctx = low.builder, low.ctx
    ops = target.async_ops()
    what = "cluster.sync()" if arrive and wait else \
        "cluster.barrier_arrive()" if arrive else "cluster.barrier_wait()"
    site = ops.site(low, node, what)
    arrived_slot, waited_slot, phase_slot = abi.cluster_slots(target.record)
    arrived = st.load(b, ctx, arrived_slot, dm.i32)
    phase = st.load(b, ctx, phase_slot, dm.i32)
    if arrive:
        ops.check(low, b.icmp_signed(">", arrived, phase), site,
                  st.Reason.CLUSTER_REARRIVE, b.sext(arrived, dm.i64), b.sext(phase, dm.i64))
        arrived = b.add(arrived, st.i32(1))
        # racecheck: the arrive releases what this thread did (before the scheduler can
        # complete the phase and resume a waiter)
        ops.sync(low, abi.SYNC_CLUSTER_ARRIVE, arrived)
        st.store(b, arrived, ctx, arrived_slot)
    if not wait:
        return
    waited = st.load(b, ctx, waited_slot, dm.i32)
    ops.check(low, b.icmp_signed(">=", waited, arrived), site,
              st.Reason.CLUSTER_WAIT_UNARRIVED, b.sext(waited, dm.i64), st.i64(0))
    st.store(b, arrived, ctx, waited_slot)
    with b.if_then(b.icmp_signed("<", phase, arrived)):
        target.wait_at(low, node, abi.WAIT_CLUSTER, what)
    ops.sync(low, abi.SYNC_CLUSTER_WAIT, arrived)  # acquires what the phase's arrivals did


def check_rank(target, low, site: int, block_rank) -> None:
    """A block rank outside 0 .. cluster size - 1 is an error (ends the thread)."""
    b = low.builder
    size = cluster_size(target)
    target.async_ops().check(low, b.icmp_unsigned(">=", block_rank, st.i32(size)), site,
                             st.Reason.CLUSTER_RANK, b.sext(block_rank, dm.i64), st.i64(size))


def peer_address(target, low, site: int, pointer, block_rank):
    """The same shared variable as `pointer` (in any block of the cluster) in block
    `block_rank`; a pointer outside the cluster's shared memories is an error (ends the
    thread). The rank must have been checked (check_rank)."""
    b, ctx = low.builder, low.ctx
    size = cluster_size(target)
    stride = _stride(low)
    mine = b.zext(rank(target, low), dm.i64)
    base = b.gep(st.load(b, ctx, abi.CTX_SHARED, dm.ptr), [b.neg(b.mul(mine, stride))],
                 source_etype=dm.i8)  # the rank-0 block's shared memory
    offset = b.sub(b.ptrtoint(pointer, dm.i64), b.ptrtoint(base, dm.i64))
    outside = b.icmp_unsigned(">=", offset, b.mul(stride, st.i64(size)))
    target.async_ops().check(low, outside, site, st.Reason.NOT_SHARED, st.i64(-1), st.i64(0))
    within = b.urem(offset, stride)
    return b.gep(base, [b.add(b.mul(b.zext(block_rank, dm.i64), stride), within)],
                 source_etype=dm.i8)


def map_shared_rank(target, low, node, pointer, block_rank):
    """mapa: `pointer`'s variable in block `block_rank` of the cluster."""
    site = target.async_ops().site(low, node, "cluster.map_shared_rank")
    check_rank(target, low, site, block_rank)
    check_peer_running(target, low, site, block_rank)
    return peer_address(target, low, site, pointer, block_rank)


def multicast_ranks(target, low, site: int, mask) -> list:
    """The destination ranks of a multicast: (rank, i1 "its bit is set") for each rank of the
    cluster; a mask naming no block, or a block beyond the cluster, is an error."""
    b = low.builder
    size = cluster_size(target)
    wide = b.zext(mask, dm.i32) if mask.type.width < 32 else b.trunc(mask, dm.i32) \
        if mask.type.width > 32 else mask
    beyond = b.icmp_unsigned("!=", b.lshr(wide, st.i32(size)), st.i32(0))
    empty = b.icmp_unsigned("==", wide, st.i32(0))
    target.async_ops().check(low, b.or_(beyond, empty), site, st.Reason.MULTICAST_MASK,
                             b.zext(wide, dm.i64), st.i64(size))
    return [(r, b.icmp_unsigned("!=", b.and_(wide, st.i32(1 << r)), st.i32(0)))
            for r in range(size)]


def _first_thread(target, low, block_rank):
    """The context of thread 0 of block `block_rank` of the cluster (the group's contexts are
    consecutive: block by block in rank order, threads in linear order)."""
    b, ctx = low.builder, low.ctx
    ntid = [st.load(b, ctx, abi.CTX_NTID + 4 * k, dm.i32) for k in range(3)]
    threads = b.mul(b.mul(ntid[0], ntid[1]), ntid[2])
    mine = rank(target, low)
    linear = st.load(b, ctx, abi.CTX_LINEAR, dm.i32)
    delta = b.sub(b.mul(b.sub(block_rank, mine), threads), linear)
    return st.at(b, ctx, b.mul(b.sext(delta, dm.i64), st.i64(abi.CTX_SIZE))), threads


def thread_exits(target, low) -> None:
    """Count the exiting thread in its block's thread 0 context."""
    b = low.builder
    first, _ = _first_thread(target, low, rank(target, low))
    exited = st.load(b, first, abi.CTX_CLUSTER_EXITED, dm.i32)
    st.store(b, b.add(exited, st.i32(1)), first, abi.CTX_CLUSTER_EXITED)


def check_peer_running(target, low, site: int, block_rank) -> None:
    """Block `block_rank` of the cluster must still run (on a GPU an exited block's shared
    memory belongs to the next block on its SM): a remote arrive, multicast or mapping of it
    after all its threads exited is an error. The rank must have been checked."""
    b = low.builder
    first, threads = _first_thread(target, low, block_rank)
    gone = b.icmp_signed(">=", st.load(b, first, abi.CTX_CLUSTER_EXITED, dm.i32), threads)
    target.async_ops().check(low, gone, site, st.Reason.CLUSTER_PEER_EXITED,
                             b.sext(block_rank, dm.i64), st.i64(0))
