"""print() in kernels: vprintf on the GPU; on the CPU target, records collected per launch and
written to sys.stdout in (block, thread) order after the launch, so notebooks capture them.

Formats follow numba-cuda: integers as %lld / %llu, floats as %f, booleans as True/False,
string literals inline.
"""

from __future__ import annotations

import ast

from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Feature, Typed
from gpunb.foundation import types as t


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
            elif isinstance(ty, t.Boolean):
                pieces.append("%s")  # True / False, as numba-cuda prints them
            elif isinstance(ty, t.Integer):
                pieces.append("%lld" if ty.signed else "%llu")
            elif isinstance(ty, t.Float):
                pieces.append("%f")
            elif isinstance(ty, t.Complex):
                pieces.append("(%f+%fj)")
            else:
                raise inf.error(arg, f"print() in GPU code cannot print {ty}",
                                "print numbers and string literals")
        inf.require(Feature.PRINT)
        return Typed(t.none, " ".join(pieces) + "\n")  # the printf format

    def lower_call(self, low, node, call):
        b = low.builder
        fmt = call.data
        values = []
        for arg, ty in zip(node.args, call.argtypes, strict=False):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                continue
            value = low.expr(arg)
            if isinstance(ty, t.Boolean):
                words = [low.target.string_constant(low, w) for w in ("True", "False")]
                values.append((b.select(value, *words), ty))
            elif isinstance(ty, t.Integer):
                target = t.int64 if ty.signed else t.uint64
                values.append((ops.cast(b, value, ty, target), target))
            elif isinstance(ty, t.Float):
                values.append((ops.cast(b, value, ty, t.float64), t.float64))
            else:
                for k in range(2):
                    part = b.extract_value(value, k)
                    values.append((ops.cast(b, part, ty.component, t.float64), t.float64))
        low.target.printf(low, node, fmt, values)
