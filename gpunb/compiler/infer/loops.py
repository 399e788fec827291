"""Typing of loops: while, and for over range/enumerate/zip/arrays/tuples, as one LoopPlan.

The iterator is parsed once here into a frozen LoopPlan (its sources: ranges and arrays, advanced
in lock step; enumerate's start; or an unrolled tuple); lowering reads the plan. The SSA side of
a loop: names assigned in the body get header phis (entry plus back edges), and after the loop
the normal exit (with its else clause) and every break join.
"""

from __future__ import annotations

import ast

from gpunb.compiler import promotion, scopes
from gpunb.compiler.ast_copy import copy_tree
from gpunb.compiler.folding import never_runs, runs_forever
from gpunb.compiler.kernel_api import intrinsic_name
from gpunb.compiler.typed import (
    ArraySource,
    EnumerateSource,
    JoinKind,
    LoopPlan,
    RangeSource,
    ZipSource,
)
from gpunb.compiler.values import NotConstant, const_eval
from gpunb.foundation import types as t


class LoopTyping:
    def visit_While(self, node: ast.While) -> bool:
        if never_runs(node):
            return self.visit_body(node.orelse)
        self.enter_loop(node, self.assigned_in(node.body))
        self.condition(node.test)
        header = dict(self.env)
        if not self.visit_body(node.body):
            self.back_edge(self.env)
        frame = self.leave_loop()
        return self.loop_exit(node, header, frame, normal_exit=not runs_forever(node))

    def visit_For(self, node: ast.For) -> bool:
        if self.is_literal_unroll(node.iter):
            return self.literal_unroll_loop(node)
        plan = self.loop_plan(node)
        self.loops[node] = plan
        assigned = self.assigned_in(node.body) | self.assigned_in([node.target])
        self.enter_loop(node, assigned)
        header = dict(self.env)
        self.assign(node.target, plan.item if not plan.enumerate else
                    t.Tuple((t.int64, plan.item)), None)
        if not self.visit_body(node.body):
            self.back_edge(self.env)
        frame = self.leave_loop()
        return self.loop_exit(node, header, frame, normal_exit=True)

    # ---- literal_unroll -------------------------------------------------------------------

    def is_literal_unroll(self, it) -> bool:
        if not isinstance(it, ast.Call):
            return False
        callee = self.callee_object(it.func)
        return intrinsic_name(callee) == "cuda.literal_unroll" or (
            getattr(callee, "__name__", None) == "literal_unroll" and
            str(getattr(callee, "__module__", "")).startswith("numba"))

    def literal_unroll_loop(self, node: ast.For) -> bool:
        """for x in literal_unroll(tup): the body once per item, each copy typed with its own
        item's type (numba's literal_unroll: a tuple whose items differ in type). `continue`
        goes to the next copy, `break` past the last."""
        it = node.iter
        if len(it.args) != 1 or it.keywords:
            raise self.error(it, "literal_unroll() takes one tuple")
        seq = self.expr(it.args[0])
        if not isinstance(seq, t.Tuple) or not seq.items:
            raise self.error(it.args[0], f"literal_unroll() needs a non-empty tuple, got {seq}",
                             "loop over a tuple of values, e.g. literal_unroll((a, 1.5, b))")
        copies = self.unroll_copies(node, len(seq.items))
        self.loops[node] = LoopPlan((), seq, tuple_seq=it.args[0], copies=copies)
        values = self.unrolled_values(it.args[0], len(seq.items))
        frame = _unrolled_frame(node)
        self.loop_frames.append(frame)
        ends = [self.env]
        for k, ((target, body), item) in enumerate(zip(copies, seq.items, strict=True)):
            start = self.merge(body[0], JoinKind.HEADER, ends + frame.continues)
            frame.continues = []
            if start is None:
                break
            self.env = start
            self.assign(target, item, None)
            if values is not None and isinstance(target, ast.Name):
                self.var_constants[self.defs[target]] = values[k]
                self.exact_constants.add(self.defs[target])
            ends = [None if self.visit_body(body) else self.env]
        self.loop_frames.pop()
        normal = self.merge(node, JoinKind.HEADER, ends + frame.continues)
        exits = list(frame.breaks)
        if normal is not None:
            self.env = normal
            if not self.visit_body(node.orelse):
                exits.append(self.env)
        merged = self.merge(node, JoinKind.EXIT, exits)
        if merged is None:
            return True
        self.env = merged
        return False

    def unrolled_values(self, seq_node, n: int) -> tuple | None:
        """The items of literal_unroll's tuple when all are numbers known at compile time
        (`for p in literal_unroll(PANELS)` over a global tuple, or a literal one): each copy's
        target is then a constant, as a literal is in numba, so conditions on it
        (`if p * 8 < WIDTH:`) prune their dead branch before typing, copy by copy."""
        try:
            values = const_eval(seq_node, self.resolve_constant)
        except NotConstant:
            return None
        if not isinstance(values, tuple) or len(values) != n or not all(
                isinstance(v, (bool, int, float)) for v in values):
            return None
        return values

    def unroll_copies(self, node: ast.For, n: int) -> tuple:
        """n copies of (target, body), made once per loop and kept across passes."""
        found = self.unrolled.get(node)
        if found is None or len(found) != n:
            found = self.unrolled[node] = tuple(
                (copy_tree(node.target), copy_tree(node.body))
                for _ in range(n))
        return found

    def loop_exit(self, node, header: dict, frame, normal_exit: bool) -> bool:
        """After a loop: the else clause runs from the header's normal exit; it and every break
        join. True when nothing continues after the loop (`while True` without break)."""
        ends = list(frame.breaks)
        if normal_exit:
            self.env = dict(header)
            if not self.visit_body(node.orelse):
                ends.append(self.env)
        merged = self.merge(node, JoinKind.EXIT, ends)
        if merged is None:
            self.env = dict(header)
            return True
        self.env = merged
        return False

    def assigned_in(self, body: list) -> set:
        """Local names a statement list assigns (not inside nested functions' own scopes)."""
        names = set()
        for stmt in body:
            for node in scopes.walk_scope_of(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
        return names & self.locals

    # ---- the plan ------------------------------------------------------------------------------

    def loop_plan(self, node: ast.For) -> LoopPlan:
        it = node.iter
        callee = self.callee_object(it.func) if isinstance(it, ast.Call) else None
        if callee is enumerate and self.builds_tuple(it):  # over a tuple: unrolled
            start = self.enumerate_start(it)
            if not (isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2):
                raise self.error(node.target, "write `for i, x in enumerate(...)`")
            _, item = self.iteration(it.args[0])
            return LoopPlan((), item, enumerate=True, enumerate_start=start,
                            tuple_seq=it.args[0])
        if callee is not None and callee not in (range, zip, enumerate):
            seq = self.expr(it)
            return self.sequence_plan(it, seq)
        sources, item = self.iteration(it)
        if sources is None:
            return LoopPlan((), item, tuple_seq=it)
        return LoopPlan(sources, item)

    def iteration(self, it) -> tuple:
        """(sources, item type) of an iterable; (None, item) for a tuple (unrolled)."""
        callee = self.callee_object(it.func) if isinstance(it, ast.Call) else None
        if callee in (range, zip, enumerate) and not self.builds_tuple(it):
            source = self.loop_source(it)
            return (source,), source.item
        seq = self.expr(it)
        if isinstance(seq, t.Tuple):
            return None, self.tuple_item(it, seq)
        plan = self.sequence_plan(it, seq)
        return plan.sources, plan.item

    def sequence_plan(self, it, seq: t.Type) -> LoopPlan:
        if isinstance(seq, t.Tuple):
            return LoopPlan((), self.tuple_item(it, seq), tuple_seq=it)
        if isinstance(seq, t.Array) and seq.ndim >= 1:
            item = array_item_type(seq)
            return LoopPlan((ArraySource(it, item),), item)
        raise self.error(it, f"cannot loop over {seq}",
                         "loop over range(...), enumerate/zip, a tuple or a 1-d array")

    def tuple_item(self, it, seq: t.Tuple) -> t.Type:
        if not seq.items:
            raise self.error(it, "cannot iterate over an empty tuple")
        item = seq.items[0]
        for other in seq.items[1:]:
            item = promotion.join(item, other)
            if item is None:
                raise self.error(it, "loop over a tuple of mixed types",
                                 "only tuples of one type can be looped over")
        return item

    def loop_source(self, arg):
        """What a loop (or a zip or enumerate in it) iterates in lock step: a range, an array
        (its elements, or its rows as views), or enumerate/zip of those, nested as numba
        allows, e.g. zip(range(n), enumerate(a)) yields (i, (k, a[k]))."""
        callee = self.callee_object(arg.func) if isinstance(arg, ast.Call) else None
        if callee is range:
            return self.range_source(arg)
        if callee is enumerate and not self.builds_tuple(arg):
            start = self.enumerate_start(arg)
            inner = self.loop_source(arg.args[0])
            return EnumerateSource(inner, start, self.record(arg, t.Tuple((t.int64, inner.item))))
        if callee is zip and not self.builds_tuple(arg):
            if arg.keywords or not arg.args:
                raise self.error(arg, "zip() in GPU code takes iterables and no keywords",
                                 "zip ranges, arrays, enumerate(...) or zip(...) of those")
            sources = tuple(self.loop_source(a) for a in arg.args)
            return ZipSource(sources, self.record(arg, t.Tuple(tuple(s.item for s in sources))))
        found = self.expr(arg)
        if not (isinstance(found, t.Array) and found.ndim >= 1):
            raise self.error(arg, f"cannot iterate over {found} here",
                             "zip and enumerate in GPU code take range(...), arrays, and "
                             "enumerate(...)/zip(...) of those (or tuples only, unrolled)")
        return ArraySource(arg, array_item_type(found))

    def enumerate_start(self, it: ast.Call) -> ast.AST | None:
        """enumerate's start argument (None: 0), checked to be an integer."""
        if not it.args or len(it.args) > 2 or any(k.arg != "start" for k in it.keywords) or \
                (len(it.args) == 2 and it.keywords):
            raise self.error(it, "enumerate() takes an iterable and an optional start")
        start = it.args[1] if len(it.args) > 1 else next(
            (k.value for k in it.keywords if k.arg == "start"), None)
        if start is not None and not isinstance(self.expr(start), (t.Integer, t.Boolean)):
            raise self.error(start, "enumerate's start must be an integer")
        return start

    def builds_tuple(self, it) -> bool:
        """Whether an iterable is a tuple at compile time: a tuple, or zip()/enumerate() of
        tuples only (built by the zip/enumerate builtins, and a loop over it unrolled)."""
        callee = self.callee_object(it.func) if isinstance(it, ast.Call) else None
        if callee is range:
            return False
        if callee is zip:
            return all(self.builds_tuple(a) for a in it.args)
        if callee is enumerate:
            return bool(it.args) and self.builds_tuple(it.args[0])
        return isinstance(self.expr(it), t.Tuple)

    def range_source(self, call: ast.Call) -> RangeSource:
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.error(call, "range() takes 1 to 3 positional arguments")
        types = [self.expr(a) for a in call.args]
        for arg, found in zip(call.args, types, strict=True):
            # numba's Range template converts even floats (unsafely, truncating); not complex
            if not t.is_number(found) or isinstance(found, t.Complex):
                raise self.error(arg, f"range() needs integers, got {found}",
                                 "convert with int(...)")
        literals = tuple(self.int_literal(a) for a in call.args)
        item = promotion.range_type(tuple(types), literals)
        self.record(call, t.Tuple((item,)))
        args = list(call.args)
        start, stop, step = (None, args[0], None) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else None)
        step_value = None
        if step is not None:
            try:
                step_value = const_eval(step, self.resolve_constant)
            except NotConstant:
                step_value = None
            if step_value == 0:
                raise self.error(step, "range() step must not be zero")
        return RangeSource(start, stop, step, item,
                           step_value if isinstance(step_value, int) else None)

    def int_literal(self, node) -> int | None:
        """The value of an integer literal argument (numba types those as Literal[int])."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        return None


def _unrolled_frame(node):
    from gpunb.compiler.infer.core import _LoopFrame

    return _LoopFrame(node, {}, set(), unrolled=True)


def array_item_type(arr: t.Array) -> t.Type:
    """What looping over an array yields: its elements, or views of its rows (numba's iter)."""
    if arr.ndim == 1:
        return arr.dtype
    return arr.derived(arr.ndim - 1, "C" if arr.layout == "C" else "A")
