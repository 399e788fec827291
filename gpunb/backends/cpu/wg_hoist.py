"""Checks hoisted out of a work-group thread loop: one test per block instead of one per thread.

A region's thread loop (wg_lower.py) checks every array index against its extent (bounds checks
are on by default on the CPU target) and often starts with a tail guard (`if i < n:`). Both
stop LLVM from vectorising the loop: a failing check calls the error reporter, and a guarded
load becomes a masked vector load (slow on x86). Most such indices and guards are *affine* in
the thread's ids - `i = cuda.grid(1)`, `A[y, tx + k * TPB]`, `buf[tid + step]` - with
coefficients that are the same for the whole block (arguments, blockIdx, blockDim, the counter
of a uniform loop around barriers, constants) and, inside the region, counters of `range()`
loops with such bounds. An affine function over a box of thread ids and loop counters is
smallest and largest at the box's corners, so one test before the loop, with the bounds of
the box, proves every check and guard of the region for every thread of the block.

The region is then lowered twice (wg_lower.region): a fast version without those checks and
with those guards taken as true, run when the test holds, and the exact version (every check
per thread, so an error still names its thread and index) for the blocks where it does not - a
ragged last block, or a launch that really indexes out of bounds.

The test is exact: its arithmetic is 64-bit with overflow detection (an overflow fails the
test), indices and compared values must be int64 expressions of such leaves (no narrower
wrapping in between), and the extremes are required to be in range, so the values the fast
loop computes (64-bit, wrapping) equal the exact ones.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler.builtins.cuda_intrinsics import LocalArray, SharedArray, SpecialRegister
from gpunb.compiler.typed import BuiltinCall, BuiltinValue, IntIndex, RangeSource, VarKind
from gpunb.foundation import types as t

ONE = "1"  # the key of an affine form's constant part
LIMIT = 1 << 62  # larger constants are not taken (the test's sums must not overflow)
MAX_TERMS = 16


@dataclass
class Fact:
    """`form` (an affine form) within [0, extent) (a bounds check: `extent` is an int or
    (array Name node, axis)), or `form` op 0 (a guard: op in <, <=, >, >=)."""

    form: dict
    op: str
    extent: object = None
    sides: tuple = ()  # a guard's two compared forms (neither may wrap)


@dataclass
class HoistPlan:
    facts: list = field(default_factory=list)
    unchecked: set = field(default_factory=set)  # (Subscript node, axis) checked by the test
    true_tests: set = field(default_factory=set)  # if/ifexp tests the test proves true
    loops: dict = field(default_factory=dict)  # Var of a range() counter -> (start, stop, step)


class _Reject(Exception):
    """Not an affine form of known leaves."""


def _add(a: dict, b: dict, sign: int = 1) -> dict:
    out = {k: list(v) for k, v in a.items()}
    for k, terms in b.items():
        out.setdefault(k, []).extend((c * sign, f) for c, f in terms)
    if sum(len(v) for v in out.values()) > MAX_TERMS:
        raise _Reject
    return out


def _uniform_only(form: dict) -> bool:
    return set(form) <= {ONE}


def _scale(form: dict, by: dict) -> dict:
    """form * by, where `by` has no thread-dependent part."""
    out = {}
    for k, terms in form.items():
        out[k] = [(c1 * c2, f1 + f2) for c1, f1 in terms for c2, f2 in by.get(ONE, ())]
        if any(abs(c) >= LIMIT or len(f) > 3 for c, f in out[k]):
            raise _Reject
    if sum(len(v) for v in out.values()) > MAX_TERMS:
        raise _Reject
    return out


def _exact_int(ty) -> bool:
    """Leaf types whose values are exact in int64: signed up to 64 bits, unsigned up to 32."""
    return isinstance(ty, t.Integer) and (ty.signed or ty.bitwidth <= 32)


class Analysis:
    """Affine forms of a region's index and guard expressions (WorkGroupLowerer `low`)."""

    def __init__(self, low, rid: int):
        self.low, self.typed, self.rid = low, low.typed, rid
        self.wg = low.wg
        self.plan = HoistPlan()
        self.axes: list = []  # Vars of the enclosing range() loops of the region
        self._values = None

    # ---- leaves --------------------------------------------------------------------------------

    def available(self, var) -> bool:
        """A block-uniform variable whose value is set before this region and not changed in
        it (so the test before the thread loop reads the value the threads will read)."""
        if var is None:
            return False
        if var.kind is VarKind.PARAM:
            return True
        plan = self.wg.plan
        if var not in plan.uniform_vars and var not in plan.block_phis:
            return False
        written = self.wg.def_regions.get(var)
        return written is not None and self.rid not in written

    def _assigned_value(self, var):
        if self._values is None:
            self._values = {}
            for n in ast.walk(self.typed.source.tree):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                        isinstance(n.targets[0], ast.Name):
                    self._values[n.targets[0]] = n.value
        return self._values.get(var.site)

    def array_extent(self, base, axis: int):
        """The extent of `base` (an array expression) along `axis` as the test can know it: an
        int for a shared or local array of fixed shape, (Name, axis) for an argument."""
        if not isinstance(base, ast.Name):
            raise _Reject
        var = self.typed.uses.get(base)
        if var is None:
            raise _Reject
        if var.kind is VarKind.DEF:
            value = self._assigned_value(var)
            call = self.typed.calls.get(value) if value is not None else None
            if isinstance(call, BuiltinCall) and isinstance(call.builtin,
                                                            (SharedArray, LocalArray)):
                shape = call.data[0]
                if 0 in shape:
                    raise _Reject  # dynamic shared memory: its extent is the launch's
                return shape[axis]
        if var.kind is VarKind.PARAM:
            return (base, axis)
        raise _Reject

    def _array_param(self, node) -> bool:
        if not isinstance(node, ast.Name):
            return False
        var = self.typed.uses.get(node)
        return var is not None and var.kind is VarKind.PARAM and \
            isinstance(self.typed.types.get(node), t.Array)

    def uniform_leaf(self, node) -> bool:
        """Names, array sizes and shapes the test can evaluate before the loop, safely."""
        if isinstance(node, ast.Name):
            return self.available(self.typed.uses.get(node))
        if isinstance(node, ast.Attribute):
            return node.attr in ("size",) and self._array_param(node.value)
        if isinstance(node, ast.Subscript):
            value = node.value
            k = self.typed.constants.get(node.slice, getattr(node.slice, "value", None))
            return isinstance(value, ast.Attribute) and value.attr == "shape" and \
                self._array_param(value.value) and isinstance(k, int)
        if isinstance(node, ast.Call):
            call = self.typed.calls.get(node)
            return isinstance(call, BuiltinCall) and type(call.builtin).__name__ == "Len" and \
                len(node.args) == 1 and self._array_param(node.args[0])
        return False

    # ---- affine forms --------------------------------------------------------------------------

    def form(self, node) -> dict:
        typed = self.typed
        const = typed.constants.get(node, getattr(node, "value", None)
                                    if isinstance(node, ast.Constant) else None)
        if isinstance(const, bool) or (const is not None and not isinstance(const, int)):
            raise _Reject
        if isinstance(const, int):
            if abs(const) >= LIMIT:
                raise _Reject
            return {ONE: [(const, ())]}
        ty = typed.types.get(node)
        call = typed.calls.get(node)
        if isinstance(call, BuiltinValue) and isinstance(call.builtin, SpecialRegister):
            kind, axis = call.builtin.kind, call.builtin.axis
            if kind == "tid":
                return {("tid", axis): [(1, ())]}
            return {ONE: [(1, (("block", kind, axis),))]}
        if isinstance(node, ast.Name):
            var = typed.uses.get(node)
            if var in self.axes:
                return {("loop", var): [(1, ())]}
            known = self.wg.block_known.get(var)
            if known is not None and _exact_int(known[1]):
                return {ONE: [(1, (("ssa",) + known,))]}
            remat = self.wg.plan.rematerialise.get(var)
            if remat is not None:
                expr, index = remat
                if index is None:
                    return self.form(expr)
                return self.grid_item(expr, index)
            if _exact_int(ty) and self.uniform_leaf(node):
                return {ONE: [(1, (("node", node),))]}
            value = self._assigned_value(var) if var is not None and \
                var.kind is VarKind.DEF and var in self.wg.plan.uniform_vars else None
            if value is not None and _exact_int(ty) and ty.bitwidth == 64:
                return self.form(value)  # `stride = cuda.gridsize(1)` set in this region
            raise _Reject
        if self.uniform_leaf(node) and _exact_int(ty):
            return {ONE: [(1, (("node", node),))]}
        if ty != t.int64:
            raise _Reject  # narrower arithmetic wraps where the test's would not
        if isinstance(node, ast.Call) and isinstance(call, BuiltinCall) and \
                type(call.builtin).__name__ == "Grid" and call.data == 1:
            if call.builtin.size:  # cuda.gridsize(1)
                return {ONE: [(1, (("block", "ntid", "x"), ("block", "nctaid", "x")))]}
            return self.grid_axis("x")
        if isinstance(node, ast.BinOp):
            left, right = self.form(node.left), self.form(node.right)
            if isinstance(node.op, ast.Add):
                return _add(left, right)
            if isinstance(node.op, ast.Sub):
                return _add(left, right, -1)
            if isinstance(node.op, ast.Mult):
                if _uniform_only(right):
                    return _scale(left, right)
                if _uniform_only(left):
                    return _scale(right, left)
            raise _Reject
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return _add({}, self.form(node.operand), -1)
        raise _Reject

    def grid_axis(self, axis: str) -> dict:
        return {("tid", axis): [(1, ())],
                ONE: [(1, (("block", "ctaid", axis), ("block", "ntid", axis)))]}

    def grid_item(self, expr, index: int) -> dict:
        call = self.typed.calls.get(expr)
        if isinstance(call, BuiltinCall) and type(call.builtin).__name__ == "Grid" and \
                not call.builtin.size and 0 <= index < call.data:
            return self.grid_axis("xyz"[index])
        raise _Reject

    # ---- the region's statements ---------------------------------------------------------------

    def visit(self, node) -> None:
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.For):
            self.iter_loop(node)
            return
        if isinstance(node, (ast.If, ast.IfExp)) and node not in self.typed.branches:
            self.guard(node.test)
        if isinstance(node, ast.Subscript):
            self.subscript(node)
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def iter_loop(self, node: ast.For) -> None:
        """A range() loop's counter is one more axis of the test's box: [lowest start, highest
        stop - 1] counting up (a superset of its values; an empty range runs nothing to
        check), [lowest stop + 1, highest start] counting down. Start and stop may depend on
        the thread (a grid-stride loop); a step that is not a constant must be uniform, and is
        then required positive by the test."""
        loop = self.typed.loops.get(node)
        var = self.typed.defs.get(node.target) if isinstance(node.target, ast.Name) else None
        src = loop.sources[0] if loop is not None and len(loop.sources) == 1 else None
        axis, facts = None, []
        if isinstance(src, RangeSource) and var is not None and not loop.copies and \
                not loop.unrolled and not loop.enumerate and src.item.signed and \
                src.item.bitwidth == 64:
            try:
                start = {ONE: [(0, ())]} if src.start is None else self.form(src.start)
                stop = self.form(src.stop)
                if src.step_value is not None:
                    up = src.step_value > 0
                else:
                    up = True
                    step = {ONE: [(1, ())]} if src.step is None else self.form(src.step)
                    if not _uniform_only(step):
                        raise _Reject
                    facts.append(Fact(step, ">", sides=(step,)))
                axis = (start, stop, up)
            except _Reject:
                axis = None
        self.visit(node.iter)
        if axis is not None:
            self.plan.loops[var] = axis
            self.plan.facts.extend(facts)
            self.axes.append(var)
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        if axis is not None:
            self.axes.pop()

    def guard(self, test) -> None:
        parts = test.values if isinstance(test, ast.BoolOp) and \
            isinstance(test.op, ast.And) else [test]
        facts = []
        try:
            for part in parts:
                if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
                    raise _Reject
                op = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}.get(
                    type(part.ops[0]))
                if op is None:
                    raise _Reject
                right = part.comparators[0]
                for side in (part.left, right):
                    if not _exact_int(self.typed.types.get(side)):
                        raise _Reject
                left, right = self.form(part.left), self.form(right)
                facts.append(Fact(_add(left, right, -1), op, sides=(left, right)))
        except _Reject:
            return
        self.plan.facts.extend(facts)
        self.plan.true_tests.add(test)

    def subscript(self, node: ast.Subscript) -> None:
        index = self.typed.indexes.get(node)
        if index is None or not isinstance(self.typed.types.get(node.value), t.Array):
            return
        for axis, part in enumerate(index.parts):
            if not isinstance(part, IntIndex) or part.position is not None or \
                    not _exact_int(part.type):
                continue
            try:
                fact = Fact(self.form(part.node), "in", self.array_extent(node.value, axis))
            except _Reject:
                continue
            self.plan.facts.append(fact)
            self.plan.unchecked.add((node, axis))


def plan_region(low, items: list, rid: int) -> HoistPlan | None:
    """What one test before region `rid`'s thread loop can prove, or None for nothing."""
    analysis = Analysis(low, rid)
    for item in items:
        if isinstance(item, ast.AST):
            analysis.visit(item)
    plan = analysis.plan
    return plan if plan.facts else None


# ---- the test, emitted at block level ----------------------------------------------------------

class _Checked:
    """64-bit arithmetic that remembers whether anything overflowed.

    Operations whose result is known are not emitted (x * 1, x + 0, x * 0, two constants in
    range) and an operation already emitted on the same operands is reused: the forms of a
    region's facts share their coefficients (the `i` of `x[i]`, `y[i]` and `out[i]`), and the
    test emitted for each of them again was IR that LLVM's -O3 spent time deleting (saxpy's
    test: 44 checked operations, 13 now; its module 859 -> 735 lines). The same i1."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b
        self.overflow = ir.Constant(dm.i1, 0)
        self.done: dict = {}  # (op, a, c) -> the result emitted for it
        module = b.module
        self.fns = {}
        for op in ("sadd", "ssub", "smul"):
            name = f"llvm.{op}.with.overflow.i64"
            fn = module.globals.get(name)
            if fn is None:
                fn = ir.Function(module, ir.FunctionType(
                    ir.LiteralStructType([dm.i64, dm.i1]), [dm.i64, dm.i64]), name)
            self.fns[op] = fn

    def _op(self, op: str, a, c):
        known = _known_result(op, a, c)
        if known is not None:
            return known
        key = (op, a, c)
        found = self.done.get(key)
        if found is not None:
            return found
        pair = self.b.call(self.fns[op], [a, c])
        self.overflow = self.b.or_(self.overflow, self.b.extract_value(pair, 1))
        result = self.done[key] = self.b.extract_value(pair, 0)
        return result

    def add(self, a, c):
        return self._op("sadd", a, c)

    def sub(self, a, c):
        return self._op("ssub", a, c)

    def mul(self, a, c):
        return self._op("smul", a, c)


def _i64(v: int):
    return ir.Constant(dm.i64, v)


_I64_RANGE = range(-(1 << 63), 1 << 63)
_EXACT = {"sadd": lambda x, y: x + y, "ssub": lambda x, y: x - y, "smul": lambda x, y: x * y}


def _constant_of(value) -> int | None:
    if isinstance(value, ir.Constant) and isinstance(value.constant, int):
        return value.constant
    return None


def _known_result(op: str, a, c):
    """The result of a checked op that cannot overflow and needs no instruction, else None."""
    x, y = _constant_of(a), _constant_of(c)
    if x is not None and y is not None:
        exact = _EXACT[op](x, y)
        return _i64(exact) if exact in _I64_RANGE else None  # (an overflow: emitted, fails)
    if op == "smul":
        if x == 1 or y == 0:
            return c
        if y == 1 or x == 0:
            return a
        return None
    if y == 0:  # x + 0, x - 0
        return a
    if op == "sadd" and x == 0:
        return c
    return None


class Precheck:
    """Emits the block-level test of a HoistPlan: an i1, true when every fact holds."""

    def __init__(self, low, plan: HoistPlan, box: dict):
        self.low, self.plan, self.b = low, plan, low.builder
        self.box = dict(box)  # key -> (lowest, highest) i64 values
        self.ar = _Checked(self.b)
        self.leaves: dict = {}

    def leaf(self, factor):
        found = self.leaves.get(factor)
        if found is not None:
            return found
        b, low = self.b, self.low
        kind = factor[0]
        if kind == "block":
            value = b.zext(low.wg.block_values[(factor[1], factor[2])], dm.i64)
        elif kind == "ssa":
            value = _widen(b, factor[1], factor[2])
        else:
            node = factor[1]
            value = _widen(b, low.expr(node), low.type_of(node))
        self.leaves[factor] = value
        return value

    def coefficient(self, terms: list):
        total = _i64(0)
        for const, factors in terms:
            value = _i64(const)
            for f in factors:
                value = self.ar.mul(value, self.leaf(f))
            total = self.ar.add(total, value)
        return total

    def extremes(self, form: dict):
        """(lowest, highest) of the form over the box."""
        b = self.b
        lo = hi = self.coefficient(form.get(ONE, []))
        for key, terms in form.items():
            if key == ONE:
                continue
            c = self.coefficient(terms)
            k_lo, k_hi = self.box[key]
            a, d = self.ar.mul(c, k_lo), self.ar.mul(c, k_hi)
            smaller = b.icmp_signed("<", a, d)
            lo = self.ar.add(lo, b.select(smaller, a, d))
            hi = self.ar.add(hi, b.select(smaller, d, a))
        return lo, hi

    def loop_bounds(self) -> None:
        """The box of each range() counter (Analysis.iter_loop), outer loops first."""
        one = _i64(1)
        for var, (start, stop, up) in self.plan.loops.items():
            start_lo, start_hi = self.extremes(start)
            stop_lo, stop_hi = self.extremes(stop)
            if up:
                self.box[("loop", var)] = (start_lo, self.ar.sub(stop_hi, one))
            else:
                self.box[("loop", var)] = (self.ar.add(stop_lo, one), start_hi)

    def emit(self):
        b = self.b
        self.loop_bounds()
        ok = ir.Constant(dm.i1, 1)
        for fact in self.plan.facts:
            lo, hi = self.extremes(fact.form)
            if fact.op == "in":
                extent = fact.extent
                if isinstance(extent, int):
                    extent = _i64(extent)
                else:
                    arr = self.low.expr(extent[0])
                    extent = b.extract_value(arr, [1, extent[1]])
                holds = b.and_(b.icmp_signed(">=", lo, _i64(0)),
                               b.icmp_signed("<", hi, extent))
            else:
                # D = left - right: D < 0 everywhere when its largest value is, and so on
                extreme = hi if fact.op in ("<", "<=") else lo
                holds = b.icmp_signed(fact.op, extreme, _i64(0))
                for side in fact.sides:  # the compared values must not have wrapped
                    s_lo, s_hi = self.extremes(side)
                    holds = b.and_(holds, b.and_(b.icmp_signed(">", s_lo, _i64(-LIMIT)),
                                                 b.icmp_signed("<", s_hi, _i64(LIMIT))))
            ok = b.and_(ok, holds)
        return b.and_(ok, b.not_(self.ar.overflow))


def _widen(b: ir.IRBuilder, value, ty):
    if ty.bitwidth < 64:
        return (b.sext if ty.signed else b.zext)(value, dm.i64)
    return value
