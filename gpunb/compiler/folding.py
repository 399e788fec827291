"""Constant folding exactly as CPython's compiler does it, so gpunb sees what numba sees.

numba compiles bytecode, and CPython folds constant expressions before emitting it: `-5`,
`(1 << 63) // 3`, `2**64 + 5` and `2.0 * 3.0` reach numba as single constants (the last one too
large, which numba refuses). gpunb reads source, so it folds the same expressions the same way
(Python/ast_opt.c: unary and binary operators on constants; integer `*`, `**` and `<<` only while
the result stays within 128 bits; an operation that raises is left unfolded).
"""

from __future__ import annotations

import ast
import operator

_MAX_INT_BITS = 128  # ast_opt.c's MAX_INT_SIZE
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: operator.not_}
_NUMBERS = (int, float, complex)


def fold_constants(tree: ast.AST) -> ast.AST:
    """Fold constant unary and binary operations in place (bottom-up); returns the tree."""
    return _Folder().visit(tree)


class _Folder(ast.NodeTransformer):
    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        operand = node.operand
        if not isinstance(operand, ast.Constant) or type(node.op) not in _UNARY:
            return node
        return _folded(node, lambda: _UNARY[type(node.op)](operand.value))

    def visit_BinOp(self, node: ast.BinOp):
        self.generic_visit(node)
        left, right = node.left, node.right
        if not (isinstance(left, ast.Constant) and isinstance(right, ast.Constant)):
            return node
        fn = _BINARY.get(type(node.op))
        a, b = left.value, right.value
        if fn is None or not _safe(node.op, a, b):
            return node
        return _folded(node, lambda: fn(a, b))


def _safe(op: ast.operator, a, b) -> bool:
    """ast_opt.c's safe_multiply / safe_power / safe_lshift (and only numbers here: folding a
    string expression cannot change what GPU code does)."""
    if not (isinstance(a, _NUMBERS) and isinstance(b, _NUMBERS)):
        return False
    if not (type(a) is int or isinstance(a, bool)) or not (type(b) is int or isinstance(b, bool)):
        return True
    a, b = int(a), int(b)
    if isinstance(op, ast.Mult):
        return not (a and b and a.bit_length() + b.bit_length() > _MAX_INT_BITS)
    if isinstance(op, ast.Pow):
        return not (a and b > 0 and a.bit_length() > _MAX_INT_BITS // b)
    if isinstance(op, ast.LShift):
        return not (a and b and (b > _MAX_INT_BITS or a.bit_length() > _MAX_INT_BITS - b))
    return True


def _folded(node: ast.AST, compute):
    try:
        value = compute()
    except (ArithmeticError, ValueError, TypeError):  # CPython leaves it for run time
        return node
    return ast.copy_location(ast.Constant(value=value), node)


def never_runs(node: ast.While) -> bool:
    """`while False:` / `while 0:`: Python's compiler drops the body (numba never sees it),
    and only the else clause runs; inference does not type the body, lowering emits the else."""
    return isinstance(node.test, ast.Constant) and not node.test.value


def runs_forever(node: ast.While) -> bool:
    """`while True:` / `while 1:`: the loop only ends by break (or return), so its else clause
    never runs; inference does not type that clause and lowering must not emit it."""
    return isinstance(node.test, ast.Constant) and bool(node.test.value)
