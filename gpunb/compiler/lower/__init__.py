"""Typed AST -> llvmlite IR, target-neutral: everything target-specific goes through a Target.

Lowering reads only the frozen TypedFunction (compiler/typed.py). FunctionLowerer is composed of
one mixin per kind of syntax; core.py holds the SSA-variable machinery. Targets that cannot call
across suspend points (the CPU target's coroutine threads) inline GPU-function calls; the CUDA
target emits real device functions.
"""

from __future__ import annotations

from gpunb.compiler.lower import module
from gpunb.compiler.lower.calls import CallLowering
from gpunb.compiler.lower.core import LoweringCore
from gpunb.compiler.lower.expressions import ExpressionLowering
from gpunb.compiler.lower.indexing import IndexLowering
from gpunb.compiler.lower.loops import LoopLowering
from gpunb.compiler.lower.statements import StatementLowering
from gpunb.compiler.typed import TypedFunction


class FunctionLowerer(StatementLowering, LoopLowering, ExpressionLowering, IndexLowering,
                      CallLowering, LoweringCore):
    """Lowers one TypedFunction (see the mixins for each part)."""


class ModuleBuilder(module.ModuleBuilder):
    """A module builder whose functions are lowered by FunctionLowerer."""

    def __init__(self, target, options: dict, name: str):
        super().__init__(target, options, name, FunctionLowerer)


__all__ = ["FunctionLowerer", "ModuleBuilder", "TypedFunction"]
