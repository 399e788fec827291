"""nvcuda::wmma in the kernel language (`from gpunb.cuda import wmma`): fragments, fill, load,
mma, store and element access (`frag.num_elements`, `frag.x[i]`), typed here and lowered
through the target's tensor-core object (backends/*/tensorcore.py).

A fragment's value is the address of its per-thread storage (num_elements elements), so the
operations update it in place as the C++ reference arguments do. The tile of a load or store is
a 2-D array view; its leading dimension comes from the view's strides (tensorcore_tiles).
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins import tensorcore_layouts as tl
from gpunb.compiler.builtins.tensorcore_tiles import (
    check_tile_statically,
    memory_space,
    tile_parts,
)
from gpunb.compiler.kernel_api import intrinsic_name
from gpunb.compiler.typed import Feature, Typed
from gpunb.compiler.values import dtype_to_type
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import Fragment

USES = {"cuda.wmma.matrix_a": "matrix_a", "cuda.wmma.matrix_b": "matrix_b",
        "cuda.wmma.accumulator": "accumulator"}
LAYOUTS = {"cuda.wmma.row_major": "row_major", "cuda.wmma.col_major": "col_major"}
MEM_LAYOUTS = {"cuda.wmma.mem_row_major": "row_major", "cuda.wmma.mem_col_major": "col_major"}
ROLES = {"matrix_a": "a", "matrix_b": "b", "accumulator": "c"}
_MULTIPLICANDS = {"f16", "bf16", "tf32", "s8", "u8"}
_ACCUMULATORS = {"f32", "f16", "s32"}
_TYPE_HINT = ("float16, bfloat16, int8, uint8 or wmma.precision.tf32 for matrix_a/matrix_b; "
              "float32, float16 or int32 for the accumulator")


def element_type(frag: Fragment) -> t.Type:
    return tl.KIND_TYPES[frag.kind]


def memory_dtype(frag: Fragment) -> t.Type:
    """The element type of the arrays a fragment loads from and stores to."""
    return element_type(frag)


def _fragment_kind(inf, node, use: str, dtype_value) -> str:
    if intrinsic_name(dtype_value) == "cuda.wmma.precision.tf32":
        kind = "tf32"
    else:
        ty = dtype_to_type(dtype_value)
        kind = tl.kind_of_type(ty) if ty is not None else None
    allowed = _ACCUMULATORS if use == "accumulator" else _MULTIPLICANDS
    if kind not in allowed:
        raise inf.error(node, f"wmma.fragment: {dtype_value!r} is not an element type of a "
                        f"{use} fragment", f"use {_TYPE_HINT}")
    return kind


class FragmentCtor(Builtin):
    """wmma.fragment(use, m, n, k, dtype[, layout]): uninitialised per-thread storage."""

    name = "wmma.fragment"

    def type_call(self, inf, node, argtypes, kwtypes):
        args = list(node.args) + [kw.value for kw in node.keywords if kw.arg == "layout"]
        if len(args) not in (5, 6) or any(kw.arg != "layout" for kw in node.keywords):
            raise inf.error(node, "wmma.fragment(use, m, n, k, dtype[, layout]) takes 5 or 6 "
                            "arguments", "e.g. wmma.fragment(wmma.matrix_a, 16, 16, 16, "
                            "float16, wmma.row_major)")
        use = USES.get(intrinsic_name(inf.const(args[0], "the fragment's use")))
        if use is None:
            raise inf.error(args[0], "the first argument of wmma.fragment is its use",
                            "wmma.matrix_a, wmma.matrix_b or wmma.accumulator")
        m, n, k = (inf.const(a, "a fragment dimension") for a in args[1:4])
        kind = _fragment_kind(inf, args[4], use, inf.const(args[4], "the fragment's dtype"))
        shape = f"m{m}n{n}k{k}"
        supported = tl.WMMA.get(shape)
        if supported is None or (use != "accumulator" and kind not in supported) or (
                use == "accumulator" and not any(kind in s.accumulators
                                                 for s in supported.values())):
            raise inf.error(node, f"wmma.fragment: {shape} with {tl.KIND_NAMES[kind]} is not a "
                            "WMMA shape", f"supported: {tl.describe_wmma()}")
        layout = None
        if len(args) == 6:
            layout = LAYOUTS.get(intrinsic_name(inf.const(args[5], "the fragment's layout")))
            if layout is None:
                raise inf.error(args[5], "the layout of a fragment is wmma.row_major or "
                                "wmma.col_major")
        if use != "accumulator" and layout is None:
            raise inf.error(node, f"a {use} fragment needs a layout",
                            "add wmma.row_major or wmma.col_major as the sixth argument")
        if use == "accumulator" and layout is not None:
            raise inf.error(args[5], "an accumulator fragment has no layout",
                            "give the memory layout to load_matrix_sync / store_matrix_sync "
                            "instead (wmma.mem_row_major or wmma.mem_col_major)")
        count = tl.wmma_num_elements(ROLES[use], shape, kind)
        return Fragment(use, m, n, k, kind, layout, count)

    def lower_call(self, low, node, call):
        frag = call.result
        return low.alloca(ir.ArrayType(dm.memory_type(element_type(frag)), frag.num_elements),
                          "wmma.fragment")


def _element_pointer(low, frag: Fragment, storage, index: int):
    return low.builder.gep(storage, [ir.Constant(dm.i32, 0), ir.Constant(dm.i32, index)],
                           source_etype=ir.ArrayType(dm.memory_type(element_type(frag)),
                                                     frag.num_elements))


def read_elements(low, frag: Fragment, storage) -> list:
    ty = element_type(frag)
    return [arrays.load_element(low.builder, ty, _element_pointer(low, frag, storage, i))
            for i in range(frag.num_elements)]


def write_elements(low, frag: Fragment, storage, values: list) -> None:
    ty = element_type(frag)
    for i, value in enumerate(values):
        arrays.store_element(low.builder, ty, _element_pointer(low, frag, storage, i), value)


def _fragment_arg(inf, node, argtype, what: str, use: str | None = None) -> Fragment:
    if not isinstance(argtype, Fragment):
        raise inf.error(node, f"{what} needs a wmma.fragment here, got {argtype}")
    if use is not None and argtype.use != use:
        raise inf.error(node, f"{what} needs a {use} fragment here, got a {argtype.use} one")
    return argtype


class FillFragment(Builtin):
    name = "wmma.fill_fragment"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 2 or kwtypes:
            raise inf.error(node, "wmma.fill_fragment(frag, value) takes 2 arguments")
        _fragment_arg(inf, node.args[0], argtypes[0], self.name)
        if not t.is_number(argtypes[1]) and not isinstance(argtypes[1], t.BFloat16):
            raise inf.error(node.args[1], f"wmma.fill_fragment fills with a number, got "
                            f"{argtypes[1]}")
        return t.none

    def lower_call(self, low, node, call):
        frag = call.argtypes[0]
        storage = low.expr(node.args[0])
        value = ops.cast(low.builder, low.expr(node.args[1]), call.argtypes[1],
                         element_type(frag))
        write_elements(low, frag, storage, [value] * frag.num_elements)


def _memory_layout(inf, node, what: str) -> str:
    layout = MEM_LAYOUTS.get(intrinsic_name(inf.const(node, "the memory layout")))
    if layout is None:
        raise inf.error(node, f"{what}: the memory layout is wmma.mem_row_major or "
                        "wmma.mem_col_major")
    return layout


def _tile_dims(frag: Fragment) -> tuple[int, int]:
    return tl.operand_dims(ROLES[frag.use], frag.m, frag.n, frag.k)


class LoadMatrix(Builtin):
    """wmma.load_matrix_sync(frag, tile[, layout]): the layout only (and always) for an
    accumulator; a multiplicand's comes from its fragment."""

    name = "wmma.load_matrix_sync"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) not in (2, 3) or kwtypes:
            raise inf.error(node, "wmma.load_matrix_sync(frag, tile[, layout]) takes 2 or 3 "
                            "arguments")
        frag = _fragment_arg(inf, node.args[0], argtypes[0], self.name)
        if frag.use == "accumulator":
            if len(argtypes) != 3:
                raise inf.error(node, "loading an accumulator needs the memory layout",
                                "add wmma.mem_row_major or wmma.mem_col_major")
            layout = _memory_layout(inf, node.args[2], self.name)
        else:
            if len(argtypes) == 3:
                raise inf.error(node.args[2], f"a {frag.use} fragment loads in its own layout "
                                f"({frag.layout})", "drop the third argument")
            layout = frag.layout
        rows, cols = _tile_dims(frag)
        check_tile_statically(inf, self.name, node.args[1], argtypes[1], memory_dtype(frag),
                              rows, cols, layout == "row_major")
        inf.require(Feature.WARP_BARRIER)
        return Typed(t.none, layout)

    def lower_call(self, low, node, call):
        frag, tile_type = call.argtypes[0], call.argtypes[1]
        storage = low.expr(node.args[0])
        rows, cols = _tile_dims(frag)
        row_major = call.data == "row_major"
        base, ldm = tile_parts(low, node, low.expr(node.args[1]), tile_type, rows, cols,
                               row_major, self.name)
        space = memory_space(low, node.args[1])
        values = low.target.tensor_cores().wmma_load(low, node, frag, base, ldm, row_major,
                                                     space)
        write_elements(low, frag, storage, values)


class StoreMatrix(Builtin):
    """wmma.store_matrix_sync(tile, frag, layout): accumulators only, layout required."""

    name = "wmma.store_matrix_sync"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 3 or kwtypes:
            raise inf.error(node, "wmma.store_matrix_sync(tile, frag, layout) takes 3 "
                            "arguments", "the layout is wmma.mem_row_major or "
                            "wmma.mem_col_major")
        frag = _fragment_arg(inf, node.args[1], argtypes[1], self.name, "accumulator")
        layout = _memory_layout(inf, node.args[2], self.name)
        rows, cols = _tile_dims(frag)
        check_tile_statically(inf, self.name, node.args[0], argtypes[0], memory_dtype(frag),
                              rows, cols, layout == "row_major")
        if argtypes[0].readonly:
            raise inf.error(node.args[0], f"{self.name}: the tile is a read-only array")
        inf.require(Feature.WARP_BARRIER)
        return Typed(t.none, layout)

    def lower_call(self, low, node, call):
        tile_type, frag = call.argtypes[0], call.argtypes[1]
        rows, cols = _tile_dims(frag)
        row_major = call.data == "row_major"
        base, ldm = tile_parts(low, node, low.expr(node.args[0]), tile_type, rows, cols,
                               row_major, self.name)
        values = read_elements(low, frag, low.expr(node.args[1]))
        space = memory_space(low, node.args[0])
        low.target.tensor_cores().wmma_store(low, node, frag, base, ldm, row_major, values,
                                             space)


class MmaSync(Builtin):
    """wmma.mma_sync(d, a, b, c): d = a x b + c over the warp."""

    name = "wmma.mma_sync"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 4 or kwtypes:
            raise inf.error(node, "wmma.mma_sync(d, a, b, c) takes 4 fragments")
        uses = ("accumulator", "matrix_a", "matrix_b", "accumulator")
        frags = [_fragment_arg(inf, n, a, self.name, u)
                 for n, a, u in zip(node.args, argtypes, uses, strict=True)]
        d, a, b, c = frags
        shapes = {(f.m, f.n, f.k) for f in frags}
        if len(shapes) > 1:
            listed = ", ".join(f"{n.id if hasattr(n, 'id') else 'fragment'}: "
                               f"m{f.m}n{f.n}k{f.k}" for n, f in zip(node.args, frags,
                                                                    strict=True))
            raise inf.error(node, f"wmma.mma_sync: the fragments have different shapes "
                            f"({listed})", "declare d, a, b and c with one m, n, k")
        if a.kind != b.kind:
            raise inf.error(node, f"wmma.mma_sync: matrix_a holds {tl.KIND_NAMES[a.kind]} and "
                            f"matrix_b {tl.KIND_NAMES[b.kind]}", "give A and B one element type")
        supported = tl.WMMA[f"m{a.m}n{a.n}k{a.k}"][a.kind]
        for f, name in ((c, "c"), (d, "d")):
            if f.kind not in supported.accumulators:
                raise inf.error(node, f"wmma.mma_sync: {tl.KIND_NAMES[a.kind]} products "
                                f"accumulate into "
                                f"{' or '.join(tl.KIND_NAMES[k] for k in supported.accumulators)}"
                                f", not {tl.KIND_NAMES[f.kind]} ({name})")
        inf.require(Feature.WARP_BARRIER)
        op = tl.MmaOp("wmma", f"m{a.m}n{a.n}k{a.k}", a.kind, b.kind, c.kind, d.kind,
                      a.layout[:3], b.layout[:3])
        return Typed(t.none, op)

    def lower_call(self, low, node, call):
        op = call.data
        d, a, b, c = call.argtypes
        storages = [low.expr(n) for n in node.args]
        values = [read_elements(low, f, s) for f, s in zip((a, b, c), storages[1:], strict=True)]
        out = low.target.tensor_cores().mma(low, node, op, *values)
        write_elements(low, d, storages[0], out)


class FloatToTf32(Builtin):
    """wmma.float_to_tf32(x) (CUDA's wmma::__float_to_tf32, cvt.rna.tf32.f32): x rounded to
    tf32's 10 mantissa bits, ties away from zero, kept in a float32."""

    name = "wmma.float_to_tf32"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or kwtypes or not t.is_number(argtypes[0]):
            raise inf.error(node, "wmma.float_to_tf32(x) takes one number")
        return t.float32

    def lower_call(self, low, node, call):
        b = low.builder
        x = ops.cast(b, low.expr(node.args[0]), call.argtypes[0], t.float32)
        return round_to_tf32(b, x)


def round_to_tf32(b: ir.IRBuilder, x):
    """cvt.rna.tf32.f32: add half an ulp of tf32 to the magnitude, drop the low 13 bits; NaN
    and infinities unchanged."""
    bits = b.bitcast(x, dm.i32)
    rounded = b.and_(b.add(bits, ir.Constant(dm.i32, 0x1000)), ir.Constant(dm.i32, ~0x1FFF))
    special = b.icmp_unsigned("==", b.and_(bits, ir.Constant(dm.i32, 0x7F800000)),
                              ir.Constant(dm.i32, 0x7F800000))
    return b.bitcast(b.select(special, bits, rounded), ir.FloatType())


# ---- fragment attributes: frag.num_elements, frag.x ------------------------------------------

def fragment_attribute_type(inf, node, frag: Fragment, attr: str) -> t.Type:
    if attr == "num_elements":
        inf.constants[node] = frag.num_elements
        return t.int64
    if attr == "x":
        return t.Array(element_type(frag), 1, "C")
    raise inf.error(node, f"{frag} has no attribute '{attr}'",
                    "fragments have num_elements and x (x[i] is this lane's i-th element)")


def lower_fragment_attribute(low, node, frag: Fragment, storage, attr: str):
    if attr == "num_elements":
        return ir.Constant(dm.i64, frag.num_elements)
    itemsize = t.sizeof(element_type(frag))
    return arrays.make_array(low.builder, t.Array(element_type(frag), 1, "C"), storage,
                             [ir.Constant(dm.i64, frag.num_elements)],
                             [ir.Constant(dm.i64, itemsize)])


BUILTINS = {
    "cuda.wmma.fragment": FragmentCtor(),
    "cuda.wmma.fill_fragment": FillFragment(),
    "cuda.wmma.load_matrix_sync": LoadMatrix(),
    "cuda.wmma.store_matrix_sync": StoreMatrix(),
    "cuda.wmma.mma_sync": MmaSync(),
    "cuda.wmma.float_to_tf32": FloatToTf32(),
}
