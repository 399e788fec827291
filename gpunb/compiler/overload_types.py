"""The argument types an overload's generator is shown, in the type system it names.

A generator written against gpunb's types (`gpunb.cuda.types`, `numba.cuda.types` under gpunb)
sees gpunb's type objects: constants offered as literals are ConstValues (`literal_value`), an
omitted argument with a default is `Omitted(default)`. A generator that reads numba's own type
system (`from numba.core import types`, `from numba import types`) sees numba's objects,
converted here, so `isinstance(x, types.Integer)` means what its author meant either way.
Also: whether a method's or attribute's registered type matches a value's type.
"""

from __future__ import annotations

import sys
import types as pytypes
from dataclasses import dataclass

from gpunb.compiler.values import ConstValue, PyValue
from gpunb.foundation import types as t
from gpunb.foundation.numba_types import from_numba, is_numba_object


@dataclass(frozen=True, slots=True)
class Omitted(t.Type):
    """numba's types.Omitted: a parameter the call did not pass, with the default it takes."""

    value: object

    def __str__(self) -> str:
        return f"omitted(default={self.value!r})"


# ---- which type system a generator reads ---------------------------------------------------------

def _numba_module(obj) -> bool:
    if isinstance(obj, pytypes.ModuleType):
        name = obj.__name__
        return name == "numba" or name.startswith(("numba.core", "numba.types"))
    module = obj.__module__ if isinstance(obj, type) else type(obj).__module__
    return isinstance(module, str) and module.startswith("numba.core.types")


def _code_names(code) -> set:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _code_names(const)
    return names


def reads_numba_types(generator) -> bool:
    """Whether the generator names numba's type system (a module or a class of numba.core)."""
    from gpunb.foundation.pyobjects import MISSING, lookup_global

    code = getattr(generator, "__code__", None)
    if code is None or "numba" not in sys.modules:
        return False
    for name in _code_names(code):
        value = lookup_global(generator, name)
        if value is not MISSING and _numba_module(value):
            return True
    return False


# ---- gpunb types as numba's ----------------------------------------------------------------------

def to_numba(ty):
    """numba's type object for a gpunb type (anything else, or a failure, is passed as is)."""
    try:
        return _to_numba(ty)
    except Exception:  # noqa: BLE001 - a type numba cannot spell is shown as gpunb's
        return ty


def _to_numba(ty):
    from numba.core import types as nt

    if isinstance(ty, ConstValue):
        return nt.literal(ty.value) if isinstance(ty.value, (bool, int, str)) else \
            _to_numba(ty.type)
    if isinstance(ty, Omitted):
        return nt.Omitted(ty.value)
    if isinstance(ty, t.Boolean):
        return nt.boolean
    if isinstance(ty, t.NoneType):
        return nt.none
    if isinstance(ty, (t.Integer, t.Float, t.Complex)):
        return getattr(nt, str(t.plain(ty)))
    if isinstance(ty, t.Array):
        return nt.Array(_to_numba(ty.dtype), ty.ndim, ty.layout, readonly=ty.readonly,
                        aligned=ty.aligned)
    if isinstance(ty, t.Tuple):
        return nt.Tuple([_to_numba(i) for i in ty.items])
    if isinstance(ty, t.Record):
        from numba.np.numpy_support import from_dtype

        return from_dtype(t.to_dtype(ty))
    return ty


def shown(types_: tuple, numba: bool) -> tuple:
    return tuple(to_numba(x) for x in types_) if numba else types_


# ---- the type a method or attribute was registered on --------------------------------------------

_NUMBA_CLASSES = {  # numba's abstract / concrete type classes, as gpunb's
    "Array": t.Array, "Buffer": t.Array, "Integer": t.Integer, "Float": t.Float,
    "Complex": t.Complex, "Boolean": t.Boolean, "Record": t.Record, "NoneType": t.NoneType,
    "BaseTuple": t.Tuple, "Tuple": t.Tuple, "UniTuple": t.Tuple, "BaseNamedTuple": t.Tuple,
    "NamedTuple": t.Tuple, "NamedUniTuple": t.Tuple,
    "Number": (t.Integer, t.Float, t.Complex), "Type": t.Type,
}


def type_matches(spec, ty: t.Type) -> bool:
    """Whether a value of type `ty` has the methods and attributes registered on `spec`: a type
    class (gpunb's or numba's: every value of it), or one type (gpunb's or numba's)."""
    if isinstance(ty, (PyValue, ConstValue)):
        return False
    if isinstance(spec, type):
        if spec.__module__.startswith("numba."):
            cls = _NUMBA_CLASSES.get(spec.__name__)
            return cls is not None and isinstance(ty, cls)
        return isinstance(ty, spec)
    if is_numba_object(spec):
        spec = from_numba(spec)
    return isinstance(spec, t.Type) and spec == ty
