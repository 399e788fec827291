"""numba's @intrinsic on gpunb's lowering: a typing function gives the call's signature and a
codegen that writes its LLVM IR with llvmlite, into gpunb's own builder.

Honest for values whose LLVM form gpunb and numba share: integers, floats and bool (i1) as
values, typed pointers (cuda.np / CPointer) and None as a result. Arrays, tuples and records
have gpunb's own layouts (not numba's data models), so a signature naming them is refused. The
context handed to codegen offers what intrinsics use on those values: get_value_type,
get_constant, get_constant_generic, cast, get_dummy_value.
"""

from __future__ import annotations

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.values import ConstValue
from gpunb.foundation import types as t
from gpunb.foundation.numba_types import from_numba, is_numba_object
from gpunb.foundation.pointer_types import Pointer


def as_gpunb(ty):
    """gpunb's type (or Signature) for a typing function's answer, given in either system;
    literal types as their plain types (the value is what codegen receives)."""
    if isinstance(ty, t.Signature) or type(ty).__name__ == "Signature" and is_numba_object(ty):
        ret = as_gpunb(ty.return_type)
        return t.Signature(ret, tuple(as_gpunb(a) for a in ty.args))
    if isinstance(ty, ConstValue):
        return ty.type
    if not is_numba_object(ty):
        return ty
    if hasattr(ty, "literal_value"):
        from numba.core.types import unliteral

        ty = unliteral(ty)
    return t.none if str(ty) in ("none", "void") else from_numba(ty)


def unsupported(ty) -> bool:
    """Types whose LLVM value gpunb lays out unlike numba (or has no value for)."""
    return not isinstance(ty, (t.Integer, t.Float, t.Boolean, Pointer))


class IntrinsicContext:
    """The `context` a codegen receives: LLVM types and constants of (scalar) kernel types,
    given as gpunb's or numba's type objects."""

    def __init__(self, typing_context=None):
        self.typing_context = typing_context

    def get_value_type(self, ty):
        return dm.value_type(as_gpunb(ty))

    get_data_type = get_value_type

    def get_constant(self, ty, value):
        return ops.constant(as_gpunb(ty), value)

    def get_constant_generic(self, builder, ty, value):
        return ops.constant(as_gpunb(ty), value)

    def cast(self, builder, value, fromty, toty):
        return ops.cast(builder, value, as_gpunb(fromty), as_gpunb(toty))

    def get_dummy_value(self):
        from llvmlite import ir

        return ir.Constant(dm.i1, 0)


class UserIntrinsic(Builtin):
    """One typed call of an @intrinsic: its codegen and the signature it was given."""

    def __init__(self, intrinsic, signature, codegen):
        self.intrinsic = intrinsic
        self.signature = signature  # as the typing function returned it (numba's or gpunb's)
        self.codegen = codegen
        self.name = intrinsic.__qualname__

    def lower_call(self, low, node, call):
        values = [ops.cast(low.builder, low.expr(arg), low.type_of(arg), declared)
                  for arg, declared in zip(call.args, call.argtypes, strict=True)]
        result = self.codegen(IntrinsicContext(), low.builder, self.signature, values)
        if isinstance(call.result, t.NoneType):
            return None
        if result is None:
            raise low.error(node, "non-void function returns None from implementation",
                            f"the codegen of @intrinsic {self.name} must return the "
                            f"{call.result} value it computed")
        expected = dm.value_type(call.result)
        if getattr(result, "type", None) != expected:
            raise low.error(node, f"the codegen of @intrinsic {self.name} returned a value of "
                            f"LLVM type {getattr(result, 'type', result)}, not {expected} "
                            f"({call.result})")
        return result
