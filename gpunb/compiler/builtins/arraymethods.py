"""Array methods in kernels that make views: `a.reshape(shape)` / `a.reshape(d0, d1, ...)`, and
`a.view(dtype)` (the same bytes read as another type, numba's array.view).

numba reshapes contiguous arrays only (C or F order; the view keeps the order), with one extent
of -1 computed from the others; a shape whose size differs from the array's is numba's
ValueError at run time ("total size of new array must be unchanged"), raised as kernels raise.
The shape may be a runtime value (an argument), its length must be known when compiling.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t

RESHAPE_MESSAGE = "total size of new array must be unchanged"


class Reshape(Builtin):
    name = "array.reshape"

    def type_call(self, inf, node, argtypes, kwtypes):
        arr = inf.types[node.func.value]
        if kwtypes:
            raise inf.error(node, "a.reshape() takes the shape only (no order=) in GPU code")
        extents = self.extent_types(argtypes)
        if extents is None:
            raise inf.error(node, "a.reshape() takes a shape: integers, or one tuple of them",
                            "e.g. a.reshape(4, 6) or a.reshape((4, 6)) or a.reshape(-1)")
        if arr.layout not in ("C", "F"):
            raise inf.error(node, f"a.reshape() needs a contiguous array, got {arr}",
                            "numba reshapes C- or F-ordered arrays only; copy the elements "
                            "into a contiguous array first")
        return t.Array(arr.dtype, len(extents), arr.layout, arr.readonly, arr.aligned)

    @staticmethod
    def extent_types(argtypes) -> list | None:
        if len(argtypes) == 1 and isinstance(argtypes[0], t.Tuple):
            argtypes = list(argtypes[0].items)
        if not all(isinstance(a, t.Integer) for a in argtypes):
            return None
        return list(argtypes)

    def lower_call(self, low, node, call):
        b = low.builder
        arr_t, result = low.type_of(node.func.value), call.result
        value = low.expr(node.func.value)
        data, shape, _ = arrays.parts(b, value, arr_t.ndim)
        extents = self.extents(low, node, call)
        size = ir.Constant(dm.i64, 1)
        for extent in shape:
            size = b.mul(size, extent)
        known, unknown = ir.Constant(dm.i64, 1), ir.Constant(dm.i64, 0)
        minus_one = ir.Constant(dm.i64, -1)
        for extent in extents:
            is_unknown = b.icmp_signed("==", extent, minus_one)
            unknown = b.add(unknown, b.zext(is_unknown, dm.i64))
            known = b.mul(known, b.select(is_unknown, ir.Constant(dm.i64, 1), extent))
        # the -1 extent: size // known (0 when known is 0, and then the check below fails)
        safe = b.select(b.icmp_signed("==", known, ir.Constant(dm.i64, 0)),
                        ir.Constant(dm.i64, 1), known)
        filled = b.sdiv(size, safe)
        extents = [b.select(b.icmp_signed("==", e, minus_one), filled, e) for e in extents]
        total = ir.Constant(dm.i64, 1)
        bad = b.icmp_signed(">", unknown, ir.Constant(dm.i64, 1))
        for extent in extents:
            total = b.mul(total, extent)
            bad = b.or_(bad, b.icmp_signed("<", extent, ir.Constant(dm.i64, 0)))
        bad = b.or_(bad, b.icmp_signed("!=", total, size))
        fail, ok = low.new_block("reshape.bad"), low.new_block("reshape.ok")
        b.cbranch(bad, fail, ok)
        b.position_at_end(fail)
        low.raise_exception(node, "ValueError", RESHAPE_MESSAGE)
        b.position_at_end(ok)
        strides = contiguous_strides(b, extents, t.sizeof(arr_t.dtype), result.layout)
        return arrays.make_array(b, result, data, extents, strides)

    def extents(self, low, node, call) -> list:
        """The new extents as i64 values, from one tuple argument or several integers."""
        b = low.builder
        if len(node.args) == 1 and isinstance(call.argtypes[0], t.Tuple):
            shape_t = call.argtypes[0]
            value = low.expr(node.args[0])
            return [ops.cast(b, b.extract_value(value, k), item, t.int64)
                    for k, item in enumerate(shape_t.items)]
        return [ops.cast(b, low.expr(n), at, t.int64)
                for n, at in zip(node.args, call.argtypes, strict=True)]


def contiguous_strides(b: ir.IRBuilder, extents: list, itemsize: int, layout: str) -> list:
    """Byte strides of a C- (or F-) ordered array of these runtime extents."""
    strides = [None] * len(extents)
    step = ir.Constant(dm.i64, itemsize)
    order = range(len(extents) - 1, -1, -1) if layout == "C" else range(len(extents))
    for k in order:
        strides[k] = step
        step = b.mul(step, extents[k])
    return strides


VIEW_MESSAGE = "new type not compatible with array"


class View(Builtin):
    """`a.view(dtype)`: the same memory as another dtype. A different item size rescales the
    last extent (numba: C-contiguous arrays, or 1-d ones); one that does not divide it is
    numba's ValueError, raised as kernels raise."""

    name = "array.view"

    def type_call(self, inf, node, argtypes, kwtypes):
        from gpunb.compiler.values import dtype_to_type

        arr = inf.types[node.func.value]
        if kwtypes or len(node.args) != 1:
            raise inf.error(node, "a.view() takes one dtype in GPU code", "e.g. a.view(np.int32)")
        new = dtype_to_type(inf.const(node.args[0], "the dtype of a.view()"))
        if new is None or isinstance(new, (t.Tuple, t.Record)):
            raise inf.error(node.args[0], "a.view() needs a number dtype, e.g. np.int32")
        same_size = t.sizeof(new) == t.sizeof(arr.dtype)
        if not same_size and not (arr.layout == "C" or arr.ndim == 1 and arr.layout == "F"):
            raise inf.error(node, f"a.view() to another item size needs a C-contiguous array, "
                            f"got {arr}", "view a contiguous array (or one of its row slices)")
        aligned = arr.aligned and t.sizeof(new) <= t.sizeof(arr.dtype)
        return t.Array(new, arr.ndim, arr.layout, arr.readonly, aligned)

    def lower_call(self, low, node, call):
        b = low.builder
        arr_t, result = low.type_of(node.func.value), call.result
        data, shape, strides = arrays.parts(b, low.expr(node.func.value), arr_t.ndim)
        old, new = t.sizeof(arr_t.dtype), t.sizeof(result.dtype)
        if old == new:
            return arrays.make_array(b, result, data, list(shape), list(strides))
        last = b.mul(shape[-1], ir.Constant(dm.i64, old))
        bad = b.icmp_signed("!=", b.srem(last, ir.Constant(dm.i64, new)), ir.Constant(dm.i64, 0))
        fail, ok = low.new_block("view.bad"), low.new_block("view.ok")
        b.cbranch(bad, fail, ok)
        b.position_at_end(fail)
        low.raise_exception(node, "ValueError", VIEW_MESSAGE)
        b.position_at_end(ok)
        shape = list(shape[:-1]) + [b.sdiv(last, ir.Constant(dm.i64, new))]
        strides = list(strides[:-1]) + [ir.Constant(dm.i64, new)]
        return arrays.make_array(b, result, data, shape, strides)


METHODS = {"reshape": Reshape(), "view": View()}
