"""wgmma.mma_async on the CPU target, as the PTX ISA defines it.

The 128 threads of an aligned warpgroup meet (the scheduler's warpgroup rendezvous, runner.py);
then each thread computes its own part of D, the m64nN fragment lane by lane:

    D value i of lane l in warp w of the warpgroup: row 16w + l/4 + 8*((i/2)%2),
                                                    column 8*(i/4) + 2*(l%4) + i%2

reading A and B through their shared-memory descriptors exactly as the hardware addresses them
(CUTLASS's canonical layouts: core matrices of 8 rows x 16 bytes, K-major or MN-major, the
descriptor's leading/stride byte offsets, then the swizzle of the address bits), or A from the
registers of the lanes that hold it (the same layout as D's k16 slices). Products of the inputs
are exact in float64 and summed there; the accumulator is rounded to float32 once per
instruction (tf32 inputs drop their 13 low mantissa bits first; int8 sums wrap in int32).
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi, instrument
from gpunb.backends.cpu import async_state as st
from gpunb.backends.cpu.async_tma import swizzle_offset
from gpunb.compiler import datamodel as dm
from gpunb.compiler import lowfloat

_SWIZZLE_BYTES = (0, 128, 64, 32)  # by the descriptor's code in bits 62-63
F64 = ir.DoubleType()


def function_name(spec) -> str:
    flags = "".join(str(int(f)) for f in (spec.a_regs, spec.trans_a, spec.trans_b, spec.neg_a,
                                         spec.neg_b))
    return f"gpunb_wgmma_n{spec.n}_{spec.ab}_{flags}"


def compute_function(module: ir.Module, spec) -> ir.Function:
    """void gpunb_wgmma_*(ctx, acc, i64 a_desc, i64 b_desc, i1 scale_d, i32 parity, i32 site):
    this thread's D values of one instruction (`parity` picks the lanes' A register slots)."""
    fn, b = st.new_function(module, function_name(spec), dm.void,
                            [dm.ptr, dm.ptr, dm.i64, dm.i64, dm.i1, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, acc, a_desc, b_desc, scale_d, parity, site = fn.args
    lane = st.load(b, ctx, abi.CTX_LANE, dm.i32)
    warp = b.urem(st.load(b, ctx, abi.CTX_WARP, dm.i32), st.i32(4))
    shared = st.load(b, ctx, abi.CTX_SHARED, dm.ptr)
    limit = st.load(b, st.area(b, ctx), st.AREA_SHARED_BYTES, dm.i64)
    operands = [_Operand(b, b_desc, spec.trans_b, spec.ab_bytes)]
    if not spec.a_regs:
        operands.append(_Operand(b, a_desc, spec.trans_a, spec.ab_bytes))
    for op in operands:
        with b.if_then(b.icmp_unsigned("!=", op.base_offset, st.i64(0))):
            b.call(st.error_function(module), [ctx, site, st.i32(st.Reason.DESCRIPTOR_BASE_OFFSET),
                                               op.base_offset, st.i64(0)])
            b.ret_void()
    integer = spec.acc == "s32"
    elem = dm.i32 if integer else ir.FloatType()
    total = b.alloca(dm.i32 if integer else F64)
    with st.loop(b, st.i32(0), st.i32(spec.acc_count), "value") as i:
        row = b.add(b.add(b.mul(warp, st.i32(16)), b.udiv(lane, st.i32(4))),
                    b.mul(b.urem(b.udiv(i, st.i32(2)), st.i32(2)), st.i32(8)))
        col = b.add(b.add(b.mul(b.udiv(i, st.i32(4)), st.i32(8)),
                          b.mul(b.urem(lane, st.i32(4)), st.i32(2))), b.urem(i, st.i32(2)))
        b.store(ir.Constant(dm.i32 if integer else F64, 0), total)
        with st.loop(b, st.i32(0), st.i32(spec.k), "k") as k:
            if spec.a_regs:
                a = _register_value(b, ctx, lane, row, k, parity, spec)
            else:
                a = _shared_value(b, ctx, shared, limit, operands[1], row, k, spec, site,
                                  spec.neg_a)
            bv = _shared_value(b, ctx, shared, limit, operands[0], col, k, spec, site,
                               spec.neg_b)
            if integer:
                b.store(b.add(b.load(total), b.mul(a, bv)), total)
            else:
                b.store(b.fadd(b.load(total), b.fmul(a, bv)), total)
        slot = b.gep(acc, [b.zext(i, dm.i64)], source_etype=elem)
        old = b.select(scale_d, b.load(slot, typ=elem), ir.Constant(elem, 0))
        if integer:
            b.store(b.add(old, b.load(total)), slot)
        else:
            b.store(b.fptrunc(b.fadd(b.fpext(old, F64), b.load(total)), elem), slot)
    b.ret_void()
    return fn


def record_function(module: ir.Module, spec) -> ir.Function:
    """void gpunb_wgmma_record_*(ctx, i64 a_desc, i64 b_desc, i32 a_site, i32 b_site):
    racecheck's records of the shared memory one instruction reads - every element of B (N x K)
    and of A (64 x K, unless it is in registers: a_site < 0) at the address the hardware uses."""
    fn, b = st.new_function(module, "gpunb_wgmma_record_" + function_name(spec)[12:], dm.void,
                            [dm.ptr, dm.i64, dm.i64, dm.i32, dm.i32])
    if b is None:
        return fn
    ctx, a_desc, b_desc, a_site, b_site = fn.args
    shared = st.load(b, ctx, abi.CTX_SHARED, dm.ptr)
    limit = st.load(b, st.area(b, ctx), st.AREA_SHARED_BYTES, dm.i64)
    recorder = instrument.record_function(module)
    operands = [(_Operand(b, b_desc, spec.trans_b, spec.ab_bytes), spec.n, b_site)]
    if not spec.a_regs:
        operands.append((_Operand(b, a_desc, spec.trans_a, spec.ab_bytes), 64, a_site))
    for op, rows, site in operands:
        with st.loop(b, st.i32(0), st.i32(rows), "row") as mn:
            with st.loop(b, st.i32(0), st.i32(spec.k), "k") as k:
                off = op.offset(b, mn, k)
                inside = b.icmp_unsigned("<=", b.add(off, st.i64(op.elem_bytes)), limit)
                with b.if_then(inside):
                    b.call(recorder, [ctx, site, st.at(b, shared, off)])
    b.ret_void()
    return fn


class _Operand:
    """A decoded shared-memory matrix descriptor."""

    def __init__(self, b: ir.IRBuilder, desc, mn_major: bool, elem_bytes: int):
        def field(shift, bits):
            return b.and_(b.lshr(desc, st.i64(shift)), st.i64((1 << bits) - 1))

        self.start = b.shl(field(0, 14), st.i64(4))
        self.lbo = b.shl(field(16, 14), st.i64(4))
        self.sbo = b.shl(field(32, 14), st.i64(4))
        self.base_offset = field(49, 3)
        code = field(62, 2)
        swizzle = st.i64(0)
        for c, width in enumerate(_SWIZZLE_BYTES):
            swizzle = b.select(b.icmp_unsigned("==", code, st.i64(c)), st.i64(width), swizzle)
        self.swizzle = swizzle
        self.mn_major = mn_major
        self.elem_bytes = elem_bytes

    def offset(self, b: ir.IRBuilder, mn, k):
        """The shared offset of element (mn, k): M or N index, K index (canonical layouts)."""
        eb = self.elem_bytes
        mn, k = b.zext(mn, dm.i64), b.zext(k, dm.i64)
        plain = b.icmp_unsigned("==", self.swizzle, st.i64(0))
        width = b.select(plain, st.i64(16), self.swizzle)  # bytes of one row of the pattern
        if not self.mn_major:  # rows of M/N, K contiguous: 8-row core matrices of 16 bytes
            per = st.i64(16 // eb)
            r0, r1 = b.urem(mn, st.i64(8)), b.udiv(mn, st.i64(8))
            chunk, inner = b.udiv(k, per), b.urem(k, per)
            swizzled = b.add(b.mul(r0, width), b.mul(chunk, st.i64(16)))
            interleaved = b.add(b.mul(r0, st.i64(16)), b.mul(chunk, self.lbo))
            off = b.add(b.mul(r1, self.sbo), b.select(plain, interleaved, swizzled))
            off = b.add(off, b.mul(inner, st.i64(eb)))
        else:  # rows of K, M/N contiguous
            per = b.udiv(width, st.i64(eb))  # M/N elements in one row of the pattern
            t, group = b.urem(mn, per), b.udiv(mn, per)
            k0, k1 = b.urem(k, st.i64(8)), b.udiv(k, st.i64(8))
            swizzled = b.add(b.mul(group, self.lbo), b.mul(k1, self.sbo))
            interleaved = b.add(b.mul(group, self.sbo), b.mul(k1, self.lbo))
            off = b.add(b.select(plain, interleaved, swizzled), b.mul(k0, width))
            off = b.add(off, b.mul(t, st.i64(eb)))
        return swizzle_offset(b, b.add(self.start, off), b.trunc(self.swizzle, dm.i32))


def _shared_value(b: ir.IRBuilder, ctx, shared, limit, operand: _Operand, mn, k, spec, site,
                  negate: bool):
    """Element (mn, k) of an operand in shared memory, as float64 (int32 for int8); an offset
    outside the block's shared memory is reported (and reads offset 0 meanwhile)."""
    off = operand.offset(b, mn, k)
    outside = b.icmp_unsigned(">", b.add(off, st.i64(operand.elem_bytes)), limit)
    with b.if_then(outside, likely=False):
        b.call(st.error_function(b.module), [ctx, site, st.i32(st.Reason.DESCRIPTOR_RANGE),
                                             off, limit])
    address = st.at(b, shared, b.select(outside, st.i64(0), off))
    return _value(b, address, spec, negate)


def _value(b: ir.IRBuilder, address, spec, negate: bool):
    """The input element at `address` as float64 (int32 for int8 inputs)."""
    ab = spec.ab
    if ab in ("s8", "u8"):
        byte = b.load(address, typ=dm.i8)
        return b.sext(byte, dm.i32) if ab == "s8" else b.zext(byte, dm.i32)
    if ab == "f16":
        value = b.fpext(b.load(address, typ=ir.HalfType()), F64)
    elif ab == "bf16":
        bits = b.shl(b.zext(b.load(address, typ=ir.IntType(16)), dm.i32), st.i32(16))
        value = b.fpext(b.bitcast(bits, ir.FloatType()), F64)
    elif ab == "tf32":  # the tensor core reads the top 19 bits
        bits = b.and_(b.load(address, typ=dm.i32), st.i32(-(1 << 13)))
        value = b.fpext(b.bitcast(bits, ir.FloatType()), F64)
    else:
        value = b.fpext(lowfloat.fp8_to_f32(b, b.load(address, typ=dm.i8), ab), F64)
    return b.fneg(value) if negate else value


def _register_value(b: ir.IRBuilder, ctx, lane, row, k, parity, spec):
    """A(row, k) from the registers of the lane holding it: lane 4*(row%8) + (k%8)/2 of this
    warp, register 2*((row%16)/8) + 4*(k/8) + k%2 (the D layout of a k16 slice)."""
    holder = b.add(b.mul(b.urem(row, st.i32(8)), st.i32(4)),
                   b.udiv(b.urem(k, st.i32(8)), st.i32(2)))
    index = b.add(b.add(b.urem(k, st.i32(2)), b.mul(b.udiv(b.urem(row, st.i32(16)), st.i32(8)),
                                                    st.i32(2))),
                  b.mul(b.udiv(k, st.i32(8)), st.i32(4)))
    delta = b.mul(b.sext(b.sub(holder, lane), dm.i64), st.i64(abi.CTX_SIZE))
    other = st.area(b, st.at(b, ctx, delta))
    slot = b.add(st.i64(st.AREA_A_SLOTS), b.zext(b.add(b.mul(parity, st.i32(16)),
                                                       b.mul(index, st.i32(2))), dm.i64))
    return _value(b, st.at(b, other, slot), spec, negate=spec.neg_a)
