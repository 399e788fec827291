"""breakpoint() in GPU code: a stop for the CPU target's debugger (gpunb.debugger).

Typed as a call returning None that needs the `breakpoint` feature; the target lowers it: the CPU
target's debug variant stops the calling thread there, the CUDA target refuses it with a
CompileError that says to run on the CPU target. (`PYTHONBREAKPOINT=0` is read at launch time by
the debugger, which then runs the launch without stopping.)
"""

from __future__ import annotations

from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Feature
from gpunb.foundation import types as t


class Breakpoint(Builtin):
    name = "breakpoint"

    def type_call(self, inf, node, argtypes, kwtypes):
        if node.args or node.keywords:
            raise inf.error(node, "breakpoint() in GPU code takes no arguments",
                            "write `breakpoint()`; a condition goes in an if around it, e.g. "
                            "`if cuda.grid(1) == 37: breakpoint()`")
        inf.require(Feature.BREAKPOINT)
        return t.none

    def lower_call(self, low, node, call):
        low.target.debug_break(low, node)


BUILTINS = {"builtins.breakpoint": Breakpoint()}
