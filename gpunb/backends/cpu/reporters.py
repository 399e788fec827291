"""Generated helpers that record a kernel's errors in the launch Status (the first one wins):
out-of-bounds indexes, raises, bad warp masks."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm


def _field(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def _warp_error_function(module: ir.Module) -> ir.Function:
    """void gpunb_warp_error(ctx, site, mask, i32 how): a bad warp-collective mask (how 1: the
    calling lane is not in it); the first error of a launch wins."""
    name = "gpunb_warp_error"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, dm.i32, dm.i32, dm.i32]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    ctx, site, mask, how = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    status = b.load(_field(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    pair = b.cmpxchg(status, ir.Constant(dm.i32, 0), ir.Constant(dm.i32, abi.ERROR_WARP_MASK),
                     "seq_cst", "seq_cst")
    record = fn.append_basic_block("record")
    done = fn.append_basic_block("done")
    b.cbranch(b.extract_value(pair, 1), record, done)
    b.position_at_end(record)
    so = abi.STATUS_OFFSETS
    b.store(site, _field(b, status, so["site"]))
    b.store(mask, _field(b, status, so["mask"]))
    b.store(how, _field(b, status, so["count"]))
    b.store(b.load(_field(b, ctx, abi.CTX_LANE), typ=dm.i32), _field(b, status, so["lane"]))
    _record_thread(b, ctx, status)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _record_thread(b: ir.IRBuilder, ctx, status) -> None:
    """Copy the reporting thread's threadIdx and blockIdx into the launch Status."""
    so = abi.STATUS_OFFSETS
    for k in range(3):
        b.store(b.load(_field(b, ctx, abi.CTX_TID + 4 * k), typ=dm.i32),
                _field(b, status, so["tid"] + 4 * k))
        b.store(b.load(_field(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32),
                _field(b, status, so["ctaid"] + 4 * k))


def _raise_function(module: ir.Module) -> ir.Function:
    """void gpunb_raise(ctx, site): the first raise of a launch records its site and thread."""
    name = "gpunb_raise"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, dm.i32]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    ctx, site = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    status = b.load(_field(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    pair = b.cmpxchg(status, ir.Constant(dm.i32, 0), ir.Constant(dm.i32, abi.ERROR_RAISE),
                     "seq_cst", "seq_cst")
    record = fn.append_basic_block("record")
    done = fn.append_basic_block("done")
    b.cbranch(b.extract_value(pair, 1), record, done)
    b.position_at_end(record)
    so = abi.STATUS_OFFSETS
    b.store(site, _field(b, status, so["site"]))
    _record_thread(b, ctx, status)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _index_error_function(module: ir.Module) -> ir.Function:
    """void gpunb_index_error(ctx, site, axis, index, extent): first error of a launch wins."""
    name = "gpunb_index_error"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, dm.i32, dm.i32, dm.i64, dm.i64]),
                     name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    ctx, site, axis, index, extent = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    status = b.load(_field(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    pair = b.cmpxchg(status, ir.Constant(dm.i32, 0), ir.Constant(dm.i32, abi.ERROR_INDEX),
                     "seq_cst", "seq_cst")
    won = b.extract_value(pair, 1)
    record = fn.append_basic_block("record")
    done = fn.append_basic_block("done")
    b.cbranch(won, record, done)
    b.position_at_end(record)
    so = abi.STATUS_OFFSETS
    b.store(site, _field(b, status, so["site"]))
    b.store(axis, _field(b, status, so["axis"]))
    b.store(index, _field(b, status, so["index"]))
    b.store(extent, _field(b, status, so["extent"]))
    _record_thread(b, ctx, status)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn
