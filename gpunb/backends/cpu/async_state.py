"""The CPU target's asynchronous state: each thread's queues of pending copies, their layout,
the reasons a misuse is reported, and the generated helpers of cp.async and mbarriers.

Every thread of a kernel that uses cp.async, TMA or wgmma has an area (abi.CTX_ASYNC), made by
the runner for each block. A cp.async is *queued*, not done: the copy happens when a
wait_group (or wait_all, or the thread's end) completes its group, so a read of the destination
before the wait sees the old contents on the CPU as it may on a GPU (and racecheck names it). A
full queue completes its oldest copy early, which the hardware may also do. TMA copies wait in
the same area (async_tma.py). An mbarrier is its 8 bytes of shared memory, in this encoding:

    bits 0-19 pending arrivals, 20-39 expected arrivals, 40-60 tx-count (signed),
    bit 61 phase parity, bit 62 initialised

A phase completes when its pending arrivals and its tx-count both reach zero.
"""

from __future__ import annotations

import enum
from contextlib import contextmanager

from llvmlite import ir

from gpunb.backends.cpu import abi, instrument, reporting
from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import declare, new_function

# ---- the per-thread area ----
AREA_CP_COUNT = 0  # i32: queued cp.async copies
AREA_CP_HEAD = 4  # i32: ring index of the oldest
AREA_CP_GROUPS = 8  # i32: commit_group calls so far (the open group's number)
AREA_BULK_COUNT = 12  # i32: queued TMA copies of this thread
AREA_BULK_HEAD = 16  # i32
AREA_BULK_GROUPS = 20  # i32: tma.commit_group calls so far (TMA stores)
AREA_WG_EPOCH = 24  # i32: wgmma rendezvous passed (the parity picks the A slot)
AREA_WG_GROUPS = 28  # i32: wgmma.commit_group calls so far (racecheck: which group a wgmma is in)
AREA_SHARED_BYTES = 32  # i64: the block's shared memory size (descriptor checks)
AREA_COPY_SERIAL = 40  # i32: TMA copies issued so far (racecheck: names each copy)
AREA_WG_FENCED = 44  # i32: 1 once the thread has passed a cuda.wgmma.fence()
AREA_A_SLOTS = 64  # 2 x 16 bytes: this lane's wgmma A registers, by rendezvous parity
CP_CAPACITY, CP_ENTRY = 64, 40
BULK_CAPACITY, BULK_ENTRY = 32, 64
AREA_CP_RING = 128
AREA_BULK_RING = AREA_CP_RING + CP_CAPACITY * CP_ENTRY
AREA_BYTES = AREA_BULK_RING + BULK_CAPACITY * BULK_ENTRY
# a cp.async entry: dst, src, bytes, source bytes (the rest is zero-filled), group, racecheck
# site of its completion (-1 without), element size
CP_DST, CP_SRC, CP_SIZE, CP_SRC_SIZE, CP_GROUP, CP_DONE_SITE, CP_ITEMSIZE = \
    0, 8, 16, 20, 24, 28, 32

# ---- an mbarrier's bits ----
MB_COUNT_BITS = 20
MB_TX_SHIFT, MB_TX_BITS = 40, 21
MB_PHASE_BIT, MB_INIT_BIT = 61, 62
MB_MAX_COUNT = (1 << MB_COUNT_BITS) - 1
MB_MAX_TX = (1 << (MB_TX_BITS - 1)) - 1


class Reason(enum.IntEnum):
    """Why an asynchronous operation failed (Status.count of an ERROR_ASYNC); the message is
    async_errors.py's."""

    DST_SHORT = 1  # the destination view holds fewer bytes than the copy
    SRC_SHORT = 2
    NOT_CONTIGUOUS = 3
    DST_MISALIGNED = 4
    SRC_MISALIGNED = 5
    SRC_BYTES = 6  # src_bytes outside 0..nbytes
    MBAR_UNINITIALISED = 7
    MBAR_COUNT = 8  # init count outside 1..2**20-1
    MBAR_OVERARRIVAL = 9  # more arrivals than the phase expects
    MBAR_TX_RANGE = 10  # tx-count outside the hardware's range
    MBAR_NEVER_COMPLETES = 11  # a wait on a phase nothing will complete (a deadlock)
    TILE_SHAPE = 12  # a TMA tile view whose shape is not the box
    TILE_NOT_CONTIGUOUS = 13
    TILE_MISALIGNED = 14
    BULK_QUEUE_FULL = 15
    WARPGROUP_PARTIAL = 16  # a wgmma reached by part of a warpgroup
    ACC_SHORT = 17  # the wgmma accumulator array is shorter than the fragment
    DESCRIPTOR_RANGE = 18  # a wgmma descriptor reaching outside the block's shared memory
    DESCRIPTOR_BASE_OFFSET = 19
    NOT_SHARED = 20  # an mbarrier or shared operand outside the block's shared memory
    A_SHORT = 21  # the wgmma A register array holds fewer than 8 values
    # thread-block clusters (cluster_ops.py)
    CLUSTER_RANK = 22  # a block rank outside the cluster (map_shared_rank, arrive block_rank=)
    MULTICAST_MASK = 23  # a TMA multicast mask naming no block, or one beyond the cluster
    CLUSTER_REARRIVE = 24  # a second cluster barrier arrive before the phase completes
    CLUSTER_WAIT_UNARRIVED = 25  # a cluster barrier wait without an arrive before it
    CLUSTER_PEER_EXITED = 26  # a remote operation on a block of the cluster that has exited
    TMA_UNAWAITED = 27  # a TMA load still queued when every thread of the block has finished
    WGMMA_UNFENCED = 28  # a wgmma.mma_async by a thread that never passed a wgmma.fence()


# ---- small IR helpers ----


def i32(v: int) -> ir.Constant:
    return ir.Constant(dm.i32, v)


def i64(v: int) -> ir.Constant:
    return ir.Constant(dm.i64, v)


def at(b: ir.IRBuilder, base, offset):
    """base + offset bytes (offset an int or an i64 value)."""
    off = i64(offset) if isinstance(offset, int) else offset
    return b.gep(base, [off], source_etype=dm.i8)


def load(b: ir.IRBuilder, base, offset, ty):
    return b.load(at(b, base, offset), typ=ty)


def store(b: ir.IRBuilder, value, base, offset) -> None:
    b.store(value, at(b, base, offset))




@contextmanager
def loop(b: ir.IRBuilder, start, stop, name: str):
    """for i in range(start, stop): ...; yields i (the values' integer type)."""
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
    yield i
    if not b.block.is_terminated:
        i.add_incoming(b.add(i, ir.Constant(i.type, 1)), b.block)
        b.branch(head)
    b.position_at_end(done)


def memcpy(b: ir.IRBuilder, dst, src, nbytes) -> None:
    fn = declare(b.module, "llvm.memcpy.p0.p0.i64", dm.void, [dm.ptr, dm.ptr, dm.i64, dm.i1])
    b.call(fn, [dst, src, nbytes, ir.Constant(dm.i1, 0)])


def memset(b: ir.IRBuilder, dst, byte: int, nbytes) -> None:
    fn = declare(b.module, "llvm.memset.p0.i64", dm.void, [dm.ptr, dm.i8, dm.i64, dm.i1])
    b.call(fn, [dst, ir.Constant(dm.i8, byte), nbytes, ir.Constant(dm.i1, 0)])


def area(b: ir.IRBuilder, ctx):
    return load(b, ctx, abi.CTX_ASYNC, dm.ptr)


def shared_offset(b: ir.IRBuilder, ctx, pointer):
    """A pointer's offset in the block's shared memory (what a GPU's shared address is)."""
    base = load(b, ctx, abi.CTX_SHARED, dm.ptr)
    return b.sub(b.ptrtoint(pointer, dm.i64), b.ptrtoint(base, dm.i64))


def failed(b: ir.IRBuilder, ctx):
    """Whether the launch has recorded an error (the caller then ends its thread)."""
    status = load(b, ctx, abi.CTX_STATUS, dm.ptr)
    return b.icmp_signed("!=", b.load(status, typ=dm.i32), i32(0))


# ---- reporting ----


def error_function(module: ir.Module) -> ir.Function:
    """void gpunb_async_error(ctx, site, reason, i64 a, i64 b): the first error of the launch
    wins the Status (as reporting.py's); a and b are the reason's numbers."""
    fn, b = new_function(module, "gpunb_async_error", dm.void,
                         [dm.ptr, dm.i32, dm.i32, dm.i64, dm.i64])
    if b is None:
        return fn
    fn.attributes.add("cold")
    ctx, site, reason, first, second = fn.args
    so = abi.STATUS_OFFSETS
    status = load(b, ctx, abi.CTX_STATUS, dm.ptr)
    pair = b.cmpxchg(status, i32(0), i32(abi.ERROR_ASYNC), "seq_cst", "seq_cst")
    with b.if_then(b.extract_value(pair, 1)):
        store(b, site, status, so["site"])
        store(b, reason, status, so["count"])
        store(b, first, status, so["index"])
        store(b, second, status, so["extent"])
        reporting.record_thread(b, ctx, status)
    b.ret_void()
    return fn


def report(b: ir.IRBuilder, ctx, site: int, reason: Reason, first=None, second=None) -> None:
    def wide(v):
        if v is None:
            return i64(0)
        return v if v.type == dm.i64 else b.sext(v, dm.i64)

    b.call(error_function(b.module), [ctx, i32(site), i32(int(reason)), wide(first),
                                      wide(second)])


# ---- cp.async ----


def _cp_entry(b: ir.IRBuilder, state, index):
    return at(b, state, b.add(i64(AREA_CP_RING), b.mul(b.zext(index, dm.i64), i64(CP_ENTRY))))


def _complete_copy(b: ir.IRBuilder, ctx, entry, record: bool) -> None:
    """Do one queued copy: its source bytes, then zeros up to its size."""
    dst = load(b, entry, CP_DST, dm.ptr)
    size = b.zext(load(b, entry, CP_SIZE, dm.i32), dm.i64)
    src_size = b.zext(load(b, entry, CP_SRC_SIZE, dm.i32), dm.i64)
    memcpy(b, dst, load(b, entry, CP_SRC, dm.ptr), src_size)
    memset(b, at(b, dst, src_size), 0, b.sub(size, src_size))
    if record:
        record_elements(b, ctx, load(b, entry, CP_DONE_SITE, dm.i32), dst, size,
                        b.zext(load(b, entry, CP_ITEMSIZE, dm.i32), dm.i64))


def record_elements(b: ir.IRBuilder, ctx, site, dst, size, itemsize) -> None:
    """Racecheck: one access record of `site` per element of [dst, dst + size)."""
    recorder = instrument.record_function(b.module)
    with b.if_then(b.icmp_signed(">=", site, i32(0))):
        with loop(b, i64(0), b.udiv(size, itemsize), "record") as k:
            b.call(recorder, [ctx, site, at(b, dst, b.mul(k, itemsize))])


def cp_pop_function(module: ir.Module, record: bool) -> ir.Function:
    """void gpunb_cp_async_pop(ctx): complete the oldest queued copy."""
    fn, b = new_function(module, "gpunb_cp_async_pop", dm.void, [dm.ptr])
    if b is None:
        return fn
    ctx = fn.args[0]
    state = area(b, ctx)
    head = load(b, state, AREA_CP_HEAD, dm.i32)
    _complete_copy(b, ctx, _cp_entry(b, state, head), record)
    store(b, b.urem(b.add(head, i32(1)), i32(CP_CAPACITY)), state, AREA_CP_HEAD)
    store(b, b.sub(load(b, state, AREA_CP_COUNT, dm.i32), i32(1)), state, AREA_CP_COUNT)
    b.ret_void()
    return fn


def cp_issue_function(module: ir.Module, record: bool) -> ir.Function:
    """void gpunb_cp_async(ctx, dst, src, i32 size, i32 src_size, i32 done_site, i32 itemsize):
    queue a copy in the open group (a full queue first completes its oldest copy)."""
    fn, b = new_function(module, "gpunb_cp_async", dm.void,
                         [dm.ptr, dm.ptr, dm.ptr, dm.i32, dm.i32, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, dst, src, size, src_size, done_site, itemsize = fn.args
    state = area(b, ctx)
    full = b.icmp_signed(">=", load(b, state, AREA_CP_COUNT, dm.i32), i32(CP_CAPACITY))
    with b.if_then(full):
        b.call(cp_pop_function(module, record), [ctx])
    count = load(b, state, AREA_CP_COUNT, dm.i32)
    tail = b.urem(b.add(load(b, state, AREA_CP_HEAD, dm.i32), count), i32(CP_CAPACITY))
    entry = _cp_entry(b, state, tail)
    store(b, dst, entry, CP_DST)
    store(b, src, entry, CP_SRC)
    store(b, size, entry, CP_SIZE)
    store(b, src_size, entry, CP_SRC_SIZE)
    store(b, load(b, state, AREA_CP_GROUPS, dm.i32), entry, CP_GROUP)
    store(b, done_site, entry, CP_DONE_SITE)
    store(b, itemsize, entry, CP_ITEMSIZE)
    store(b, b.add(count, i32(1)), state, AREA_CP_COUNT)
    b.ret_void()
    return fn


def cp_wait_function(module: ir.Module, record: bool) -> ir.Function:
    """void gpunb_cp_async_wait(ctx, i32 n): complete every queued copy of the groups committed
    before the newest n (copies of the open group are in none and stay queued)."""
    fn, b = new_function(module, "gpunb_cp_async_wait", dm.void, [dm.ptr, dm.i32])
    if b is None:
        return fn
    ctx, n = fn.args
    state = area(b, ctx)
    limit = b.sub(load(b, state, AREA_CP_GROUPS, dm.i32), n)
    check = fn.append_basic_block("check")
    pop = fn.append_basic_block("pop")
    done = fn.append_basic_block("done")
    b.branch(check)
    b.position_at_end(check)
    count = load(b, state, AREA_CP_COUNT, dm.i32)
    entry = _cp_entry(b, state, load(b, state, AREA_CP_HEAD, dm.i32))
    old = b.icmp_signed("<", load(b, entry, CP_GROUP, dm.i32), limit)
    b.cbranch(b.and_(b.icmp_signed(">", count, i32(0)), old), pop, done)
    b.position_at_end(pop)
    b.call(cp_pop_function(module, record), [ctx])
    b.branch(check)
    b.position_at_end(done)
    b.ret_void()
    return fn


def cp_drain_function(module: ir.Module, record: bool) -> ir.Function:
    """void gpunb_cp_async_drain(ctx): complete every queued copy (the thread ends)."""
    fn, b = new_function(module, "gpunb_cp_async_drain", dm.void, [dm.ptr])
    if b is None:
        return fn
    ctx = fn.args[0]
    state = area(b, ctx)
    count = load(b, state, AREA_CP_COUNT, dm.i32)
    with loop(b, i32(0), count, "drain"):
        b.call(cp_pop_function(module, record), [ctx])
    b.ret_void()
    return fn


# ---- mbarriers ----


def _field_of(b: ir.IRBuilder, state, shift: int, bits: int):
    return b.and_(b.lshr(state, i64(shift)), i64((1 << bits) - 1))


def mbarrier_fields(b: ir.IRBuilder, state) -> tuple:
    """(pending, expected, tx (sign-extended), phase, initialised) of an mbarrier's bits."""
    pending = _field_of(b, state, 0, MB_COUNT_BITS)
    expected = _field_of(b, state, MB_COUNT_BITS, MB_COUNT_BITS)
    raw_tx = _field_of(b, state, MB_TX_SHIFT, MB_TX_BITS)
    tx = b.ashr(b.shl(raw_tx, i64(64 - MB_TX_BITS)), i64(64 - MB_TX_BITS))
    phase = _field_of(b, state, MB_PHASE_BIT, 1)
    initialised = b.icmp_unsigned("!=", _field_of(b, state, MB_INIT_BIT, 1), i64(0))
    return pending, expected, tx, phase, initialised


def mbarrier_pack(b: ir.IRBuilder, pending, expected, tx, phase):
    out = b.or_(pending, b.shl(expected, i64(MB_COUNT_BITS)))
    out = b.or_(out, b.shl(b.and_(tx, i64((1 << MB_TX_BITS) - 1)), i64(MB_TX_SHIFT)))
    out = b.or_(out, b.shl(phase, i64(MB_PHASE_BIT)))
    return b.or_(out, i64(1 << MB_INIT_BIT))


def mbarrier_init_function(module: ir.Module) -> ir.Function:
    """i1 gpunb_mbarrier_init(ctx, bar, i32 count, i32 site): false after reporting an error."""
    fn, b = new_function(module, "gpunb_mbarrier_init", dm.i1, [dm.ptr, dm.ptr, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, bar, count, site = fn.args
    bad = b.or_(b.icmp_signed("<", count, i32(1)), b.icmp_signed(">", count, i32(MB_MAX_COUNT)))
    with b.if_then(bad):
        b.call(error_function(module), [ctx, site, i32(Reason.MBAR_COUNT),
                                        b.sext(count, dm.i64), i64(MB_MAX_COUNT)])
        b.ret(ir.Constant(dm.i1, 0))
    wide = b.zext(count, dm.i64)
    b.store(mbarrier_pack(b, wide, wide, i64(0), i64(0)), bar)
    b.ret(ir.Constant(dm.i1, 1))
    return fn


def mbarrier_update_function(module: ir.Module, record: bool = False) -> ir.Function:
    """{i64 token, i1 ok} gpunb_mbarrier_update(ctx, bar, i32 arrivals, i64 tx_delta, i32 site,
    i32 event): add tx_delta to the tx-count, take `arrivals` arrivals, and complete the phase
    when both reach zero (the phase parity flips, the pending count starts again). The token is
    the parity of the phase the arrivals belong to, in bit 63 (try_wait's operand). A recording
    kernel logs the update as a synchronisation record of kind `event` (abi.SYNC_MB_*)."""
    ret = ir.LiteralStructType([dm.i64, dm.i1])
    fn, b = new_function(module, "gpunb_mbarrier_update", ret,
                         [dm.ptr, dm.ptr, dm.i32, dm.i64, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, bar, arrivals, delta, site, event = fn.args
    err = error_function(module)

    def fail(reason, first, second):
        b.call(err, [ctx, site, i32(reason), first, second])
        b.ret(ir.Constant(ret, [ir.Constant(dm.i64, 0), ir.Constant(dm.i1, 0)]))

    state = b.load(bar, typ=dm.i64)
    pending, expected, tx, phase, initialised = mbarrier_fields(b, state)
    with b.if_then(b.not_(initialised)):
        fail(Reason.MBAR_UNINITIALISED, state, i64(0))
    tx = b.add(tx, delta)
    with b.if_then(b.or_(b.icmp_signed(">", tx, i64(MB_MAX_TX)),
                         b.icmp_signed("<", tx, i64(-MB_MAX_TX)))):
        fail(Reason.MBAR_TX_RANGE, tx, i64(MB_MAX_TX))
    pending = b.sub(pending, b.zext(arrivals, dm.i64))
    with b.if_then(b.icmp_signed("<", pending, i64(0))):
        fail(Reason.MBAR_OVERARRIVAL, b.sub(i64(0), pending), expected)
    token = b.shl(phase, i64(63))
    done = b.and_(b.icmp_signed("==", pending, i64(0)), b.icmp_signed("==", tx, i64(0)))
    new_pending = b.select(done, expected, pending)
    new_phase = b.select(done, b.xor(phase, i64(1)), phase)
    b.store(mbarrier_pack(b, new_pending, expected, tx, new_phase), bar)
    if record:
        value = b.or_(instrument.sync_value(b, 0, shared_offset(b, ctx, bar), done, phase),
                      b.shl(b.zext(event, dm.i64), i64(abi.SYNC_KIND_SHIFT)))
        b.call(instrument.record_sync_function(module), [ctx, i32(-1), value])
    out = b.insert_value(ir.Constant(ret, ir.Undefined), token, 0)
    b.ret(b.insert_value(out, ir.Constant(dm.i1, 1), 1))
    return fn


def mbarrier_done(b: ir.IRBuilder, bar, parity):
    """i1: the phase of this parity (0 or 1) has completed (the current phase's parity differs)."""
    state = b.load(bar, typ=dm.i64)
    phase = _field_of(b, state, MB_PHASE_BIT, 1)
    return b.icmp_unsigned("!=", phase, b.zext(b.and_(parity, i32(1)), dm.i64))
