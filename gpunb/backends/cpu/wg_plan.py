"""Can a kernel run as work-group loops? Decided once per compile from the typed contract.

Work-group loops (wg_lower.py) turn the code between two barriers into a loop over the block's
threads. That is only the GPU's meaning when every thread of the block reaches every barrier the
same number of times, in the same order: a barrier may sit at the kernel's top level, or inside
`if`/`while`/`for range()` whose condition (or bounds) is *block-uniform* - the same value in
every thread of the block. Uniformity is decided conservatively from the syntax and the types:
constants, arguments, globals, blockIdx/blockDim/gridDim, pure builtins of uniform operands and
locals whose every assignment is such a value at a uniform position. Memory (shared, global,
local) is never uniform. Anything else - a barrier after an early `return`, in a device
function, in a loop with `break`, a warp collective or grid sync - keeps the coroutine path,
with the reason recorded for `kernel.cpu_mode()`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from gpunb.compiler.builtins.cuda_intrinsics import Barrier, LaneId, SpecialRegister, WarpSize
from gpunb.compiler.builtins.groups import GroupSync
from gpunb.compiler.typed import (
    BuiltinCall,
    BuiltinValue,
    Cast,
    Feature,
    GpuCall,
    RangeSource,
    VarKind,
)
from gpunb.foundation import types as t

_PURE_BUILTINS = frozenset({"Len", "Abs", "MinMax", "Round", "DivMod", "Pow", "MathFunction",
                            "SharedArray", "ConstArrayLike"})
# cheap to compute again in a later region (no memory): threadIdx and cuda.grid as well
_THREAD_PURE_NODES = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.BoolOp)


class Fallback(Exception):
    """The kernel keeps the coroutine path; the message says why."""


@dataclass
class WorkGroupPlan:
    """What the lowering needs: which statements hold barriers, and where the final region is."""

    typed: object
    debug: bool
    barrier_nodes: dict = field(default_factory=dict)  # stmt -> contains a barrier
    final_stmts: frozenset = frozenset()  # top-level statements after the last barrier
    uniform_vars: frozenset = frozenset()  # kernel DEF Vars with a block-uniform value
    # DEF Var -> (expression, tuple index or None): recomputed in later regions, not stored
    rematerialise: dict = field(default_factory=dict)
    # phis of uniform names joined at a split if/while/for: one value per block, whose writes
    # in a region land in a shadow copied back after the region (wg_lower.region)
    block_phis: frozenset = frozenset()
    uniformity: object = None  # the Uniformity facts (for wg_lower's bounded regions)

    def has_barrier(self, node: ast.AST) -> bool:
        found = self.barrier_nodes.get(node)
        if found is None:
            found = any(is_barrier_call(self.typed, n) for n in _walk(node))
            self.barrier_nodes[node] = found
        return found


def plan_workgroup(typed, debug: bool) -> tuple[WorkGroupPlan | None, str]:
    """(plan, "") when the kernel can run as work-group loops, else (None, why not)."""
    features = typed.all_features()
    if Feature.WARP_BARRIER in features:
        return None, ("a warp collective (shfl/vote/match/syncwarp) is an implicit "
                      "synchronisation point of its warp")
    if Feature.GRID_SYNC in features:
        return None, "grid.sync() synchronises the whole grid"
    if Feature.CLUSTER in features:
        return None, ("the blocks of a thread-block cluster run together (cluster barriers, "
                      "distributed shared memory)")
    if Feature.ASYNC in features:
        return None, ("asynchronous copies, mbarrier waits and wgmma rendezvous suspend threads "
                      "(cp.async / mbarrier / TMA / wgmma)")
    for callee in _callees(typed):
        if callee.recursive:
            return None, (f"the recursive device function '{callee.name}' is a real call, "
                          "outside the block's thread loops")
        if Feature.BARRIER in callee.features:
            return None, f"a barrier inside the device function '{callee.name}'"
    plan = WorkGroupPlan(typed, debug)
    body = typed.source.tree.body
    last = max((k for k, s in enumerate(body) if plan.has_barrier(s)), default=-1)
    plan.final_stmts = frozenset(body[last + 1:])
    uniform = Uniformity(typed)
    try:
        _Checker(plan, uniform).block_sequence(body, top=True)
    except Fallback as why:
        return None, str(why)
    plan.uniform_vars = frozenset(v for v in typed.var_types if v.kind is VarKind.DEF and
                                  v.name in uniform.names)
    plan.rematerialise = uniform.thread_pure_defs(plan.uniform_vars)
    plan.uniformity = uniform
    plan.block_phis = frozenset(v for v in typed.var_types if v.kind is VarKind.PHI and
                                v.name in uniform.names and plan.has_barrier(v.site))
    return plan, ""


def is_barrier_call(typed, node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    call = typed.calls.get(node)
    if not isinstance(call, BuiltinCall):
        return False
    builtin = call.builtin
    return isinstance(builtin, Barrier) or (isinstance(builtin, GroupSync) and
                                            builtin.kind != "grid")


def barrier_statement(typed, stmt):
    """(call, target) when `stmt` is `syncthreads*(...)` or `name = syncthreads_*(p)`."""
    if isinstance(stmt, ast.Expr) and is_barrier_call(typed, stmt.value):
        return stmt.value, None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and is_barrier_call(typed, stmt.value):
        return stmt.value, stmt.targets[0]
    return None


def _walk(node):
    """ast.walk that does not enter inner functions and lambdas (those are callees)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, (ast.FunctionDef, ast.Lambda)):
                todo.append(child)


def _callees(typed):
    seen, todo = {}, list(typed.callees)
    while todo:
        c = todo.pop()
        if id(c) not in seen:
            seen[id(c)] = c
            todo.extend(c.callees)
    return list(seen.values())


def _raises(typed) -> bool:
    return bool(typed.raises) or any(c.raises for c in _callees(typed))


def _direct_jumps(body: list) -> list:
    """break/continue of this loop level (not of loops nested inside it)."""
    out, todo = [], list(body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Break, ast.Continue)):
            out.append(n)
        elif not isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))
        elif isinstance(n, (ast.For, ast.While)):
            todo.extend(n.orelse)  # a nested loop's else clause belongs to this level
    return out


class _Checker:
    def __init__(self, plan: WorkGroupPlan, uniform: Uniformity):
        self.plan, self.typed, self.uniform = plan, plan.typed, uniform

    def block_sequence(self, stmts: list, top: bool = False) -> None:
        for stmt in stmts:
            if not self.plan.has_barrier(stmt):
                self.thread_statement(stmt, final=top and stmt in self.plan.final_stmts)
            elif barrier_statement(self.typed, stmt) is not None:
                continue
            elif isinstance(stmt, ast.If):
                self.uniform_if(stmt)
            elif isinstance(stmt, ast.For):
                self.uniform_for(stmt)
            elif isinstance(stmt, ast.While):
                self.uniform_while(stmt)
            else:
                raise Fallback(f"a barrier inside a {type(stmt).__name__.lower()} statement "
                               f"(line {stmt.lineno}) that loop fission does not split")

    def thread_statement(self, stmt, final: bool) -> None:
        if final:
            return  # after the last barrier a thread may leave or end however it likes
        for n in _walk(stmt):
            if isinstance(n, ast.Return):
                raise Fallback(f"return at line {n.lineno} before a barrier: the threads that "
                               "leave early no longer reach it")
            if self.plan.debug:
                continue  # a debug raise records an error: the launch fails, the block stops
            if isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and
                                            isinstance(self.typed.calls.get(n), GpuCall) and
                                            _raises(self.typed.calls[n].callee)):
                raise Fallback(f"a raise (line {n.lineno}) before a barrier ends one thread")

    def _need_uniform(self, node, what: str, stmt) -> None:
        if not self.uniform.expr(node):
            raise Fallback(f"the {what} at line {stmt.lineno} (around a barrier) is not "
                           "provably the same in every thread of the block")

    def uniform_if(self, stmt: ast.If) -> None:
        known = self.typed.branches.get(stmt)
        if known is not None:
            self.block_sequence(stmt.body if known else stmt.orelse)
            return
        self._need_uniform(stmt.test, "if condition", stmt)
        self.block_sequence(stmt.body)
        self.block_sequence(stmt.orelse)

    def _loop_shape(self, stmt) -> None:
        if stmt.orelse:
            raise Fallback(f"a loop with an else clause around a barrier (line {stmt.lineno})")
        jumps = _direct_jumps(stmt.body)
        if jumps:
            raise Fallback(f"break/continue (line {jumps[0].lineno}) in a loop around a "
                           "barrier")

    def uniform_for(self, stmt: ast.For) -> None:
        self._loop_shape(stmt)
        if not self.uniform.range_loop(stmt):
            raise Fallback(f"the loop at line {stmt.lineno} (around a barrier) is not a range() "
                           "with bounds provably the same in every thread of the block")
        self.block_sequence(stmt.body)

    def uniform_while(self, stmt: ast.While) -> None:
        self._loop_shape(stmt)
        self._need_uniform(stmt.test, "while condition", stmt)
        self.block_sequence(stmt.body)


class Uniformity:
    """Which local names hold a block-uniform value: a greatest fixpoint over assignments."""

    def __init__(self, typed):
        self.typed = typed
        body = typed.source.tree.body
        self.assigned = set()
        walrus = set()
        for n in _walk(typed.source.tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                self.assigned.add(n.id)
            if isinstance(n, ast.NamedExpr):
                walrus.add(n.target.id)
        self.names = self.assigned - walrus
        while self._sweep(body, True):
            pass

    def _drop(self, target) -> bool:
        """Drop the names `target` binds (not those it only reads, as in `a[i] = ...`)."""
        names = {n.id for n in ast.walk(target)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & self.names
        self.names -= names
        return bool(names)

    def _sweep(self, stmts: list, ok: bool) -> bool:
        changed = False
        for s in stmts:
            if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                simple = all(isinstance(x, (ast.Name, ast.Subscript, ast.Attribute))
                             for x in targets)
                good = ok and simple and s.value is not None and self.expr(s.value)
                if isinstance(s, ast.AugAssign):
                    good = good and self.expr(s.target)
                if not good:
                    for x in targets:
                        changed |= self._drop(x)
            elif isinstance(s, ast.If):
                known = self.typed.branches.get(s)
                cond = ok and (known is not None or self.expr(s.test))
                changed |= self._sweep(s.body, cond) | self._sweep(s.orelse, cond)
            elif isinstance(s, (ast.For, ast.While)):
                jumps = any(isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise))
                            for b in s.body for n in _walk(b))
                if isinstance(s, ast.For):
                    inner = ok and not jumps and self.range_loop(s)
                    if not inner:
                        changed |= self._drop(s.target)
                else:
                    inner = ok and not jumps and self.expr(s.test)
                changed |= self._sweep(s.body, inner) | self._sweep(s.orelse, ok)
            elif not isinstance(s, (ast.Expr, ast.Pass, ast.Return, ast.Raise, ast.Break,
                                    ast.Continue, ast.Assert, ast.FunctionDef)):
                for n in _walk(s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        changed |= self._drop(n)
        return changed

    def range_loop(self, stmt: ast.For) -> bool:
        plan = self.typed.loops.get(stmt)
        if plan is None or plan.copies or plan.unrolled or plan.enumerate or \
                len(plan.sources) != 1 or not isinstance(plan.sources[0], RangeSource):
            return False
        src = plan.sources[0]
        return isinstance(stmt.target, ast.Name) and all(
            n is None or self.expr(n) for n in (src.start, src.stop, src.step))

    def expr(self, node) -> bool:
        typed = self.typed
        if node in typed.constants or isinstance(node, ast.Constant):
            return True
        call = typed.calls.get(node)
        if isinstance(call, BuiltinValue):  # threadIdx and laneid differ between threads
            b = call.builtin
            return not isinstance(b, LaneId) and not (isinstance(b, SpecialRegister) and
                                                      b.kind == "tid")
        if isinstance(node, ast.Name):
            return node.id in self.names or node.id not in self.assigned
        if isinstance(node, ast.Attribute):
            return self.expr(node.value)
        if isinstance(node, ast.Subscript):
            if isinstance(typed.types.get(node.value), t.Array):
                return False  # memory
            return self.expr(node.value) and self.expr(node.slice)
        if isinstance(node, ast.Call):
            if isinstance(call, Cast):
                return self.expr(call.arg)
            if isinstance(call, BuiltinCall):
                b = call.builtin
                pure = type(b).__name__ in _PURE_BUILTINS or \
                    (type(b).__name__ == "Grid" and b.size) or \
                    (type(b).__name__ == "NumpyUfunc" and not isinstance(call.result, t.Array))
                return pure and all(self.expr(a) for a in node.args) and \
                    all(self.expr(k.value) for k in node.keywords)
            return False
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
                             ast.Tuple)):
            return all(self.expr(c) for c in ast.iter_child_nodes(node)
                       if not isinstance(c, (ast.operator, ast.unaryop, ast.boolop,
                                             ast.cmpop, ast.expr_context)))
        return False

    def thread_pure_defs(self, uniform_vars: frozenset) -> dict:
        """DEF Vars assigned a cheap expression of thread ids, arguments, uniform values and
        other such Vars: a later region computes them again instead of keeping a per-thread
        copy (SSA: the inputs cannot have changed in between)."""
        typed, found = self.typed, {}
        assigns = [n for n in _walk(typed.source.tree) if isinstance(n, ast.Assign) and
                   len(n.targets) == 1]

        def pure(node) -> bool:
            call = typed.calls.get(node)
            if node in typed.constants or isinstance(node, ast.Constant):
                return True
            if isinstance(call, BuiltinValue):
                return isinstance(call.builtin, (SpecialRegister, WarpSize))
            if isinstance(node, ast.Name):
                var = typed.uses.get(node)
                if var is None:
                    return node.id not in self.assigned  # a global
                return var.kind is VarKind.PARAM or var in uniform_vars or var in found
            if isinstance(node, ast.Call):
                if isinstance(call, Cast):
                    return pure(call.arg)
                return isinstance(call, BuiltinCall) and type(call.builtin).__name__ == "Grid"
            if isinstance(node, ast.Attribute):
                return isinstance(typed.types.get(node.value), t.Array) and pure(node.value) \
                    and node.attr in ("size", "shape", "ndim")
            if isinstance(node, ast.Subscript):  # a.shape[k]
                return isinstance(node.value, ast.Attribute) and pure(node.value) and \
                    pure(node.slice)
            if isinstance(node, _THREAD_PURE_NODES):
                return all(pure(c) for c in ast.iter_child_nodes(node)
                           if not isinstance(c, (ast.operator, ast.unaryop, ast.boolop,
                                                 ast.cmpop, ast.expr_context)))
            return False

        changed = True
        while changed:
            changed = False
            for a in assigns:
                target = a.targets[0]
                names = [target] if isinstance(target, ast.Name) else (
                    target.elts if isinstance(target, ast.Tuple) and
                    all(isinstance(e, ast.Name) for e in target.elts) else [])
                for k, name in enumerate(names):
                    var = typed.defs.get(name)
                    if var is None or var in found or var in uniform_vars:
                        continue
                    if pure(a.value):
                        found[var] = (a.value, None if name is target else k)
                        changed = True
        return found

    def x_bound(self, stmt, rematerialise: dict):
        """For `if threadIdx.x < u:` / `if threadIdx.x == u:` (u uniform, no else): (op, u), so
        a region made of that statement alone loops over those threads only."""
        typed = self.typed
        if not isinstance(stmt, ast.If) or stmt.orelse or stmt in typed.branches:
            return None
        test = stmt.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
                isinstance(test.ops[0], (ast.Lt, ast.Eq))):
            return None
        left, right = test.left, test.comparators[0]
        if not (self._is_thread_x(left, rematerialise) and self.expr(right)):
            return None
        if not isinstance(typed.types.get(right), t.Integer):
            return None
        return ("<" if isinstance(test.ops[0], ast.Lt) else "=="), right

    def _is_thread_x(self, node, rematerialise: dict) -> bool:
        typed = self.typed
        if isinstance(node, ast.Name):
            found = rematerialise.get(typed.uses.get(node))
            return found is not None and found[1] is None and \
                self._is_thread_x(found[0], rematerialise)
        call = typed.calls.get(node)
        return isinstance(call, BuiltinValue) and isinstance(call.builtin, SpecialRegister) and \
            call.builtin.kind == "tid" and call.builtin.axis == "x"
