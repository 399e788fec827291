"""cuda_fp8.h's raw conversion intrinsics (numba-cuda binds them in numba.cuda._internal.cuda_fp8;
gpunb has them in cuda.fp8): fp8 and e8m0 storage bytes from float, double and bfloat16 raw
values with a saturation mode, and e8m0 / fp8 back to bfloat16 or half raw bits.

`cvt_float_to_fp8(x, saturation_t.NOSAT, fp8_interpretation_t.E5M2)`: the mode arguments are
compile-time constants (cuda.fp8.saturation_t / fp8_interpretation_t, and cuda-python's
cudaRoundMode for e8m0). A "raw" value is a named tuple with one field, `x` (its bits), as CUDA's
__nv_bfloat16_raw and __half_raw. Rounding is to nearest even, as CUDA's; NOSAT overflows to
infinity (e5m2) or NaN (e4m3), SATFINITE to the largest finite value.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import lowfloat
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Typed
from gpunb.foundation import types as t
from gpunb.foundation.lowprecision import FP8_LAYOUT

f32 = ir.FloatType()
RAW16 = t.Tuple((t.uint16,), ("x",))  # __nv_bfloat16_raw / __half_raw
_KINDS = {0: "e4m3", 1: "e5m2"}  # __nv_fp8_interpretation_t
_ROUNDING = {1: "rz", 2: "ru"}  # cudaRoundMode: cudaRoundZero, cudaRoundPosInf (e8m0's two)
# the magnitude from which NOSAT gives the special code: e5m2 rounds to infinity from 61440
# (the tie rounds to the even, infinite, code), e4m3 to NaN past 464 (the tie stays at 448)
_OVERFLOW = {"e5m2": (61440.0, ">=", 0x7C), "e4m3": (464.0, ">", 0x7F)}


def _constant_mode(inf, node, table: dict, what: str):
    value = inf.const(node, f"the {what} argument")
    if int(value) not in table:
        raise inf.error(node, f"{what} {value!r} is not one this conversion takes",
                        f"pass one of {', '.join(map(str, table))}")
    return table[int(value)]


class CvtToFp8(Builtin):
    """cvt_{float,double,bfloat16raw}_to_fp8(x, saturation, interpretation) -> uint8."""

    def __init__(self, source: str):
        self.source = source
        self.name = f"cuda.fp8.cvt_{source}_to_fp8"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) != 3 or kwtypes:
            raise inf.error(node, f"{self.name}(x, saturation, interpretation)")
        _check_source(inf, node, self.source, argtypes[0])
        sat = _constant_mode(inf, node.args[1], {0: False, 1: True}, "saturation")
        kind = _constant_mode(inf, node.args[2], _KINDS, "interpretation")
        return Typed(t.uint8, (sat, kind))

    def lower_call(self, low, node, call):
        b = low.builder
        satfinite, kind = call.data
        x = _as_f32(low, node.args[0], self.source)
        code = lowfloat.fp8_from_f32(b, x, kind)  # saturating, NaN to the NaN code
        if satfinite:
            return code
        limit, op, special = _OVERFLOW[kind]
        magnitude = lowfloat.fabs(b, x)
        over = b.fcmp_ordered(op, magnitude, ir.Constant(f32, limit))
        sign = b.and_(b.lshr(b.bitcast(x, dm.i32), ir.Constant(dm.i32, 24)),
                      ir.Constant(dm.i32, 0x80))
        overflowed = b.trunc(b.or_(sign, ir.Constant(dm.i32, special)), dm.i8)
        return b.select(over, overflowed, code)


class CvtToE8m0(Builtin):
    """cvt_{float,double,bfloat16raw}_to_e8m0(x, saturation, rounding) -> uint8."""

    def __init__(self, source: str):
        self.source = source
        self.name = f"cuda.fp8.cvt_{source}_to_e8m0"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) != 3 or kwtypes:
            raise inf.error(node, f"{self.name}(x, saturation, rounding)")
        _check_source(inf, node, self.source, argtypes[0])
        sat = _constant_mode(inf, node.args[1], {0: False, 1: True}, "saturation")
        mode = _constant_mode(inf, node.args[2], _ROUNDING, "rounding (cudaRoundMode)")
        return Typed(t.uint8, (sat, mode))

    def lower_call(self, low, node, call):
        satfinite, mode = call.data
        x = _as_f32(low, node.args[0], self.source)
        return lowfloat.e8m0_from_f32(low.builder, x, mode, satfinite)


class CvtE8m0ToBf16Raw(Builtin):
    """cvt_e8m0_to_bf16raw(code) -> raw bfloat16 (2**(code - 127), exact; 0xFF is NaN)."""

    name = "cuda.fp8.cvt_e8m0_to_bf16raw"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or kwtypes or not isinstance(argtypes[0], t.Integer):
            raise inf.error(node, f"{self.name}(code) takes one e8m0 storage byte (uint8)")
        return RAW16

    def lower_call(self, low, node, call):
        b = low.builder
        code = _to_u8(low, node.args[0])
        value = lowfloat.fp8_to_f32(b, code, "e8m0")
        return _raw(b, b.lshr(b.bitcast(value, dm.i32), ir.Constant(dm.i32, 16)))


class CvtFp8ToHalfRaw(Builtin):
    """cvt_fp8_to_halfraw(code, interpretation) -> raw half (every fp8 value is a half)."""

    name = "cuda.fp8.cvt_fp8_to_halfraw"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) != 2 or kwtypes or not isinstance(argtypes[0], t.Integer):
            raise inf.error(node, f"{self.name}(code, interpretation)")
        return Typed(RAW16, _constant_mode(inf, node.args[1], _KINDS, "interpretation"))

    def lower_call(self, low, node, call):
        b = low.builder
        code = _to_u8(low, node.args[0])
        if call.data == "e5m2":  # e5m2 is the top byte of a half: its bits, NaN payloads too
            return _raw(b, b.shl(b.zext(code, dm.i32), ir.Constant(dm.i32, 8)))
        half = b.fptrunc(lowfloat.fp8_to_f32(b, code, call.data), ir.HalfType())
        return _raw(b, b.zext(b.bitcast(half, ir.IntType(16)), dm.i32))


def _check_source(inf, node, source: str, found: t.Type) -> None:
    ok = {"float": t.is_number(found) and not isinstance(found, t.Complex),
          "double": t.is_number(found) and not isinstance(found, t.Complex),
          "bfloat16raw": found == RAW16}[source]
    if not ok:
        wanted = "a raw bfloat16 (from cvt_e8m0_to_bf16raw)" if source == "bfloat16raw" \
            else "a number"
        raise inf.error(node.args[0], f"cvt_{source}_* takes {wanted}, got {found}")


def _as_f32(low, node, source: str):
    """The argument as float32: a double rounded to odd (so the fp8 rounding after it is
    correct), a raw bfloat16 exactly, a float as it is."""
    from gpunb.compiler import operators as ops

    b = low.builder
    value, found = low.expr(node), low.type_of(node)
    if source == "bfloat16raw":
        bits = b.zext(b.extract_value(value, 0), dm.i32)
        return b.bitcast(b.shl(bits, ir.Constant(dm.i32, 16)), f32)
    if source == "double":
        return lowfloat.round_to_odd_f32(b, ops.cast(b, value, found, t.float64))
    return ops.cast(b, value, found, t.float32)


def _to_u8(low, node):
    from gpunb.compiler import operators as ops

    return ops.cast(low.builder, low.expr(node), low.type_of(node), t.uint8)


def _raw(b: ir.IRBuilder, bits32):
    value = ir.Constant(dm.value_type(RAW16), ir.Undefined)
    return b.insert_value(value, b.trunc(bits32, ir.IntType(16)), 0)


BUILTINS = {
    **{f"cuda.fp8.cvt_{s}_to_fp8": CvtToFp8(s) for s in ("float", "double", "bfloat16raw")},
    **{f"cuda.fp8.cvt_{s}_to_e8m0": CvtToE8m0(s) for s in ("float", "double", "bfloat16raw")},
    "cuda.fp8.cvt_e8m0_to_bf16raw": CvtE8m0ToBf16Raw(),
    "cuda.fp8.cvt_fp8_to_halfraw": CvtFp8ToHalfRaw(),
}
assert set(FP8_LAYOUT) == set(_KINDS.values())
