"""PTX-level tensor-core instructions on per-lane register values (sm_75/sm_80 and later):

- `d = cuda.mma_sync(shape, a, b, c, satfinite=False)`: mma.sync.aligned.{shape}.row.col; a, b and
  c are tuples of this lane's elements in the PTX ISA's order (a0, a1, ...), their element types
  name the instruction's types (float16, bfloat16, float32 as tf32, int8/uint8,
  fp8_e4m3/fp8_e5m2); d is a tuple like c (float32, float16 or int32).
- `regs = cuda.ldmatrix(smem, idx, num=4, trans=False)`: ldmatrix.sync.aligned.m8n8.x{num}
  [.trans].shared.b16; this lane supplies the address of row idx (8 16-bit elements) and gets
  2 * num elements back.
- `cuda.stmatrix(smem, idx, values, trans=False)`: stmatrix (sm_90), the inverse.

Typing and the target-neutral part of lowering; the instructions themselves are lowered by the
target's tensor-core object (backends/*/tensorcore.py). Layouts: tensorcore_layouts.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins import tensorcore_layouts as tl
from gpunb.compiler.typed import Feature, Typed, VarKind
from gpunb.foundation import types as t

_MULTIPLICAND_HINT = ("A and B are tuples of float16, bfloat16, float32 (as tf32), int8/uint8 or "
                      "fp8_e4m3/fp8_e5m2 values")
_B16 = (t.float16, t.bfloat16, t.int16, t.uint16)


def _tuple_items(inf, node, ty, what: str) -> tuple:
    if not isinstance(ty, t.Tuple) or not ty.items:
        raise inf.error(node, f"{what} must be a tuple of this lane's elements, got {ty}")
    return ty.items


def _multiplicand_kind(inf, node, ty, what: str) -> str:
    items = _tuple_items(inf, node, ty, what)
    if len(set(items)) != 1:
        raise inf.error(node, f"{what} mixes element types ({ty})", _MULTIPLICAND_HINT)
    kind = tl.kind_of_type(items[0])
    kind = "tf32" if kind == "f32" else kind
    if kind not in ("f16", "bf16", "tf32", "s8", "u8", "e4m3", "e5m2"):
        raise inf.error(node, f"{what} holds {items[0]}, which mma_sync does not multiply",
                        _MULTIPLICAND_HINT)
    return kind


class MmaSyncPtx(Builtin):
    name = "cuda.mma_sync"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) != 4 or set(kwtypes) - {"satfinite"}:
            raise inf.error(node, "cuda.mma_sync(shape, a, b, c, satfinite=False) takes a shape "
                            "and three tuples", 'e.g. d = cuda.mma_sync("m16n8k16", a, b, c)')
        shape = inf.const(node.args[0], "the mma shape")
        if shape not in tl.MMA_SYNC:
            raise inf.error(node.args[0], f"{shape!r} is not an mma.sync shape gpunb supports",
                            f"supported: {tl.describe_mma_sync()}")
        a_kind = _multiplicand_kind(inf, node.args[1], argtypes[1], "A")
        b_kind = _multiplicand_kind(inf, node.args[2], argtypes[2], "B")
        supported = tl.MMA_SYNC[shape].get(a_kind)
        if supported is None or not tl.mixable(a_kind, b_kind):
            raise inf.error(node, f"mma.sync {shape} does not multiply {tl.KIND_NAMES[a_kind]} "
                            f"by {tl.KIND_NAMES[b_kind]}", f"supported: {tl.describe_mma_sync()}")
        c_kind = self.accumulator_kind(inf, node.args[3], argtypes[3], supported)
        satfinite = False
        for kw in node.keywords:
            satfinite = bool(inf.const(kw.value, "satfinite"))
        if satfinite and c_kind != "s32":
            raise inf.error(node, "satfinite applies to integer mma (int32 accumulators) only")
        op = tl.MmaOp("mma", shape, a_kind, b_kind, c_kind, c_kind, satfinite=satfinite)
        for role, arg in (("a", node.args[1]), ("b", node.args[2]), ("c", node.args[3])):
            want = op.count(role)
            if len(argtypes["abc".index(role) + 1].items) != want:
                kind = tl.KIND_NAMES[op.kind(role)]
                raise inf.error(arg, f"mma.sync {shape} takes {role.upper()} as {want} {kind} "
                                f"values per lane, got "
                                f"{len(argtypes['abc'.index(role) + 1].items)}",
                                "the lane layout is in the README's Tensor cores section "
                                "(gpunb.notebook.tensorcore_layout draws it)")
        inf.require(Feature.WARP_BARRIER)
        return Typed(t.Tuple((tl.KIND_TYPES[c_kind],) * op.count("c")), op)

    @staticmethod
    def accumulator_kind(inf, node, ty, supported: tl.Support) -> str:
        items = _tuple_items(inf, node, ty, "C")
        if not all(t.is_number(i) for i in items):
            raise inf.error(node, f"C must hold numbers, got {ty}")
        if "s32" in supported.accumulators:
            if not all(isinstance(i, (t.Integer, t.Boolean)) for i in items):
                raise inf.error(node, f"integer products accumulate into int32: C holds {ty}")
            return "s32"
        if "f16" in supported.accumulators and all(i == t.float16 for i in items):
            return "f16"
        if not all(isinstance(i, (t.Float, t.Integer)) for i in items):
            raise inf.error(node, f"C must hold float32 (or float16) values, got {ty}")
        return "f32"

    def lower_call(self, low, node, call):
        op = call.data
        b = low.builder
        values = []
        for role, arg, ty in zip("abc", node.args[1:], call.argtypes[1:], strict=True):
            tup = low.expr(arg)
            want = tl.KIND_TYPES[op.kind(role)]
            values.append([ops.cast(b, b.extract_value(tup, k), item, want)
                           for k, item in enumerate(ty.items)])
        out = low.target.tensor_cores().mma(low, node, op, *values)
        return low.build_tuple(out, call.result)


def _shared_only(inf, node, what: str) -> None:
    """A kernel's array parameter is global memory: ldmatrix/stmatrix reach shared memory only."""
    if isinstance(node, ast.Name) and inf.is_kernel:
        var = inf.env.get(node.id)
        if var is not None and var.kind is VarKind.PARAM:
            raise inf.error(node, f"{what} works on shared memory; '{node.id}' is an argument "
                            "of the kernel (global memory)",
                            "copy the tile into a cuda.shared.array first")


def _row_array(inf, node, argtypes, what: str) -> t.Array:
    arr = argtypes[0]
    if not isinstance(arr, t.Array) or arr.dtype not in _B16:
        raise inf.error(node.args[0], f"{what} moves 16-bit elements: it needs a shared array "
                        f"of float16, bfloat16, int16 or uint16, got {arr}")
    idx = argtypes[1]
    items = idx.items if isinstance(idx, t.Tuple) else (idx,)
    if len(items) != arr.ndim or not all(isinstance(i, (t.Integer, t.Boolean)) for i in items):
        raise inf.error(node.args[1], f"{what}: the index of the row's first element needs "
                        f"{arr.ndim} integer(s)")
    _shared_only(inf, node.args[0], what)
    return arr


def _flag(inf, node, name: str, position: int, default):
    for kw in node.keywords:
        if kw.arg == name:
            return inf.const(kw.value, name)
    if len(node.args) > position:
        return inf.const(node.args[position], name)
    return default


def row_address(low, node, arr_t: t.Array, arr, idx_node, idx_t):
    """The address of arr[idx] (no bounds check: lanes whose address the instruction does not
    use may pass any index) and whether the 8-element row there lies in the array, contiguous."""
    b = low.builder
    data, shape, strides = arrays.parts(b, arr, arr_t.ndim)
    idx = low.expr(idx_node)
    items = [(b.extract_value(idx, k), it) for k, it in enumerate(idx_t.items)] \
        if isinstance(idx_t, t.Tuple) else [(idx, idx_t)]
    indices = [arrays.normalise_index(b, v, ty, shape[k]) for k, (v, ty) in enumerate(items)]
    ok = ir.Constant(dm.i1, 1)
    for k, index in enumerate(indices):
        limit = b.sub(shape[k], ir.Constant(dm.i64, 7)) if k == len(indices) - 1 else shape[k]
        ok = b.and_(ok, b.icmp_unsigned("<", index, limit))
    ok = b.and_(ok, b.icmp_signed("==", strides[-1], ir.Constant(dm.i64, 2)))
    pointer = arrays.element_pointer(b, arr_t, data, shape, strides, indices)
    return pointer, ok


class LdMatrix(Builtin):
    name = "cuda.ldmatrix"

    def type_call(self, inf, node, argtypes, kwtypes):
        if not 2 <= len(node.args) <= 4 or set(kwtypes) - {"num", "trans"}:
            raise inf.error(node, "cuda.ldmatrix(smem, idx, num=4, trans=False)")
        arr = _row_array(inf, node, argtypes, self.name)
        num = _flag(inf, node, "num", 2, 4)
        if num not in tl.LDMATRIX_COUNTS:
            raise inf.error(node, f"ldmatrix loads 1, 2 or 4 8x8 matrices, not {num!r}")
        trans = bool(_flag(inf, node, "trans", 3, False))
        inf.require(Feature.WARP_BARRIER)
        return Typed(t.Tuple((arr.dtype,) * (2 * num)), (num, trans))

    def lower_call(self, low, node, call):
        num, trans = call.data
        arr_t = call.argtypes[0]
        pointer, ok = row_address(low, node, arr_t, low.expr(node.args[0]), node.args[1],
                                  call.argtypes[1])
        values = low.target.tensor_cores().ldmatrix(low, node, pointer, ok, num, trans,
                                                    arr_t.dtype)
        return low.build_tuple(values, call.result)


class StMatrix(Builtin):
    name = "cuda.stmatrix"

    def type_call(self, inf, node, argtypes, kwtypes):
        if not 3 <= len(node.args) <= 4 or set(kwtypes) - {"trans"}:
            raise inf.error(node, "cuda.stmatrix(smem, idx, values, trans=False)")
        arr = _row_array(inf, node, argtypes, self.name)
        if arr.readonly:
            raise inf.error(node.args[0], "cuda.stmatrix cannot write a read-only array")
        values = argtypes[2]
        if not isinstance(values, t.Tuple) or len(values.items) not in (2, 4, 8) or \
                not all(t.is_number(v) or isinstance(v, t.BFloat16) for v in values.items):
            raise inf.error(node.args[2], "stmatrix stores 2, 4 or 8 values per lane (x1, x2, "
                            f"x4), got {values}")
        trans = bool(_flag(inf, node, "trans", 3, False))
        inf.require(Feature.WARP_BARRIER)
        return Typed(t.none, (len(values.items) // 2, trans))

    def lower_call(self, low, node, call):
        num, trans = call.data
        arr_t = call.argtypes[0]
        b = low.builder
        pointer, ok = row_address(low, node, arr_t, low.expr(node.args[0]), node.args[1],
                                  call.argtypes[1])
        tup = low.expr(node.args[2])
        values = _stored_values(b, tup, call.argtypes[2].items, arr_t.dtype)
        low.target.tensor_cores().stmatrix(low, node, pointer, ok, num, trans, arr_t.dtype,
                                           values)


def _stored_values(b: ir.IRBuilder, tup, items: tuple, dtype: t.Type) -> list:
    """The stmatrix values converted to the array's dtype. A pair of float32 values bound for
    float16 or bfloat16 (an accumulator's epilogue) is rounded as one <2 x float> fptrunc: the
    same round-to-nearest-even as two scalar ones, which the NVPTX backend emits as one packed
    cvt.rn.f16x2.f32 (F2FP) where two scalar conversions were two F2F and a PRMT."""
    raw = [b.extract_value(tup, k) for k in range(len(items))]
    if not isinstance(dtype, (t.Float, t.BFloat16)) or t.sizeof(dtype) != 2 or \
            any(item != t.float32 for item in items):
        return [ops.cast(b, v, item, dtype) for v, item in zip(raw, items, strict=True)]
    pair_in = ir.VectorType(dm.value_type(t.float32), 2)
    pair_out = ir.VectorType(dm.value_type(dtype), 2)
    out = []
    for k in range(0, len(raw), 2):
        pair = b.insert_element(ir.Constant(pair_in, ir.Undefined), raw[k], _index(0))
        pair = b.fptrunc(b.insert_element(pair, raw[k + 1], _index(1)), pair_out)
        out += [b.extract_element(pair, _index(j)) for j in range(2)]
    return out


def _index(j: int):
    return ir.Constant(dm.i32, j)


BUILTINS = {
    "cuda.mma_sync": MmaSyncPtx(),
    "cuda.ldmatrix": LdMatrix(),
    "cuda.stmatrix": StMatrix(),
}
