"""numba's typing rules for numbers: operators, unary operators, joins and min/max.

Each rule reproduces what numba's CPU JIT infers (numba/core/typing/builtins.py: the integer
typing NBEP's `choose_result_int`, the ConcreteTemplate cases and the conversion ratings that pick
among them; numba/core/types/abstract.py: `Number.unify` by `np.promote_types`), checked against
numba 0.68 for every pair of scalar types. One deliberate difference, documented in README: a
Python float literal is *weak*, so `x * 2.0` stays float32 when x is float32 (and bfloat16 when
x is bfloat16). bfloat16 follows numba-cuda's Bfloat16 type (read off numba-cuda 0.30's typing):
+ - * / of bfloat16 with bfloat16 (or a byte-sized integer) stay bfloat16, anything else
computes in the float type numba picks for float32 in bfloat16's place.
"""

from __future__ import annotations

import ast

import numpy as np

from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer

# float32 with these stays float32 in arithmetic (numba's conversions to float32 are safe only
# from them: see _CAN_CONVERT), likewise complex64
_SMALL_INTS = (t.boolean, t.int8, t.int16, t.uint8)
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)
_SHIFTS = (ast.LShift, ast.RShift)


class NoRule(Exception):
    """The operand types have no typing for this operator (numba refuses them too)."""


def _as_int(ty: t.Type) -> t.Integer:
    return t.int64 if isinstance(ty, t.Boolean) else ty


def result_int(*types: t.Type) -> t.Integer:
    """numba's choose_result_int: at least 64 bits, signed when any operand is (bool is)."""
    ints = [_as_int(ty) for ty in types]
    return t.Integer(max(64, *(i.bitwidth for i in ints)), any(i.signed for i in ints))


def _small(ty: t.Type) -> bool:
    return ty in _SMALL_INTS


def _float_result(a: t.Type, b: t.Type) -> t.Float:
    """Reals mixed with reals or integers: float32 only when both sides fit float32 exactly."""
    halves = [x for x in (a, b) if isinstance(x, t.Float) and x.bitwidth == 16]
    if halves:  # numba-cuda's fp16: half with half or a byte-sized integer stays half
        other = b if a in halves else a
        if other in halves or _small(other) and other != t.int16:
            return t.float16
        if isinstance(other, t.Float) or _small(other):
            return t.float32 if (not isinstance(other, t.Float) or other.bitwidth <= 32) \
                else t.float64
        return t.float64
    narrow = all((isinstance(x, t.Float) and x.bitwidth <= 32) or _small(x) for x in (a, b))
    return t.float32 if narrow else t.float64


def _complex_result(a: t.Type, b: t.Type) -> t.Complex:
    narrow = all(x == t.complex64 or (isinstance(x, t.Float) and x.bitwidth <= 32) or _small(x)
                 for x in (a, b))
    return t.complex64 if narrow else t.complex128


def _keeps_bfloat16(a: t.Type, b: t.Type) -> bool:
    """numba-cuda's case (bf16, bf16) -> bf16 wins the rating when both sides convert to
    bfloat16 at least safely: bfloat16 itself and 8-bit integers (not bool)."""
    return all(isinstance(x, t.BFloat16) or (isinstance(x, t.Integer) and x.bitwidth == 8)
               for x in (a, b))


def _bfloat16_as_float32(ty: t.Type) -> t.Type:
    return t.float32 if isinstance(ty, t.BFloat16) else ty


def _bfloat16_binop(op: ast.operator, a: t.Type, b: t.Type) -> t.Type:
    if isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div)) and _keeps_bfloat16(a, b):
        return t.bfloat16
    if isinstance(op, (*_BITWISE, *_SHIFTS)) or isinstance(a, t.Complex) or \
            isinstance(b, t.Complex):
        raise NoRule  # numba-cuda has no bfloat16 case with complex numbers or bit operators
    return binop(op, _bfloat16_as_float32(a), _bfloat16_as_float32(b))


def binop(op: ast.operator, a: t.Type, b: t.Type) -> t.Type:
    """The result type of `a <op> b` for numbers (operands are converted to it, except the
    right operand of a shift and an integer exponent of a float power). NoRule if none."""
    if not (t.is_number(a) and t.is_number(b)):
        raise NoRule
    if isinstance(a, t.BFloat16) or isinstance(b, t.BFloat16):
        return _bfloat16_binop(op, a, b)
    both_int = t.is_int(a) and t.is_int(b)
    if isinstance(op, _SHIFTS):
        if not both_int:
            raise NoRule
        left = _as_int(a)
        return t.Integer(max(64, left.bitwidth), left.signed)
    if isinstance(op, _BITWISE):
        if not both_int:
            raise NoRule
        if isinstance(a, t.Boolean) and isinstance(b, t.Boolean):
            return t.boolean
        return result_int(a, b)
    if isinstance(op, ast.MatMult) or not isinstance(op, _ARITH):
        raise NoRule
    if both_int:
        if isinstance(op, ast.Div):
            return t.float64
        if isinstance(op, ast.Pow) and isinstance(a, t.Boolean) and b == t.int32:
            return t.float32  # numba's overload resolution picks (float32, int32) here
        return result_int(a, b)
    if isinstance(a, t.Complex) or isinstance(b, t.Complex):
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            raise NoRule
        return _complex_result(a, b)
    if isinstance(op, ast.Pow) and isinstance(a, t.Float) and t.is_int(b):
        return a  # float ** integer keeps the float's width (numba's explicit cases)
    return _float_result(a, b)


def binop_with_weak(op: ast.operator, a: t.Type, b: t.Type, weak_a: bool,
                    weak_b: bool) -> t.Type:
    """binop(), but a weak float literal takes the other operand's float (or complex) width:
    gpunb's documented difference from numba (`x * 2.0` stays float32)."""
    if weak_a and not weak_b and isinstance(b, (t.Float, t.Complex, t.BFloat16)):
        a = b.component if isinstance(b, t.Complex) else b
    if weak_b and not weak_a and isinstance(a, (t.Float, t.Complex, t.BFloat16)):
        b = a.component if isinstance(a, t.Complex) else a
    return binop(op, a, b)


def unary(op: ast.unaryop, a: t.Type) -> t.Type:
    """-x, +x, ~x: integers give at least 64 bits of their own signedness (the operation itself
    happens at the operand's width first: -uint32(1) is 4294967295); ~bool is bool."""
    if not t.is_number(a):
        raise NoRule
    if isinstance(op, ast.Invert):
        if isinstance(a, t.Boolean):
            return t.boolean
        if not isinstance(a, t.Integer):
            raise NoRule
        return result_int(a) if a.signed else t.Integer(max(64, a.bitwidth), False)
    if isinstance(a, t.Boolean):
        return t.int64
    if isinstance(a, t.Integer):
        return t.Integer(max(64, a.bitwidth), a.signed)
    return a  # floats, complex and bfloat16 keep their type (numba-cuda: -bf16 is bf16)


def comparison_operands(a: t.Type, b: t.Type) -> t.Type:
    """The type both sides of a comparison are converted to."""
    if a == b:
        return a
    if isinstance(a, t.BFloat16) or isinstance(b, t.BFloat16):
        if _keeps_bfloat16(a, b):
            return t.bfloat16
        if isinstance(a, t.Complex) or isinstance(b, t.Complex):
            raise NoRule
        return comparison_operands(_bfloat16_as_float32(a), _bfloat16_as_float32(b))
    if isinstance(a, t.Complex) or isinstance(b, t.Complex):
        return _complex_result(a, b)
    if isinstance(a, t.Float) or isinstance(b, t.Float):
        return _float_result(a, b)
    if isinstance(a, t.Boolean) and isinstance(b, t.Boolean):
        return t.boolean
    x, y = _as_int(a), _as_int(b)
    if x.signed == y.signed:
        return t.Integer(max(x.bitwidth, y.bitwidth), x.signed)
    unsigned, signed = (x, y) if not x.signed else (y, x)
    if unsigned.bitwidth < 64:
        return t.int64  # every value of both fits int64
    return t.float64  # int64 against uint64: numba compares them as float64


def join(a: t.Type, b: t.Type) -> t.Type | None:
    """The type of a variable where two of its definitions meet (numba's unify_pairs): numbers
    by np.promote_types, arrays of one dtype and ndim with the layouts merged, tuples item by
    item; None when they cannot be joined."""
    if a == b:
        return a
    if t.is_number(a) and t.is_number(b):
        return promote(a, b)
    if isinstance(a, t.Tuple) and isinstance(b, t.Tuple) and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items, strict=True))
        return None if None in items else t.Tuple(items)
    if isinstance(a, t.Array) and isinstance(b, t.Array) and a.dtype == b.dtype and \
            a.ndim == b.ndim:
        return t.Array(a.dtype, a.ndim, a.layout if a.layout == b.layout else "A",
                       a.readonly or b.readonly, a.aligned and b.aligned)
    return None


def join_optional(a: t.Type, b: t.Type) -> t.Type | None:
    """Where None meets a value (or an Optional), the Optional of the value (numba's
    NoneType/Optional unify); None when neither is None or Optional, or the values differ."""
    if not isinstance(a, (t.NoneType, t.Optional)) and \
            not isinstance(b, (t.NoneType, t.Optional)):
        return None
    values = [x.type if isinstance(x, t.Optional) else x for x in (a, b)
              if not isinstance(x, t.NoneType)]
    if not values:
        return t.none
    value = values[0] if len(values) == 1 else join(*values)
    if value is None or not _optional_value(value):
        return None
    return t.Optional(value)


def _optional_value(ty: t.Type) -> bool:
    """What an Optional can hold: numbers, booleans, arrays, and tuples of those."""
    if isinstance(ty, t.Tuple):
        return all(_optional_value(i) for i in ty.items)
    return t.is_number(ty) or isinstance(ty, (t.Boolean, t.Array))


def promote(*types: t.Type) -> t.Type:
    """np.promote_types over number types (numba's Number.unify; also min/max's result).
    bfloat16 joins as types.unify_numbers says (numba-cuda's own unify recurses forever)."""
    if any(isinstance(ty, t.BFloat16) for ty in types):
        result = types[0]
        for ty in types[1:]:
            result = t.unify_numbers(result, ty)
        return result
    dtype = np.dtype(t.to_dtype(types[0]))
    for ty in types[1:]:
        dtype = np.promote_types(dtype, t.to_dtype(ty))
    return t.from_dtype(dtype)


# ---- numba's conversion ratings -----------------------------------------------------------------

EXACT, PROMOTE, SAFE, UNSAFE = 0, 1, 2, 3
# numba 0.68's typing_context.can_convert(src, dst) for every pair of scalar types, read off numba
# itself (its typeconv rules closed over paths): E exact, P promote, S safe, U unsafe, - none.
# Rows are the source, columns the destination, both in _SCALARS' order.
_SCALARS = (t.boolean, t.int8, t.int16, t.int32, t.int64, t.uint8, t.uint16, t.uint32, t.uint64,
            t.float16, t.float32, t.float64, t.complex64, t.complex128)
_CAN_CONVERT = (
    "ESSSSSSSSSSSSS",  # boolean
    "UEPPPUUUUSSSSS",  # int8
    "UUEPPUUUUUSSSS",  # int16
    "UUUEPUUUUUUSUS",  # int32
    "UUUUEUUUUUUSUS",  # int64
    "UUSSSEPPPUSSSS",  # uint8
    "UUUSSUEPPUUSUS",  # uint16
    "UUUUSUUEPUUSUS",  # uint32
    "UUUUUUUUEUUSUS",  # uint64
    "UUUUUUUUUEPPSS",  # float16
    "UUUUUUUUUUEPSS",  # float32
    "UUUUUUUUUUUEUS",  # float64
    "------------EP",  # complex64
    "------------UE",  # complex128
)
_KINDS = {"E": EXACT, "P": PROMOTE, "S": SAFE, "U": UNSAFE, "-": None}
_INDEX = {ty: k for k, ty in enumerate(_SCALARS)}
def conversion(src: t.Type, dst: t.Type, literal: int | None = None) -> int | None:
    """How numba rates converting scalar `src` to `dst`: EXACT, PROMOTE (widening within a
    kind), SAFE (no value lost), UNSAFE, or None when it cannot. An integer literal (its value
    given) converts like its int64/uint64 type, at best PROMOTE (numba's IntegerLiteral)."""
    if literal is not None:
        found = conversion(src, dst)
        return None if found is None else max(found, PROMOTE)
    if isinstance(src, t.BFloat16) or isinstance(dst, t.BFloat16):
        return _bfloat16_conversion(src, dst)
    if isinstance(src, t.DateTime) or isinstance(dst, t.DateTime):  # a finer unit is safe
        from gpunb.compiler import datetimes

        if not (isinstance(src, t.DateTime) and isinstance(dst, t.DateTime)) or \
                src.kind != dst.kind:
            return None
        return EXACT if src == dst else SAFE if datetimes.can_cast(src.unit, dst.unit) else None
    if isinstance(dst, Pointer):  # an address passed as an int (numba-cuda's launches)
        if isinstance(src, Pointer):
            return EXACT if src == dst else SAFE if dst.dtype is None else None
        return UNSAFE if isinstance(src, t.Integer) else None
    if src not in _INDEX or dst not in _INDEX:
        return EXACT if src == dst else None
    return _KINDS[_CAN_CONVERT[_INDEX[src]][_INDEX[dst]]]


def _bfloat16_conversion(src: t.Type, dst: t.Type) -> int | None:
    """numba-cuda's Bfloat16.can_convert_to/_from: to float32/float64 safe, to float16 and
    integers unsafe; from 8-bit integers safe, from other integers and floats unsafe; never
    with bool or complex."""
    if src == dst:
        return EXACT
    if isinstance(src, t.BFloat16):
        if isinstance(dst, t.Float):
            return SAFE if dst.bitwidth >= 32 else UNSAFE
        return UNSAFE if isinstance(dst, t.Integer) else None
    if isinstance(src, t.Integer):
        return SAFE if src.bitwidth == 8 else UNSAFE
    return UNSAFE if isinstance(src, t.Float) else None


def rating(sources: tuple, targets: tuple, literals: tuple | None = None) -> tuple | None:
    """numba's Rating of calling `targets` with `sources`: (unsafe, safe, promote) counts, lower
    is better; None when an argument cannot convert."""
    counts = [0, 0, 0]
    literals = literals or (None,) * len(sources)
    for src, dst, lit in zip(sources, targets, literals, strict=True):
        if isinstance(src, t.Array) or isinstance(dst, t.Array) or isinstance(src, t.Tuple):
            if not can_convert(src, dst):
                return None
            continue
        kind = conversion(src, dst, lit)
        if kind is None:
            return None
        if kind == UNSAFE:
            counts[0] += 1
        elif kind == SAFE:
            counts[1] += 1
        elif kind == PROMOTE:
            counts[2] += 1
    return tuple(counts)


def best_match(sources: tuple, candidates: list, literals: tuple | None = None) -> int | None:
    """Index of the candidate argument tuple numba would choose (the best rating, the first of
    equals), or None when none accepts the arguments."""
    best, best_index = None, None
    for index, targets in enumerate(candidates):
        if len(targets) != len(sources):
            continue
        found = rating(sources, tuple(targets), literals)
        if found is not None and (best is None or found < best):
            best, best_index = found, index
    return best_index


def range_type(argtypes: tuple, literals: tuple) -> t.Integer:
    """The loop variable of range(...): numba's Range template picks int32, int64 or uint64 by
    rating (range(n) with n int32 counts in int32; range(10) in int64; range(uint32) in uint64)."""
    candidates = [(t.int32,) * len(argtypes), (t.int64,) * len(argtypes),
                  (t.uint64,) * len(argtypes)]
    chosen = best_match(tuple(argtypes), candidates, literals)
    return candidates[chosen][0] if chosen is not None else t.int64


def unify(a: t.Type, b: t.Type) -> t.Type | None:
    """The least type that holds values of both (for variables assigned in several places)."""
    if a == b:
        return a
    if t.is_number(a) and t.is_number(b):
        if isinstance(a, t.Integer) and isinstance(b, t.Integer) and a.signed == b.signed:
            return t.Integer(max(a.bitwidth, b.bitwidth), a.signed)
        if isinstance(a, t.Boolean) or isinstance(b, t.Boolean):
            return b if isinstance(a, t.Boolean) else a
        return t.unify_numbers(a, b)
    if isinstance(a, t.Tuple) and isinstance(b, t.Tuple) and len(a.items) == len(b.items):
        items = tuple(unify(x, y) for x, y in zip(a.items, b.items, strict=False))
        return None if None in items else t.Tuple(items)
    if isinstance(a, t.Array) and isinstance(b, t.Array) and a.dtype == b.dtype and \
            a.ndim == b.ndim:
        return t.Array(a.dtype, a.ndim, a.layout if a.layout == b.layout else "A",
                       a.readonly or b.readonly, a.aligned and b.aligned)
    return None


def can_convert(src: t.Type, dst: t.Type) -> bool:
    """Whether a value of `src` may be passed where `dst` is declared (a declared signature, an
    annotated variable, a store): numba's Array.can_convert_to for arrays - same dtype and ndim,
    the layout kept or 'A', never read-only to writeable nor unaligned to aligned - plus a 1-d
    contiguous array passing as either 'C' or 'F' (it is both); numbers convert to numbers except
    complex to real; tuples item by item. The dispatcher (launch arguments) and inference (calls,
    stores) both ask this one function."""
    if src == dst:
        return True
    if t.is_number(src) and t.is_number(dst):
        return not (isinstance(src, t.Complex) and not isinstance(dst, t.Complex))
    if isinstance(src, t.Array) and isinstance(dst, t.Array):
        layout_ok = dst.layout in ("A", src.layout) or (
            src.ndim == 1 and src.layout in "CF" and dst.layout in "CF")
        return src.dtype == dst.dtype and src.ndim == dst.ndim and layout_ok and \
            (dst.readonly or not src.readonly) and (src.aligned or not dst.aligned)
    if isinstance(src, t.Tuple) and isinstance(dst, t.Tuple):
        return len(src.items) == len(dst.items) and all(
            can_convert(a, b) for a, b in zip(src.items, dst.items, strict=True))
    return False
