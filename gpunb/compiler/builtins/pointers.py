"""numba_support's carray(ptr, shape, dtype=None) and farray(...) in kernels: an array view of
the memory a C pointer (CPointer) points at, C or Fortran ordered, of a shape known at run time
(an int or a tuple of ints). The dtype comes from the pointer, or must be given for a void*."""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Typed
from gpunb.compiler.values import dtype_to_type
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer


class PointerArray(Builtin):
    def __init__(self, order: str):
        self.order = order
        self.name = f"{order.lower()}array"

    def type_call(self, inf, node, argtypes, kwtypes):
        args = list(node.args)
        kws = {k.arg: k.value for k in node.keywords}
        if not 2 <= len(args) + len(kws) <= 3 or len(args) < 1:
            raise inf.error(node, f"{self.name}(ptr, shape, dtype=None) takes a pointer, a "
                            "shape and an optional dtype")
        ptr_t = argtypes[0]
        if not isinstance(ptr_t, Pointer):
            raise inf.error(args[0], f"{self.name}() needs a C pointer (CPointer), got {ptr_t}")
        shape_node = args[1] if len(args) > 1 else kws.get("shape")
        shape_t = argtypes[1] if len(args) > 1 else kwtypes.get("shape")
        items = shape_t.items if isinstance(shape_t, t.Tuple) else (shape_t,)
        if not items or not all(isinstance(i, (t.Integer, t.Boolean)) for i in items):
            raise inf.error(shape_node, f"the shape of {self.name}() must be an integer or a "
                            f"tuple of integers, got {shape_t}")
        dtype_node = args[2] if len(args) > 2 else kws.get("dtype")
        dtype = ptr_t.dtype
        if dtype_node is not None:
            given = dtype_to_type(inf.const(dtype_node, f"the dtype of {self.name}()"))
            if given is None:
                raise inf.error(dtype_node, f"the dtype of {self.name}() is not a dtype")
            if dtype is not None and given != dtype:
                raise inf.error(dtype_node, f"mismatching dtype '{given}' for pointer type "
                                f"'{ptr_t}'")
            dtype = given
        if dtype is None:
            raise inf.error(node, "explicit dtype required for void* argument")
        return Typed(t.Array(dtype, len(items), self.order), shape_node)

    def lower_call(self, low, node, call):
        b = low.builder
        shape_node = call.data
        shape_t = low.type_of(shape_node)
        value = low.expr(shape_node)
        if isinstance(shape_t, t.Tuple):
            shape = [ops.cast(b, b.extract_value(value, k), item, t.int64)
                     for k, item in enumerate(shape_t.items)]
        else:
            shape = [ops.cast(b, value, shape_t, t.int64)]
        ty = call.result
        strides = [None] * ty.ndim
        acc = ir.Constant(dm.i64, t.sizeof(ty.dtype))
        axes = range(ty.ndim - 1, -1, -1) if self.order == "C" else range(ty.ndim)
        for k in axes:
            strides[k] = acc
            acc = b.mul(acc, shape[k])
        return arrays.make_array(b, ty, low.expr(node.args[0]), shape, strides)


class FromBuffer(Builtin):
    """cffi's ffi.from_buffer(arr) in a kernel (numba's cffi support): a pointer to the array's
    first element, typed by its dtype (to pass to a declare_device function taking CPointer)."""

    name = "ffi.from_buffer"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or kwtypes or not isinstance(argtypes[0], t.Array):
            raise inf.error(node, "ffi.from_buffer() takes one array in GPU code")
        return Pointer(argtypes[0].dtype)

    def lower_call(self, low, node, call):
        return low.builder.extract_value(low.expr(node.args[0]), 0)


BUILTINS = {"cuda.np.carray": PointerArray("C"), "cuda.np.farray": PointerArray("F"),
            "cuda.np.ffi_from_buffer": FromBuffer()}
