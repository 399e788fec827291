"""TMA on the CPU target: bulk tensor copies queued in the issuing thread's area and done as the
hardware does them - the box's elements in row-major order into shared memory, each 16-byte
chunk moved by the swizzle (the offset's bits 4-6 XOR bits 7-9 for 128 bytes; 4-5 / 7-8 for 64;
4 / 7 for 32), out-of-bounds elements read as zero (or NaN) and never written.

A load completes at the latest moment a GPU allows: when no thread of the block can run on
without it (the scheduler's idle step, runner.py), then completes its transaction bytes on its
mbarrier. A store completes at the issuing thread's tma.wait_group(_read) or its end. The
descriptor is runtime/tma.py's CPU_LAYOUT.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi, instrument
from gpunb.backends.cpu import async_state as st
from gpunb.compiler import datamodel as dm

# a queued TMA copy: kind (0 free, 1 load, 2 store), bulk group (stores), the shared tile, the
# descriptor, the mbarrier (loads), coordinates (innermost first), racecheck site of completion
# (a load's writes, a store's reads of its tile), error site, serial (racecheck names the copy)
B_KIND, B_GROUP, B_SMEM, B_TMAP, B_BAR, B_COORDS, B_DONE_SITE, B_SITE, B_SERIAL = \
    0, 4, 8, 16, 24, 32, 52, 56, 60
LOAD, STORE = 1, 2
# runtime/tma.py's CPU_LAYOUT
D_ADDRESS, D_RANK, D_ITEMSIZE, D_DIMS, D_STRIDES, D_BOX, D_SWIZZLE, D_FILL = (
    abi.TMAP_ADDRESS, abi.TMAP_RANK, abi.TMAP_ITEMSIZE, abi.TMAP_DIMS, abi.TMAP_STRIDES,
    abi.TMAP_BOX, abi.TMAP_SWIZZLE, abi.TMAP_FILL)
RANK = 5


def swizzle_offset(b: ir.IRBuilder, offset, swizzle):
    """The shared offset a swizzled layout puts this byte at (swizzle in bytes, 0 for none)."""
    rows = b.select(b.icmp_unsigned("==", swizzle, st.i32(128)), st.i64(7),
                    b.select(b.icmp_unsigned("==", swizzle, st.i32(64)), st.i64(3),
                             b.select(b.icmp_unsigned("==", swizzle, st.i32(32)), st.i64(1),
                                      st.i64(0))))
    return b.xor(offset, b.shl(b.and_(b.lshr(offset, st.i64(7)), rows), st.i64(4)))


def _entry(b: ir.IRBuilder, state, index):
    return st.at(b, state, b.add(st.i64(st.AREA_BULK_RING),
                                 b.mul(b.zext(index, dm.i64), st.i64(st.BULK_ENTRY))))


def copy_function(module: ir.Module, record: bool) -> ir.Function:
    """void gpunb_tma_copy(ctx, entry): do one queued TMA copy (a load also completes its
    transaction bytes on its mbarrier) and free its entry. Recording, the copy's accesses (a
    load's writes, a store's reads) lie between a COPY_LAND and a COPY_END record: they are the
    copy's, not the issuing thread's (happens_before.py)."""
    fn, b = st.new_function(module, "gpunb_tma_copy", dm.void, [dm.ptr, dm.ptr])
    if b is None:
        return fn
    ctx, entry = fn.args
    serial = st.load(b, entry, B_SERIAL, dm.i32)
    if record:
        instrument.record_sync(b, ctx, abi.SYNC_COPY_LAND, serial,
                               extra=st.load(b, entry, B_KIND, dm.i32))
    tmap = st.load(b, entry, B_TMAP, dm.ptr)
    smem = st.load(b, entry, B_SMEM, dm.ptr)
    is_load = b.icmp_signed("==", st.load(b, entry, B_KIND, dm.i32), st.i32(LOAD))
    itemsize = b.zext(st.load(b, tmap, D_ITEMSIZE, dm.i32), dm.i64)
    swizzle = st.load(b, tmap, D_SWIZZLE, dm.i32)
    box, total = _box_extents(b, tmap)
    tile = st.shared_offset(b, ctx, smem)
    with st.loop(b, st.i64(0), total, "element") as e:
        address, inside = _global_element(b, tmap, entry, B_COORDS, box, e)
        placed = b.sub(swizzle_offset(b, b.add(tile, b.mul(e, itemsize)), swizzle), tile)
        here = st.at(b, smem, placed)
        with b.if_else(is_load) as (then, otherwise):
            with then:
                _load_element(b, tmap, here, address, inside, itemsize)
            with otherwise:
                with b.if_then(inside):
                    st.memcpy(b, address, here, itemsize)
    bytes_ = b.mul(total, itemsize)
    if record:  # a load's writes, a store's reads (the site's kind says which)
        st.record_elements(b, ctx, st.load(b, entry, B_DONE_SITE, dm.i32), smem, bytes_,
                           itemsize)
    with b.if_then(is_load):
        update = st.mbarrier_update_function(module, record)
        b.call(update, [ctx, st.load(b, entry, B_BAR, dm.ptr), st.i32(0), b.sub(st.i64(0), bytes_),
                        st.load(b, entry, B_SITE, dm.i32), st.i32(abi.SYNC_MB_COMPLETE_TX)])
    if record:
        instrument.record_sync(b, ctx, abi.SYNC_COPY_END, serial)
    st.store(b, st.i32(0), entry, B_KIND)
    state = st.area(b, ctx)
    st.store(b, b.sub(st.load(b, state, st.AREA_BULK_COUNT, dm.i32), st.i32(1)), state,
             st.AREA_BULK_COUNT)
    b.ret_void()
    return fn


def _box_extents(b: ir.IRBuilder, tmap) -> tuple:
    """(the box's extent per dimension, innermost first; its element count) of a descriptor."""
    box = [b.zext(st.load(b, tmap, D_BOX + 4 * d, dm.i32), dm.i64) for d in range(RANK)]
    total = box[0]
    for d in range(1, RANK):
        total = b.mul(total, box[d])
    return box, total


def _global_element(b: ir.IRBuilder, tmap, coords, at: int, box: list, e):
    """(address, in bounds) of element e (row-major in the box) in the global tensor; the
    box's coordinates are RANK i32s at byte `at` of `coords` (innermost first)."""
    address = st.load(b, tmap, D_ADDRESS, dm.i64)
    inside = ir.Constant(dm.i1, 1)
    rest = e
    for d in range(RANK):
        index = b.urem(rest, box[d])
        rest = b.udiv(rest, box[d])
        coord = b.add(b.sext(st.load(b, coords, at + 4 * d, dm.i32), dm.i64), index)
        dim = st.load(b, tmap, D_DIMS + 8 * d, dm.i64)
        inside = b.and_(inside, b.and_(b.icmp_signed(">=", coord, st.i64(0)),
                                       b.icmp_signed("<", coord, dim)))
        address = b.add(address, b.mul(coord, st.load(b, tmap, D_STRIDES + 8 * d, dm.i64)))
    return b.inttoptr(address, dm.ptr), inside


def record_box_function(module: ir.Module) -> ir.Function:
    """void gpunb_tma_record_box(ctx, tmap, coords (5 x i32), i32 site): racecheck - one record
    of `site` per element of the box at `coords` inside the global tensor (a load's reads of
    its source, a store's writes of its destination; out-of-bounds elements are filled or
    skipped, never touched), logged by the issuing thread at the issue as cp.async's are."""
    fn, b = st.new_function(module, "gpunb_tma_record_box", dm.void,
                            [dm.ptr, dm.ptr, dm.ptr, dm.i32])
    if b is None:
        return fn
    ctx, tmap, coords, site = fn.args
    recorder = instrument.record_function(module)
    box, total = _box_extents(b, tmap)
    with st.loop(b, st.i64(0), total, "element") as e:
        address, inside = _global_element(b, tmap, coords, 0, box, e)
        with b.if_then(inside):
            b.call(recorder, [ctx, site, address])
    b.ret_void()
    return fn


def _load_element(b: ir.IRBuilder, tmap, here, address, inside, itemsize) -> None:
    """One element of a load: from the tensor, or the fill (zero, or a quiet NaN)."""
    with b.if_else(inside) as (then, otherwise):
        with then:
            st.memcpy(b, here, address, itemsize)
        with otherwise:
            nan = b.icmp_signed("!=", st.load(b, tmap, D_FILL, dm.i32), st.i32(0))
            st.memset(b, here, 0, itemsize)
            with b.if_then(nan):  # all mantissa and exponent bits: 0x7fff.. little-endian
                st.memset(b, here, 0xFF, itemsize)
                b.store(ir.Constant(dm.i8, 0x7F), st.at(b, here, b.sub(itemsize, st.i64(1))))


def issue_function(module: ir.Module, record: bool) -> ir.Function:
    """i32 gpunb_tma_issue(ctx, i32 kind, smem, tmap, bar, coords (5 x i32), i32 done_site,
    i32 site): queue a TMA copy in a free entry (a full queue first does one copy early, which
    the hardware may also do); returns the copy's serial number in its thread."""
    fn, b = st.new_function(module, "gpunb_tma_issue", dm.i32,
                            [dm.ptr, dm.i32, dm.ptr, dm.ptr, dm.ptr, dm.ptr, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, kind, smem, tmap, bar, coords, done_site, site = fn.args
    state = st.area(b, ctx)
    full = b.icmp_signed(">=", st.load(b, state, st.AREA_BULK_COUNT, dm.i32),
                         st.i32(st.BULK_CAPACITY))
    with b.if_then(full):
        b.call(copy_function(module, record), [ctx, _entry(b, state, st.i32(0))])
    entry = _entry(b, state, _first_free(b, state))
    st.store(b, kind, entry, B_KIND)
    st.store(b, st.load(b, state, st.AREA_BULK_GROUPS, dm.i32), entry, B_GROUP)
    for offset, value in ((B_SMEM, smem), (B_TMAP, tmap), (B_BAR, bar)):
        st.store(b, value, entry, offset)
    for d in range(RANK):
        st.store(b, st.load(b, coords, 4 * d, dm.i32), entry, B_COORDS + 4 * d)
    st.store(b, done_site, entry, B_DONE_SITE)
    st.store(b, site, entry, B_SITE)
    serial = st.load(b, state, st.AREA_COPY_SERIAL, dm.i32)
    st.store(b, serial, entry, B_SERIAL)
    st.store(b, b.add(serial, st.i32(1)), state, st.AREA_COPY_SERIAL)
    st.store(b, b.add(st.load(b, state, st.AREA_BULK_COUNT, dm.i32), st.i32(1)), state,
             st.AREA_BULK_COUNT)
    b.ret(serial)
    return fn


def _first_free(b: ir.IRBuilder, state):
    """The index of the first free entry (the queue has one)."""
    found = b.alloca(dm.i32)
    b.store(st.i32(st.BULK_CAPACITY - 1), found)
    with st.loop(b, st.i32(0), st.i32(st.BULK_CAPACITY), "first") as k:
        free = b.icmp_signed("==", st.load(b, _entry(b, state, k), B_KIND, dm.i32), st.i32(0))
        earlier = b.icmp_signed("<", k, b.load(found))
        with b.if_then(b.and_(free, earlier)):
            b.store(k, found)
    return b.load(found)


def complete_function(module: ir.Module, record: bool) -> ir.Function:
    """i32 gpunb_tma_complete(ctx, i32 kind, i32 before_group): do this thread's queued copies
    of `kind` (stores: only of groups before `before_group`); returns how many."""
    fn, b = st.new_function(module, "gpunb_tma_complete", dm.i32, [dm.ptr, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, kind, before = fn.args
    state = st.area(b, ctx)
    done = b.alloca(dm.i32)
    b.store(st.i32(0), done)
    with st.loop(b, st.i32(0), st.i32(st.BULK_CAPACITY), "complete") as k:
        entry = _entry(b, state, k)
        mine = b.icmp_signed("==", st.load(b, entry, B_KIND, dm.i32), kind)
        old = b.icmp_signed("<", st.load(b, entry, B_GROUP, dm.i32), before)
        with b.if_then(b.and_(mine, b.or_(old, b.icmp_signed("==", kind, st.i32(LOAD))))):
            b.call(copy_function(module, record), [ctx, entry])
            b.store(b.add(b.load(done), st.i32(1)), done)
    b.ret(b.load(done))
    return fn


def unawaited_function(module: ir.Module) -> ir.Function:
    """void gpunb_tma_unawaited(ctxs, i32 n): every thread of [0, n) has finished, so a load
    still queued was waited for by nobody (typically its mbarrier phase completed without its
    bytes: no arrive_expect_tx, and the reads after the wait saw the old tile). Each such load
    is an error at its line (the first error of the launch wins); a = its bytes, b = its
    mbarrier's bits."""
    fn, b = st.new_function(module, "gpunb_tma_unawaited", dm.void, [dm.ptr, dm.i32])
    if b is None:
        return fn
    ctxs, n = fn.args
    error = st.error_function(module)
    with st.loop(b, st.i32(0), n, "thread") as i:
        ctx = st.at(b, ctxs, b.mul(b.zext(i, dm.i64), st.i64(abi.CTX_SIZE)))
        state = st.area(b, ctx)
        pending = st.load(b, state, st.AREA_BULK_COUNT, dm.i32)
        with b.if_then(b.icmp_signed(">", pending, st.i32(0))):
            with st.loop(b, st.i32(0), st.i32(st.BULK_CAPACITY), "entry") as k:
                entry = _entry(b, state, k)
                load = b.icmp_signed("==", st.load(b, entry, B_KIND, dm.i32), st.i32(LOAD))
                with b.if_then(load):
                    tmap = st.load(b, entry, B_TMAP, dm.ptr)
                    _, total = _box_extents(b, tmap)
                    nbytes = b.mul(total, b.zext(st.load(b, tmap, D_ITEMSIZE, dm.i32), dm.i64))
                    bar = st.load(b, entry, B_BAR, dm.ptr)
                    b.call(error, [ctx, st.load(b, entry, B_SITE, dm.i32),
                                   st.i32(int(st.Reason.TMA_UNAWAITED)), nbytes,
                                   b.load(bar, typ=dm.i64)])
    b.ret_void()
    return fn


def drain_block_function(module: ir.Module, record: bool) -> ir.Function:
    """i32 gpunb_tma_drain(ctxs, i32 n): the scheduler's idle step - do every queued TMA load
    of threads [0, n) (finished threads' too: their copies still land); returns how many."""
    fn, b = st.new_function(module, "gpunb_tma_drain", dm.i32, [dm.ptr, dm.i32])
    if b is None:
        return fn
    ctxs, n = fn.args
    done = b.alloca(dm.i32)
    b.store(st.i32(0), done)
    complete = complete_function(module, record)
    with st.loop(b, st.i32(0), n, "thread") as i:
        ctx = st.at(b, ctxs, b.mul(b.zext(i, dm.i64), st.i64(abi.CTX_SIZE)))
        pending = st.load(b, st.area(b, ctx), st.AREA_BULK_COUNT, dm.i32)
        with b.if_then(b.icmp_signed(">", pending, st.i32(0))):
            count = b.call(complete, [ctx, st.i32(LOAD), st.i32(0)])
            b.store(b.add(b.load(done), count), done)
    b.ret(b.load(done))
    return fn
