"""print() in kernels: vprintf on the GPU; on the CPU target, records collected per launch and
written to sys.stdout in (block, thread) order after the launch, so notebooks capture them.

Formats follow numba-cuda: integers as %lld / %llu, floats (bfloat16 too) as %f, booleans as
True/False, tuples as Python prints them, cuda.threadIdx & co as (x, y, z), string literals
inline. CUDA's vprintf takes at most 32 arguments: with more, numba-cuda warns and prints the
format itself (`%lld %lld ...`) rather than garbage, and so does gpunb on both targets.
"""

from __future__ import annotations

import ast

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Feature, Typed
from gpunb.compiler.values import PyValue
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileWarning

MAX_PRINT_ARGS = 32  # CUDA vprintf's limit


_DIM3 = {"cuda.threadIdx": "tid", "cuda.blockIdx": "ctaid", "cuda.blockDim": "ntid",
         "cuda.gridDim": "nctaid"}


def _dim3_register(ty: t.Type) -> str | None:
    """The special register of `print(cuda.threadIdx)` and its siblings, else None."""
    if isinstance(ty, PyValue):
        return _DIM3.get(getattr(ty.obj, "_gpunb_intrinsic", None))
    return None


def item_format(ty: t.Type) -> str | None:
    """numba-cuda's printf format of one value (tuples as Python prints them), or None."""
    if isinstance(ty, t.Boolean):
        return "%s"  # True / False, as numba-cuda prints them
    if isinstance(ty, t.Integer):
        return "%lld" if ty.signed else "%llu"
    if isinstance(ty, (t.Float, t.BFloat16)):
        return "%f"
    if isinstance(ty, t.Complex):
        return "(%f+%fj)"
    if _dim3_register(ty) is not None:
        return "(%lld, %lld, %lld)"
    if isinstance(ty, t.Tuple):
        parts = [item_format(item) for item in ty.items]
        if any(p is None for p in parts):
            return None
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    return None


def item_values(low, value, ty: t.Type) -> list:
    """The printf arguments of one value, in the order item_format names them."""
    b = low.builder
    if isinstance(ty, t.Boolean):
        words = [low.target.string_constant(low, w) for w in ("True", "False")]
        return [(b.select(value, *words), ty)]
    if isinstance(ty, t.Integer):
        target = t.int64 if ty.signed else t.uint64
        return [(ops.cast(b, value, ty, target), target)]
    if isinstance(ty, (t.Float, t.BFloat16)):
        return [(ops.cast(b, value, ty, t.float64), t.float64)]
    if isinstance(ty, t.Complex):
        return [(ops.cast(b, b.extract_value(value, k), ty.component, t.float64), t.float64)
                for k in range(2)]
    register = _dim3_register(ty)
    if register is not None:
        return [(b.zext(low.target.sreg(low, register, axis), dm.i64), t.int64)
                for axis in "xyz"]
    out = []
    for k, item in enumerate(ty.items):
        out.extend(item_values(low, b.extract_value(value, k), item))
    return out


class Print(Builtin):
    name = "print"

    def type_call(self, inf, node, argtypes, kwtypes):
        if node.keywords:
            raise inf.error(node, "print() in GPU code takes positional arguments only",
                            "sep= and end= are not supported")
        pieces = []
        for arg, ty in zip(node.args, argtypes, strict=False):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                pieces.append(arg.value.replace("%", "%%"))
                continue
            piece = item_format(ty)
            if piece is None:
                raise inf.error(arg, f"print() in GPU code cannot print {ty}",
                                "print numbers, tuples of numbers and string literals")
            pieces.append(piece)
        inf.require(Feature.PRINT)
        fmt = " ".join(pieces) + "\n"  # the printf format
        if len(node.args) > MAX_PRINT_ARGS:
            inf.warn(node, "CUDA print() cannot print more than 32 items. The raw format string "
                     "will be emitted by the kernel instead.", CompileWarning)
            numba_style = (("%s" if isinstance(a, ast.Constant) and isinstance(a.value, str)
                            else p) for a, p in zip(node.args, pieces, strict=True))
            return Typed(t.none, (" ".join(numba_style) + "\n").replace("%", "%%"))
        return Typed(t.none, fmt)

    def lower_call(self, low, node, call):
        fmt = call.data
        values = []
        if len(node.args) > MAX_PRINT_ARGS:  # the format itself is printed, as numba-cuda does
            low.target.printf(low, node, fmt, values)
            return
        for arg, ty in zip(node.args, call.argtypes, strict=False):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                continue
            value = None if _dim3_register(ty) is not None else low.expr(arg)
            values.extend(item_values(low, value, ty))
        low.target.printf(low, node, fmt, values)
