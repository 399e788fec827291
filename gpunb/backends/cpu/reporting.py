"""Generated helpers through which CPU-target kernels report to the launcher: print records,
index errors, bad warp masks and raises, each written into the launch Status (abi.py) with the
thread's ids."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import new_function


def _field(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def print_record_function(module: ir.Module) -> ir.Function:
    """void gpunb_print_record(ctx, text, len): append [block][thread][len][text] atomically."""
    fn, b = new_function(module, "gpunb_print_record", dm.void, [dm.ptr, dm.ptr, dm.i32])
    if b is None:
        return fn
    ctx, text, length = fn.args
    status = b.load(_field(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    so = abi.STATUS_OFFSETS
    buf = b.load(_field(b, status, so["print_buf"]), typ=dm.ptr)
    cap = b.load(_field(b, status, so["print_cap"]), typ=dm.i64)
    n = b.select(b.icmp_signed(">", length, ir.Constant(dm.i32, 511)), ir.Constant(dm.i32, 511),
                 b.select(b.icmp_signed("<", length, ir.Constant(dm.i32, 0)),
                          ir.Constant(dm.i32, 0), length))
    size = b.add(b.zext(n, dm.i64), ir.Constant(dm.i64, 12))
    start = b.atomic_rmw("add", _field(b, status, so["print_len"]), size, "seq_cst")
    fits = b.icmp_signed("<=", b.add(start, size), cap)
    write = fn.append_basic_block("write")
    done = fn.append_basic_block("done")
    b.cbranch(fits, write, done)
    b.position_at_end(write)
    rec = b.gep(buf, [start], source_etype=dm.i8)
    ctaid = [b.zext(b.load(_field(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32), dm.i64)
             for k in range(3)]
    nctaid = [b.zext(b.load(_field(b, ctx, abi.CTX_NCTAID + 4 * k), typ=dm.i32), dm.i64)
              for k in range(3)]
    block = b.add(ctaid[0], b.mul(nctaid[0], b.add(ctaid[1], b.mul(nctaid[1], ctaid[2]))))
    b.store(b.trunc(block, dm.i32), rec)
    b.store(b.load(_field(b, ctx, abi.CTX_LINEAR), typ=dm.i32), _field(b, rec, 4))
    b.store(n, _field(b, rec, 8))
    memcpy = module.globals.get("llvm.memcpy.p0.p0.i64") or ir.Function(
        module, ir.FunctionType(dm.void, [dm.ptr, dm.ptr, dm.i64, dm.i1]), "llvm.memcpy.p0.p0.i64")
    b.call(memcpy, [_field(b, rec, 12), text, b.zext(n, dm.i64), ir.Constant(dm.i1, 0)])
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _first_error(module: ir.Module, name: str, params: list, code: int, fields) -> ir.Function:
    """void name(ctx, site, ...): the first error of a launch wins the Status (a compare and
    swap of its error code from 0); the winner stores the site, `fields(b, status, args)` and
    its thread's ids. Cold and never inlined: the checks' fast paths stay small."""
    fn, b = new_function(module, name, dm.void, [dm.ptr, dm.i32, *params], cold=True)
    if b is None:
        return fn
    ctx, site, *args = fn.args
    status = b.load(_field(b, ctx, abi.CTX_STATUS), typ=dm.ptr)
    pair = b.cmpxchg(status, ir.Constant(dm.i32, 0), ir.Constant(dm.i32, code),
                     "seq_cst", "seq_cst")
    record = fn.append_basic_block("record")
    done = fn.append_basic_block("done")
    b.cbranch(b.extract_value(pair, 1), record, done)
    b.position_at_end(record)
    b.store(site, _field(b, status, abi.STATUS_OFFSETS["site"]))
    fields(b, ctx, status, args)
    record_thread(b, ctx, status)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def index_error_function(module: ir.Module) -> ir.Function:
    """void gpunb_index_error(ctx, site, axis, index, extent)."""
    def fields(b, ctx, status, args):
        so = abi.STATUS_OFFSETS
        for key, value in zip(("axis", "index", "extent"), args, strict=True):
            b.store(value, _field(b, status, so[key]))

    return _first_error(module, "gpunb_index_error", [dm.i32, dm.i64, dm.i64],
                        abi.ERROR_INDEX, fields)


def warp_error_function(module: ir.Module) -> ir.Function:
    """void gpunb_warp_error(ctx, site, mask, i32 how): a bad warp-collective mask (how 1: the
    calling lane is not in it)."""
    def fields(b, ctx, status, args):
        so = abi.STATUS_OFFSETS
        mask, how = args
        b.store(mask, _field(b, status, so["mask"]))
        b.store(how, _field(b, status, so["count"]))
        b.store(b.load(_field(b, ctx, abi.CTX_LANE), typ=dm.i32), _field(b, status, so["lane"]))

    return _first_error(module, "gpunb_warp_error", [dm.i32, dm.i32], abi.ERROR_WARP_MASK,
                        fields)


def record_thread(b: ir.IRBuilder, ctx, status) -> None:
    """Copy the reporting thread's threadIdx and blockIdx into the launch Status."""
    so = abi.STATUS_OFFSETS
    for k in range(3):
        b.store(b.load(_field(b, ctx, abi.CTX_TID + 4 * k), typ=dm.i32),
                _field(b, status, so["tid"] + 4 * k))
        b.store(b.load(_field(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32),
                _field(b, status, so["ctaid"] + 4 * k))


def raise_function(module: ir.Module) -> ir.Function:
    """void gpunb_raise(ctx, site): the first raise of a launch records its site and thread."""
    return _first_error(module, "gpunb_raise", [], abi.ERROR_RAISE, lambda *_: None)


def stop_function(module: ir.Module) -> ir.Function:
    """void gpunb_stop(ctx): the launch is to stop - jump back to this host thread's guard
    record (guard_ir.py), which frees the launch's memory; returns only where the process has
    no guard (the kernel then runs on)."""
    # not `cold`: LLVM would move it to a .text.unlikely section, out of the one text
    # section whose line table a fault is read from (the branch to it is weighted instead)
    fn, b = new_function(module, "gpunb_stop", dm.void, [dm.ptr])
    if b is None:
        return fn
    guard = b.load(_field(b, fn.args[0], abi.CTX_GUARD), typ=dm.ptr)
    jump, out = fn.append_basic_block("jump"), fn.append_basic_block("out")
    b.cbranch(b.icmp_unsigned("!=", b.ptrtoint(guard, dm.i64), ir.Constant(dm.i64, 0)), jump,
              out)
    b.position_at_end(jump)
    longjmp = module.globals.get("_longjmp") or ir.Function(
        module, ir.FunctionType(dm.void, [dm.ptr, dm.i32]), "_longjmp")
    longjmp.attributes.add("noreturn")
    b.call(longjmp, [guard, ir.Constant(dm.i32, abi.JUMP_STOP)])
    b.unreachable()
    b.position_at_end(out)
    b.ret_void()
    return fn
