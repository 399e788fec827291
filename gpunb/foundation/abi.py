"""How kernel arguments cross into compiled code: each argument flattens into parameter slots.

The CUDA and CPU targets share this layout, so one argument packer (runtime/packing.py) serves both:
- a scalar is one slot of its machine type (bool is `i8`, bfloat16 `bf16`, an fp8 value `i8`);
- a complex number is two slots (real, imaginary) of its component type;
- an array is `ptr` (data), then `ndim` x `i64` shape, then `ndim` x `i64` strides in bytes;
- a tuple is its items' slots in order;
- a record (structured scalar) is a `ptr` to its bytes; a C pointer (CPointer) is a `ptr`;
- a TMA tensor map is one `tmap` slot: its 128 bytes by value on the GPU (a __grid_constant__
  parameter), a pointer to them on the CPU target.
"""

from __future__ import annotations

from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer

SLOT_SIZES = {"ptr": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "f32": 4, "f64": 8,
              "bf16": 2}


def scalar_slot(ty: t.Type) -> str:
    if isinstance(ty, t.Boolean):
        return "i8"
    if isinstance(ty, t.Integer):
        return f"i{ty.bitwidth}"
    if isinstance(ty, t.Float):
        return f"f{ty.bitwidth}"
    if isinstance(ty, t.BFloat16):
        return "bf16"
    if isinstance(ty, t.FP8):
        return "i8"
    if isinstance(ty, (enum_types.EnumMember, t.DateTime)):  # class position; count of units
        return "i64"
    raise TypeError(f"{ty} is not a scalar")


def param_slots(ty: t.Type) -> tuple[str, ...]:
    """The slots one argument of type `ty` occupies."""
    if isinstance(ty, t.Array):
        return ("ptr",) + ("i64",) * (2 * ty.ndim)
    if isinstance(ty, t.Complex):
        comp = scalar_slot(ty.component)
        return (comp, comp)
    if isinstance(ty, t.Tuple):
        out: tuple[str, ...] = ()
        for item in ty.items:
            out += param_slots(item)
        return out
    if isinstance(ty, (t.Record, Pointer)):
        return ("ptr",)
    from gpunb.foundation.tensor_types import TensorMap

    if isinstance(ty, TensorMap):
        return ("tmap",)
    return (scalar_slot(ty),)


def signature_slots(argtypes: tuple) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    for ty in argtypes:
        out += param_slots(ty)
    return out
