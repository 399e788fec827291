"""Python scoping read from the syntax: what a function's own scope binds, reads and nests.

Inference (which names are local variables, what an inner function captures) and the cache's
fingerprint (which names are globals whose values the code depends on) must agree on it.
"""

from __future__ import annotations

import ast

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def walk_scope(fn: ast.AST):
    """The nodes of one function's own scope: nested defs and lambdas are yielded, but their
    bodies (their own scopes) are not entered; their defaults belong to this scope."""
    return _walk(list(fn.body) if isinstance(fn, ast.FunctionDef) else [fn.body])


def walk_scope_of(stmt: ast.AST):
    """The nodes of one statement that belong to the enclosing function's scope (nested defs'
    and lambdas' bodies are not entered)."""
    return _walk([stmt])


def _walk(todo: list):
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, _NESTED):
            args = getattr(node, "args", None)
            if args is not None:
                todo.extend(d for d in args.defaults + args.kw_defaults if d is not None)
            todo.extend(getattr(node, "decorator_list", ()))
            continue
        todo.extend(ast.iter_child_nodes(node))


def assigned_names(fn: ast.AST) -> set:
    return {n.id for n in walk_scope(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def free_names(fn: ast.AST) -> set:
    """Names a function (and its nested functions) reads but does not bind: Python's free
    variables, found from the syntax."""
    args = fn.args
    bound = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    loads = set()
    for node in walk_scope(fn):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                loads |= free_names(node)
        elif isinstance(node, ast.Lambda):
            loads |= free_names(node)
    return loads - bound


def is_lambda_binding(node: ast.AST) -> bool:
    """`name = lambda ...: ...`: the one form in which a lambda can be used in GPU code."""
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and \
        isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Lambda)
