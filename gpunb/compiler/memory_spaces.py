"""Which memory an array expression is a view of, read from a function's SSA (its uses, its
definitions and the phis where branches join): a cuda.shared.array, cuda.local.array or
cuda.const.array_like, a kernel's array argument (global memory), through indexing, `.T`,
reshape/view and assignments to names. Inference asks whether a returned view may be of the
function's own local array; lowering asks which one space a view provably lies in."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

ALLOCATIONS = {"cuda.shared.array": "shared", "cuda.local.array": "local",
               "cuda.const.array_like": "const"}
_VIEWS = ("array.reshape", "array.view")  # methods whose result is a view of their array
_MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Origin:
    """One way a view can come about: its memory space (None: not known here) and the
    allocation call behind it (None for an argument or an unknown)."""

    space: str | None
    allocation: ast.AST | None = None


UNKNOWN = Origin(None)


class Views:
    """The facts the walk reads: call facts by node, the Var each Name load reads, the inputs
    of each phi, and whether the function is a kernel (its array parameters are global)."""

    def __init__(self, calls, uses, phi_inputs: Callable, tree: ast.AST, is_kernel: bool):
        self.calls, self.uses, self.phi_inputs = calls, uses, phi_inputs
        self.is_kernel = is_kernel
        self.assigned = {target: stmt.value for stmt in ast.walk(tree)
                         if isinstance(stmt, ast.Assign) for target in stmt.targets
                         if isinstance(target, ast.Name)}  # `x = value`, `x = y = value`

    @classmethod
    def of_typed(cls, typed) -> Views:
        """A typed function's (lowering): phi inputs from its flows."""
        inputs: dict = {}
        for var, phis in typed.flows.items():
            for phi in phis:
                inputs.setdefault(phi, []).append(var)
        return cls(typed.calls, typed.uses, lambda phi: inputs.get(phi, ()),
                   typed.source.tree, typed.is_kernel)

    @classmethod
    def of_inferer(cls, inf) -> Views:
        """A function being inferred: what its current pass has typed so far."""
        return cls(inf.calls, inf.uses, lambda phi: inf.phi_inputs.get(phi, ()),
                   inf.source.tree, inf.is_kernel)

    def origins(self, node, depth: int = 0, seen: frozenset = frozenset()) -> frozenset:
        """Every Origin the array expression `node` may have (UNKNOWN among them when some
        path is not known)."""
        from gpunb.compiler.typed import BuiltinCall

        if depth > _MAX_DEPTH:
            return frozenset({UNKNOWN})
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Attribute) and \
                node.attr == "T":
            return self.origins(node.value, depth + 1, seen)
        if isinstance(node, ast.Call):
            call = self.calls.get(node)
            name = getattr(call.builtin, "name", "") if isinstance(call, BuiltinCall) else ""
            if name in ALLOCATIONS:
                return frozenset({Origin(ALLOCATIONS[name], node)})
            if name in _VIEWS and isinstance(node.func, ast.Attribute):
                return self.origins(node.func.value, depth + 1, seen)
            return frozenset({UNKNOWN})
        var = self.uses.get(node) if isinstance(node, ast.Name) else None
        return frozenset({UNKNOWN}) if var is None else self.var_origins(var, depth, seen)

    def var_origins(self, var, depth: int, seen: frozenset) -> frozenset:
        """A variable's: a parameter's (global in a kernel), an assignment's value's, or the
        union of a phi's inputs' (a name assigned in two branches)."""
        from gpunb.compiler.typed import VarKind

        if var in seen:  # a loop's phi reaching itself: its other inputs tell
            return frozenset()
        if var.kind is VarKind.PARAM:
            return frozenset({Origin("global" if self.is_kernel else None)})
        if var.kind is VarKind.PHI:
            inputs = list(self.phi_inputs(var))
            if not inputs:
                return frozenset({UNKNOWN})
            return frozenset().union(*(self.var_origins(v, depth + 1, seen | {var})
                                       for v in inputs))
        value = self.assigned.get(var.site)
        return frozenset({UNKNOWN}) if value is None else \
            self.origins(value, depth + 1, seen | {var})


def one_space(origins: frozenset) -> str | None:
    """The memory space every origin agrees on, else None."""
    spaces = {o.space for o in origins}
    return spaces.pop() if len(spaces) == 1 else None


def local_allocation(origins: frozenset) -> ast.AST | None:
    """The cuda.local.array call behind some origin (the first by line), else None."""
    found = [o.allocation for o in origins if o.space == "local" and o.allocation is not None]
    return min(found, key=lambda n: (n.lineno, n.col_offset)) if found else None
