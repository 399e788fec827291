"""The CPU target's tensor-core instructions, as the PTX ISA defines them.

Every warp-wide operation is a warp collective: each lane publishes the address of what it
contributes (its staged fragment elements, its row address), waits for the whole warp, computes
its own part from the others' data, then waits again so that no lane changes its data before
every lane has read it. A lane missing from the warp (a partial warp, an exited lane, a branch
some lanes skip) is reported at the call's line instead of computing with garbage.

mma: multiplicands are widened exactly to float32 (float16, bfloat16, fp8), tf32 keeps the top
19 bits of its float32 (the tensor cores ignore the low 13), integers to int32; each output
element is C plus the K products added in order in float32 (int32 wrapping, or saturating with
satfinite), then rounded once to a float16 accumulator. Lane layouts: tensorcore_layouts.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.backends.cpu.runner import _loop
from gpunb.compiler import datamodel as dm
from gpunb.compiler import lowfloat
from gpunb.compiler.builtins import tensorcore_layouts as tl
from gpunb.compiler.ir_functions import new_function
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import Fragment

_FULL = ir.Constant(dm.i32, 0xFFFFFFFF)
_F32 = ir.FloatType()
PARTIAL_WARP = ("{what} needs all 32 lanes of the warp, and some are missing (a block size "
                "that is not a multiple of 32, or a lane that returned early)")
ROW_OUTSIDE = ("{what}: the 8-element row a lane addresses must lie inside the array, "
               "contiguous and 16-byte aligned")
NOT_SHARED = ("{what} reaches shared memory only, and the row a lane addresses in '{array}' is "
              "not in this block's shared memory (a kernel argument or a local array: on a GPU "
              "the instruction reads or writes whatever shared memory lies at that offset)")


def _i32(v: int):
    return ir.Constant(dm.i32, v)


_I16 = ir.IntType(16)


def _table(low, key: str, values: list, ty: ir.IntType = _I16):
    """A constant lookup table in the module (one per key)."""
    module = low.mb.module
    name = f"_gpunb_tc_{key}"
    gv = module.globals.get(name)
    if gv is None:
        gv = ir.GlobalVariable(module, ir.ArrayType(ty, len(values)), name)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(gv.value_type, [int(v) for v in values])
    return gv


def _lookup(b: ir.IRBuilder, table, index):
    pointer = b.gep(table, [_i32(0), index])
    return b.zext(b.load(pointer), dm.i32)


def widen(b: ir.IRBuilder, value, kind: str):
    """A multiplicand or accumulator element as the float32 (int32) the products use."""
    if kind in ("f32", "s32"):
        return value
    if kind == "f16":
        return b.fpext(value, _F32)
    if kind == "bf16":
        return lowfloat.bf16_to_f32(b, value)
    if kind == "tf32":
        bits = b.and_(b.bitcast(value, dm.i32), _i32(~0x1FFF))
        return b.bitcast(bits, _F32)
    if kind in tl.FP8_KINDS:
        return lowfloat.fp8_to_f32(b, value, kind)
    return b.sext(value, dm.i32) if kind == "s8" else b.zext(value, dm.i32)


class CpuTensorCores:
    """Lowering of the tensorcore builtins for one CpuTarget (coroutine mode: they are warp
    collectives, Feature.WARP_BARRIER)."""

    def __init__(self, target):
        self.target = target

    # ---- the warp protocol -------------------------------------------------------------------

    def _fail_if(self, low, node, failed, message: str, exc: str = "RuntimeError") -> None:
        b = low.builder
        fail, ok = low.new_block("tc.fail"), low.new_block("tc.ok")
        b.cbranch(failed, fail, ok)
        b.position_at_end(fail)
        low.raise_exception(node, exc, message, report=True)
        b.position_at_end(ok)

    def _gather_point(self, low, node, what: str, bits):
        """Publish `bits`, wait for the whole warp (all 32 lanes); this lane's id."""
        b = low.builder
        lane, lanes = self.target._exchange(low, node, bits, what, _FULL)
        self._fail_if(low, node, b.icmp_unsigned("!=", lanes, _FULL),
                      PARTIAL_WARP.format(what=what))
        return lane

    def _release(self, low, node, what: str, keep=None) -> None:
        """The second wait: every lane has read what the others published. `keep` (a staging
        alloca) is written once more after it, so that it lives in the coroutine frame across
        both suspends rather than on a stack that the other lanes cannot see."""
        self.target._wait(low, node, abi.WAIT_WARP, what, mask=_FULL)
        if keep is not None:  # (a store, not a load: a store after the suspends must stay)
            first = low.builder.gep(keep, [_i32(0), _i32(0)])
            low.builder.store(ir.Constant(keep.allocated_type.element, 0), first)

    def _published_pointer(self, low, lane, lane_index):
        """What lane `lane_index` published, as a pointer."""
        return low.builder.inttoptr(self.target._snapshot_of(low, lane, lane_index), dm.ptr)

    # ---- mma ---------------------------------------------------------------------------------

    def mma(self, low, node, op: tl.MmaOp, a: list, b_vals: list, c: list) -> list:
        b = low.builder
        stage_t = dm.i32 if op.integer else _F32
        stage = low.alloca(ir.ArrayType(stage_t, len(a) + len(b_vals)), "mma.stage")
        for i, value in enumerate([widen(b, v, op.a_kind) for v in a] +
                                  [widen(b, v, op.b_kind) for v in b_vals]):
            b.store(value, b.gep(stage, [_i32(0), _i32(i)]))
        accumulators = low.alloca(ir.ArrayType(stage_t, len(c)), "mma.c")
        for i, value in enumerate(c):
            b.store(widen(b, value, op.c_kind), b.gep(accumulators, [_i32(0), _i32(i)]))
        what = "wmma.mma_sync" if op.api == "wmma" else "cuda.mma_sync"
        lane = self._gather_point(low, node, what, b.ptrtoint(stage, dm.i64))
        b.call(_mma_helper(low, op, len(a)), [low.ctx, lane, accumulators])
        out = [self._narrow(b, b.load(b.gep(accumulators, [_i32(0), _i32(i)])), op)
               for i in range(len(c))]
        self._release(low, node, what, keep=stage)
        return out

    @staticmethod
    def _narrow(b: ir.IRBuilder, value, op: tl.MmaOp):
        return b.fptrunc(value, ir.HalfType()) if op.d_kind == "f16" else value

    # ---- WMMA loads and stores ---------------------------------------------------------------

    def _tile_access(self, low, node, frag: Fragment, base, ldm, row_major: bool,
                     what: str, values: list | None) -> list:
        """Load (values None) or store the lane's fragment elements between the two waits."""
        b = low.builder
        lane = self._gather_point(low, node, what, ir.Constant(dm.i64, 0))
        elem = tl.KIND_TYPES[frag.kind]
        storage = low.alloca(ir.ArrayType(dm.memory_type(elem), frag.num_elements), "wmma.io")
        if values is not None:
            for i, value in enumerate(values):
                b.store(value, b.gep(storage, [_i32(0), _i32(i)]))
        helper = _tile_helper(low, frag, row_major, values is not None)
        b.call(helper, [base, ldm, lane, storage])
        if self.target.record:
            # the access is the tile's (frag is args[0] of a load, args[1] of a store): reports
            # and access maps name the array the tile views, not the fragment
            args = getattr(node, "args", ())
            tile = args[1 if values is None else 0] if len(args) > 1 else node
            for offset in self._tile_offsets(low, frag, lane, ldm, row_major):
                pointer = b.gep(base, [offset], source_etype=dm.memory_type(elem))
                self.target.record_access(low, tile, pointer,
                                          "read" if values is None else "write")
        out = [] if values is not None else [
            b.load(b.gep(storage, [_i32(0), _i32(i)])) for i in range(frag.num_elements)]
        self._release(low, node, what)
        return out

    def _tile_offsets(self, low, frag: Fragment, lane, ldm, row_major: bool) -> list:
        """The element offset of each of this lane's fragment elements (for access records)."""
        b = low.builder
        table, count = _fragment_table(low, frag)
        ldm64 = b.sext(ldm, dm.i64)
        offsets = []
        for e in range(count):
            rc = _lookup(b, table, b.add(b.mul(lane, _i32(count)), _i32(e)))
            row = b.zext(b.lshr(rc, _i32(8)), dm.i64)
            col = b.zext(b.and_(rc, _i32(255)), dm.i64)
            offsets.append(b.add(b.mul(row, ldm64), col) if row_major
                           else b.add(b.mul(col, ldm64), row))
        return offsets

    def wmma_load(self, low, node, frag: Fragment, base, ldm, row_major: bool,
                  space: str | None = None) -> list:
        return self._tile_access(low, node, frag, base, ldm, row_major,
                                 "wmma.load_matrix_sync", None)

    def wmma_store(self, low, node, frag: Fragment, base, ldm, row_major: bool,
                   values: list, space: str | None = None) -> None:
        self._tile_access(low, node, frag, base, ldm, row_major, "wmma.store_matrix_sync",
                          values)

    # ---- ldmatrix / stmatrix -----------------------------------------------------------------

    def _check_row(self, low, node, pointer, ok, num: int, what: str) -> None:
        """Lanes whose row address the instruction uses (the first 8 * num) need a valid row,
        in this block's shared memory (the compiler refuses a kernel argument by name; an
        alias, a device function's parameter or a local array is caught here)."""
        b = low.builder
        used = b.icmp_unsigned("<", self.target.laneid(low), _i32(8 * num))
        aligned = b.icmp_unsigned("==", b.and_(b.ptrtoint(pointer, dm.i64),
                                               ir.Constant(dm.i64, 15)), ir.Constant(dm.i64, 0))
        self._fail_if(low, node, b.and_(used, b.not_(b.and_(ok, aligned))),
                      ROW_OUTSIDE.format(what=what), "IndexError")
        base = b.load(b.gep(low.ctx, [ir.Constant(dm.i64, abi.CTX_SHARED)],
                            source_etype=dm.i8), typ=dm.ptr)
        status = b.load(b.gep(low.ctx, [ir.Constant(dm.i64, abi.CTX_STATUS)],
                              source_etype=dm.i8), typ=dm.ptr)
        size = b.load(b.gep(status, [ir.Constant(dm.i64, abi.STATUS_OFFSETS["rec_shared"])],
                            source_etype=dm.i8), typ=dm.i64)
        offset = b.sub(b.ptrtoint(pointer, dm.i64), b.ptrtoint(base, dm.i64))
        outside = b.icmp_unsigned(">", b.add(offset, ir.Constant(dm.i64, 16)), size)
        array = ast.unparse(node.args[0]) if node.args else "the array"
        self._fail_if(low, node, b.and_(used, outside),
                      NOT_SHARED.format(what=what, array=array), "ValueError")

    def ldmatrix(self, low, node, pointer, ok, num: int, trans: bool, dtype: t.Type) -> list:
        b = low.builder
        what = "cuda.ldmatrix"
        self._check_row(low, node, pointer, ok, num, what)
        lane = self._gather_point(low, node, what, b.ptrtoint(pointer, dm.i64))
        group, quad = b.lshr(lane, _i32(2)), b.and_(lane, _i32(3))
        elem = dm.memory_type(dtype)
        values = []
        for matrix in range(num):
            for j in range(2):
                pair = b.add(b.mul(quad, _i32(2)), _i32(j))
                src, col = (pair, group) if trans else (group, pair)
                row = self._published_pointer(low, lane, b.add(src, _i32(8 * matrix)))
                element = b.gep(row, [col], source_etype=elem)
                self.target.record_access(low, node, element, "read")
                values.append(b.load(element, typ=elem))
        self._release(low, node, what)
        return values

    def stmatrix(self, low, node, pointer, ok, num: int, trans: bool, dtype: t.Type,
                 values: list) -> None:
        b = low.builder
        what = "cuda.stmatrix"
        self._check_row(low, node, pointer, ok, num, what)
        elem = dm.memory_type(dtype)
        stage = low.alloca(ir.ArrayType(elem, len(values)), "stmatrix.stage")
        for i, value in enumerate(values):
            b.store(value, b.gep(stage, [_i32(0), _i32(i)]))
        lane = self._gather_point(low, node, what, b.ptrtoint(stage, dm.i64))
        mine = b.inttoptr(b.ptrtoint(pointer, dm.i64), dm.ptr)
        matrix, row = b.lshr(lane, _i32(3)), b.and_(lane, _i32(7))
        store_bb, done_bb = low.new_block("stmatrix.row"), low.new_block("stmatrix.done")
        b.cbranch(b.icmp_unsigned("<", lane, _i32(8 * num)), store_bb, done_bb)
        b.position_at_end(store_bb)
        for col in range(8):
            # which lane holds (row, col) of this matrix, and at which of its elements
            if trans:
                holder = b.add(_i32(4 * col), b.lshr(row, _i32(1)))
                index = b.add(b.mul(matrix, _i32(2)), b.and_(row, _i32(1)))
            else:
                holder = b.add(b.mul(row, _i32(4)), _i32(col // 2))
                index = b.add(b.mul(matrix, _i32(2)), _i32(col % 2))
            source = self._published_pointer(low, lane, holder)
            value = b.load(b.gep(source, [index], source_etype=elem), typ=elem)
            target_ptr = b.gep(mine, [_i32(col)], source_etype=elem)
            self.target.record_access(low, node, target_ptr, "write")
            b.store(value, target_ptr)
        b.branch(done_bb)
        b.position_at_end(done_bb)
        self._release(low, node, what, keep=stage)

    # ---- inline PTX --------------------------------------------------------------------------

    def inline_ptx(self, low, node, template, outputs, inputs, values, volatile, memory):
        raise low.error(node, "inline PTX runs only on the CUDA target; the CPU target cannot "
                        "execute PTX",
                        "launch on a GPU (gpunb.set_target('cuda')), or write this step in "
                        "Python for the CPU target (e.g. behind `if cuda.is_available()` on "
                        "the host, choosing between two kernels)")


# ---- helpers: one function per operation kind, called by every lane ---------------------------


def _helper(low, name: str, params: list):
    """(function, builder) for a new internal noinline helper, or (function, None) if the
    module has it: the loops are compiled once, not once per call site and coroutine."""
    return new_function(low.mb.module, name, ir.VoidType(), params)


def _snapshot_pointer(b: ir.IRBuilder, first_ctx, lane_index):
    """Lane `lane_index`'s published pointer, from the warp's first thread context."""
    offset = b.add(b.mul(b.zext(lane_index, dm.i64), ir.Constant(dm.i64, abi.CTX_SIZE)),
                   ir.Constant(dm.i64, abi.CTX_SNAPSHOT))
    return b.inttoptr(b.load(b.gep(first_ctx, [offset], source_etype=dm.i8), typ=dm.i64),
                      dm.ptr)


def _mma_helper(low, op: tl.MmaOp, a_count: int):
    """void(ctx, lane, acc): acc[e] += A[row, :] . B[:, col] for each of this lane's output
    elements, reading A and B from every lane's published stage."""
    m, n, k = op.dims
    key = f"{op.api}_{op.shape}_{op.a_kind}_{op.b_kind}_{op.c_kind}{'_sat' if op.satfinite else ''}"
    fn, b = _helper(low, f"gpunb_tc_mma_{key}", [dm.ptr, dm.i32, dm.ptr])
    if b is None:
        return fn
    ctx, lane, acc = fn.args
    stage_t = dm.i32 if op.integer else _F32
    a_inv = _table(low, key + "_a", [o * 64 + e for o, e in tl.inverse(op.layout("a"), m, k)])
    b_inv = _table(low, key + "_b", [o * 64 + a_count + e
                                     for o, e in tl.inverse(op.layout("b"), k, n)])
    c_layout = op.layout("c")
    count = len(c_layout[0])
    c_pos = _table(low, f"{op.api}_{op.shape}_c", [r * n + col for elems in c_layout
                                                    for r, col in elems])
    first = b.gep(ctx, [b.mul(b.sext(b.neg(lane), dm.i64), ir.Constant(dm.i64, abi.CTX_SIZE))],
                  source_etype=dm.i8)

    def operand(table, index):
        entry = _lookup(b, table, index)
        base = _snapshot_pointer(b, first, b.lshr(entry, _i32(6)))
        return b.load(b.gep(base, [b.and_(entry, _i32(63))], source_etype=stage_t), typ=stage_t)

    wide = dm.i64 if op.satfinite else stage_t
    total = b.alloca(wide)
    with _loop(b, _i32(0), _i32(count), "mma.e") as (e, _):
        pos = _lookup(b, c_pos, b.add(b.mul(lane, _i32(count)), e))
        row, col = b.udiv(pos, _i32(n)), b.urem(pos, _i32(n))
        slot = b.gep(acc, [e], source_etype=stage_t)
        start = b.load(slot, typ=stage_t)
        b.store(b.sext(start, dm.i64) if op.satfinite else start, total)
        with _loop(b, _i32(0), _i32(k), "mma.k") as (kk, _):
            av = operand(a_inv, b.add(b.mul(row, _i32(k)), kk))
            bv = operand(b_inv, b.add(b.mul(kk, _i32(n)), col))
            if op.integer:  # |a * b| < 2**16: exact in int32
                product = b.sext(b.mul(av, bv), dm.i64) if op.satfinite else b.mul(av, bv)
                b.store(b.add(b.load(total), product), total)
            else:
                b.store(b.fadd(b.load(total), b.fmul(av, bv)), total)
        result = b.load(total)
        if op.satfinite:
            low_, high = ir.Constant(dm.i64, -(2**31)), ir.Constant(dm.i64, 2**31 - 1)
            result = b.select(b.icmp_signed("<", result, low_), low_, result)
            result = b.trunc(b.select(b.icmp_signed(">", result, high), high, result), dm.i32)
        b.store(result, slot)
    b.ret_void()
    return fn


def _fragment_table(low, frag: Fragment):
    """(table of this fragment's (row << 8 | col) per lane and element, elements per lane)."""
    role = {"matrix_a": "a", "matrix_b": "b", "accumulator": "c"}[frag.use]
    layout = tl.wmma_map(role, f"m{frag.m}n{frag.n}k{frag.k}", frag.kind)
    table = _table(low, f"wmma_{frag.m}_{frag.n}_{frag.k}_{role}_{frag.kind}",
                   [(r << 8) | c for elems in layout for r, c in elems])
    return table, frag.num_elements


def _tile_helper(low, frag: Fragment, row_major: bool, store: bool):
    """void(base, ldm, lane, storage): this lane's elements between the tile and storage."""
    role = {"matrix_a": "a", "matrix_b": "b", "accumulator": "c"}[frag.use]
    name = (f"gpunb_tc_wmma_{'store' if store else 'load'}_{frag.m}_{frag.n}_{frag.k}_{role}_"
            f"{frag.kind}_{'row' if row_major else 'col'}")
    fn, b = _helper(low, name, [dm.ptr, dm.i32, dm.i32, dm.ptr])
    if b is None:
        return fn
    base, ldm, lane, storage = fn.args
    table, count = _fragment_table(low, frag)
    elem = dm.memory_type(tl.KIND_TYPES[frag.kind])
    ldm64 = b.sext(ldm, dm.i64)
    with _loop(b, _i32(0), _i32(count), "wmma.e") as (e, _):
        rc = _lookup(b, table, b.add(b.mul(lane, _i32(count)), e))
        row = b.zext(b.lshr(rc, _i32(8)), dm.i64)
        col = b.zext(b.and_(rc, _i32(255)), dm.i64)
        offset = b.add(b.mul(row, ldm64), col) if row_major else b.add(b.mul(col, ldm64), row)
        tile = b.gep(base, [offset], source_etype=elem)
        mine = b.gep(storage, [e], source_etype=elem)
        if store:
            b.store(b.load(mine, typ=elem), tile)
        else:
            b.store(b.load(tile, typ=elem), mine)
    b.ret_void()
    return fn
