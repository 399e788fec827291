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

# a thread's own stack data (cuda.local.array, spilled values) lies just above the recorder's
# frame; those addresses are reused by the next thread and are never shared, so they are skipped
_STACK_WINDOW = 1 << 18
READ, WRITE, ATOMIC = "read", "write", "atomic"


def _at(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def record_function(module: ir.Module) -> ir.Function:
    """void gpunb_record(ctx, i32 site, ptr address): append one record to the launch's log."""
    name = "gpunb_record"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, dm.i32, dm.ptr]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    ctx, site, address = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    done = fn.append_basic_block("done")
    marker = b.alloca(dm.i8, name="frame")
    so = abi.STATUS_OFFSETS
    status = b.load(_at(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    buf = b.load(_at(b, status, so["rec_buf"]), typ=dm.ptr)
    addr = b.ptrtoint(address, dm.i64)
    above_frame = b.sub(addr, b.ptrtoint(marker, dm.i64))
    on_stack = b.icmp_unsigned("<", above_frame, ir.Constant(dm.i64, _STACK_WINDOW))
    skip = b.or_(b.icmp_unsigned("==", buf, ir.Constant(dm.ptr, None)), on_stack)
    write = fn.append_basic_block("write")
    b.cbranch(skip, done, write)
    b.position_at_end(write)
    n = b.atomic_rmw("add", _at(b, status, so["rec_len"]), ir.Constant(dm.i64, 1), "monotonic")
    fits = b.icmp_signed("<", n, b.load(_at(b, status, so["rec_cap"]), typ=dm.i64))
    store = fn.append_basic_block("store")
    b.cbranch(fits, store, done)
    b.position_at_end(store)
    shared = b.ptrtoint(b.load(_at(b, ctx, abi.CTX_SHARED), typ=dm.ptr), dm.i64)
    offset = b.sub(addr, shared)
    in_shared = b.icmp_unsigned("<", offset, b.load(_at(b, status, so["rec_shared"]),
                                                     typ=dm.i64))
    rec = b.gep(buf, [b.mul(n, ir.Constant(dm.i64, abi.RECORD_SIZE))], source_etype=dm.i8)
    b.store(b.select(in_shared, offset, addr), rec)
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
    b.store(b.zext(in_shared, ir.IntType(16)), _at(b, rec, 30))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def bump_epoch(b: ir.IRBuilder, ctx, offset: int) -> None:
    """The thread passed one more synchronisation of this kind."""
    field = _at(b, ctx, offset)
    b.store(b.add(b.load(field, typ=dm.i32), ir.Constant(dm.i32, 1)), field)


EPOCH_OF_WAIT = {abi.WAIT_BLOCK: (abi.CTX_BAR_EPOCH,),
                 abi.WAIT_WARP: (abi.CTX_WARP_EPOCH,),
                 abi.WAIT_GRID: (abi.CTX_BAR_EPOCH, abi.CTX_GRID_EPOCH),
                 # mbarrier waits and wgmma rendezvous order no generic accesses of the block
                 abi.WAIT_MBARRIER: (), abi.WAIT_WARPGROUP: ()}
