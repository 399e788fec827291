"""Element code of the numpy ufuncs computed from other operations (ufuncs.py calls it on values
of the loop's types): logaddexp, ldexp, reciprocal, float_power, gcd, lcm, spacing, the
predicates (isnan, isinf, isfinite), the sign of a complex number, integer fmod and reciprocal;
and math.gcd, numba's way."""

from __future__ import annotations

import ast
import math

from llvmlite import ir

from gpunb.compiler import complexmath as cm
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t


def composed(low, name: str, xs: list, loop):
    """logaddexp and logaddexp2 as numpy's npy_logaddexp (x + log1p(exp(y - x)) from the larger,
    x + log 2 for equal x and y: infinities of one sign), ldexp (an int64 exponent clamped to
    int32's range: beyond it the result over- or underflows either way), reciprocal (complex:
    Smith's 1/z), float_power (pow in the loop's type, float64 or complex128)."""
    b, ty = low.builder, loop.inputs[0]
    if isinstance(ty, t.Complex):
        f = cm.FloatOps(b, low.math_call, ty.component)
        z = (b.extract_value(xs[0], 0), b.extract_value(xs[0], 1))
        if name == "reciprocal":
            re, im = cm.reciprocal(f, z)
        else:
            re, im = cm.power(f, z, (b.extract_value(xs[1], 0), b.extract_value(xs[1], 1)))
        return ops.make_complex(b, re, im, ty)
    f = cm.FloatOps(b, low.math_call, ty)
    if name == "reciprocal":
        return f.div(f.c(1.0), xs[0])
    if name == "float_power":
        return f.call("pow", xs[0], xs[1])
    if name == "ldexp":
        e, et = xs[1], loop.inputs[1]
        if et.bitwidth > 32:
            e = _clamp_to_i32(b, e)
        return low.math_call("ldexp", [xs[0], e], [ty, t.int32], ty)
    x, y = xs
    two = name == "logaddexp2"
    log_of_2 = f.c(1.0 if two else math.log(2.0))

    def softplus(v):  # log(1 + e**v) or log2(1 + 2**v), for v <= 0
        if two:
            return f.mul(f.call("log1p", f.call("exp2", v)), f.c(1.0 / math.log(2.0)))
        return f.call("log1p", f.call("exp", v))

    diff = f.sub(x, y)
    above = b.fcmp_ordered(">", diff, f.c(0.0))
    below = b.fcmp_ordered("<=", diff, f.c(0.0))
    from_x = f.add(x, softplus(f.neg(diff)))
    from_y = f.add(y, softplus(diff))
    return f.pick(b.fcmp_ordered("==", x, y), f.add(x, log_of_2),
                  f.pick(above, from_x, f.pick(below, from_y, diff)))  # NaN: the NaN


def _clamp_to_i32(b, e):
    """An i64 exponent clamped to int32's range, as i32."""
    lo, hi = ir.Constant(e.type, -(1 << 31)), ir.Constant(e.type, (1 << 31) - 1)
    e = b.select(b.icmp_signed("<", e, lo), lo, e)
    return b.trunc(b.select(b.icmp_signed(">", e, hi), hi, e), dm.i32)


def gcd(low, x, y, ty: t.Integer):
    """numpy's npy_gcd: Euclid on the absolute values (|INT_MIN| stays INT_MIN, as numpy's
    wraps); gcd(0, 0) = 0."""
    b = low.builder
    x, y = _absolute(b, x, ty), _absolute(b, y, ty)
    slots = low.alloca(x.type, "gcd.x"), low.alloca(x.type, "gcd.y")
    b.store(x, slots[0])
    b.store(y, slots[1])
    test, step, done = (low.new_block(f"gcd.{n}") for n in ("test", "step", "done"))
    b.branch(test)
    b.position_at_end(test)
    a, c = b.load(slots[0]), b.load(slots[1])
    b.cbranch(b.icmp_unsigned("!=", c, ir.Constant(c.type, 0)), step, done)
    b.position_at_end(step)
    b.store(c, slots[0])
    b.store(b.urem(a, c), slots[1])  # absolute values: unsigned (2**63 for INT64_MIN)
    b.branch(test)
    b.position_at_end(done)
    return b.load(slots[0])


def lcm(low, x, y, ty: t.Integer):
    """numpy's npy_lcm: |x| / gcd * |y|, 0 when both are 0."""
    b = low.builder
    g = gcd(low, x, y, ty)
    zero = ir.Constant(g.type, 0)
    is_zero = b.icmp_unsigned("==", g, zero)
    divisor = b.select(is_zero, ir.Constant(g.type, 1), g)
    value = b.mul(b.udiv(_absolute(b, x, ty), divisor), _absolute(b, y, ty))
    return b.select(is_zero, zero, value)


def spacing(low, x, ty: t.Float):
    """numpy's npy_spacing: the distance to the next float away from zero, negative for a
    negative x (-0.0 gives the smallest negative subnormal); NaN for infinities and NaN."""
    b = low.builder
    away = low.math_call("copysign", [ir.Constant(x.type, float("inf")), x], [ty, ty], ty)
    step = b.fsub(low.math_call("nextafter", [x, away], [ty, ty], ty), x)
    infinite = b.fcmp_ordered("==", low.math_call("fabs", [x], [ty], ty),
                              ir.Constant(x.type, float("inf")))
    return b.select(infinite, ir.Constant(x.type, float("nan")), step)


def predicate(low, name: str, x, ty: t.Type):
    """np.isnan / isinf / isfinite: of a complex, either part NaN or infinite (isfinite: both
    parts finite), as numpy's 'D->?' loops; an integer or a bool is finite."""
    b = low.builder
    if isinstance(ty, t.Complex):
        parts = [predicate(low, name, b.extract_value(x, k), ty.component) for k in (0, 1)]
        return b.and_(*parts) if name == "isfinite" else b.or_(*parts)
    if not isinstance(ty, t.Float):
        return ir.Constant(dm.i1, int(name == "isfinite"))
    if name == "isnan":
        return b.fcmp_unordered("uno", x, x)
    magnitude = low.math_call("fabs", [x], [ty], ty)
    return b.fcmp_ordered("==" if name == "isinf" else "<", magnitude,
                          ir.Constant(x.type, math.inf))


def complex_sign(low, z, ct: t.Complex):
    """numpy 2's sign of a complex number, as numba computes it: z / |z| (a complex division),
    0 for 0."""
    b, ft = low.builder, ct.component
    size = low.math_call("hypot", [b.extract_value(z, 0), b.extract_value(z, 1)], [ft, ft], ft)
    zero = ir.Constant(size.type, 0.0)
    quotient = ops.binary(b, ast.Div(), z, ops.make_complex(b, size, zero, ct), ct,
                          low.math_call)
    return b.select(b.fcmp_ordered("==", size, zero), ops.make_complex(b, zero, zero, ct),
                    quotient)


def integer_fmod(b: ir.IRBuilder, x, y, ty: t.Integer):
    """numpy's integer np.fmod: C's %, with the sign of x (-5 fmod 3 is -2); 0 for a zero
    divisor (numpy's result, with its warning) and for MIN fmod -1 (srem would overflow)."""
    zero, one = ir.Constant(x.type, 0), ir.Constant(x.type, 1)
    by_zero = b.icmp_unsigned("==", y, zero)
    if not ty.signed:
        return b.select(by_zero, zero, b.urem(x, b.select(by_zero, one, y)))
    unit = b.or_(by_zero, b.icmp_signed("==", y, ir.Constant(x.type, -1)))  # x % +-1 is 0
    return b.select(unit, zero, b.srem(x, b.select(unit, one, y)))


def integer_reciprocal(b: ir.IRBuilder, x, ty: t.Integer):
    """numpy's integer np.reciprocal, 1 / x: 1 for 1, -1 for -1, 0 past them; for 0 what
    numpy's loop and numba leave (1.0 / 0 converted back): the smallest int32 / int64, 0 for
    the narrower and the unsigned types."""
    zero, one = ir.Constant(x.type, 0), ir.Constant(x.type, 1)
    out = b.select(b.icmp_unsigned("==", x, one), one, zero)
    if not ty.signed:
        return out
    minus_one = ir.Constant(x.type, -1)
    out = b.select(b.icmp_signed("==", x, minus_one), minus_one, out)
    if ty.bitwidth >= 32:
        smallest = ir.Constant(x.type, -(1 << (ty.bitwidth - 1)))
        out = b.select(b.icmp_signed("==", x, zero), smallest, out)
    return out


def _absolute(b: ir.IRBuilder, x, ty: t.Integer):
    if isinstance(ty, t.Boolean) or not ty.signed:
        return x
    return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)


class MathGcd(Builtin):
    """math.gcd(a, b): numba's typing cases ((T, T) -> T for each integer T, int64 first)."""

    name = "math.gcd"
    CASES = [(ty, ty) for ty in (t.int64, t.int32, t.int16, t.int8, t.uint64, t.uint32,
                                 t.uint16, t.uint8)]

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 2 or not all(
                isinstance(a, (t.Integer, t.Boolean)) for a in argtypes):
            raise inf.error(node, "math.gcd() takes two integers in GPU code",
                            "for floats or arrays use np.gcd (integers too)")
        literals = tuple(n.value if isinstance(n, ast.Constant) and type(n.value) is int
                         else None for n in node.args)
        chosen = promotion.best_match(tuple(argtypes), self.CASES, literals)
        if chosen is None:
            raise inf.error(node, f"math.gcd() has no case for ({argtypes[0]}, {argtypes[1]})")
        return self.CASES[chosen][0]

    def lower_call(self, low, node, call):
        b, ty = low.builder, call.result
        x, y = (ops.cast(b, low.expr(n), at, ty) for n, at in
                zip(node.args, call.argtypes, strict=True))
        return gcd(low, x, y, ty)


BUILTINS = {"math.gcd": MathGcd()}
