"""Thread indexing, barriers, fences and shared/local/const arrays: typing and lowering."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.kernel_api import intrinsic_name
from gpunb.compiler.typed import Feature, Typed
from gpunb.compiler.values import dtype_to_type
from gpunb.foundation import types as t

_SREGS = {"cuda.threadIdx": "tid", "cuda.blockIdx": "ctaid", "cuda.blockDim": "ntid",
          "cuda.gridDim": "nctaid"}


class SpecialRegister(Builtin):
    """cuda.threadIdx.x and friends: int32 values read from special registers."""

    is_value = True

    def __init__(self, name: str, kind: str, axis: str):
        self.name, self.kind, self.axis = name, kind, axis

    def type_value(self, inf, node):
        return t.int32

    def lower_value(self, low, node, ty):
        return low.target.sreg(low, self.kind, self.axis)


class LaneId(Builtin):
    is_value = True
    name = "cuda.laneid"

    def type_value(self, inf, node):
        return t.int32

    def lower_value(self, low, node, ty):
        return low.target.laneid(low)


class WarpSize(Builtin):
    is_value = True
    name = "cuda.warpsize"

    def type_value(self, inf, node):
        return t.int32

    def lower_value(self, low, node, ty):
        return ir.Constant(dm.i32, 32)


def _wide(low, kind: str, axis: str):
    return low.builder.zext(low.target.sreg(low, kind, axis), dm.i64)


class Grid(Builtin):
    """cuda.grid(ndim): absolute thread position(s), int64 (a tuple for ndim 2 and 3)."""

    def __init__(self, name: str, size: bool):
        self.name, self.size = name, size

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) != 1 or node.keywords:
            raise inf.error(node, f"{self.name}() takes one argument, the number of dimensions",
                            f"e.g. i = cuda.{self.name}(1) or x, y = cuda.{self.name}(2)")
        ndim = inf.const(node.args[0], f"the argument of {self.name}()")
        if ndim not in (1, 2, 3):
            raise inf.error(node.args[0], f"{self.name}() takes 1, 2 or 3, not {ndim!r}",
                            "GPU grids have at most 3 dimensions; flatten the others")
        return Typed(t.int64 if ndim == 1 else t.Tuple((t.int64,) * ndim), ndim)

    def lower_call(self, low, node, call):
        b = low.builder
        ndim = call.data
        values = []
        for axis in "xyz"[:ndim]:
            if self.size:
                values.append(b.mul(_wide(low, "ntid", axis), _wide(low, "nctaid", axis)))
            else:
                values.append(b.add(_wide(low, "tid", axis),
                                    b.mul(_wide(low, "ctaid", axis), _wide(low, "ntid", axis))))
        if ndim == 1:
            return values[0]
        out = ir.Constant(dm.value_type(call.result), ir.Undefined)
        for i, v in enumerate(values):
            out = b.insert_value(out, v, i)
        return out


class Barrier(Builtin):
    """cuda.syncthreads() and its _count/_and/_or reductions."""

    def __init__(self, name: str, kind: str):
        self.name, self.kind = name, kind

    def type_call(self, inf, node, argtypes, kwtypes):
        inf.require(Feature.BARRIER)
        if self.kind == "sync":
            if argtypes:
                raise inf.error(node, "syncthreads() takes no arguments")
            return t.none
        if len(argtypes) != 1 or not t.is_number(argtypes[0]):
            raise inf.error(node, f"{self.name}() takes one predicate")
        return t.int32

    def lower_call(self, low, node, call):
        from gpunb.compiler import operators as ops

        pred = None
        if self.kind != "sync":
            value = low.expr(node.args[0])
            pred = ops.truth(low.builder, value, low.type_of(node.args[0]))
        return low.target.barrier(low, node, self.kind, pred)


class Fence(Builtin):
    def __init__(self, name: str, scope: str):
        self.name, self.scope = name, scope

    def type_call(self, inf, node, argtypes, kwtypes):
        if argtypes:
            raise inf.error(node, f"{self.name}() takes no arguments")
        return t.none

    def lower_call(self, low, node, call):
        low.target.threadfence(low, self.scope)


class SyncWarp(Builtin):
    name = "cuda.syncwarp"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) > 1:
            raise inf.error(node, "syncwarp() takes an optional mask")
        inf.require(Feature.WARP_BARRIER)
        return t.none

    def lower_call(self, low, node, call):
        from gpunb.compiler import operators as ops

        if node.args:
            mask = ops.cast(low.builder, low.expr(node.args[0]), low.type_of(node.args[0]),
                            t.uint32)
        else:
            mask = ir.Constant(dm.i32, 0xFFFFFFFF)
        low.target.syncwarp(low, node, mask)


def _shape_and_dtype(inf, node, what: str):
    args = list(node.args)
    kws = {kw.arg: kw.value for kw in node.keywords}
    shape_node = args[0] if args else kws.get("shape")
    dtype_node = args[1] if len(args) > 1 else kws.get("dtype")
    if shape_node is None or dtype_node is None:
        raise inf.error(node, f"{what}(shape, dtype) needs a shape and a dtype",
                        f"e.g. {what}((16, 16), float32)")
    shape = inf.const(shape_node, f"the shape of {what}")
    dtype = inf.const(dtype_node, f"the dtype of {what}")
    shape = shape if isinstance(shape, tuple) else (shape,)
    align_node = args[2] if len(args) > 2 else kws.get("alignment")
    align = None if align_node is None else _alignment(inf, align_node, what)
    launch_values = [s for s in shape if intrinsic_name(s) is not None]
    if launch_values:  # cuda.blockDim.x: known only at launch, not when the kernel compiles
        dynamic = " (or cuda.shared.array(0, dtype) with the size in bytes as the 4th launch " \
            "parameter: kernel[grid, block, 0, nbytes])" if what == "cuda.shared.array" else ""
        raise inf.error(shape_node, f"the shape of {what} must be a compile-time constant; "
                        f"{intrinsic_name(launch_values[0])} is only known at launch",
                        f"use a literal or a module-level constant{dynamic}")
    if not all(isinstance(s, (int, np.integer)) and s >= 0 for s in shape):
        raise inf.error(shape_node, f"the shape of {what} must be non-negative integers, "
                        f"got {shape!r}", "give an int or a tuple of ints, e.g. 128 or (16, 16)")
    elem = dtype_to_type(dtype)
    if elem is None:
        what_is_wrong = f"Invalid NumPy dtype specified: {dtype!r}" if isinstance(dtype, str) \
            else f"{dtype!r} is not a dtype"  # numba's wording for a string numpy does not know
        raise inf.error(dtype_node, what_is_wrong,
                        "use e.g. float32, numba-style types, or numpy dtypes like np.float32")
    return tuple(int(s) for s in shape), elem, shape_node, dtype_node, align


def _alignment(inf, node, what: str) -> int | None:
    """`alignment=` of a shared or local array: numba-cuda's checks and messages (a
    RequireLiteralValue for a value that is no integer constant, ValueError for a bad one)."""
    from gpunb.foundation.errors import JitOptionError

    value = inf.const(node, f"the alignment of {what}")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise inf.error(node, "RequireLiteralValue: alignment must be a constant integer, got "
                        f"{value!r}", "pass a power of two that is a multiple of 8, e.g. 16")
    value = int(value)
    problem = ("Alignment must be positive" if value <= 0 else
               "Alignment must be a power of 2" if value & (value - 1) else
               "Alignment must be a multiple of 8" if value % 8 else
               "Alignment must be at most 4096 in gpunb" if value > 4096 else None)
    if problem:  # a JitOptionError is also a ValueError, which numba raises here
        raise JitOptionError(f"{problem} (got {value})", inf.source.loc(node),
                             hint="pass a power of two that is a multiple of 8, e.g. 16",
                             function=inf.source.name)
    return value


class SharedArray(Builtin):
    """cuda.shared.array(shape, dtype): per-block memory; shape 0 means dynamic shared memory."""

    name = "cuda.shared.array"

    def type_call(self, inf, node, argtypes, kwtypes):
        shape, elem, shape_node, dtype_node, align = _shape_and_dtype(inf, node, self.name)
        inf.require(Feature.DYNAMIC_SHARED if 0 in shape else Feature.SHARED)
        return Typed(t.Array(elem, len(shape), "C"), (shape, elem, max(16, align or 16)))

    def lower_call(self, low, node, call):
        shape, elem, align = call.data
        dynamic = 0 in shape
        count = 1
        for s in shape:
            count *= s
        pointer = low.target.shared_array(low, elem, count, dynamic, align)
        return _contiguous(low, call.result, pointer, shape, elem, dynamic)


# CUDA's local memory per thread (every compute capability since 2.0): a larger local array
# cannot run on a GPU, and on the CPU target it would only overflow the host thread's stack
LOCAL_BYTES_PER_THREAD = 512 * 1024


class LocalArray(Builtin):
    name = "cuda.local.array"

    def type_call(self, inf, node, argtypes, kwtypes):
        shape, elem, shape_node, _, align = _shape_and_dtype(inf, node, self.name)
        if 0 in shape:
            raise inf.error(shape_node, "a local array needs a non-zero shape")
        count = 1
        for s in shape:
            count *= s
        size = count * t.sizeof(elem)
        if size > LOCAL_BYTES_PER_THREAD:
            raise inf.error(shape_node, f"a local array of {count:,} {elem} ({_bytes(size)}) "
                            f"is larger than a GPU thread's local memory "
                            f"({_bytes(LOCAL_BYTES_PER_THREAD)} per thread, CUDA's limit)",
                            "use a smaller array, or global memory: a device array passed to "
                            "the kernel, each thread using its own slice")
        return Typed(t.Array(elem, len(shape), "C"), (shape, elem, align))

    def lower_call(self, low, node, call):
        shape, elem, align = call.data
        count = 1
        for s in shape:
            count *= s
        storage = low.alloca(ir.ArrayType(dm.memory_type(elem), count), "local.array")
        if align:
            storage.align = align
        return _contiguous(low, call.result, storage, shape, elem, False)


class ConstArrayLike(Builtin):
    name = "cuda.const.array_like"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) != 1:
            raise inf.error(node, "const.array_like(ary) takes one module-level numpy array")
        value = inf.const(node.args[0], "the argument of const.array_like")
        if not isinstance(value, np.ndarray):
            raise inf.error(node.args[0], "const.array_like needs a module-level numpy array")
        # read-only, as numba-cuda types it (the global array it copies is): constant memory
        # cannot be written by a kernel (a store there faults on a GPU)
        return Typed(t.Array(t.from_dtype(value.dtype), value.ndim, "C", readonly=True),
                     np.ascontiguousarray(value))

    def lower_call(self, low, node, call):
        value = call.data
        pointer = low.mb.const_array(low.builder, value)
        return _contiguous(low, call.result, pointer, value.shape, call.result.dtype, False)


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def _contiguous(low, ty: t.Array, pointer, shape, elem: t.Type, dynamic: bool):
    b = low.builder
    itemsize = t.sizeof(elem)
    if dynamic:
        # the whole dynamic allocation, seen as a 1-d array of `elem`
        total = low.target.dynamic_shared_bytes(low)
        shape_values = [b.udiv(total, ir.Constant(dm.i64, itemsize))]
        strides = [ir.Constant(dm.i64, itemsize)]
        shape_values += [ir.Constant(dm.i64, 1)] * (ty.ndim - 1)
        strides += [ir.Constant(dm.i64, itemsize)] * (ty.ndim - 1)
    else:
        shape_values = [ir.Constant(dm.i64, s) for s in shape]
        strides = [ir.Constant(dm.i64, s)
                   for s in arrays.contiguous_strides(list(shape), itemsize)]
    return arrays.make_array(b, ty, pointer, shape_values, strides)


BUILTINS: dict = {}
for _qual, _kind in _SREGS.items():
    for _axis in "xyz":
        BUILTINS[f"{_qual}.{_axis}"] = SpecialRegister(f"{_qual}.{_axis}", _kind, _axis)
BUILTINS.update({
    "cuda.laneid": LaneId(),
    "cuda.warpsize": WarpSize(),
    "cuda.grid": Grid("cuda.grid", size=False),
    "cuda.gridsize": Grid("cuda.gridsize", size=True),
    "cuda.syncthreads": Barrier("cuda.syncthreads", "sync"),
    "cuda.syncthreads_count": Barrier("cuda.syncthreads_count", "count"),
    "cuda.syncthreads_and": Barrier("cuda.syncthreads_and", "and"),
    "cuda.syncthreads_or": Barrier("cuda.syncthreads_or", "or"),
    "cuda.threadfence": Fence("cuda.threadfence", "device"),
    "cuda.threadfence_block": Fence("cuda.threadfence_block", "block"),
    "cuda.threadfence_system": Fence("cuda.threadfence_system", "system"),
    "cuda.syncwarp": SyncWarp(),
    "cuda.shared.array": SharedArray(),
    "cuda.local.array": LocalArray(),
    "cuda.const.array_like": ConstArrayLike(),
})
