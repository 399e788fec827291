"""Lowering of subscripts from their IndexPlan: elements, views, slice stores, record fields."""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.typed import IntIndex
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer


class IndexLowering:
    def expr_Subscript(self, node: ast.Subscript):
        base_t = self.type_of(node.value)
        b = self.builder
        if isinstance(base_t, t.Tuple):
            star = getattr(node, "star_of", None)  # an item of `*t` in a call
            base = self.expr(node.value) if star is None else self.star_tuple(star)
            index = self.typed.constants.get(node.slice)
            if isinstance(index, slice):  # t[1:]: a new tuple of the items picked
                return self.build_tuple([b.extract_value(base, k) for k in
                                         range(len(base_t.items))[index]], self.type_of(node))
            if isinstance(index, int):
                return b.extract_value(base, index % len(base_t.items))
            return self.dynamic_tuple_index(node, base, base_t)
        result = self.type_of(node)
        if isinstance(base_t, t.Record):
            pointer, dtype, align = self.element_address(node)
            return arrays.load_element(b, dtype, pointer, align)
        if isinstance(result, t.Array):
            base = self.expr(node.value)
            return arrays.view(b, base_t, base, self.index_parts(node, base_t, base), result)
        pointer, dtype, align = self.element_address(node)
        self.target.record_access(self, node, pointer, "read")
        return arrays.load_element(b, dtype, pointer, align)

    def dynamic_tuple_index(self, node, base, base_t: t.Tuple):
        b = self.builder
        item = dm.value_type(base_t.items[0])
        n = len(base_t.items)
        storage = self.alloca(ir.ArrayType(item, n), "tuple.items")
        for k in range(n):
            b.store(b.extract_value(base, k),
                    b.gep(storage, [ir.Constant(dm.i32, 0), ir.Constant(dm.i32, k)]))
        index = arrays.normalise_index(b, self.expr(node.slice), self.type_of(node.slice),
                                       ir.Constant(dm.i64, n))
        if self.mb.options.get("debug"):  # numba's Python error model: Python's IndexError
            fail, ok = self.new_block("tuple.index.fail"), self.new_block("tuple.index.ok")
            b.cbranch(b.icmp_unsigned("<", index, ir.Constant(index.type, n)), ok, fail)
            b.position_at_end(fail)
            self.raise_exception(node, "IndexError", "tuple index out of range")
            b.position_at_end(ok)
        else:
            self.target.check_bounds(self, node, base_t, 0, index, ir.Constant(index.type, n),
                                     arrays.signed_index(self.type_of(node.slice)))
        return b.load(b.gep(storage, [ir.Constant(dm.i32, 0), index]))

    def index_parts(self, node, base_t: t.Array, base, shape=None) -> list:
        """("int", i) and ("slice", lo, hi, step) per indexed axis, from the IndexPlan; each
        integer index normalised (negative from the end) and offered to the bounds check.
        `shape`: the array's LazyParts extents, when the caller reads them too."""
        b = self.builder
        shape = arrays.LazyParts(b, base, 1) if shape is None else shape
        out, values = [], {}
        for axis, part in enumerate(self.typed.indexes[node].parts):
            if isinstance(part, IntIndex):
                value = values.get(part.node)
                if value is None:
                    value = values[part.node] = self.expr(part.node)
                if part.position == -1:  # a 0-d integer array: the value it holds
                    value = arrays.load_element(b, part.type, b.extract_value(value, 0), None)
                elif part.position is not None:
                    value = b.extract_value(value, part.position)
                idx = arrays.normalise_index(b, value, part.type,
                                             lambda axis=axis: shape[axis])
                self.target.check_bounds(self, node, base_t, axis, idx,
                                         lambda axis=axis: shape[axis],
                                         arrays.signed_index(part.type))
                out.append(("int", idx))
                continue
            bounds = [None if s is None else
                      ops.cast(b, self.expr(s), self.type_of(s), t.int64)
                      for s in (part.lower, part.upper, part.step)]
            out.append(("slice", *bounds))
        return out

    def element_address(self, node: ast.Subscript):
        """(pointer, dtype, alignment or None) of an element access arr[i, j, ...] (also
        arr[i][j]) or a record field rec['x']."""
        base_t = self.type_of(node.value)
        base = self.expr(node.value)
        b = self.builder
        if isinstance(base_t, t.Record):
            key = node.slice.value  # a field name, or its position (rec[0])
            name = base_t.fields[key][0] if isinstance(key, int) else key
            return arrays.field_address(b, base_t, base, name)
        if isinstance(base_t, Pointer):  # p[i]: i elements on, unchecked
            index = ops.cast(b, self.expr(node.slice), self.type_of(node.slice), t.int64)
            return (b.gep(base, [index], source_etype=dm.memory_type(base_t.dtype)),
                    base_t.dtype, None)
        shape = arrays.LazyParts(b, base, 1)
        indices = [p[1] for p in self.index_parts(node, base_t, base, shape)]
        data = b.extract_value(base, 0)
        strides = arrays.LazyParts(b, base, 2)
        return (arrays.element_pointer(b, base_t, data, shape, strides, indices), base_t.dtype,
                arrays.access_alignment(base_t))

    # ---- slice stores --------------------------------------------------------------------------

    def store_slice(self, target: ast.Subscript, value, vt: t.Type) -> None:
        """a[lo:hi] = x: a loop nest over the view. A number fills it; an array is read at the
        same trailing indices (index 0 along its extents of 1): numpy's broadcasting. Shapes
        that do not broadcast store nothing (numba raises ValueError there, which ends the
        thread unless debugging): the source is never read past its end. A source overlapping
        the target from below is copied backwards (memmove's rule), as numpy's result needs."""
        b = self.builder
        base_t, dst_t = self.type_of(target.value), self.type_of(target)
        if isinstance(base_t, t.Record):  # rec.v = x: the field read as a view of its bytes
            dst = self.expr(target)
        else:
            base = self.expr(target.value)
            dst = arrays.view(b, base_t, base, self.index_parts(target, base_t, base), dst_t)
        d_data, d_shape, d_strides = arrays.parts(b, dst, dst_t.ndim)

        def store(indices, item):
            arrays.store_element(b, dst_t.dtype, arrays.element_pointer(
                b, dst_t, d_data, d_shape, d_strides, indices), item,
                arrays.access_alignment(dst_t))

        if not isinstance(vt, t.Array):
            item = ops.cast(b, value, vt, dst_t.dtype)
            self.loop_nest(d_shape, lambda indices: store(indices, item))
            return
        s_data, s_shape, s_strides = arrays.parts(b, value, vt.ndim)
        zero, one, lead = ir.Constant(dm.i64, 0), ir.Constant(dm.i64, 1), dst_t.ndim - vt.ndim
        fits = ir.Constant(dm.i1, 1)
        for k in range(vt.ndim):  # each source extent equals the target's or is 1
            same = b.icmp_signed("==", s_shape[k], d_shape[lead + k])
            fits = b.and_(fits, b.or_(same, b.icmp_signed("==", s_shape[k], one)))
        copy_bb, done_bb = self.new_block("slice.copy"), self.new_block("slice.done")
        b.cbranch(fits, copy_bb, done_bb)
        b.position_at_end(copy_bb)
        d_lo, d_hi = _byte_range(b, d_data, d_shape, d_strides, t.sizeof(dst_t.dtype))
        s_lo, s_hi = _byte_range(b, s_data, s_shape, s_strides, t.sizeof(vt.dtype))
        overlap = b.and_(b.icmp_unsigned("<", d_lo, s_hi), b.icmp_unsigned("<", s_lo, d_hi))
        reverse = b.and_(overlap, b.icmp_unsigned(">", b.ptrtoint(d_data, dm.i64),
                                                  b.ptrtoint(s_data, dm.i64)))

        def copy(indices):
            indices = [b.select(reverse, b.sub(b.sub(d_shape[k], one), i), i)
                       for k, i in enumerate(indices)]
            src_idx = [b.select(b.icmp_signed("==", s_shape[k], one), zero, i)
                       for k, i in enumerate(indices[lead:])]
            item = arrays.load_element(b, vt.dtype, arrays.element_pointer(
                b, vt, s_data, s_shape, s_strides, src_idx), arrays.access_alignment(vt))
            store(indices, ops.cast(b, item, vt.dtype, dst_t.dtype))

        self.loop_nest(d_shape, copy)
        b.branch(done_bb)
        b.position_at_end(done_bb)

    def loop_nest(self, extents: list, body, indices: tuple = ()) -> None:
        """for i0 in range(e0): for i1 in range(e1): ... body([i0, i1, ...]) as IR."""
        if len(indices) == len(extents):
            body(list(indices))
            return
        self.loop_range(extents[len(indices)],
                        lambda i: self.loop_nest(extents, body, indices + (i,)), "nest")


def _byte_range(b: ir.IRBuilder, data, shape: list, strides: list, itemsize: int) -> tuple:
    """[lo, hi) of the bytes an array view can touch, as i64 addresses."""
    zero = ir.Constant(dm.i64, 0)
    lo = hi = b.ptrtoint(data, dm.i64)
    for n, stride in zip(shape, strides, strict=True):
        span = b.mul(b.sub(n, ir.Constant(dm.i64, 1)), stride)
        negative = b.icmp_signed("<", span, zero)
        lo = b.add(lo, b.select(negative, span, zero))
        hi = b.add(hi, b.select(negative, zero, span))
    return lo, b.add(hi, ir.Constant(dm.i64, itemsize))
