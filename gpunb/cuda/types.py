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


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return getattr(_types, name)
    except AttributeError:
        raise AttributeError(f"module 'gpunb.cuda.types' has no attribute {name!r}") from None


def __dir__() -> list:
    return sorted({n for n in dir(_types) if not n.startswith("_")} |
                  {n for n in globals() if not n.startswith("_")})
