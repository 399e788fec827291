"""Access recording for the CPU target: one call per load, store and atomic, appending a record.

Race checking and access maps (gpunb.access_map) read the same records: address (or offset in the
block's shared memory), the site (line, array, read/write/atomic), thread, block and the
synchronisation epochs the thread has passed. Recording kernels always run as coroutines, one
context per thread, so a thread's epochs are its own.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import new_function

# a thread's own stack data (cuda.local.array, spilled values) lies just above the recorder's
# frame, or in its coroutine frame (abi.CTX_FRAME); those addresses are reused by the next
# thread or block and are never shared, so they are skipped
_STACK_WINDOW = 1 << 18
READ, WRITE, ATOMIC = "read", "write", "atomic"


def _at(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def _shared_offset(b: ir.IRBuilder, ctx, addr, status) -> tuple:
    """(offset, in shared memory) of an address: from the block's shared memory, or (a launch
    of a kernel with cluster dims: abi.Status.rec_cluster) from its cluster's rank-0 block's,
    whose blocks lie one stride (the shared bytes, SHARED_ALIGN-rounded, as the runner lays
    them out) apart in rank order - another block's shared memory is shared memory too. The
    dims are the launch's, not the module's: the runtime library's schedulers record too."""
    so = abi.STATUS_OFFSETS
    shared = b.ptrtoint(b.load(_at(b, ctx, abi.CTX_SHARED), typ=dm.ptr), dm.i64)
    offset = b.sub(addr, shared)
    limit = b.load(_at(b, status, so["rec_shared"]), typ=dm.i64)
    packed = b.load(_at(b, status, so["rec_cluster"]), typ=dm.i32)
    with b.goto_entry_block():  # promoted to registers
        out_offset, out_inside = b.alloca(dm.i64), b.alloca(dm.i1)
    b.store(offset, out_offset)
    b.store(b.icmp_unsigned("<", offset, limit), out_inside)
    with b.if_then(b.icmp_unsigned("!=", packed, ir.Constant(dm.i32, 0)), likely=False):
        within, inside = _cluster_offset(b, ctx, offset, limit, packed)
        b.store(within, out_offset)
        b.store(inside, out_inside)
    return b.load(out_offset), b.load(out_inside)


def _cluster_offset(b: ir.IRBuilder, ctx, offset, limit, packed) -> tuple:
    """_shared_offset's cluster case: (offset from the rank-0 block's shared memory, inside
    the cluster's) of an address `offset` bytes from the block's own."""
    from gpunb.backends.cpu.launch_memory import SHARED_ALIGN

    def i32(v: int):
        return ir.Constant(dm.i32, v)

    dims = [b.and_(b.lshr(packed, i32(8 * k)), i32(0xFF)) for k in range(3)]
    dims = [b.select(b.icmp_unsigned("==", d, i32(0)), i32(1), d) for d in dims]  # no urem 0
    ctaid = [b.load(_at(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32) for k in range(3)]
    rank = b.add(b.urem(ctaid[0], dims[0]),
                 b.mul(b.add(b.urem(ctaid[1], dims[1]),
                             b.mul(b.urem(ctaid[2], dims[2]), dims[1])), dims[0]))
    stride = b.and_(b.add(limit, ir.Constant(dm.i64, SHARED_ALIGN - 1)),
                    ir.Constant(dm.i64, -SHARED_ALIGN))
    size = b.zext(b.mul(b.mul(dims[0], dims[1]), dims[2]), dm.i64)
    within = b.add(offset, b.mul(b.zext(rank, dm.i64), stride))
    return within, b.icmp_unsigned("<", within, b.mul(stride, size))


def record_function(module: ir.Module) -> ir.Function:
    """void gpunb_record(ctx, i32 site, ptr address): append one record to the launch's log."""
    fn, b = new_function(module, "gpunb_record", dm.void, [dm.ptr, dm.i32, dm.ptr])
    if b is None:
        return fn
    ctx, site, address = fn.args
    done = fn.append_basic_block("done")
    marker = b.alloca(dm.i8, name="frame")
    so = abi.STATUS_OFFSETS
    status = b.load(_at(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    buf = b.load(_at(b, status, so["rec_buf"]), typ=dm.ptr)
    addr = b.ptrtoint(address, dm.i64)
    above_frame = b.sub(addr, b.ptrtoint(marker, dm.i64))
    on_stack = b.icmp_unsigned("<", above_frame, ir.Constant(dm.i64, _STACK_WINDOW))
    # a coroutine thread's local arrays live in its heap frame, which a later block reuses
    frame = b.ptrtoint(b.load(_at(b, ctx, abi.CTX_FRAME), typ=dm.ptr), dm.i64)
    in_frame = b.icmp_unsigned("<", b.sub(addr, frame),
                               b.zext(b.load(_at(b, ctx, abi.CTX_FRAME_BYTES), typ=dm.i32),
                                      dm.i64))
    skip = b.or_(b.icmp_unsigned("==", buf, ir.Constant(dm.ptr, None)),
                 b.or_(on_stack, in_frame))
    write = fn.append_basic_block("write")
    b.cbranch(skip, done, write)
    b.position_at_end(write)
    n = b.atomic_rmw("add", _at(b, status, so["rec_len"]), ir.Constant(dm.i64, 1), "monotonic")
    fits = b.icmp_signed("<", n, b.load(_at(b, status, so["rec_cap"]), typ=dm.i64))
    store = fn.append_basic_block("store")
    b.cbranch(fits, store, done)
    b.position_at_end(store)
    offset, in_shared = _shared_offset(b, ctx, addr, status)
    rec = b.gep(buf, [b.mul(n, ir.Constant(dm.i64, abi.RECORD_SIZE))], source_etype=dm.i8)
    _fill(b, ctx, rec, b.select(in_shared, offset, addr), site, b.zext(in_shared, ir.IntType(16)))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def allocate_frame(b: ir.IRBuilder, ctx, size, record: bool):
    """malloc a coroutine thread's frame and note it in the context (abi.CTX_FRAME: a launch
    abandoned mid-way frees it); a recording thread also notes its size: its local arrays live
    there, and the recorder skips them."""
    malloc = b.module.globals.get("malloc") or \
        ir.Function(b.module, ir.FunctionType(dm.ptr, [dm.i64]), "malloc")
    mem = b.call(malloc, [size])
    b.store(mem, _at(b, ctx, abi.CTX_FRAME))
    if record:
        b.store(b.trunc(size, dm.i32), _at(b, ctx, abi.CTX_FRAME_BYTES))
    return mem


def record_sync_function(module: ir.Module) -> ir.Function:
    """void gpunb_record_sync(ctx, i32 site, i64 value): append a synchronisation record
    (abi.SPACE_SYNC; `value` in place of the address) to the launch's log."""
    fn, b = new_function(module, "gpunb_record_sync", dm.void, [dm.ptr, dm.i32, dm.i64])
    if b is None:
        return fn
    ctx, site, value = fn.args
    done = fn.append_basic_block("done")
    so = abi.STATUS_OFFSETS
    status = b.load(_at(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    buf = b.load(_at(b, status, so["rec_buf"]), typ=dm.ptr)
    write = fn.append_basic_block("write")
    b.cbranch(b.icmp_unsigned("==", buf, ir.Constant(dm.ptr, None)), done, write)
    b.position_at_end(write)
    n = b.atomic_rmw("add", _at(b, status, so["rec_len"]), ir.Constant(dm.i64, 1), "monotonic")
    fits = b.icmp_signed("<", n, b.load(_at(b, status, so["rec_cap"]), typ=dm.i64))
    store = fn.append_basic_block("store")
    b.cbranch(fits, store, done)
    b.position_at_end(store)
    rec = b.gep(buf, [b.mul(n, ir.Constant(dm.i64, abi.RECORD_SIZE))], source_etype=dm.i8)
    _fill(b, ctx, rec, value, site, ir.Constant(ir.IntType(16), abi.SPACE_SYNC))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _fill(b: ir.IRBuilder, ctx, rec, address, site, space) -> None:
    """Write one record: address (or value), site, thread, block, epochs, space."""
    b.store(address, rec)
    b.store(site, _at(b, rec, 8))
    b.store(b.load(_at(b, ctx, abi.CTX_LINEAR), typ=dm.i32), _at(b, rec, 12))
    ctaid = [b.load(_at(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32) for k in range(3)]
    nctaid = [b.load(_at(b, ctx, abi.CTX_NCTAID + 4 * k), typ=dm.i32) for k in range(3)]
    block = b.add(ctaid[0], b.mul(nctaid[0], b.add(ctaid[1], b.mul(nctaid[1], ctaid[2]))))
    b.store(block, _at(b, rec, 16))
    b.store(b.load(_at(b, ctx, abi.CTX_BAR_EPOCH), typ=dm.i32), _at(b, rec, 20))
    b.store(b.load(_at(b, ctx, abi.CTX_WARP_EPOCH), typ=dm.i32), _at(b, rec, 24))
    grid = b.load(_at(b, ctx, abi.CTX_GRID_EPOCH), typ=dm.i32)
    b.store(b.trunc(grid, ir.IntType(16)), _at(b, rec, 28))
    b.store(space, _at(b, rec, 30))


def sync_value(b: ir.IRBuilder, kind: int, obj, done=None, extra=None):
    """The i64 value of a synchronisation record (abi.SYNC_*): object, kind, flag, extra."""
    i64 = dm.i64
    value = b.or_(b.and_(b.zext(obj, i64) if obj.type != i64 else obj,
                         ir.Constant(i64, 0xFFFFFFFF)),
                  ir.Constant(i64, kind << abi.SYNC_KIND_SHIFT))
    if done is not None:
        value = b.or_(value, b.shl(b.zext(done, i64), ir.Constant(i64, abi.SYNC_DONE_BIT)))
    if extra is not None:
        wide = b.zext(extra, i64) if extra.type != i64 else extra
        value = b.or_(value, b.shl(b.and_(wide, ir.Constant(i64, (1 << 22) - 1)),
                                   ir.Constant(i64, abi.SYNC_EXTRA_SHIFT)))
    return value


def record_sync(b: ir.IRBuilder, ctx, kind: int, obj, site: int = -1, done=None,
                extra=None) -> None:
    """Call gpunb_record_sync for one synchronisation event of the calling thread."""
    b.call(record_sync_function(b.module),
           [ctx, ir.Constant(dm.i32, site), sync_value(b, kind, obj, done, extra)])


def bump_epoch(b: ir.IRBuilder, ctx, offset: int) -> None:
    """The thread passed one more synchronisation of this kind."""
    field = _at(b, ctx, offset)
    b.store(b.add(b.load(field, typ=dm.i32), ir.Constant(dm.i32, 1)), field)


EPOCH_OF_WAIT = {abi.WAIT_BLOCK: (abi.CTX_BAR_EPOCH,),
                 abi.WAIT_WARP: (abi.CTX_WARP_EPOCH,),
                 abi.WAIT_GRID: (abi.CTX_BAR_EPOCH, abi.CTX_GRID_EPOCH),
                 # mbarrier waits, wgmma rendezvous and the cluster barrier order accesses
                 # through synchronisation records (happens_before.py), not epochs
                 abi.WAIT_MBARRIER: (), abi.WAIT_WARPGROUP: (), abi.WAIT_CLUSTER: ()}
