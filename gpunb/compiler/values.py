"""Compile-time values: what a global name in kernel code resolves to, and constant folding.

Kernel code reads module globals, closure variables and builtins. Numbers, tuples and numpy arrays
are frozen at compile time (as numba does); modules, GPU functions, intrinsics and types are
compile-time objects that only make sense as callees or attribute bases.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

import numpy as np

from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.foundation.numba_types import from_numba
from gpunb.foundation.pyobjects import MISSING
from gpunb.foundation.records import record


@dataclass(frozen=True, slots=True)
class ArrayCTypes(t.Type):
    """`arr.ctypes` in GPU code: only its `.data` (the address, as numba's) is read."""

    array: t.Array

    def __str__(self) -> str:
        return f"ctypes of {self.array}"


@record(eq=False)
class PyValue(t.Type):
    """A compile-time Python object (module, GPU function, intrinsic, type, builtin function)."""

    obj: object

    def __str__(self) -> str:
        obj = self.obj
        if isinstance(obj, t.Type):
            return f"<type {obj}>"
        intrinsic = getattr(obj, "_gpunb_intrinsic", None)
        if isinstance(intrinsic, str):
            return f"<{intrinsic}>"
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        return f"<{name or type(obj).__name__}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, PyValue) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


@record
class ConstValue(t.Type):
    """A parameter bound to a compile-time value at its call site (numba's Literal types): a
    device function that needs an argument as a constant (cuda.shared.array(n, dtype) with n a
    parameter) is specialised on the value passed. Reads of the parameter have `type`."""

    value: object
    type: t.Type

    def __str__(self) -> str:
        return f"Literal[{self.type}]({self.value!r})"

    @property
    def literal_value(self):
        """numba's Literal.literal_value (what an overload's generator reads)."""
        return self.value


def is_compile_time(ty: t.Type) -> bool:
    """Whether values of this type exist only at compile time (no register, no parameter)."""
    return isinstance(ty, (PyValue, ConstValue))


class NotConstant(Exception):
    """The expression is not a compile-time constant."""


def missing(value) -> bool:
    return value is MISSING


def constant_type(value) -> t.Type | None:
    """The kernel type of a Python constant frozen into code, or None if it is not a constant."""
    if isinstance(value, (bool, np.bool_)):
        return t.boolean
    enum_member = enum_types.enum_type(value)
    if enum_member is not None:
        return enum_member
    if isinstance(value, int):
        return t.int64 if -(2**63) <= value < 2**63 else t.uint64
    if isinstance(value, float):
        return t.float64
    if isinstance(value, complex):
        return t.complex128
    if isinstance(value, np.generic) and not isinstance(value, np.void):
        try:
            return t.from_dtype(value.dtype)
        except TypeError:
            return None
    if isinstance(value, np.ndarray):
        try:
            return t.Array(t.from_dtype(value.dtype), value.ndim, "C", readonly=True)
        except TypeError:
            return None
    if isinstance(getattr(type(value), "__gpunb_device_array__", None), str):
        try:  # a device array global: captured by reference, as numba-cuda does
            return t.Array(t.from_dtype(value.dtype), value.ndim, value._layout)
        except TypeError:
            return None
    if isinstance(value, tuple):
        items = tuple(constant_type(v) for v in value)
        return None if any(i is None for i in items) else t.Tuple(items)
    return foreign_array_type(value)


def foreign_array(value) -> tuple | None:
    """(address, shape, strides, dtype, readonly) of another library's GPU array (anything with
    __cuda_array_interface__, CuPy's, PyTorch's, numba's), captured by reference as numba-cuda
    captures it; None for other objects."""
    try:
        desc = getattr(value, "__cuda_array_interface__", None)
    except Exception:  # noqa: BLE001 - a property that fails is no interface
        return None
    if not isinstance(desc, dict) or "shape" not in desc or "data" not in desc:
        return None
    descr = desc.get("descr")
    dtype = np.dtype([tuple(d) for d in descr]) if descr and not (
        len(descr) == 1 and descr[0][0] == "") else np.dtype(desc["typestr"])
    shape = tuple(int(n) for n in desc["shape"])
    strides = desc.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], dtype.itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
    address, readonly = desc["data"]
    return int(address or 0), shape, tuple(int(s) for s in strides), dtype, bool(readonly)


def foreign_array_type(value) -> t.Array | None:
    found = foreign_array(value)
    if found is None:
        return None
    _, shape, strides, dtype, readonly = found
    try:
        element = t.from_dtype(dtype)
    except TypeError:
        return None
    itemsize = dtype.itemsize
    c = list(strides) == [int(np.prod(shape[k + 1:])) * itemsize for k in range(len(shape))]
    f = list(strides) == [int(np.prod(shape[:k])) * itemsize for k in range(len(shape))]
    layout = "C" if c else "F" if f else "A"
    return t.Array(element, len(shape), layout, readonly)


_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a**b,
    ast.Div: lambda a, b: a / b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
}


def const_eval(node: ast.AST, resolve) -> object:
    """Fold an expression of literals and frozen globals; raise NotConstant otherwise.

    `resolve(node)` returns the compile-time value of a Name/Attribute or raises NotConstant.
    """
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float, complex, bool, str, bytes)) or node.value is None:
            return node.value
        raise NotConstant
    if isinstance(node, (ast.Name, ast.Attribute)):
        return resolve(node)
    if isinstance(node, ast.Tuple):
        return tuple(const_eval(e, resolve) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        v = const_eval(node.operand, resolve)
        if not isinstance(v, (int, float, complex)):  # cuda.threadIdx.x and other names
            raise NotConstant
        if isinstance(node.op, ast.USub):
            return -v
        return +v if isinstance(node.op, ast.UAdd) else ~v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = const_eval(node.left, resolve), const_eval(node.right, resolve)
        if not all(isinstance(v, (int, float)) for v in (a, b)):
            raise NotConstant
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError, ValueError):
            raise NotConstant from None
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
            isinstance(node.func, (ast.Name, ast.Attribute)):
        if resolve(node.func) is np.dtype:  # np.dtype("int16"), np.dtype(np.float32)
            try:
                return np.dtype(const_eval(node.args[0], resolve))
            except TypeError:
                raise NotConstant from None
    raise NotConstant


def dtype_to_type(value) -> t.Type | None:
    """A dtype given in kernel code: gpunb type, numpy scalar type, np.dtype, or a dtype string."""
    if isinstance(value, t.Type) and not isinstance(value, (t.Array, PyValue)):
        return value
    if type(value).__module__.startswith("numba"):
        # numba's own type objects (`from numba import float32`) name the same types
        found = from_numba(value)
        return found if isinstance(found, t.Type) and not isinstance(found, t.Array) else None
    try:
        if isinstance(value, type) and issubclass(value, np.generic):
            return t.from_dtype(value)
        if isinstance(value, (np.dtype, str)):
            return t.from_dtype(np.dtype(value))
        if value is float:
            return t.float64
        if value is int:
            return t.int64
        if value is bool:
            return t.boolean
        if value is complex:
            return t.complex128
    except TypeError:
        return None
    return None


MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}
