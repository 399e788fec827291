"""How kernel-language types are represented in LLVM IR (the same on every target).

Scalars are LLVM scalars (bool is i1 in registers and i8 in memory; bfloat16 is LLVM's `bfloat`;
an fp8 value is its i8 storage); complex numbers and tuples are literal structs; an array value is
{data ptr, [ndim x i64] shape, [ndim x i64] strides in bytes}.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer
from gpunb.foundation.tensor_types import Fragment, TensorMap

i1 = ir.IntType(1)
i8 = ir.IntType(8)
i32 = ir.IntType(32)
i64 = ir.IntType(64)
ptr = ir.PointerType()
void = ir.VoidType()



class BFloatType(ir.types._BaseFloatType):
    """LLVM's `bfloat`, which llvmlite lacks; constants print as `0xR` + their 16 bits."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value) -> str:
        from gpunb.foundation.lowprecision import bfloat16_bits

        return f"0xR{bfloat16_bits(value):04X}"


BFloatType._create_instance()
bfloat = BFloatType()
_FLOATS = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def value_type(ty: t.Type) -> ir.Type:
    """The LLVM type of a value of `ty` held in a register."""
    if isinstance(ty, t.Boolean):
        return i1
    if isinstance(ty, t.Integer):
        return ir.IntType(ty.bitwidth)
    if isinstance(ty, t.DateTime):  # a count of units (NaT the least int64)
        return i64
    if isinstance(ty, t.CharSeq):  # numpy's S / U strings: bytes or UCS-4 code points
        return ir.ArrayType(i8 if ty.kind == "S" else ir.IntType(32), ty.count)
    if isinstance(ty, t.Float):
        return _FLOATS[ty.bitwidth]
    if isinstance(ty, t.BFloat16):
        return bfloat
    if isinstance(ty, t.FP8):
        return i8
    if isinstance(ty, t.Complex):
        comp = _FLOATS[ty.bitwidth // 2]
        return ir.LiteralStructType([comp, comp])
    if isinstance(ty, t.Array):
        return ir.LiteralStructType([ptr, ir.ArrayType(i64, ty.ndim), ir.ArrayType(i64, ty.ndim)])
    if isinstance(ty, t.Tuple):
        return ir.LiteralStructType([value_type(x) for x in ty.items])
    if isinstance(ty, (t.NoneType, t.Group)):
        return ir.LiteralStructType([])
    if isinstance(ty, t.Optional):  # {is not None, the value (undefined when None)}
        return ir.LiteralStructType([i1, value_type(ty.type)])
    if isinstance(ty, (t.Record, Pointer, TensorMap, Fragment)):  # a fragment: its storage
        return ptr
    if isinstance(ty, enum_types.EnumMember):
        return i64
    raise TypeError(f"{ty} has no LLVM representation")


def memory_type(ty: t.Type) -> ir.Type:
    """The LLVM type of an array element of `ty` in memory."""
    if isinstance(ty, t.Boolean):
        return i8
    if isinstance(ty, t.Record):
        return ir.ArrayType(i8, ty.size)
    return value_type(ty)


class TensorMapSlot(ir.PointerType):
    """The parameter of a TMA tensor map (a `ptr`): the CUDA target makes it a byval
    __grid_constant__ parameter of 128 bytes, the CPU target receives a pointer to them."""

    def __init__(self):
        super().__init__()
        self.pointee = ir.ArrayType(i8, 128)  # what `byval(...)` copies


def slot_type(slot: str) -> ir.Type:
    if slot == "ptr":
        return ptr
    if slot == "tmap":
        return TensorMapSlot()
    if slot.startswith("i"):
        return ir.IntType(int(slot[1:]))
    if slot == "bf16":
        return bfloat
    return _FLOATS[int(slot[1:])]
