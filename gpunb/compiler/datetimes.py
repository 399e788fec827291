"""numpy's datetime64 and timedelta64 in kernels, as numba types and computes them
(numba/np/types/datetime.py, numba/np/npdatetime.py): an int64 count of units, NaT its least
value. Arithmetic with NaT gives NaT; a comparison with NaT is False, except != which is True.

Typing: timedelta +/- timedelta (the finer unit), -/+/abs(timedelta), timedelta * and / numbers,
timedelta / timedelta (float64); datetime +/- timedelta, datetime -
datetime; comparisons of two timedeltas or two datetimes. Units convert by exact integer factors
(years to months, weeks to days, ... to attoseconds); combining years or months with days or finer
units needs numba's calendar arithmetic, which gpunb refuses at compile time.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t

NAT = -(1 << 63)
UNIT_CODES = {"Y": 0, "M": 1, "W": 2, "D": 4, "h": 5, "m": 6, "s": 7, "ms": 8, "us": 9,
              "ns": 10, "ps": 11, "fs": 12, "as": 13, "": 14}
_STEPS = {0: (1, 12), 2: (4, 7), 4: (5, 24), 5: (6, 60), 6: (7, 60), 7: (8, 1000),
          8: (9, 1000), 9: (10, 1000), 10: (11, 1000), 11: (12, 1000), 12: (13, 1000)}


class DateTimeTypeError(Exception):
    """An operation numba does not type for these datetime operands (the message says why)."""


def involved(*types) -> bool:
    return any(isinstance(x, t.DateTime) for x in types)


def factor(src: str, dst: str) -> int | None:
    """The integer multiplier from `src` units to `dst` units, None when there is none."""
    a, b = UNIT_CODES[src], UNIT_CODES[dst]
    if a == 14:
        return 1
    scale = 1
    while a < b:
        if a not in _STEPS:
            return None
        a, mult = _STEPS[a]
        scale *= mult
    return scale if a == b else None


def can_cast(src: str, dst: str) -> bool:
    """numba's can_cast_timedelta_units: to a finer unit of a compatible kind."""
    a, b = UNIT_CODES[src], UNIT_CODES[dst]
    if a == b or a == 14:
        return True
    if a > b or b == 14:
        return False
    return not (a <= 1 < b)


def _finer(a: str, b: str) -> str:
    if UNIT_CODES[a] == 14:
        return b
    if UNIT_CODES[b] == 14:
        return a
    return b if UNIT_CODES[b] > UNIT_CODES[a] else a


def _linear_unit(a: str, b: str, what: str) -> str:
    """The common unit of two operands, when both scale to it by integer factors."""
    unit = _finer(a, b)
    if factor(a, unit) is None or factor(b, unit) is None:
        raise DateTimeTypeError(f"{what} of units [{a}] and [{b}] needs calendar arithmetic "
                                "(years or months with days or finer), which gpunb does not "
                                "compile")
    return unit


def timedelta(unit: str) -> t.DateTime:
    return t.DateTime("m", unit)


def binop_type(op, a: t.Type, b: t.Type) -> t.Type:
    """The result type of `a op b` with a datetime operand; DateTimeTypeError when numba has no
    rule for it."""
    is_td = lambda x: isinstance(x, t.DateTime) and x.kind == "m"  # noqa: E731
    is_dt = lambda x: isinstance(x, t.DateTime) and x.kind == "M"  # noqa: E731
    number = lambda x: isinstance(x, (t.Integer, t.Float, t.Boolean))  # noqa: E731
    if isinstance(op, (ast.Add, ast.Sub)) and is_td(a) and is_td(b):
        if can_cast(a.unit, b.unit):
            return b
        if can_cast(b.unit, a.unit):
            return a
    elif isinstance(op, ast.Add) and (is_dt(a) and is_td(b) or is_td(a) and is_dt(b)):
        return _datetime_plus(a if is_dt(a) else b, b if is_td(b) else a)
    elif isinstance(op, ast.Sub) and is_dt(a) and is_td(b):
        return _datetime_plus(a, b)
    elif isinstance(op, ast.Sub) and is_dt(a) and is_dt(b):
        return timedelta(_linear_unit(a.unit, b.unit, "subtracting datetimes"))
    elif isinstance(op, ast.Mult) and (is_td(a) and number(b) or number(a) and is_td(b)):
        return a if is_td(a) else b
    elif isinstance(op, (ast.Div, ast.FloorDiv)) and is_td(a) and number(b):
        return a
    elif isinstance(op, ast.Div) and is_td(a) and is_td(b) and \
            (can_cast(a.unit, b.unit) or can_cast(b.unit, a.unit)):
        return t.float64  # (numba types timedelta // timedelta but cannot compile it)
    raise DateTimeTypeError(f"unsupported operand types for this operator: {a} and {b}")


def _datetime_plus(dt: t.DateTime, td: t.DateTime) -> t.DateTime:
    a, b = UNIT_CODES[dt.unit], UNIT_CODES[td.unit]
    if a != 14 and b != 14 and b < 2 <= a:
        raise DateTimeTypeError(f"cannot combine {dt} and {td}")
    unit = td.unit if a == 14 else dt.unit if b == 14 else _finer(dt.unit, td.unit)
    return t.DateTime("M", _linear_unit(dt.unit, td.unit, f"combining {dt} and {td}")
                      if a != 14 and b != 14 else unit)


def compare_type(op, a: t.Type, b: t.Type) -> t.DateTime:
    """The type both sides of a comparison convert to (two datetimes or two timedeltas)."""
    if not (isinstance(a, t.DateTime) and isinstance(b, t.DateTime) and a.kind == b.kind):
        raise DateTimeTypeError(f"cannot compare {a} with {b}")
    if a.kind == "m" and not (can_cast(a.unit, b.unit) or can_cast(b.unit, a.unit)):
        raise DateTimeTypeError(f"cannot compare {a} with {b}: their units do not convert")
    return t.DateTime(a.kind, _linear_unit(a.unit, b.unit, f"comparing {a} with {b}"))


# ---- lowering -----------------------------------------------------------------------------------


def _const(value: int):
    return ir.Constant(dm.i64, value)


def not_nat(b: ir.IRBuilder, *values):
    ok = b.icmp_signed("!=", values[0], _const(NAT))
    for v in values[1:]:
        ok = b.and_(ok, b.icmp_signed("!=", v, _const(NAT)))
    return ok


def rescale(b: ir.IRBuilder, value, src: t.DateTime, dst: t.DateTime):
    """`value` in `dst`'s unit (NaT stays NaT)."""
    scale = factor(src.unit, dst.unit)
    if scale is None:
        raise TypeError(f"cannot convert {src} to {dst}")
    if scale == 1:
        return value
    return b.select(not_nat(b, value), b.mul(value, _const(scale)), value)


def _to_float_td(b: ir.IRBuilder, value):
    """A float result as a timedelta count: NaN (and what does not fit) is NaT."""
    ordered = b.fcmp_ordered("==", value, value)
    return b.select(ordered, b.fptosi(value, dm.i64), _const(NAT))


def _as_int64(b: ir.IRBuilder, value, ty: t.Type):
    if isinstance(ty, t.Boolean) or (isinstance(ty, t.Integer) and not ty.signed and
                                     ty.bitwidth < 64):
        return b.zext(value, dm.i64)
    return b.sext(value, dm.i64) if ty.bitwidth < 64 else value


def lower_binop(b: ir.IRBuilder, op, x, xt: t.Type, y, yt: t.Type, result: t.Type):
    if isinstance(op, ast.Mult) and not isinstance(xt, t.DateTime):
        x, xt, y, yt = y, yt, x, xt  # number * timedelta
    if isinstance(xt, t.DateTime) and not isinstance(yt, t.DateTime):  # td * n, td / n
        count = x
        if isinstance(yt, t.Float):  # through the float, truncated back (// as /)
            f = b.sitofp(count, y.type)
            ok = not_nat(b, count)
            if isinstance(op, ast.Mult):
                value = _to_float_td(b, b.fmul(f, y))
            else:  # a zero or NaN divisor gives NaT
                ok = b.and_(ok, b.fcmp_unordered("!=", y, ir.Constant(y.type, 0.0)))
                ok = b.and_(ok, b.fcmp_ordered("==", y, y))
                value = _to_float_td(b, b.fdiv(f, y))
        else:
            n = _as_int64(b, y, yt)
            if isinstance(op, ast.Mult):
                value, ok = b.mul(count, n), not_nat(b, count)
            else:  # numba divides a timedelta by an integer with C's truncation
                ok = b.and_(not_nat(b, count), b.icmp_signed("!=", n, _const(0)))
                value = b.sdiv(count, b.select(ok, n, _const(1)))
        return b.select(ok, rescale(b, value, xt, result), _const(NAT))
    if isinstance(op, (ast.Add, ast.Sub)) and isinstance(result, t.DateTime):
        xs, ys = rescale(b, x, xt, t.DateTime(xt.kind, result.unit)), \
            rescale(b, y, yt, t.DateTime(yt.kind, result.unit))
        value = b.add(xs, ys) if isinstance(op, ast.Add) else b.sub(xs, ys)
        return b.select(not_nat(b, x, y), value, _const(NAT))
    unit = _finer(xt.unit, yt.unit)  # timedelta / timedelta
    xs = rescale(b, x, xt, timedelta(unit))
    ys = rescale(b, y, yt, timedelta(unit))
    value = b.fdiv(b.sitofp(xs, ir.DoubleType()), b.sitofp(ys, ir.DoubleType()))
    return b.select(not_nat(b, x, y), value, ir.Constant(ir.DoubleType(), float("nan")))


def compare(b: ir.IRBuilder, sym: str, x, y):
    """x sym y of two values already in one unit: False with a NaT, except != (True)."""
    result = b.icmp_signed(sym, x, y)
    fallback = ir.Constant(dm.i1, 1 if sym == "!=" else 0)
    return b.select(not_nat(b, x, y), result, fallback)


def absolute(b: ir.IRBuilder, x):
    return b.select(b.icmp_signed("<", x, _const(0)), b.neg(x), x)  # NaT stays NaT
