"""numba.cuda.types under gpunb (also `gpunb.types`): the kernel types by numba's names, for
signatures and dtypes (`from gpunb.cuda.types import float32, void, UniTuple`), with numba's C
aliases, type domains and UniTuple."""

from __future__ import annotations

from gpunb.foundation import types as _types
from gpunb.foundation.pointer_types import CPointer as CPointer
from gpunb.foundation.pointer_types import Pointer
from gpunb.foundation.pointer_types import voidptr as voidptr
from gpunb.foundation.types import (
    Tuple,
    Type,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

# numba's C-name aliases and type domains (sets a ufunc or a test iterates over)
byte, ubyte, short, ushort = int8, uint8, int16, uint16
intc, uintc, long_, ulong, longlong, ulonglong = int32, uint32, int64, uint64, int64, uint64
signed_domain = frozenset({int8, int16, int32, int64})
unsigned_domain = frozenset({uint8, uint16, uint32, uint64})
integer_domain = signed_domain | unsigned_domain
real_domain, complex_domain = frozenset({float32, float64}), frozenset({complex64, complex128})
number_domain = integer_domain | real_domain | complex_domain


class _UniTupleKind(type):
    """numba's UniTuple: UniTuple(int32, 3) makes a Tuple; isinstance asks if one is uniform."""

    def __call__(cls, dtype: Type, count: int) -> Tuple:
        return Tuple((dtype,) * int(count))

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tuple) and bool(obj.items) and len(set(obj.items)) == 1


UniTuple = _UniTupleKind("UniTuple", (), {"__doc__": "numba's homogeneous tuple type"})
RawPointer = Pointer  # numba's voidptr is RawPointer('void*')


class _TypeClass(type):
    """One of numba's abstract type classes, for `isinstance(ty, types.Number)` in an
    overload's generator: a class whose instances are the gpunb types its test accepts."""

    def __instancecheck__(cls, obj) -> bool:
        return cls._accepts(obj)


def _type_class(name: str, accepts, doc: str) -> type:
    return _TypeClass(name, (), {"__doc__": doc, "_accepts": staticmethod(accepts)})


def _literal_of(kinds):
    from gpunb.compiler.values import ConstValue

    return lambda obj: isinstance(obj, ConstValue) and isinstance(obj.type, kinds)


Number = _type_class("Number", lambda obj: isinstance(obj, (_types.Integer, _types.Float,
                                                            _types.Complex)),
                     "numba's Number: integers, floats and complex numbers")
Buffer = _type_class("Buffer", lambda obj: isinstance(obj, _types.Array), "numba's Buffer")
BaseTuple = _type_class("BaseTuple", lambda obj: isinstance(obj, _types.Tuple),
                        "numba's BaseTuple: every tuple type")
Literal = _type_class("Literal", _literal_of(_types.Type),
                      "numba's Literal: a constant argument offered by its value")
IntegerLiteral = _type_class("IntegerLiteral", _literal_of(_types.Integer),
                             "numba's IntegerLiteral (literal_value: the int)")
BooleanLiteral = _type_class("BooleanLiteral", _literal_of(_types.Boolean),
                             "numba's BooleanLiteral (literal_value: the bool)")


def unliteral(ty):
    """numba's types.unliteral: a literal type's plain type (any other type as is)."""
    from gpunb.compiler.values import ConstValue

    return ty.type if isinstance(ty, ConstValue) else ty


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(name)
    if name == "Omitted":  # numba's: an argument an overload's call did not pass
        from gpunb.compiler.overload_types import Omitted

        return Omitted
    try:
        return getattr(_types, name)
    except AttributeError:
        raise AttributeError(f"module 'gpunb.cuda.types' has no attribute {name!r}") from None


def __dir__() -> list:
    return sorted({n for n in dir(_types) if not n.startswith("_")} |
                  {n for n in globals() if not n.startswith("_")})
