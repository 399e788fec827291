"""Lowering of conversions, arithmetic and comparisons with Python / numba semantics.

Integer `//` and `%` floor like Python (and give 0 on division by zero instead of undefined
behaviour); `**` by a small constant becomes multiplications; comparisons of mixed types compare
in the unified type.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import complexmath
from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t


def cast(b: ir.IRBuilder, value, src: t.Type, dst: t.Type):
    """Convert `value` of type `src` to `dst` (numbers, complex, tuples, array layouts)."""
    if src == dst or value is None:
        return value
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
    if isinstance(ty, t.Float):
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
    if isinstance(ty, t.Integer):
        v = int(value)
        return ir.Constant(dm.value_type(ty), v & ((1 << ty.bitwidth) - 1))
    if isinstance(ty, t.Float):
        return ir.Constant(dm.value_type(ty), float(value))
    if isinstance(ty, t.Complex):
        v = complex(value)
        comp = dm.value_type(ty.component)
        parts = [ir.Constant(comp, v.real), ir.Constant(comp, v.imag)]
        return ir.Constant(dm.value_type(ty), parts)
    if isinstance(ty, t.Tuple):
        items = [constant(it, v) for it, v in zip(ty.items, value, strict=True)]
        return ir.Constant(dm.value_type(ty), items)
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
    if isinstance(ty, t.Float):
        return float_binary(b, op, x, y, ty, math_call, rhs_type, rhs_const)
    if isinstance(ty, t.Boolean):
        fn = {ast.BitAnd: b.and_, ast.BitOr: b.or_, ast.BitXor: b.xor}[type(op)]
        return fn(x, y)
    return int_binary(b, op, x, y, ty, rhs_const)


def int_binary(b: ir.IRBuilder, op, x, y, ty: t.Integer, rhs_const=None):
    signed = ty.signed
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
        is_zero = b.icmp_unsigned("==", y, zero)
        safe_y = b.select(is_zero, ir.Constant(x.type, 1), y)
        if signed:
            # INT_MIN // -1 overflows (undefined in LLVM, a trap on x86): divide by -1 as a
            # wrapping negation, remainder 0
            minus_one = b.icmp_signed("==", y, ir.Constant(x.type, -1))
            safe_y = b.select(minus_one, ir.Constant(x.type, 1), safe_y)
            q = b.select(minus_one, b.neg(x), b.sdiv(x, safe_y))
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
        return int_power(b, x, y, ty, rhs_const)
    raise TypeError(f"operator {type(op).__name__} on {ty}")


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


def int_power(b: ir.IRBuilder, x, y, ty: t.Integer, rhs_const=None):
    if isinstance(rhs_const, int) and 0 <= rhs_const <= 4:
        result = ir.Constant(x.type, 1)
        for _ in range(rhs_const):
            result = b.mul(result, x)
        return result
    # exponentiation by squaring; a negative exponent gives 0 (as numba's integer power does
    # for |base| > 1), 1 for base 1
    fn = b.function
    pre = b.block
    loop = fn.append_basic_block("ipow.loop")
    body = fn.append_basic_block("ipow.body")
    done = fn.append_basic_block("ipow.done")
    neg = b.icmp_signed("<", y, ir.Constant(y.type, 0)) if ty.signed else ir.Constant(dm.i1, 0)
    start_exp = b.select(neg, ir.Constant(y.type, 0), y)
    b.branch(loop)
    b.position_at_end(loop)
    acc = b.phi(x.type)
    base = b.phi(x.type)
    exp = b.phi(y.type)
    acc.add_incoming(ir.Constant(x.type, 1), pre)
    base.add_incoming(x, pre)
    exp.add_incoming(start_exp, pre)
    b.cbranch(b.icmp_unsigned("!=", exp, ir.Constant(y.type, 0)), body, done)
    b.position_at_end(body)
    odd = b.trunc(exp, dm.i1)
    new_acc = b.select(odd, b.mul(acc, base), acc)
    new_base = b.mul(base, base)
    new_exp = b.lshr(exp, ir.Constant(y.type, 1))
    acc.add_incoming(new_acc, body)
    base.add_incoming(new_base, body)
    exp.add_incoming(new_exp, body)
    b.branch(loop)
    b.position_at_end(done)
    if ty.signed:
        one = ir.Constant(x.type, 1)
        minus_one = ir.Constant(x.type, -1)
        neg_result = b.select(b.icmp_signed("==", x, one), one,
                              b.select(b.icmp_signed("==", x, minus_one),
                                       b.select(b.trunc(y, dm.i1), minus_one, one),
                                       ir.Constant(x.type, 0)))
        return b.select(neg, neg_result, acc)
    return acc


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
            if isinstance(rhs_const, int) and 0 <= rhs_const <= 4:
                result = ir.Constant(x.type, 1.0)
                for _ in range(rhs_const):
                    result = b.fmul(result, x)
                return result
            y = cast(b, y, rhs_type, ty)
        elif isinstance(rhs_const, (int, float)) and rhs_const == 2:
            return b.fmul(x, x)
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
        denom = b.fadd(b.fmul(c, c), b.fmul(d, d))
        re = b.fdiv(b.fadd(b.fmul(a, c), b.fmul(bi, d)), denom)
        im = b.fdiv(b.fsub(b.fmul(bi, c), b.fmul(a, d)), denom)
        return make_complex(b, re, im, ty)
    raise TypeError(f"operator {type(op).__name__} is not supported on complex numbers")


_INT_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def compare(b: ir.IRBuilder, op, x, y, ty: t.Type):
    sym = _INT_CMP[type(op)]
    if isinstance(ty, t.Float):
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
    if isinstance(ty, t.Float):
        return b.fneg(x)
    if isinstance(ty, t.Complex):
        return make_complex(b, b.fneg(b.extract_value(x, 0)), b.fneg(b.extract_value(x, 1)), ty)
    return b.neg(x)
