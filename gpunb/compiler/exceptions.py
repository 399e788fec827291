"""`raise` and `assert` in GPU code: which exceptions may be raised, and the site records.

As in numba.cuda, a raise ends the raising thread; only with debug=True is it reported, and the
launcher raises the exception on the host. What the launcher needs (class, message, where) lives
in RaiseSite records carried by the KernelArtifact, so a disk-cache hit can report it too.
"""

from __future__ import annotations

import ast
import builtins

from gpunb.compiler.values import NotConstant, const_eval

# builtin classes whose instances carry nothing but a message (so they can be re-created on the
# host by name, and combined with gpunb's LaunchError there)
RAISABLE = ("Exception", "ArithmeticError", "AssertionError", "FloatingPointError", "IndexError",
            "KeyError", "LookupError", "NotImplementedError", "OverflowError", "RuntimeError",
            "TypeError", "ValueError", "ZeroDivisionError")

RAISE_HINT = "GPU code can raise a builtin exception class with a constant message, e.g. " \
             "`raise ValueError(\"x must be positive\")`; the message cannot be computed in " \
             "the kernel (print() the values first)"


class BadRaise(Exception):
    """A raise statement GPU code cannot express; args: (node, message, hint)."""


def raise_target(node: ast.Raise, resolve) -> tuple[str, str]:
    """(exception class name, message) of `raise Cls` / `raise Cls("constant")`, or BadRaise."""
    if node.exc is None:
        raise BadRaise(node, "a bare `raise` has no exception to re-raise in GPU code",
                       RAISE_HINT)
    if node.cause is not None:
        raise BadRaise(node.cause, "`raise ... from ...` is not supported in GPU code",
                       "drop the `from` clause: " + RAISE_HINT)
    exc, args = node.exc, []
    if isinstance(exc, ast.Call):
        if exc.keywords or len(exc.args) > 1:
            raise BadRaise(exc, "an exception in GPU code takes at most one argument, a "
                           "constant message", RAISE_HINT)
        exc, args = exc.func, exc.args
    name = exception_class_name(exc, resolve)
    if not args:
        return name, ""
    try:
        message = const_eval(args[0], resolve)
    except NotConstant:
        message = None
    if not isinstance(message, str):
        raise BadRaise(args[0], "the message of an exception raised in GPU code must be a "
                       "constant string", RAISE_HINT)
    return name, message


def exception_class_name(node, resolve) -> str:
    try:
        value = const_eval(node, resolve) if isinstance(node, (ast.Name, ast.Attribute)) \
            else None
    except NotConstant:
        value = None
    if isinstance(value, type) and issubclass(value, BaseException):
        if value.__name__ in RAISABLE and getattr(builtins, value.__name__) is value:
            return value.__name__
        if issubclass(value, Exception) and not value.__module__ == "builtins":
            return user_class_name(value)  # the user's own class (numba raises them too)
        raise BadRaise(node, f"GPU code cannot raise {value.__name__}",
                       f"raise one of the builtin classes {', '.join(RAISABLE)}, or a class "
                       "of your own derived from Exception")
    raise BadRaise(node, f"GPU code can only raise an exception class, not "
                   f"`{ast.unparse(node)}`", RAISE_HINT)


def user_class_name(cls: type) -> str:
    """How a raise site names a user's exception class: `module:qualname`, which the host finds
    again in this process (kernel_errors.USER_CLASSES) or, after a disk-cache hit in another
    one, by importing the module."""
    from gpunb.foundation.kernel_errors import USER_CLASSES

    name = f"{cls.__module__}:{cls.__qualname__}"
    USER_CLASSES[name] = cls
    return name


def assert_message(node: ast.Assert, resolve) -> str:
    """The constant message of `assert cond, "msg"` ("" without one), or BadRaise."""
    if node.msg is None:
        return ""
    try:
        message = const_eval(node.msg, resolve)
    except NotConstant:
        message = None
    if not isinstance(message, str):
        raise BadRaise(node.msg, "with debug=True, an assert message in GPU code must be a "
                       "constant string", "write `assert cond, \"what went wrong\"`")
    return message


def site_record(exc_name: str, message: str, filename: str, line: int, col: int,
                function: str) -> tuple:
    """One raise site as the artifact stores it (JSON-friendly, indexed by site id)."""
    return (exc_name, message, filename, int(line), int(col), function)
