"""bfloat16 and fp8 values in LLVM IR: conversions rounded as CUDA's intrinsics round, on every
target.

Conversions pass through float32. LLVM's own `sitofp ... to bfloat` and `fptrunc double to
bfloat` round twice on some targets (through float32 on x86 and sm_80), so a value that is not
exact in float32 is first rounded to odd there: rounding that again is correctly rounded. The
float32 -> bfloat16 step is LLVM's `fptrunc` (cvt.rn.bf16.f32 on NVPTX; on the host the
__truncsfbf2 helper below), bfloat16 arithmetic is LLVM's (add.rn.bf16 and friends on sm_90).
The directed roundings (rz, rd, ru) and fp8 are computed with integer operations.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import declare
from gpunb.foundation import types as t
from gpunb.foundation.lowprecision import FP8_LAYOUT

f32, f64 = ir.FloatType(), ir.DoubleType()
i16 = ir.IntType(16)


def _const(ty: ir.Type, value):
    return ir.Constant(ty, value)


def _intrinsic(b: ir.IRBuilder, name: str, ret: ir.Type, args: list):
    return b.call(declare(b.module, name, ret, [a.type for a in args]), args)


def fabs(b: ir.IRBuilder, x):
    suffix = "f32" if x.type == f32 else "f64"
    return _intrinsic(b, f"llvm.fabs.{suffix}", x.type, [x])


# ---- to float32 and back ------------------------------------------------------------------------


def round_to_odd_f32(b: ir.IRBuilder, d):
    """A float64 rounded to float32 by round-to-odd (as CUDA's __double2bfloat16 does on sm_80):
    nearest, then one step toward d when that is inexact and even."""
    r = b.fptrunc(d, f32)
    back = b.fpext(r, f64)
    exact = b.fcmp_unordered("==", back, d)  # NaN counts as exact: it stays NaN
    bits = b.bitcast(r, dm.i32)
    even = b.icmp_unsigned("==", b.and_(bits, _const(dm.i32, 1)), _const(dm.i32, 0))
    sign_off = _const(dm.i64, 0x7FFFFFFFFFFFFFFF)  # magnitudes compare as integers
    away = b.icmp_unsigned(">", b.and_(b.bitcast(d, dm.i64), sign_off),
                           b.and_(b.bitcast(back, dm.i64), sign_off))
    step = b.select(away, _const(dm.i32, 1), _const(dm.i32, -1))
    adjust = b.and_(b.not_(exact), even)
    return b.bitcast(b.select(adjust, b.add(bits, step), bits), f32)


def int_to_f32(b: ir.IRBuilder, x, src: t.Type, round_to_odd: bool = True):
    """An integer (or bool) as float32: exact up to 24 significant bits; wider magnitudes are
    rounded to odd (round_to_odd) or to nearest (LLVM's sitofp, as CUDA's int -> fp8 does)."""
    if isinstance(src, t.Boolean):
        return b.uitofp(x, f32)
    if src.bitwidth <= 16 or not round_to_odd:
        return b.sitofp(x, f32) if src.signed else b.uitofp(x, f32)
    v = (b.sext if src.signed else b.zext)(x, dm.i64) if src.bitwidth < 64 else x
    zero = _const(dm.i64, 0)
    negative = b.icmp_signed("<", v, zero) if src.signed else ir.Constant(dm.i1, 0)
    magnitude = b.select(negative, b.sub(zero, v), v)  # INT64_MIN wraps to 2**63: right as u64
    leading = _intrinsic(b, "llvm.ctlz.i64", dm.i64, [magnitude, ir.Constant(dm.i1, 0)])
    forty = _const(dm.i64, 40)  # keep 24 significant bits: drop 64 - leading - 24 of them
    drop = b.select(b.icmp_unsigned("<", leading, forty), b.sub(forty, leading), zero)
    mask = b.sub(b.shl(_const(dm.i64, 1), drop), _const(dm.i64, 1))
    sticky = b.icmp_unsigned("!=", b.and_(magnitude, mask), zero)
    kept = b.uitofp(b.and_(magnitude, b.not_(mask)), f32)  # exact: 24 significant bits
    odd = b.or_(b.bitcast(kept, dm.i32), b.zext(sticky, dm.i32))
    value = b.bitcast(odd, f32)
    return b.select(negative, b.fneg(value), value)


def number_to_f32(b: ir.IRBuilder, x, src: t.Type, round_to_odd: bool = True):
    """A number as float32, rounded to odd when it is not exact (see the module docstring)."""
    if isinstance(src, t.Float):
        if src.bitwidth == 64:
            return round_to_odd_f32(b, x) if round_to_odd else b.fptrunc(x, f32)
        return x if src.bitwidth == 32 else b.fpext(x, f32)
    if isinstance(src, t.BFloat16):
        return b.fpext(x, f32)
    if isinstance(src, t.FP8):
        return fp8_to_f32(b, x, src.kind)
    return int_to_f32(b, x, src, round_to_odd)


def f32_to_number(b: ir.IRBuilder, x, dst: t.Type):
    """float32 to another number type: floats round to nearest, integers truncate toward zero
    and saturate (NaN gives 0), as CUDA's conversions from bfloat16 and fp8 do."""
    if isinstance(dst, t.Float):
        if dst.bitwidth == 32:
            return x
        return b.fpext(x, f64) if dst.bitwidth == 64 else b.fptrunc(x, ir.HalfType())
    if isinstance(dst, t.Boolean):
        return b.fcmp_unordered("!=", x, _const(f32, 0.0))
    if isinstance(dst, t.Integer):
        return float_to_int_saturating(b, x, dst)
    if isinstance(dst, t.BFloat16):
        return bf16_from_f32(b, x)
    if isinstance(dst, t.FP8):
        return fp8_from_f32(b, x, dst.kind)
    raise TypeError(f"cannot convert to {dst}")


def float_to_int_saturating(b: ir.IRBuilder, x, dst: t.Integer):
    name = "fptosi" if dst.signed else "fptoui"
    width = dst.bitwidth
    return _intrinsic(b, f"llvm.{name}.sat.i{width}.f32", ir.IntType(width), [x])


def convert(b: ir.IRBuilder, value, src: t.Type, dst: t.Type):
    """Any conversion to or from bfloat16 or fp8 (operators.cast sends them here)."""
    if isinstance(dst, t.Complex):
        part = f32_to_number(b, number_to_f32(b, value, src), dst.component)
        pair = ir.Constant(dm.value_type(dst), [ir.Constant(part.type, 0.0)] * 2)
        return b.insert_value(pair, part, 0)
    if isinstance(src, t.Complex):
        raise TypeError(f"cannot convert {src} to {dst}")
    return f32_to_number(b, number_to_f32(b, value, src, not isinstance(dst, t.FP8)
                                          or not isinstance(src, (t.Integer, t.Boolean))), dst)


# ---- bfloat16 -----------------------------------------------------------------------------------


def bf16_from_f32(b: ir.IRBuilder, x, mode: str = "rn"):
    """float32 -> bfloat16 in rounding mode rn (LLVM's fptrunc), rz, rd or ru; NaN gives the
    canonical 0x7fff, as PTX's cvt does."""
    if mode == "rn":
        return b.fptrunc(x, dm.bfloat)
    bits = b.bitcast(x, dm.i32)
    high = b.lshr(bits, _const(dm.i32, 16))
    if mode == "rz":
        rounded = high
    else:
        inexact = b.icmp_unsigned("!=", b.and_(bits, _const(dm.i32, 0xFFFF)), _const(dm.i32, 0))
        negative = b.icmp_signed("<", bits, _const(dm.i32, 0))
        toward = negative if mode == "rd" else b.not_(negative)
        rounded = b.add(high, b.zext(b.and_(inexact, toward), dm.i32))
    nan = b.fcmp_unordered("uno", x, x)
    rounded = b.select(nan, _const(dm.i32, 0x7FFF), rounded)
    return b.bitcast(b.trunc(rounded, i16), dm.bfloat)


def bf16_from_number(b: ir.IRBuilder, x, src: t.Type, mode: str = "rn"):
    return bf16_from_f32(b, number_to_f32(b, x, src), mode)


def bf16_to_f32(b: ir.IRBuilder, x):
    return b.fpext(x, f32)


def bf16_binary(b: ir.IRBuilder, op: str, x, y):
    """+ - * / of two bfloat16 values, correctly rounded (LLVM's bfloat arithmetic)."""
    return {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[op](x, y)


# ---- fp8 ----------------------------------------------------------------------------------------


def fp8_to_f32(b: ir.IRBuilder, code, kind: str):
    """The float32 value of an fp8 code (exact)."""
    c = b.zext(code, dm.i32)

    def k(v):
        return _const(dm.i32, v)

    if kind == "e8m0":  # 2**(code - 127); code 0 is the float32 subnormal 2**-127
        bits = b.select(b.icmp_unsigned("==", c, k(0)), k(0x00400000), b.shl(c, k(23)))
        bits = b.select(b.icmp_unsigned("==", c, k(0xFF)), k(0x7FFFFFFF), bits)
        return b.bitcast(bits, f32)
    ebits, mbits, bias, *_ = FP8_LAYOUT[kind]
    sign = b.shl(b.lshr(c, k(7)), k(31))
    exponent = b.and_(b.lshr(c, k(mbits)), k((1 << ebits) - 1))
    mantissa = b.and_(c, k((1 << mbits) - 1))
    normal = b.or_(b.shl(b.add(exponent, k(127 - bias)), k(23)), b.shl(mantissa, k(23 - mbits)))
    subnormal = b.bitcast(b.fmul(b.uitofp(mantissa, f32), _const(f32, 2.0 ** (1 - bias - mbits))),
                          dm.i32)
    bits = b.select(b.icmp_unsigned("==", exponent, k(0)), subnormal, normal)
    top = k((1 << ebits) - 1)
    if kind == "e4m3":  # no infinities: S.1111.111 is NaN
        nan = b.icmp_unsigned("==", b.and_(c, k(0x7F)), k(0x7F))
    else:  # e5m2 is IEEE-like: exponent 31 is infinity (mantissa 0) or NaN
        special = b.icmp_unsigned("==", exponent, top)
        nan = b.and_(special, b.icmp_unsigned("!=", mantissa, k(0)))
        bits = b.select(special, k(0x7F800000), bits)
    bits = b.select(nan, k(0x7FFFFFFF), b.or_(bits, sign))
    return b.bitcast(bits, f32)


def fp8_from_f32(b: ir.IRBuilder, x, kind: str):
    """float32 -> fp8 as CUDA's constructors: round to nearest even, saturating to the largest
    finite value (infinities too), NaN to 0x7f; e8m0 rounds the magnitude up to a power of 2."""
    if kind == "e8m0":
        return e8m0_from_f32(b, x)
    _, mbits, bias, largest, largest_code, nan_code = FP8_LAYOUT[kind]

    def k(v):
        return _const(dm.i32, v)

    bits = b.bitcast(x, dm.i32)
    sign = b.and_(b.lshr(bits, k(24)), k(0x80))
    a = b.select(b.fcmp_ordered(">", fabs(b, x), _const(f32, largest)), _const(f32, largest),
                 fabs(b, x))
    scaled = b.fmul(a, _const(f32, 2.0 ** (bias - 1 + mbits)))  # exact: a power of two
    sub_code = b.fptoui(_intrinsic(b, "llvm.rint.f32", f32, [scaled]), dm.i32)
    abits = b.bitcast(a, dm.i32)
    shift = 23 - mbits
    rounded = b.add(b.add(abits, k((1 << (shift - 1)) - 1)),
                    b.and_(b.lshr(abits, k(shift)), k(1)))
    normal_code = b.sub(b.lshr(rounded, k(shift)), k((127 - bias) << mbits))
    is_sub = b.fcmp_ordered("<", a, _const(f32, 2.0 ** (1 - bias)))
    code = b.or_(b.select(is_sub, sub_code, normal_code), sign)
    code = b.select(b.fcmp_unordered("uno", x, x), k(nan_code), code)
    return b.trunc(code, dm.i8)


def e8m0_from_f32(b: ir.IRBuilder, x, mode: str = "ru", satfinite: bool = True):
    """float32 magnitude -> e8m0 (2**(code - 127)), rounding up (ru) or down (rz)."""

    def k(v):
        return _const(dm.i32, v)

    magnitude = b.and_(b.bitcast(x, dm.i32), k(0x7FFFFFFF))
    exponent = b.lshr(magnitude, k(23))
    mantissa = b.and_(magnitude, k(0x7FFFFF))
    zero = k(0)
    if mode == "ru":
        up = b.zext(b.icmp_unsigned("!=", mantissa, zero), dm.i32)
        tiny = b.zext(b.icmp_unsigned(">", mantissa, k(0x400000)), dm.i32)
        code = b.select(b.icmp_unsigned("==", exponent, zero), tiny, b.add(exponent, up))
    else:
        code = exponent
    too_big = b.icmp_unsigned(">=", code, k(0xFF))
    code = b.select(too_big, k(0xFE if satfinite else 0xFF), code)
    code = b.select(b.icmp_unsigned(">", magnitude, k(0x7F800000)), k(0xFF), code)
    return b.trunc(code, dm.i8)


# ---- the host's helper ------------------------------------------------------------------------


def host_helpers_ir() -> str:
    """LLVM IR defining __truncsfbf2 and __truncdfbf2, which x86 code generation calls for
    `fptrunc ... to bfloat` (libgcc has them only from GCC 13): round to nearest even, NaN to
    0x7fff as on the GPU, float64 correctly rounded (through round-to-odd float32)."""
    module = ir.Module()
    for name, src in (("__truncsfbf2", f32), ("__truncdfbf2", f64)):
        fn = ir.Function(module, ir.FunctionType(dm.bfloat, [src]), name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        x = fn.args[0] if src == f32 else round_to_odd_f32(b, fn.args[0])
        bits = b.bitcast(x, dm.i32)
        lsb = b.and_(b.lshr(bits, _const(dm.i32, 16)), _const(dm.i32, 1))
        rounded = b.lshr(b.add(b.add(bits, _const(dm.i32, 0x7FFF)), lsb), _const(dm.i32, 16))
        rounded = b.select(b.fcmp_unordered("uno", x, x), _const(dm.i32, 0x7FFF), rounded)
        b.ret(b.bitcast(b.trunc(rounded, i16), dm.bfloat))
    text = str(module)
    return text[text.index("define"):]


def bf16_fma_exact(b: ir.IRBuilder, x, y, z):
    """x * y + z rounded once, on targets without a bf16 fma: the product is exact in float64,
    the sum is rounded to odd there (TwoSum gives its error), then to bfloat16."""
    p = b.fmul(b.fpext(x, f64), b.fpext(y, f64))
    c = b.fpext(z, f64)
    s = b.fadd(p, c)
    bp = b.fsub(s, p)
    err = b.fadd(b.fsub(p, b.fsub(s, bp)), b.fsub(c, bp))
    bits = b.bitcast(s, dm.i64)
    inexact = b.fcmp_ordered("!=", err, _const(f64, 0.0))
    even = b.icmp_unsigned("==", b.and_(bits, _const(dm.i64, 1)), _const(dm.i64, 0))
    same_sign = b.icmp_signed(">=", b.xor(b.bitcast(err, dm.i64), bits), _const(dm.i64, 0))
    step = b.select(same_sign, _const(dm.i64, 1), _const(dm.i64, -1))
    odd = b.select(b.and_(inexact, even), b.add(bits, step), bits)
    return bf16_from_f32(b, round_to_odd_f32(b, b.bitcast(odd, f64)))
