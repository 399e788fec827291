"""Lowering of conversions, arithmetic and comparisons with Python / numba semantics.

Integer `//` and `%` floor like Python (and give 0 on division by zero instead of undefined
behaviour); `**` by a small constant becomes multiplications; comparisons of mixed types compare
in the unified type.
"""

from __future__ import annotations

import ast
import operator

import numpy as np
from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import datetimes
from gpunb.foundation import enum_types
from gpunb.foundation import types as t


def to_optional(b: ir.IRBuilder, value, src: t.Type, dst: t.Optional):
    """None, a value, or another Optional as `dst` (numba's Optional casts)."""
    lty = dm.value_type(dst)
    if isinstance(src, t.NoneType):
        return ir.Constant(lty, [ir.Constant(dm.i1, 0), ir.Constant(lty.elements[1],
                                                                     ir.Undefined)])
    if isinstance(src, t.Optional):
        valid, inner = b.extract_value(value, 0), b.extract_value(value, 1)
        inner = cast(b, inner, src.type, dst.type)
    else:
        valid, inner = ir.Constant(dm.i1, 1), cast(b, value, src, dst.type)
    out = b.insert_value(ir.Constant(lty, ir.Undefined), valid, 0)
    return b.insert_value(out, inner, 1)


def cast(b: ir.IRBuilder, value, src: t.Type, dst: t.Type):
    """Convert `value` of type `src` to `dst` (numbers, complex, tuples, array layouts)."""
    if isinstance(dst, t.Optional) and src != dst:
        return to_optional(b, value, src, dst)
    if src == dst or value is None:
        return value
    if isinstance(value, (str, bytes)) and isinstance(dst, t.CharSeq):  # a constant's text
        from gpunb.foundation import string_types

        element = dm.value_type(dst).element
        return ir.Constant(dm.value_type(dst), [ir.Constant(element, c) for c in
                                                string_types.encode(dst, value)])
    if isinstance(src, t.DateTime) and isinstance(dst, t.DateTime):
        return datetimes.rescale(b, value, src, dst)
    if isinstance(src, (t.BFloat16, t.FP8)) or isinstance(dst, (t.BFloat16, t.FP8)):
        # imported here (and below): a kernel without bf16/fp8/complex powers never loads
        # lowfloat or complexmath on its cold compile
        from gpunb.compiler import lowfloat

        return lowfloat.convert(b, value, src, dst)
    if isinstance(dst, t.Boolean):
        return truth(b, value, src)
    if isinstance(src, t.Boolean):
        if isinstance(dst, t.Integer):
            return b.zext(value, dm.value_type(dst))
        if isinstance(dst, t.Float):
            return b.uitofp(value, dm.value_type(dst))
        if isinstance(dst, t.Complex):
            return make_complex(b, cast(b, value, src, dst.component), None, dst)
    if isinstance(src, t.Integer):
        if isinstance(dst, t.Integer):
            if dst.bitwidth > src.bitwidth:
                ext = b.sext if src.signed else b.zext
                return ext(value, dm.value_type(dst))
            if dst.bitwidth < src.bitwidth:
                return b.trunc(value, dm.value_type(dst))
            return value
        if isinstance(dst, t.Float):
            conv = b.sitofp if src.signed else b.uitofp
            return conv(value, dm.value_type(dst))
        if isinstance(dst, t.Complex):
            return make_complex(b, cast(b, value, src, dst.component), None, dst)
    if isinstance(src, t.Float):
        if isinstance(dst, t.Float):
            if dst.bitwidth > src.bitwidth:
                return b.fpext(value, dm.value_type(dst))
            return b.fptrunc(value, dm.value_type(dst))
        if isinstance(dst, t.Integer):
            conv = b.fptosi if dst.signed else b.fptoui
            return conv(value, dm.value_type(dst))
        if isinstance(dst, t.Complex):
            return make_complex(b, cast(b, value, src, dst.component), None, dst)
    if isinstance(src, t.Complex) and isinstance(dst, t.Complex):
        re = cast(b, b.extract_value(value, 0), src.component, dst.component)
        im = cast(b, b.extract_value(value, 1), src.component, dst.component)
        return make_complex(b, re, im, dst)
    if isinstance(src, t.Tuple) and isinstance(dst, t.Tuple):
        out = ir.Constant(dm.value_type(dst), ir.Undefined)
        for i, (s_item, d_item) in enumerate(zip(src.items, dst.items, strict=False)):
            out = b.insert_value(out, cast(b, b.extract_value(value, i), s_item, d_item), i)
        return out
    if isinstance(src, t.Array) and isinstance(dst, t.Array):
        return value
    raise TypeError(f"cannot convert {src} to {dst}")


def make_complex(b: ir.IRBuilder, re, im, ty: t.Complex):
    comp = dm.value_type(ty.component)
    if im is None:
        im = ir.Constant(comp, 0.0)
    out = ir.Constant(dm.value_type(ty), ir.Undefined)
    out = b.insert_value(out, re, 0)
    return b.insert_value(out, im, 1)


def truth(b: ir.IRBuilder, value, ty: t.Type):
    """Python truthiness as i1."""
    if isinstance(ty, t.Boolean):
        return value
    if isinstance(ty, t.Integer):
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
    if isinstance(ty, (t.Float, t.BFloat16)):
        return b.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))
    if isinstance(ty, t.Complex):
        re = truth(b, b.extract_value(value, 0), ty.component)
        im = truth(b, b.extract_value(value, 1), ty.component)
        return b.or_(re, im)
    if isinstance(ty, t.NoneType):
        return ir.Constant(dm.i1, 0)
    raise TypeError(f"{ty} has no truth value")


def constant(ty: t.Type, value):
    """An LLVM constant of kernel type `ty` from a Python value."""
    if isinstance(ty, t.Boolean):
        return ir.Constant(dm.i1, int(bool(value)))
    if isinstance(ty, enum_types.EnumMember):  # an Enum member: its position in the class
        return ir.Constant(dm.i64, ty.index_of(value))
    if isinstance(ty, t.DateTime):  # the count of units (NaT the least int64)
        return ir.Constant(dm.i64, int(np.asarray(value).astype(t.to_dtype(ty)).view(np.int64)))
    if isinstance(ty, t.Integer):
        v = int(value)
        return ir.Constant(dm.value_type(ty), v & ((1 << ty.bitwidth) - 1))
    if isinstance(ty, (t.Float, t.BFloat16)):
        return ir.Constant(dm.value_type(ty), float(value))
    if isinstance(ty, t.FP8):
        from gpunb.foundation.lowprecision import fp8_bits

        return ir.Constant(dm.i8, fp8_bits(ty.kind, value))
    if isinstance(ty, t.Complex):
        v = complex(value)
        comp = dm.value_type(ty.component)
        parts = [ir.Constant(comp, v.real), ir.Constant(comp, v.imag)]
        return ir.Constant(dm.value_type(ty), parts)
    if isinstance(ty, t.Tuple):
        items = [constant(it, v) for it, v in zip(ty.items, value, strict=True)]
        return ir.Constant(dm.value_type(ty), items)
    if isinstance(ty, t.StringLiteral):  # its text: a store into a string array encodes it
        return value
    raise TypeError(f"no constant of {ty}")


def operand_type(op, a: t.Type, b: t.Type, result: t.Type, weak_a: bool, weak_b: bool):
    """The types the operands are converted to before an arithmetic operation."""
    if isinstance(op, (ast.Pow,)) and isinstance(result, t.Float) and t.is_int(b):
        return result, b
    if isinstance(op, (ast.LShift, ast.RShift)):
        return result, result
    return result, result


def comparison_type(a: t.Type, b: t.Type, weak_a: bool, weak_b: bool) -> t.Type:
    if weak_a and isinstance(b, t.Float):
        return b
    if weak_b and isinstance(a, t.Float):
        return a
    if isinstance(a, t.Boolean) and isinstance(b, t.Boolean):
        return t.boolean
    return t.unify_numbers(a, b)


def binary(b: ir.IRBuilder, op, x, y, ty: t.Type, math_call, rhs_type: t.Type | None = None,
           rhs_const=None):
    """`x op y` where both are already of type `ty` (except an integer exponent of `**`)."""
    if isinstance(ty, t.Complex):
        return complex_binary(b, op, x, y, ty, math_call, rhs_const)
    if isinstance(ty, t.BFloat16):
        from gpunb.compiler import lowfloat

        return lowfloat.bf16_binary(b, _BF16_OPS[type(op)], x, y)
    if isinstance(ty, t.Float):
        return float_binary(b, op, x, y, ty, math_call, rhs_type, rhs_const)
    if isinstance(ty, t.Boolean):
        fn = {ast.BitAnd: b.and_, ast.BitOr: b.or_, ast.BitXor: b.xor}[type(op)]
        return fn(x, y)
    return int_binary(b, op, x, y, ty, rhs_const, math_call)


_BF16_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}  # the others are float32


def int_binary(b: ir.IRBuilder, op, x, y, ty: t.Integer, rhs_const=None, math_call=None):
    signed = ty.signed
    folded = _folded_int(op, x, y, ty)
    if folded is not None:
        return folded
    zero = ir.Constant(x.type, 0)
    if isinstance(op, ast.Add):
        return b.add(x, y)
    if isinstance(op, ast.Sub):
        return b.sub(x, y)
    if isinstance(op, ast.Mult):
        return b.mul(x, y)
    if isinstance(op, ast.BitAnd):
        return b.and_(x, y)
    if isinstance(op, ast.BitOr):
        return b.or_(x, y)
    if isinstance(op, ast.BitXor):
        return b.xor(x, y)
    if isinstance(op, (ast.LShift, ast.RShift)):
        return shift(b, op, x, y, ty, rhs_const)
    if isinstance(op, (ast.FloorDiv, ast.Mod)):
        if _plain_divisor(y, ty):
            return _floor_div_by_constant(b, op, x, y, signed)
        is_zero = b.icmp_unsigned("==", y, zero)
        safe_y = b.select(is_zero, ir.Constant(x.type, 1), y)
        if signed:
            # INT_MIN // -1 overflows (undefined in LLVM, a trap on x86): numba returns 0 for
            # both the quotient and the remainder there; any other x // -1 is -x
            minus_one = b.icmp_signed("==", y, ir.Constant(x.type, -1))
            safe_y = b.select(minus_one, ir.Constant(x.type, 1), safe_y)
            overflow = b.icmp_signed("==", x, ir.Constant(x.type, -1 << (ty.bitwidth - 1)))
            q = b.select(minus_one, b.select(overflow, zero, b.neg(x)), b.sdiv(x, safe_y))
            r = b.select(minus_one, zero, b.srem(x, safe_y))
            safe_y = b.select(minus_one, y, safe_y)
            nonzero_r = b.icmp_signed("!=", r, zero)
            signs_differ = b.icmp_signed("<", b.xor(r, safe_y), zero)
            adjust = b.and_(nonzero_r, signs_differ)
            if isinstance(op, ast.FloorDiv):
                result = b.sub(q, b.zext(adjust, x.type))
            else:
                result = b.select(adjust, b.add(r, safe_y), r)
        else:
            result = b.udiv(x, safe_y) if isinstance(op, ast.FloorDiv) else b.urem(x, safe_y)
        return b.select(is_zero, zero, result)
    if isinstance(op, ast.Pow):
        return power(b, x, y, ty, ty, rhs_const, math_call)
    raise TypeError(f"operator {type(op).__name__} on {ty}")


_WRAPPING = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}


def _folded_int(op, x, y, ty: t.Integer):
    """x op y of two constants (index arithmetic on folded reads: `4 * j + 1`), wrapped to the
    type's width as the instruction would: the IR then carries the number, and an index
    known non-negative needs no wraparound. Only the operations whose wrapped result is
    exact in two's complement; the others are left to LLVM."""
    fn = _WRAPPING.get(type(op))
    if fn is None or not (isinstance(x, ir.Constant) and isinstance(y, ir.Constant)) or \
            type(x.constant) is not int or type(y.constant) is not int:
        return None
    width = ty.bitwidth
    value = fn(x.constant, y.constant) & ((1 << width) - 1)
    if ty.signed and value >= 1 << (width - 1):
        value -= 1 << width
    return ir.Constant(x.type, value)


def _plain_divisor(y, ty: t.Integer) -> bool:
    """A divisor known when lowering that is neither 0 nor -1 (`i // 128`, `k % 8`): the
    checks for those two are left out, which cut a quarter of the LLVM IR of a GEMM kernel
    full of index arithmetic (LLVM would fold them, after parsing and optimising them)."""
    if not isinstance(y, ir.Constant) or type(y.constant) is not int:
        return False
    c, width = y.constant, ty.bitwidth
    if ty.signed:
        return -(1 << (width - 1)) <= c < (1 << (width - 1)) and c not in (0, -1)
    return 0 < c < (1 << width)


def _floor_div_by_constant(b: ir.IRBuilder, op, x, y, signed: bool):
    """x // y or x % y rounding towards minus infinity, as Python does, for a plain divisor."""
    if not signed:
        return b.udiv(x, y) if isinstance(op, ast.FloorDiv) else b.urem(x, y)
    zero = ir.Constant(x.type, 0)
    r = b.srem(x, y)
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, y), zero))
    if isinstance(op, ast.FloorDiv):
        return b.sub(b.sdiv(x, y), b.zext(adjust, x.type))
    return b.select(adjust, b.add(r, y), r)


def shift(b: ir.IRBuilder, op, x, y, ty: t.Integer, rhs_const=None):
    """x << y, x >> y as PTX's shl/shr compute them, on every target: the count is unsigned and
    clamped to the bit width (<< gives 0, >> gives 0 or the sign fill). LLVM's shifts are
    poison there and x86 masks the count, so the clamp is explicit."""
    width = ty.bitwidth
    if isinstance(rhs_const, int) and 0 <= rhs_const < width:
        return b.shl(x, y) if isinstance(op, ast.LShift) else \
            (b.ashr(x, y) if ty.signed else b.lshr(x, y))
    too_far = b.icmp_unsigned(">=", y, ir.Constant(y.type, width))
    count = b.select(too_far, ir.Constant(y.type, width - 1), y)
    if isinstance(op, ast.LShift):
        return b.select(too_far, ir.Constant(x.type, 0), b.shl(x, count))
    if ty.signed:
        return b.ashr(x, count)  # width - 1 is the sign fill
    return b.select(too_far, ir.Constant(x.type, 0), b.lshr(x, count))


_POWER_CUTOFF = 0x10000  # numba: past this exponent, math.pow instead of squaring


def power(b: ir.IRBuilder, x, y, ty: t.Type, y_type: t.Type, rhs_const, math_call):
    """x ** n for an integer n, as numba computes it (int_power_impl, static_power_impl): by
    squaring, r *= a on each set bit and a *= a, so floats round as in numba; a literal exponent
    is unrolled; a negative one inverts (1.0 / r for floats; for integers 0, or +-1 for a base
    of +-1, and numba's numpy-model value for 0 ** -n: the type's minimum)."""
    is_int = isinstance(ty, t.Integer)
    mul = b.mul if is_int else b.fmul
    one = ir.Constant(x.type, 1 if is_int else 1.0)
    if isinstance(rhs_const, int) and abs(rhs_const) <= _POWER_CUTOFF:
        result, base, exp = one, x, abs(rhs_const)
        while exp:
            if exp & 1:
                result = mul(result, base)
            exp >>= 1
            if exp:
                base = mul(base, base)
        return _invert_power(b, x, result, ty) if rhs_const < 0 else result
    wide = t.Integer(64, y_type.signed) if isinstance(y_type, t.Integer) else t.int64
    n = cast(b, y, y_type, wide)
    negative = b.icmp_signed("<", n, ir.Constant(dm.i64, 0)) if wide.signed else \
        ir.Constant(dm.i1, 0)
    exp = b.select(negative, b.neg(n), n)
    fn = b.function
    pre = b.block
    loop, body, done = (fn.append_basic_block(f"pow.{k}") for k in ("loop", "body", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    acc, base, left = b.phi(x.type), b.phi(x.type), b.phi(dm.i64)
    acc.add_incoming(one, pre)
    base.add_incoming(x, pre)
    left.add_incoming(exp, pre)
    b.cbranch(b.icmp_unsigned("!=", left, ir.Constant(dm.i64, 0)), body, done)
    b.position_at_end(body)
    acc.add_incoming(b.select(b.trunc(left, dm.i1), mul(acc, base), acc), body)
    base.add_incoming(mul(base, base), body)
    left.add_incoming(b.lshr(left, ir.Constant(dm.i64, 1)), body)
    b.branch(loop)
    b.position_at_end(done)
    result = b.select(negative, _invert_power(b, x, acc, ty), acc)
    # a huge exponent: numba's cutoff to math.pow(a, float(n)) (float64, converted back)
    huge = b.icmp_unsigned(">", exp, ir.Constant(dm.i64, _POWER_CUTOFF))
    generic = math_call("pow", [cast(b, x, ty, t.float64), cast(b, n, wide, t.float64)],
                        [t.float64, t.float64], t.float64)
    return b.select(huge, cast(b, generic, t.float64, ty), result)


def _invert_power(b: ir.IRBuilder, x, r, ty: t.Type):
    """x ** -n from r = x ** n: 1.0 / r for floats; for integers numba's rule on the base x:
    0 ** -n is the type's minimum (numpy error model), 1 and -1 give r (+-1), others 0."""
    if not isinstance(ty, t.Integer):
        return b.fdiv(ir.Constant(r.type, 1.0), r)
    zero = ir.Constant(r.type, 0)
    unit = b.or_(b.icmp_signed("==", x, ir.Constant(x.type, 1)),
                 b.icmp_signed("==", x, ir.Constant(x.type, -1)))
    minimum = ir.Constant(r.type, -1 << (ty.bitwidth - 1))
    return b.select(b.icmp_signed("==", x, zero), minimum, b.select(unit, r, zero))


def float_binary(b: ir.IRBuilder, op, x, y, ty: t.Float, math_call, rhs_type=None,
                 rhs_const=None):
    if isinstance(op, ast.Add):
        return b.fadd(x, y)
    if isinstance(op, ast.Sub):
        return b.fsub(x, y)
    if isinstance(op, ast.Mult):
        return b.fmul(x, y)
    if isinstance(op, ast.Div):
        return b.fdiv(x, y)
    if isinstance(op, ast.FloorDiv):
        return float_floordiv(b, x, y, ty, math_call)
    if isinstance(op, ast.Mod):
        # fmod, not LLVM's frem: NVPTX lowers frem as x - trunc(x / y) * y, which is not exact
        # (1.0 % 6.4e-305 came out as -1.9e-17); libdevice's and libm's fmod are
        r = math_call("fmod", [x, y], [ty, ty], ty)
        zero = ir.Constant(x.type, 0.0)
        nonzero = b.fcmp_ordered("!=", r, zero)
        differ = b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero))
        result = b.select(b.and_(nonzero, differ), b.fadd(r, y), r)
        # Python: a zero remainder takes the divisor's sign (0.0 % -3.0 == -0.0)
        signed_zero = math_call("copysign", [zero, y], [ty, ty], ty)
        return b.select(b.fcmp_ordered("==", r, zero), signed_zero, result)
    if isinstance(op, ast.Pow):
        if rhs_type is not None and t.is_int(rhs_type):
            return power(b, x, y, ty, rhs_type, rhs_const, math_call)
        return math_call("pow", [x, y], [ty, ty], ty)
    raise TypeError(f"operator {type(op).__name__} on {ty}")


def float_floordiv(b: ir.IRBuilder, x, y, ty: t.Float, math_call):
    """CPython's float floor division (consistent with %): 1.0 // 0.1 == 9.0, not floor(10.0)."""
    zero, one = ir.Constant(x.type, 0.0), ir.Constant(x.type, 1.0)
    mod = math_call("fmod", [x, y], [ty, ty], ty)  # exact on every target, unlike frem on NVPTX
    div = b.fdiv(b.fsub(x, mod), y)
    differ = b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero))
    div = b.select(b.and_(b.fcmp_unordered("!=", mod, zero), differ), b.fsub(div, one), div)
    floored = math_call("floor", [div], [ty], ty)
    above_half = b.fcmp_ordered(">", b.fsub(div, floored), ir.Constant(x.type, 0.5))
    floored = b.select(above_half, b.fadd(floored, one), floored)
    signed_zero = math_call("copysign", [zero, b.fdiv(x, y)], [ty, ty], ty)
    result = b.select(b.fcmp_unordered("!=", div, zero), floored, signed_zero)
    # division by zero (an exception in Python): IEEE's x / 0, floored
    by_zero = math_call("floor", [b.fdiv(x, y)], [ty], ty)
    return b.select(b.fcmp_ordered("==", y, zero), by_zero, result)


def complex_binary(b: ir.IRBuilder, op, x, y, ty: t.Complex, math_call, rhs_const=None):
    a, bi = b.extract_value(x, 0), b.extract_value(x, 1)
    c, d = b.extract_value(y, 0), b.extract_value(y, 1)
    if isinstance(op, ast.Pow):
        from gpunb.compiler import complexmath

        f = complexmath.FloatOps(b, math_call, ty.component)
        re, im = complexmath.power(f, (a, bi), (c, d), rhs_const)
        return make_complex(b, re, im, ty)
    if isinstance(op, ast.Add):
        return make_complex(b, b.fadd(a, c), b.fadd(bi, d), ty)
    if isinstance(op, ast.Sub):
        return make_complex(b, b.fsub(a, c), b.fsub(bi, d), ty)
    if isinstance(op, ast.Mult):
        re = b.fsub(b.fmul(a, c), b.fmul(bi, d))
        im = b.fadd(b.fmul(a, d), b.fmul(bi, c))
        return make_complex(b, re, im, ty)
    if isinstance(op, ast.Div):
        return make_complex(b, *complex_divide(b, (a, bi), (c, d), ty.component, math_call), ty)
    raise TypeError(f"operator {type(op).__name__} is not supported on complex numbers")


def complex_divide(b: ir.IRBuilder, x: tuple, y: tuple, ft: t.Float, math_call) -> tuple:
    """(a + bi) / (c + di) by CPython's algorithm (_Py_c_quot, Smith's), which numba uses:
    scaled by the larger part of the divisor, so |c|**2 never overflows and an infinite divisor
    gives 0 (the textbook formula gives NaN); division by 0 is NaN + NaNj (numba raises
    ZeroDivisionError there, which a kernel without debug does not report)."""
    a, bi = x
    c, d = y
    nan = ir.Constant(dm.value_type(ft), float("nan"))
    zero = ir.Constant(dm.value_type(ft), 0.0)
    by_real = b.fcmp_ordered(">=", math_call("fabs", [c], [ft], ft),
                             math_call("fabs", [d], [ft], ft))
    ratio = b.fdiv(d, c)  # |c| >= |d|: divide top and bottom by c
    denom = b.fadd(c, b.fmul(d, ratio))
    re1 = b.fdiv(b.fadd(a, b.fmul(bi, ratio)), denom)
    im1 = b.fdiv(b.fsub(bi, b.fmul(a, ratio)), denom)
    c_zero = b.fcmp_ordered("==", c, zero)
    re1, im1 = b.select(c_zero, nan, re1), b.select(c_zero, nan, im1)
    ratio = b.fdiv(c, d)  # otherwise (or a NaN part) by d
    denom = b.fadd(b.fmul(c, ratio), d)
    re2 = b.fdiv(b.fadd(b.fmul(a, ratio), bi), denom)
    im2 = b.fdiv(b.fsub(b.fmul(bi, ratio), a), denom)
    d_zero = b.fcmp_ordered("==", d, zero)
    re2, im2 = b.select(d_zero, nan, re2), b.select(d_zero, nan, im2)
    return b.select(by_real, re1, re2), b.select(by_real, im1, im2)


_INT_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def compare(b: ir.IRBuilder, op, x, y, ty: t.Type):
    sym = _INT_CMP[type(op)]
    if isinstance(ty, t.DateTime):
        return datetimes.compare(b, sym, x, y)
    if isinstance(ty, (t.Float, t.BFloat16)):
        if sym == "!=":
            return b.fcmp_unordered(sym, x, y)
        return b.fcmp_ordered(sym, x, y)
    if isinstance(ty, t.Complex):
        re = b.fcmp_ordered("==", b.extract_value(x, 0), b.extract_value(y, 0))
        im = b.fcmp_ordered("==", b.extract_value(x, 1), b.extract_value(y, 1))
        eq = b.and_(re, im)
        return eq if sym == "==" else b.not_(eq)
    if isinstance(ty, t.Boolean):
        return b.icmp_unsigned(sym, x, y)
    if ty.signed:
        return b.icmp_signed(sym, x, y)
    return b.icmp_unsigned(sym, x, y)


def negate(b: ir.IRBuilder, x, ty: t.Type):
    if isinstance(ty, (t.Float, t.BFloat16)):
        return b.fneg(x)
    if isinstance(ty, t.Complex):
        return make_complex(b, b.fneg(b.extract_value(x, 0)), b.fneg(b.extract_value(x, 1)), ty)
    return b.neg(x)
