"""The `operator` module in kernels (`operator.add(a, b)`, `op(x, y)` with `op` a global), as
numba.cuda accepts it: each call is typed and lowered as the Python expression it stands for, so
promotion, weak literals and every corner of the operators stay in one place (infer/lower).
"""

from __future__ import annotations

import ast
import operator

from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Typed

_BINARY = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div,
           "floordiv": ast.FloorDiv, "mod": ast.Mod, "pow": ast.Pow, "lshift": ast.LShift,
           "rshift": ast.RShift, "and_": ast.BitAnd, "or_": ast.BitOr, "xor": ast.BitXor}
_COMPARE = {"lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE, "eq": ast.Eq, "ne": ast.NotEq,
            "contains": None}
_UNARY = {"neg": ast.USub, "pos": ast.UAdd, "invert": ast.Invert, "inv": ast.Invert,
          "not_": ast.Not}


class OperatorFunction(Builtin):
    """operator.<name>(...): rewritten to the equivalent expression node, typed and lowered as
    that node (the node is kept in the typed function's constants for lowering)."""

    def __init__(self, name: str):
        self.name = f"operator.{name}"
        self.short = name

    def expression(self, inf, node):
        name = self.short.removeprefix("i") if self.short.startswith("i") and \
            self.short[1:] in _BINARY else self.short
        args = node.args
        want = 1 if name in _UNARY or name == "truth" else 2
        if node.keywords or len(args) != want:
            raise inf.error(node, f"{self.name}() takes {want} positional argument(s)")
        if name in _BINARY:
            expr = ast.BinOp(left=args[0], op=_BINARY[name](), right=args[1])
        elif name == "contains":  # contains(seq, x) is `x in seq`
            expr = ast.Compare(left=args[1], ops=[ast.In()], comparators=[args[0]])
        elif name in _COMPARE:
            expr = ast.Compare(left=args[0], ops=[_COMPARE[name]()], comparators=[args[1]])
        elif name == "truth":
            expr = ast.UnaryOp(op=ast.Not(), operand=ast.UnaryOp(op=ast.Not(), operand=args[0]))
            ast.copy_location(expr.operand, node)
        else:
            expr = ast.UnaryOp(op=_UNARY[name](), operand=args[0])
        return ast.copy_location(expr, node)

    def type_call(self, inf, node, argtypes, kwtypes):
        expr = self.expression(inf, node)  # operator.add(a, b) is typed and lowered as a + b
        result = inf.expr(expr)
        if expr in inf.weak:
            inf.weak.add(node)
        return Typed(result, expr)

    def lower_call(self, low, node, call):
        return low.expr(call.data)


_NAMES = list(_BINARY) + ["i" + n for n in _BINARY] + list(_COMPARE) + list(_UNARY) + ["truth"]

BUILTINS = {f"operator.{n}": OperatorFunction(n) for n in _NAMES if hasattr(operator, n)}
