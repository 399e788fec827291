"""Type inference: a located Python AST plus argument types -> a frozen TypedFunction.

Local and per specialisation, with numba's typing: each definition of a variable has its own
type (SSA), joins unify by numba's rules, every expression node gets a type and every call is
resolved (GPU functions through globals at compile time, defaults and keywords bound at the call
site). The Inferer is composed of one mixin per kind of syntax; core.py drives the fixed point.
"""

from __future__ import annotations

from gpunb.compiler.infer.calls import CallTyping
from gpunb.compiler.infer.core import InferenceCore, NeedsConstant
from gpunb.compiler.infer.expressions import ExpressionTyping
from gpunb.compiler.infer.indexing import IndexTyping
from gpunb.compiler.infer.loops import LoopTyping
from gpunb.compiler.infer.overloads import OverloadTyping
from gpunb.compiler.infer.session import InferenceSession
from gpunb.compiler.infer.statements import StatementTyping
from gpunb.compiler.typed import TypedFunction
from gpunb.foundation.errors import CompileError


class Inferer(StatementTyping, LoopTyping, ExpressionTyping, IndexTyping, CallTyping,
              OverloadTyping, InferenceCore):
    """Types one function for one tuple of argument types (see the mixins for each part)."""


def infer_function(py_func, argtypes: tuple, options: dict, is_kernel: bool,
                   return_type=None) -> TypedFunction:
    """Infer `py_func` (and, transitively, the GPU functions it calls) for `argtypes`;
    `return_type`: a device function's declared return type (values are cast to it)."""
    session = InferenceSession(Inferer, options)
    try:
        return session.infer(py_func, tuple(argtypes), is_kernel=is_kernel,
                             declared_return=return_type)
    except NeedsConstant as needs:  # no caller left to pass a constant: the plain error
        raise CompileError(needs.message, needs.loc, needs.hint,
                           function=needs.function) from None


__all__ = ["InferenceSession", "Inferer", "TypedFunction", "infer_function"]
