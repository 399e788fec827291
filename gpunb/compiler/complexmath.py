"""Complex algorithms over LLVM float values: numba's cmathimpl (CPython's algorithms, C99 Annex G
values at infinities and NaNs) and complex `**`, for both cmath builtins and the operator.

Each takes and returns (real, imag) pairs of the component type. Branches are selects over every
candidate, so they lower the same on every target (no control flow except the integer-power
loop): the formula for finite parts first, then numba's special cases, each overriding where its
condition holds. Where numba negates a value or copies the sign of a `cos`/`sin` result, these
do the same (a NaN's sign can reach a `copysign`): with the same math library, numba's bits.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t

LN_4 = math.log(4.0)


class FloatOps:
    """Shorthand for float arithmetic of one component type on one builder."""

    def __init__(self, b: ir.IRBuilder, math_call, ft: t.Float):
        self.b, self.math_call, self.ft = b, math_call, ft
        info = np.finfo(np.float32 if ft.bitwidth == 32 else np.float64)
        self.large = float(info.max) / 4  # CPython's CM_LARGE_DOUBLE
        self.tiny = float(info.tiny)

    def c(self, value: float):
        return ir.Constant(dm.value_type(self.ft), value)

    def call(self, name: str, *xs):
        return self.math_call(name, list(xs), [self.ft] * len(xs), self.ft)

    def add(self, x, y):
        return self.b.fadd(x, y)

    def sub(self, x, y):
        return self.b.fsub(x, y)

    def mul(self, x, y):
        return self.b.fmul(x, y)

    def div(self, x, y):
        return self.b.fdiv(x, y)

    def neg(self, x):
        return self.b.fneg(x)

    def abs(self, x):
        return self.call("fabs", x)

    def lt(self, x, y):
        return self.b.fcmp_ordered("<", x, y)

    def gt(self, x, y):
        return self.b.fcmp_ordered(">", x, y)

    def eq(self, x, y):
        return self.b.fcmp_ordered("==", x, y)

    def is_nan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def is_inf(self, x):
        return self.eq(self.abs(x), self.c(math.inf))

    def not_finite(self, x):
        """inf or NaN: math.isfinite(x) is false."""
        return self.b.fcmp_unordered(">=", self.abs(x), self.c(math.inf))

    def both(self, p, q):
        return self.b.and_(p, q)

    def either(self, p, q):
        return self.b.or_(p, q)

    def copysign(self, x, y):
        return self.call("copysign", x, y)

    def pick(self, cond, x, y):
        return self.b.select(cond, x, y)

    def pick2(self, cond, xs, ys):
        return self.pick(cond, xs[0], ys[0]), self.pick(cond, xs[1], ys[1])

    def either_large(self, x, y, limit=None):
        limit = self.c(self.large if limit is None else limit)
        return self.b.or_(self.gt(self.abs(x), limit), self.gt(self.abs(y), limit))

    def log_hypot_large(self, x, y):
        """log|z| + log 2 for huge z, without overflow: log(hypot(x/2, y/2)) + log 4."""
        half = self.c(0.5)
        return self.add(self.call("log", self.call("hypot", self.mul(x, half), self.mul(y, half))),
                        self.c(LN_4))


def sqrt(f: FloatOps, x, y):
    """CPython's cmath.sqrt: no cancellation for negative real parts."""
    ax, ay = f.abs(x), f.abs(y)
    eighth = f.c(0.125)
    ax8 = f.mul(ax, eighth)
    s = f.mul(f.c(2.0), f.call("sqrt", f.add(ax8, f.call("hypot", ax8, f.mul(ay, eighth)))))
    d = f.div(ay, f.mul(f.c(2.0), s))
    nonneg = f.b.fcmp_ordered(">=", x, f.c(0.0))
    re = f.pick(nonneg, s, d)
    im = f.call("copysign", f.pick(nonneg, d, s), y)
    zero = f.b.and_(f.eq(x, f.c(0.0)), f.eq(y, f.c(0.0)))
    out = f.pick(zero, f.c(0.0), re), f.pick(zero, y, im)
    # numba's (NumPy's npy_csqrt) special values; a NaN imaginary part takes the formula
    x_inf = f.is_inf(x)
    inf_x = f.pick2(f.lt(x, f.c(0.0)), (f.abs(f.sub(y, y)), f.copysign(x, y)),
                    (x, f.copysign(f.sub(y, y), y)))
    out = f.pick2(x_inf, inf_x, out)
    out = f.pick2(f.is_nan(x), (x, x), out)
    return f.pick2(f.is_inf(y), (f.abs(y), y), out)


def exp(f: FloatOps, x, y):
    """numba's exp_impl: e**x (cos y + i sin y), with C99's values where x is inf or NaN."""
    c, s = f.call("cos", y), f.call("sin", y)
    r = f.call("exp", x)
    re, im = f.mul(r, c), f.mul(r, s)
    pos_inf, neg_inf = f.eq(x, f.c(math.inf)), f.eq(x, f.c(-math.inf))
    y_bad = f.not_finite(y)
    # x = +inf, y finite: inf * 0 would be NaN where cos or sin is 0 (exp(inf + 0j) = inf + 0j)
    re = f.pick(f.both(pos_inf, f.eq(c, f.c(0.0))), c, re)
    im = f.pick(f.both(pos_inf, f.eq(s, f.c(0.0))), s, im)
    re = f.pick(f.both(pos_inf, y_bad), x, re)
    re, im = f.pick2(f.both(neg_inf, y_bad), (f.c(0.0), f.c(0.0)), (re, im))
    return re, f.pick(f.both(f.is_nan(x), f.eq(y, f.c(0.0))), y, im)  # nan + 0j keeps its zero


def cosh(f: FloatOps, x, y):
    """numba's cosh_impl: cos y cosh x + i sin y sinh x, C99's signed infinities for x = +-inf."""
    c, s = f.call("cos", y), f.call("sin", y)
    finite = f.mul(c, f.call("cosh", x)), f.mul(s, f.call("sinh", x))
    flat = f.either(f.is_nan(y), f.eq(y, f.c(0.0)))
    inf_re = f.pick(flat, f.abs(x), f.copysign(x, c))
    inf_im = f.pick(flat, y, f.copysign(x, s))
    inf_im = f.pick(f.lt(x, f.c(0.0)), f.neg(inf_im), inf_im)
    return f.pick2(f.is_inf(x), (inf_re, inf_im), finite)


def sinh(f: FloatOps, x, y):
    """numba's sinh_impl: cos y sinh x + i sin y cosh x; for x = +-inf, zero parts of cos y and
    sin y stay zero (inf * 0 would be NaN)."""
    c, s = f.call("cos", y), f.call("sin", y)
    finite = f.mul(c, f.call("sinh", x)), f.mul(s, f.call("cosh", x))
    inf_x = (f.pick(f.eq(c, f.c(0.0)), c, f.mul(c, x)),
             f.pick(f.eq(s, f.c(0.0)), s, f.mul(s, f.abs(x))))
    inf_x = f.pick2(f.is_nan(y), (x, y), inf_x)
    return f.pick2(f.is_inf(x), inf_x, finite)


def cos(f: FloatOps, x, y):
    return cosh(f, f.neg(y), x)  # cos(z) = cosh(iz)


def sin(f: FloatOps, x, y):
    re, im = sinh(f, f.neg(y), x)  # sin(z) = -i sinh(iz)
    return im, f.neg(re)


def rect(f: FloatOps, r, phi):
    """numba's rect: r (cos phi + i sin phi); an infinite r keeps the zero parts of cos and sin
    (dividing by r only gives them r's sign), and a non-finite phi gives 0 for r = 0 and r + i phi
    for infinite r."""
    c, s = f.call("cos", phi), f.call("sin", phi)
    r_inf = f.is_inf(r)
    re = f.pick(f.both(r_inf, f.eq(c, f.c(0.0))), f.div(c, r), f.mul(c, r))
    im = f.pick(f.both(r_inf, f.eq(s, f.c(0.0))), f.div(s, r), f.mul(s, r))
    phi_bad = f.not_finite(phi)
    out = f.pick2(f.both(phi_bad, r_inf), (r, phi), (re, im))
    return f.pick2(f.both(phi_bad, f.eq(r, f.c(0.0))), (f.abs(r), f.c(0.0)), out)


def log(f: FloatOps, x, y):
    """CPython's cmath.log: log1p near |z| = 1, where log(hypot) loses the small real part."""
    ax, ay = f.abs(x), f.abs(y)
    h = f.call("hypot", ax, ay)
    big, small = f.pick(f.gt(ax, ay), ax, ay), f.pick(f.gt(ax, ay), ay, ax)
    near_one = f.call("log1p", f.add(f.mul(f.sub(big, f.c(1.0)), f.add(big, f.c(1.0))),
                                     f.mul(small, small)))
    re = f.pick(f.b.and_(f.b.fcmp_ordered(">=", h, f.c(0.71)),
                         f.b.fcmp_ordered("<=", h, f.c(1.73))),
                f.mul(near_one, f.c(0.5)), f.call("log", h))
    far = f.sub(f.log_hypot_large(x, y), f.c(math.log(2.0)))
    return f.pick(f.either_large(x, y), far, re), f.call("atan2", y, x)


def log10(f: FloatOps, x, y):
    re, im = log(f, x, y)
    return f.div(re, f.c(math.log(10.0))), f.div(im, f.c(math.log(10.0)))


def tanh(f: FloatOps, x, y):
    tx, ty = f.call("tanh", x), f.call("tan", y)
    cx = f.div(f.c(1.0), f.call("cosh", x))
    txty = f.mul(tx, ty)
    denom = f.add(f.c(1.0), f.mul(txty, txty))
    re = f.div(f.mul(tx, f.add(f.c(1.0), f.mul(ty, ty))), denom)
    im = f.mul(f.mul(f.div(ty, denom), cx), cx)
    # |x| past log(max / 4): tanh(x) is +-1 and cosh overflows; a non-finite y keeps the formula's
    # NaNs (C99 and numba: tanh(x + i inf) is NaN + i NaN for finite x)
    far = f.both(f.gt(f.abs(x), f.c(math.log(f.large))), f.b.not_(f.not_finite(y)))
    far_im = f.mul(f.mul(f.mul(f.c(4.0), f.call("sin", y)), f.call("cos", y)),
                   f.call("exp", f.mul(f.c(-2.0), f.abs(x))))
    out = f.pick(far, f.call("copysign", f.c(1.0), x), re), f.pick(far, far_im, im)
    # x = +-inf (numba's tanh_impl): +-1 and a zero signed as sin(2y), +0 for y = +-inf
    inf_im = f.pick(f.is_inf(y), f.c(0.0),
                    f.copysign(f.c(0.0), f.call("sin", f.mul(f.c(2.0), y))))
    return f.pick2(f.is_inf(x), (f.copysign(f.c(1.0), x), inf_im), out)


def tan(f: FloatOps, x, y):
    re, im = tanh(f, f.neg(y), x)  # tan(z) = -i tanh(iz)
    return im, f.neg(re)


def asinh(f: FloatOps, x, y):
    s1 = sqrt(f, f.add(f.c(1.0), y), f.neg(x))
    s2 = sqrt(f, f.sub(f.c(1.0), y), x)
    re = f.call("asinh", f.sub(f.mul(s1[0], s2[1]), f.mul(s2[0], s1[1])))
    im = f.call("atan2", y, f.sub(f.mul(s1[0], s2[0]), f.mul(s1[1], s2[1])))
    big = f.log_hypot_large(x, y)
    far_re = f.pick(f.b.fcmp_ordered(">=", y, f.c(0.0)), f.call("copysign", big, x),
                    f.neg(f.call("copysign", big, f.neg(x))))
    far_im = f.call("atan2", y, f.abs(x))
    return f.pick2(f.either_large(x, y), (far_re, far_im), (re, im))


def asin(f: FloatOps, x, y):
    re, im = asinh(f, f.neg(y), x)  # asin(z) = -i asinh(iz)
    return im, f.neg(re)


def acos(f: FloatOps, x, y):
    s1 = sqrt(f, f.sub(f.c(1.0), x), f.neg(y))
    s2 = sqrt(f, f.add(f.c(1.0), x), y)
    re = f.mul(f.c(2.0), f.call("atan2", s1[0], s2[0]))
    im = f.call("asinh", f.sub(f.mul(s2[0], s1[1]), f.mul(s2[1], s1[0])))
    big = f.log_hypot_large(x, y)
    far_re = f.call("atan2", f.abs(y), x)
    far_im = f.pick(f.lt(x, f.c(0.0)), f.neg(f.call("copysign", big, y)),
                    f.call("copysign", big, f.neg(y)))
    return f.pick2(f.either_large(x, y), (far_re, far_im), (re, im))


def acosh(f: FloatOps, x, y):
    s1 = sqrt(f, f.sub(x, f.c(1.0)), y)
    s2 = sqrt(f, f.add(x, f.c(1.0)), y)
    re = f.call("asinh", f.add(f.mul(s1[0], s2[0]), f.mul(s1[1], s2[1])))
    im = f.mul(f.c(2.0), f.call("atan2", s1[1], s2[0]))
    far = (f.log_hypot_large(x, y), f.call("atan2", y, x))
    return f.pick2(f.either_large(x, y), far, (re, im))


def atanh(f: FloatOps, x, y):
    # atanh(z) = -atanh(-z): work with a non-negative real part
    flip = f.lt(x, f.c(0.0))
    x, y = f.pick(flip, f.neg(x), x), f.pick(flip, f.neg(y), y)
    ay = f.abs(y)
    one = f.c(1.0)
    zr1 = f.sub(one, x)
    re = f.mul(f.call("log1p", f.div(f.mul(f.c(4.0), x), f.add(f.mul(zr1, zr1), f.mul(ay, ay)))),
               f.c(0.25))
    im = f.mul(f.call("atan2", f.mul(f.c(-2.0), y), f.sub(f.mul(zr1, f.add(one, x)),
                                                            f.mul(ay, ay))), f.c(-0.5))
    # |z| huge, or x NaN: 1/z dominates (real part 0 at an infinity, signed as x for y = +-inf)
    h = f.call("hypot", f.mul(x, f.c(0.5)), f.mul(y, f.c(0.5)))
    far_re = f.pick(f.is_inf(x), f.c(0.0), f.div(f.div(f.div(x, f.c(4.0)), h), h))
    far = (f.pick(f.is_inf(y), f.copysign(f.c(0.0), x), far_re),
           f.neg(f.call("copysign", f.c(math.pi / 2), f.neg(y))))
    # z next to 1: the log1p form cancels
    near_re = f.neg(f.call("log", f.div(f.call("sqrt", ay),
                                        f.call("sqrt", f.call("hypot", ay, f.c(2.0))))))
    near = (f.pick(f.eq(ay, f.c(0.0)), f.c(math.inf), near_re),
            f.pick(f.eq(ay, f.c(0.0)), y,
                   f.call("copysign", f.mul(f.call("atan2", f.c(2.0), f.neg(ay)), f.c(0.5)), y)))
    is_near = f.b.and_(f.eq(x, one), f.lt(ay, f.c(math.sqrt(f.tiny))))
    out = f.pick2(is_near, near, (re, im))
    is_far = f.either(f.is_nan(x), f.either_large(x, y, math.sqrt(f.large)))
    out = f.pick2(is_far, far, out)
    out = out[0], f.pick(f.is_nan(y), f.c(math.nan), out[1])  # numba: NaN whenever y is
    return f.pick(flip, f.neg(out[0]), out[0]), f.pick(flip, f.neg(out[1]), out[1])


def atan(f: FloatOps, x, y):
    re, im = atanh(f, f.neg(y), x)  # atan(z) = -i atanh(iz)
    # numba's atan_impl keeps the real part's sign for x = +-inf, y = NaN
    odd = f.both(f.is_inf(x), f.is_nan(y))
    return im, f.pick(odd, re, f.neg(re))


# ---- complex ** ---------------------------------------------------------------------------------


def multiply(f: FloatOps, p, q):
    return (f.sub(f.mul(p[0], q[0]), f.mul(p[1], q[1])),
            f.add(f.mul(p[0], q[1]), f.mul(p[1], q[0])))


def reciprocal(f: FloatOps, z):
    """1 / z by Smith's method, as CPython's complex division (no overflow for large z)."""
    x, y = z
    wide = f.b.fcmp_ordered(">=", f.abs(x), f.abs(y))
    ratio = f.pick(wide, f.div(y, x), f.div(x, y))
    denom = f.pick(wide, f.add(x, f.mul(y, ratio)), f.add(f.mul(x, ratio), y))
    re = f.div(f.pick(wide, f.c(1.0), ratio), denom)
    im = f.div(f.pick(wide, f.neg(ratio), f.c(-1.0)), denom)
    return re, im


def power_by_constant(f: FloatOps, z, n: int):
    """z ** n for a small integer n, by squaring as CPython's c_powi (exact for n = 2)."""
    result, square, m = (f.c(1.0), f.c(0.0)), z, abs(n)
    while m:
        if m & 1:
            result = multiply(f, result, square)
        m >>= 1
        if m:
            square = multiply(f, square, square)
    return reciprocal(f, result) if n < 0 else result


def power_by_int(f: FloatOps, z, n):
    """z ** n for a runtime i64 n: a squaring loop, then 1/result when n < 0."""
    b = f.b
    pre = b.block
    loop, body, done = (b.function.append_basic_block(f"cpow.{k}") for k in ("loop", "body",
                                                                              "done"))
    zero = ir.Constant(dm.i64, 0)
    negative = b.icmp_signed("<", n, zero)
    start = b.select(negative, b.neg(n), n)
    b.branch(loop)
    b.position_at_end(loop)
    phis = [b.phi(v.type) for v in (f.c(0.0),) * 4] + [b.phi(dm.i64)]
    for phi, value in zip(phis, (f.c(1.0), f.c(0.0), z[0], z[1], start), strict=True):
        phi.add_incoming(value, pre)
    acc, square, m = (phis[0], phis[1]), (phis[2], phis[3]), phis[4]
    b.cbranch(b.icmp_unsigned("!=", m, zero), body, done)
    b.position_at_end(body)
    odd = b.trunc(m, dm.i1)
    product = multiply(f, acc, square)
    new_acc = f.pick2(odd, product, acc)
    new_square = multiply(f, square, square)
    for phi, value in zip(phis, (*new_acc, *new_square, b.lshr(m, ir.Constant(dm.i64, 1))),
                          strict=True):
        phi.add_incoming(value, body)
    b.branch(loop)
    b.position_at_end(done)
    return f.pick2(negative, reciprocal(f, acc), acc)


def power_polar(f: FloatOps, z, w):
    """CPython's _Py_c_pow (numba's numba_cpow): |z|**c * e**(-d arg z), angle c arg z + d ln|z|."""
    a, bi = z
    c, d = w
    vabs = f.call("hypot", a, bi)
    at = f.call("atan2", bi, a)
    length = f.div(f.call("pow", vabs, c), f.call("exp", f.mul(at, d)))
    phase = f.add(f.mul(at, c), f.mul(d, f.call("log", vabs)))
    re, im = f.mul(length, f.call("cos", phase)), f.mul(length, f.call("sin", phase))
    zero = f.c(0.0)
    w_zero = f.b.and_(f.eq(c, zero), f.eq(d, zero))
    z_zero = f.b.and_(f.eq(a, zero), f.eq(bi, zero))
    out = f.pick2(z_zero, (zero, zero), (re, im))
    return f.pick2(w_zero, (f.c(1.0), zero), out)


def power(f: FloatOps, z, w, const_exponent=None):
    """z ** w as CPython computes it: an integral real exponent of at most 100 in magnitude by
    squaring (z ** 2 is z * z, numba's fast path), anything else in polar form."""
    if isinstance(const_exponent, (int, float, complex)) and not isinstance(const_exponent, bool):
        e = complex(const_exponent)
        if e.imag == 0 and e.real == math.floor(e.real) and abs(e.real) <= 100:
            return power_by_constant(f, z, int(e.real))
        return power_polar(f, z, w)
    b = f.b
    c, d = w
    integral = b.and_(b.and_(f.eq(d, f.c(0.0)), f.eq(c, f.call("floor", c))),
                      b.fcmp_ordered("<=", f.abs(c), f.c(100.0)))
    polar_bb = b.function.append_basic_block("cpow.polar")
    int_bb = b.function.append_basic_block("cpow.int")
    end_bb = b.function.append_basic_block("cpow.end")
    b.cbranch(integral, int_bb, polar_bb)
    b.position_at_end(int_bb)
    by_int = power_by_int(f, z, b.fptosi(c, dm.i64))
    int_end = b.block
    b.branch(end_bb)
    b.position_at_end(polar_bb)
    polar = power_polar(f, z, w)
    b.branch(end_bb)
    b.position_at_end(end_bb)
    out = []
    for k in range(2):
        phi = b.phi(by_int[k].type)
        phi.add_incoming(by_int[k], int_end)
        phi.add_incoming(polar[k], polar_bb)
        out.append(phi)
    return tuple(out)
