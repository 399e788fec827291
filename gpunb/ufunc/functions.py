"""The user's scalar, core or binary function as a gpunb device function.

numba-cuda accepts lambdas here (`cuda.reduce(lambda a, b: a + b)` is its documented spelling).
The compiler reads a lambda where it stands when it can single it out on its lines (errors then
point at the user's line and column); otherwise the lambda is rewritten as the equivalent def
(same parameters, `return <body>`), placed at the lambda's line in a pseudo-file registered with
linecache, with the lambda's globals and the values of its closure.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types

from gpunb.foundation.errors import CompileError


def device_function(func, what: str):
    """A device-function Dispatcher for `func` (a def, a lambda, or a gpunb GPU function)."""
    from gpunb.jit.decorator import jit
    from gpunb.jit.options import user_location

    func = getattr(func, "py_func", func)
    if not inspect.isfunction(func):
        raise CompileError(f"{what} needs a Python function, got {type(func).__name__}",
                           user_location(), hint="pass a def (or a lambda) of the scalar "
                                                 "operation")
    if func.__name__ == "<lambda>" and not _reads_in_place(func):
        func = def_from_lambda(func, what)
    return jit(device=True)(func)


def _reads_in_place(func) -> bool:
    """Whether the compiler reads the lambda where it stands (its errors then point at the
    user's line and column); a lambda it cannot single out there (on the continuation line of
    a call, say) is rewritten as a def instead."""
    from gpunb.compiler.frontend import load_source

    try:
        load_source(func)
    except CompileError:
        return False
    return True


def def_from_lambda(func, what: str):
    """The def equivalent to a lambda (see the module docstring)."""
    from gpunb.jit.options import user_location

    node, filename = _lambda_node(func)
    if node is None:
        raise CompileError(f"{what}: cannot read the source of this lambda",
                           user_location(), hint="write the function as a def")
    body = node.body
    params = ast.unparse(node.args)
    # one name and pseudo-file per lambda (two may share a line): its line and column
    name = f"lambda_{node.lineno}_{node.col_offset}"
    text = "\n" * (node.lineno - 1) + f"def {name}({params}):\n    return {ast.unparse(body)}\n"
    pseudo = f"<gpunb lambda {filename}:{node.lineno}:{node.col_offset}>"
    linecache.cache[pseudo] = (len(text), None, text.splitlines(True), pseudo)
    if not func.__closure__:  # the module's live globals, as the lambda itself reads them
        module_code = compile(text, pseudo, "exec")
        code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
        made = types.FunctionType(code, func.__globals__, name, func.__defaults__)
    else:  # a closure's cells become globals of the def (their values now, as numba freezes)
        namespace = dict(func.__globals__)
        for var, cell in zip(func.__code__.co_freevars, func.__closure__, strict=True):
            namespace[var] = cell.cell_contents
        exec(compile(text, pseudo, "exec"), namespace)  # noqa: S102 - the lambda's own text
        made = namespace[name]
        made.__defaults__ = func.__defaults__
    made.__qualname__ = getattr(func, "__qualname__", name)
    return made


def _lambda_node(func) -> tuple:
    """(the ast.Lambda of `func`, its file name) or (None, name) when it cannot be found."""
    code = func.__code__
    filename = code.co_filename
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return None, filename
    text = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a lambda inside a larger expression spanning lines: the whole file
        full = "".join(linecache.getlines(filename))
        try:
            tree = ast.parse(full)
        except SyntaxError:
            return None, filename
        first = 1
    argnames = code.co_varnames[:code.co_argcount]
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda) and
             tuple(a.arg for a in node.args.args) == tuple(argnames)]
    found = [n for n in found if n.lineno + first - 1 == code.co_firstlineno] or found
    if len(found) > 1:  # several alike on a line: the one that compiles to the same code
        found = [n for n in found if _same_code(n, code)] or found[:1]
    if not found:
        return None, filename
    node = found[0]
    node.lineno += first - 1  # the line in the file, where the def is placed
    return node, filename


def _same_code(node: ast.Lambda, code) -> bool:
    try:
        made = compile(ast.fix_missing_locations(ast.Expression(body=node)), "<lambda>", "eval")
    except (SyntaxError, ValueError):
        return False
    return any(getattr(c, "co_code", None) == code.co_code for c in made.co_consts)


__all__ = ["def_from_lambda", "device_function"]
