"""CUDA's built-in vector types in kernels: `cuda.float32x4(a, b, c, d)` (and C's aliases:
float4, int2, uchar3, ...) make a value whose fields are x, y, z and w (a named tuple of the
base type). As in numba-cuda, a constructor takes numbers and vectors of its own base type
whose element counts add up to its own (`float32x4(float32x2(a, b), c, d)`)."""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.kernel_api import VECTOR_TYPES
from gpunb.foundation import types as t

_FIELDS = ("x", "y", "z", "w")


def vector_type(base: t.Type, count: int) -> t.Tuple:
    return t.Tuple((base,) * count, _FIELDS[:count])


class VectorConstructor(Builtin):
    def __init__(self, name: str):
        self.name = f"cuda.{name}"
        base, count = name.rsplit("x", 1)
        self.base, self.count = t.TYPE_NAMES[base], int(count)
        self.result = vector_type(self.base, self.count)

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes:
            raise inf.error(node, f"{self.name}() takes its elements positionally")
        total = 0
        for arg, found in zip(node.args, argtypes, strict=True):
            if isinstance(found, t.Tuple) and found.names == _FIELDS[:len(found.items)] and \
                    found.items and all(i == self.base for i in found.items):
                total += len(found.items)
            elif t.is_number(found) and not isinstance(found, t.Complex):
                total += 1
            else:
                raise inf.error(arg, f"{self.name}() takes numbers and {self.base} vectors, "
                                f"got {found}")
        if total != self.count:
            raise inf.error(node, f"{self.name}() needs {self.count} elements, got {total}",
                            "pass numbers and vectors whose element counts add up to "
                            f"{self.count}")
        return self.result

    def lower_call(self, low, node, call):
        b = low.builder
        elements = []
        for arg, found in zip(node.args, call.argtypes, strict=True):
            value = low.expr(arg)
            if isinstance(found, t.Tuple):
                elements.extend(b.extract_value(value, k) for k in range(len(found.items)))
            else:
                elements.append(ops.cast(b, value, found, self.base))
        out = ir.Constant(dm.value_type(self.result), ir.Undefined)
        for k, element in enumerate(elements):
            out = b.insert_value(out, element, k)
        return out


BUILTINS = {f"cuda.{name}": VectorConstructor(name) for name in VECTOR_TYPES}
