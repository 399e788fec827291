"""print() in kernels: vprintf on the GPU; on the CPU target, records collected per launch and
written to sys.stdout in (block, thread) order after the launch, so notebooks capture them.

Formats follow numba-cuda: integers as %lld / %llu, floats as %f, booleans as True/False,
string literals inline. CUDA's vprintf takes at most 32 arguments: with more, numba-cuda warns and
prints the format itself (`%lld %lld ...`) rather than garbage, and so does gpunb on both targets.
"""

from __future__ import annotations

import ast
import warnings

from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Feature, Typed
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileWarning

MAX_PRINT_ARGS = 32  # CUDA vprintf's limit


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
        fmt = " ".join(pieces) + "\n"  # the printf format
        if len(node.args) > MAX_PRINT_ARGS:  # lower_call warns (once per compile)
            numba_style = (("%s" if isinstance(a, ast.Constant) and isinstance(a.value, str)
                            else p) for a, p in zip(node.args, pieces, strict=True))
            return Typed(t.none, (" ".join(numba_style) + "\n").replace("%", "%%"))
        return Typed(t.none, fmt)

    def lower_call(self, low, node, call):
        b = low.builder
        fmt = call.data
        values = []
        if len(node.args) > MAX_PRINT_ARGS:  # the format itself is printed, as numba-cuda does
            loc = low.typed.source.loc(node)  # the warning points at the user's line
            warnings.warn_explicit(f"in GPU function '{low.typed.name}': CUDA print() cannot "
                                   "print more than 32 items. The raw format string will be "
                                   "emitted by the kernel instead", CompileWarning,
                                   loc.filename, loc.line)
            low.target.printf(low, node, fmt, values)
            return
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
