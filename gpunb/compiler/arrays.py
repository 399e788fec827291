"""Lowering of array values: element addresses (C, F, strided), views, slices and attributes.

Negative indices wrap around as in numba; with bounds checking on (CPU target, debug) every index
is checked by the target, which reports kernel, array, index, thread and line.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t


def make_array(b: ir.IRBuilder, ty: t.Array, data, shape: list, strides: list):
    value = ir.Constant(dm.value_type(ty), ir.Undefined)
    value = b.insert_value(value, data, 0)
    for k, s in enumerate(shape):
        value = b.insert_value(value, s, [1, k])
    for k, s in enumerate(strides):
        value = b.insert_value(value, s, [2, k])
    return value


def parts(b: ir.IRBuilder, value, ndim: int):
    data = b.extract_value(value, 0)
    shape = [b.extract_value(value, [1, k]) for k in range(ndim)]
    strides = [b.extract_value(value, [2, k]) for k in range(ndim)]
    return data, shape, strides


class LazyParts:
    """An array value's extents (`shape[k]`) or strides (`strides[k]`), each extracted from
    the array's struct when first read, then kept: an element access of a C-contiguous array
    reads no stride and, with a constant index, no extent either, where extracting them all
    put up to five instructions per access into the IR for LLVM to parse and delete (a third
    of a GEMM epilogue's IR). Read only in code that the first read dominates (one
    subscript's lowering, whose index expressions rejoin before the next one starts)."""

    __slots__ = ("b", "value", "field", "found")

    def __init__(self, b: ir.IRBuilder, value, field: int):
        self.b, self.value, self.field, self.found = b, value, field, {}

    def __getitem__(self, k: int):
        part = self.found.get(k)
        if part is None:
            part = self.found[k] = self.b.extract_value(self.value, [self.field, k])
        return part


def contiguous_strides(shape_consts: list[int], itemsize: int, order: str = "C") -> list[int]:
    strides = [0] * len(shape_consts)
    acc = itemsize
    dims = range(len(shape_consts) - 1, -1, -1) if order == "C" else range(len(shape_consts))
    for k in dims:
        strides[k] = acc
        acc *= shape_consts[k]
    return strides


def signed_index(index_type: t.Type) -> bool:
    """Whether an index of this type was wrapped when negative (numba wraps signed indices
    only): a bounds check reports an unsigned one as it is, never as a wrapped negative."""
    return not isinstance(index_type, t.Integer) or index_type.signed


def normalise_index(b: ir.IRBuilder, index, index_type: t.Type, extent):
    """Widen to i64 and wrap negative indices (numba's wraparound). `extent` is the axis's
    extent, or a function giving it (called only when a wrap is emitted)."""
    if isinstance(index_type, t.Boolean):
        return b.zext(index, dm.i64)
    if index_type.bitwidth < 64:
        index = (b.sext if index_type.signed else b.zext)(index, dm.i64)
    elif index_type.bitwidth > 64:
        index = b.trunc(index, dm.i64)
    if not index_type.signed:
        return index
    # constants hold two's-complement bit patterns: -1 is 2**64 - 1, which is not >= 0 here
    if isinstance(index, ir.Constant) and isinstance(index.constant, int) and \
            0 <= index.constant < 1 << (index.type.width - 1):
        return index
    if callable(extent):
        extent = extent()
    negative = b.icmp_signed("<", index, ir.Constant(dm.i64, 0))
    return b.select(negative, b.add(index, extent), index)


def element_pointer(b: ir.IRBuilder, arr: t.Array, data, shape, strides, indices: list):
    """Address of arr[indices] where len(indices) == arr.ndim and indices are wrapped i64s."""
    elem = dm.memory_type(arr.dtype)
    if arr.ndim == 0:  # a[()]: the one element
        return data
    if arr.layout == "C":
        linear = indices[0]
        for k in range(1, arr.ndim):
            linear = b.add(b.mul(linear, shape[k]), indices[k])
        return b.gep(data, [linear], source_etype=elem)
    if arr.layout == "F":
        linear = indices[-1]
        for k in range(arr.ndim - 2, -1, -1):
            linear = b.add(b.mul(linear, shape[k]), indices[k])
        return b.gep(data, [linear], source_etype=elem)
    offset = ir.Constant(dm.i64, 0)
    for k in range(arr.ndim):
        offset = b.add(offset, b.mul(indices[k], strides[k]))
    return b.gep(data, [offset], source_etype=dm.i8)


def access_alignment(arr: t.Array) -> int | None:
    """The alignment to give an element access of `arr`: None (the type's own) unless the
    array is marked unaligned, then 1 (LLVM splits the access into what is safe)."""
    return None if arr.aligned else 1


def field_address(b: ir.IRBuilder, record: t.Record, base, name: str) -> tuple:
    """(pointer, field type, alignment or None) of field `name` of the record at `base`."""
    ftype, offset = record.field(name)
    pointer = b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)
    return pointer, ftype, record.field_alignment(ftype, offset)


def load_element(b: ir.IRBuilder, dtype: t.Type, pointer, align: int | None = None):
    if isinstance(dtype, t.Record):
        return pointer
    if isinstance(dtype, t.InlineArray):  # a view of the record's bytes
        strides = contiguous_strides(list(dtype.shape), t.sizeof(dtype.dtype))
        return make_array(b, dtype.view(), pointer, [ir.Constant(dm.i64, n) for n in dtype.shape],
                          [ir.Constant(dm.i64, s) for s in strides])
    value = b.load(pointer, typ=dm.memory_type(dtype), align=align)
    if isinstance(dtype, t.Boolean):
        return b.trunc(value, dm.i1)
    return value


def store_element(b: ir.IRBuilder, dtype: t.Type, pointer, value, align: int | None = None):
    if isinstance(dtype, t.Record):  # a record value is a pointer to its bytes: copy them
        module = b.module
        memcpy = module.globals.get("llvm.memcpy.p0.p0.i64") or ir.Function(
            module, ir.FunctionType(dm.void, [dm.ptr, dm.ptr, dm.i64, dm.i1]),
            "llvm.memcpy.p0.p0.i64")
        b.call(memcpy, [pointer, value, ir.Constant(dm.i64, dtype.size), ir.Constant(dm.i1, 0)])
        return
    if isinstance(dtype, t.Boolean):
        value = b.zext(value, dm.i8)
    if align is not None and b.module.triple.startswith("nvptx") and \
            isinstance(dtype, (t.Float, t.Complex)):
        value = _as_integer_bits(b, value)
    b.store(value, pointer, align=align)


_PTX_MOV = {16: ("mov.b16 $0, $1;", "h"), 32: ("mov.b32 $0, $1;", "r"),
            64: ("mov.b64 $0, $1;", "l")}


def _as_integer_bits(b: ir.IRBuilder, value):
    """A floating-point value as integer bits made by an integer instruction (an opaque PTX
    mov): an under-aligned store is split into bytes, and CUDA 13.0's ptxas stores the low byte
    of `st.b8 [p], %r` wrongly when %r comes straight from a float instruction (it writes the
    value converted to an integer: 12.0 stored 0x0C in the low byte, measured on the H100);
    any integer instruction in between (and, mov, shr) gives the right bytes."""
    if isinstance(value.type, ir.LiteralStructType):  # complex: each part
        out = ir.Constant(ir.LiteralStructType(
            [ir.IntType(_bits(e)) for e in value.type.elements]), ir.Undefined)
        for k in range(len(value.type.elements)):
            out = b.insert_value(out, _as_integer_bits(b, b.extract_value(value, k)), k)
        return out
    width = _bits(value.type)
    text, constraint = _PTX_MOV[width]
    int_type = ir.IntType(width)
    asm = ir.InlineAsm(ir.FunctionType(int_type, [int_type]), text,
                       f"={constraint},{constraint}")
    return b.call(asm, [b.bitcast(value, int_type)])


def _bits(float_type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(float_type)]


def slice_bounds(b: ir.IRBuilder, extent, start, stop, step):
    """Python slice semantics -> (start, length, step) as i64 values; step defaults to 1."""
    i64 = dm.i64
    zero = ir.Constant(i64, 0)
    one = ir.Constant(i64, 1)
    step = step if step is not None else one
    step_negative = b.icmp_signed("<", step, zero)
    minus_one = ir.Constant(i64, -1)

    def clamp(value, default_pos, default_neg):
        if value is None:
            return b.select(step_negative, default_neg, default_pos)
        wrapped = b.select(b.icmp_signed("<", value, zero), b.add(value, extent), value)
        low = b.select(step_negative, minus_one, zero)
        high = b.select(step_negative, b.sub(extent, one), extent)
        wrapped = b.select(b.icmp_signed("<", wrapped, low), low, wrapped)
        return b.select(b.icmp_signed(">", wrapped, high), high, wrapped)

    start_v = clamp(start, zero, b.sub(extent, one))
    stop_v = clamp(stop, extent, minus_one)
    # length = max(0, ceil((stop - start) / step))
    span = b.sub(stop_v, start_v)
    adj = b.select(step_negative, b.add(span, one), b.sub(span, one))
    # a step of 0 known only at run time (Python raises ValueError; kernels cannot) gives an
    # empty view: dividing by it would trap and kill the process on the CPU target
    step_zero = b.icmp_signed("==", step, zero)
    length = b.sdiv(b.add(adj, step), b.select(step_zero, one, step))
    length = b.select(b.or_(step_zero, b.icmp_signed("<", length, zero)), zero, length)
    return start_v, length, step


def view(b: ir.IRBuilder, arr: t.Array, value, index_parts: list, result: t.Array):
    """arr[...] that yields an array: index_parts are ("int", i64) or ("slice", lo, hi, step)."""
    data, shape, strides = parts(b, value, arr.ndim)
    offset = ir.Constant(dm.i64, 0)
    new_shape, new_strides = [], []
    for k in range(arr.ndim):
        part = index_parts[k] if k < len(index_parts) else ("slice", None, None, None)
        if part[0] == "int":
            offset = b.add(offset, b.mul(part[1], strides[k]))
            continue
        start, length, step = slice_bounds(b, shape[k], part[1], part[2], part[3])
        offset = b.add(offset, b.mul(start, strides[k]))
        new_shape.append(length)
        new_strides.append(b.mul(strides[k], step))
    new_data = b.gep(data, [offset], source_etype=dm.i8)
    return make_array(b, result, new_data, new_shape, new_strides)


def record_field_view(b: ir.IRBuilder, arr: t.Array, value, attr: str, result: t.Array):
    """`recs.x`: the field's bytes in every record (its offset added to the data pointer, the
    record strides kept), a sub-array field's own C strides appended."""
    ftype, offset = arr.dtype.field(attr)
    data, shape, strides = parts(b, value, arr.ndim)
    data = b.gep(data, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)
    if isinstance(ftype, t.InlineArray):
        shape += [ir.Constant(dm.i64, n) for n in ftype.shape]
        strides += [ir.Constant(dm.i64, s) for s in
                    contiguous_strides(list(ftype.shape), t.sizeof(ftype.dtype))]
    return make_array(b, result, data, shape, strides)


def attribute(b: ir.IRBuilder, arr: t.Array, value, attr: str, result: t.Type):
    if isinstance(arr.dtype, t.Record) and isinstance(result, t.Array) and \
            arr.dtype.field(attr) is not None:
        return record_field_view(b, arr, value, attr, result)
    if attr == "shape" or attr == "strides":
        field = 1 if attr == "shape" else 2
        out = ir.Constant(dm.value_type(result), ir.Undefined)
        for k in range(arr.ndim):
            out = b.insert_value(out, b.extract_value(value, [field, k]), k)
        return out
    if attr == "ndim":
        return ir.Constant(dm.i64, arr.ndim)
    itemsize = ir.Constant(dm.i64, t.sizeof(arr.dtype))
    if attr == "itemsize":
        return itemsize
    size = ir.Constant(dm.i64, 1)
    for k in range(arr.ndim):
        size = b.mul(size, b.extract_value(value, [1, k]))
    if attr == "size":
        return size
    if attr == "nbytes":
        return b.mul(size, itemsize)
    if attr == "T":
        data, shape, strides = parts(b, value, arr.ndim)
        return make_array(b, result, data, shape[::-1], strides[::-1])
    if attr in ("real", "imag"):
        if not isinstance(arr.dtype, t.Complex):
            return value  # a real array's real part is itself
        data, shape, strides = parts(b, value, arr.ndim)
        if attr == "imag":  # the second float of each element
            data = b.gep(data, [ir.Constant(dm.i64, t.sizeof(arr.dtype.component))],
                         source_etype=dm.i8)
        return make_array(b, result, data, shape, strides)
    raise TypeError(attr)
