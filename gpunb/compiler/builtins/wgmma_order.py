"""The accumulator of a wgmma is the async proxy's until cuda.wgmma.wait_group: a read or write
of it by the thread in the statements that follow the mma_async, before any wait_group, sees
(or clobbers) registers the tensor cores are still writing - undefined on a GPU, while the CPU
target, which computes D at the call, would give the right answer. This finds the first such
access among the call's following sibling statements; a statement that contains a wait_group
anywhere ends the search (what follows may be ordered by it), and an `if` on what may be a
compile-time flag is skipped, so a correct kernel is never refused."""

from __future__ import annotations

import ast


def _calls(node: ast.AST, attr: str) -> bool:
    """Does `node` contain a call of cuda.wgmma.<attr> (or any .<attr> of a wgmma name)?"""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and sub.func.attr == attr:
            return True
    return False


def _statement_lists(tree: ast.AST):
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _accesses(stmt: ast.stmt, name: str):
    """Name nodes of `name` in `stmt`, outside the accumulator argument of further MMAs (a
    chain of mma_async on one accumulator is ordered by the tensor cores)."""
    skip = set()
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and sub.func.attr == "mma_async" and sub.args:
            skip.add(id(sub.args[0]))
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Name) and sub.id == name and id(sub) not in skip:
            yield sub


def access_before_wait(tree: ast.AST, call: ast.Call) -> ast.Name | None:
    """The first access of the accumulator of the mma_async `call` in the statements after it
    and before a wait_group, or None."""
    if not call.args or not isinstance(call.args[0], ast.Name):
        return None
    name = call.args[0].id
    for block in _statement_lists(tree):
        at = next((k for k, stmt in enumerate(block)
                   if any(sub is call for sub in ast.walk(stmt))), None)
        if at is None or isinstance(block[at], (ast.For, ast.While, ast.If, ast.With)):
            continue  # the call is nested deeper: its own statement list decides
        for stmt in block[at + 1:]:
            if _calls(stmt, "wait_group"):
                return None
            if isinstance(stmt, ast.If) and _maybe_constant(stmt.test):
                continue
            found = next(_accesses(stmt, name), None)
            if found is not None:
                return found
        return None
    return None


def _maybe_constant(test: ast.expr) -> bool:
    """A condition that may be a compile-time constant (a flag, a global, a closure value):
    the compiler may drop its branch, so nothing in it is held against the kernel."""
    return isinstance(test, (ast.Name, ast.Constant, ast.Attribute)) or (
        isinstance(test, ast.UnaryOp) and isinstance(test.operand, (ast.Name, ast.Constant,
                                                                   ast.Attribute)))
