"""Typing of statements: assignments, if, return, raise/assert, break/continue.

Each `visit_*` returns True when the statement always leaves its block (return, raise, break,
continue, or an if whose branches all leave), so that what follows is neither typed nor lowered.
"""

from __future__ import annotations

import ast
import copy
import operator

import numpy as np

from gpunb.compiler import exceptions, promotion, scopes
from gpunb.compiler.hints import READONLY_HINT
from gpunb.compiler.memory_spaces import Views, local_allocation
from gpunb.compiler.typed import InplaceCall, JoinKind, RaiseSite
from gpunb.compiler.values import NotConstant, PyValue, const_eval
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import Fragment

_HAS_TRUTH = (t.Boolean, t.Integer, t.Float, t.Complex, t.NoneType)
_STATEMENT_HINTS = {
    "Try": "try/except is not supported in GPU code",
    "With": "with-blocks are not supported in GPU code",
    "ClassDef": "classes cannot be defined in GPU code",
    "Global": "GPU code cannot rebind globals; pass values as arguments",
    "Nonlocal": "inner functions may read the enclosing function's variables but not assign "
                "them (numba refuses nonlocal too); return the new value instead",
    "Delete": "del is not supported in GPU code",
    "Import": "import modules at top level, outside GPU functions",
    "ImportFrom": "import modules at top level, outside GPU functions",
    "Match": "match is not supported in GPU code; use if/elif",
    "AsyncFor": "async is not available in GPU code",
    "AsyncWith": "async is not available in GPU code",
    "AsyncFunctionDef": "async is not available in GPU code",
    "TypeAlias": "declare types at top level, outside GPU functions",
}


class StatementTyping:
    """visit_* for every statement kind; an unsupported one falls into generic_visit."""

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            return self.generic_visit(node)
        return method(node)

    def generic_visit(self, node):
        kind = type(node).__name__
        raise self.error(node, f"unsupported statement: {kind}",
                         _STATEMENT_HINTS.get(kind, "this Python statement has no GPU meaning "
                                              "in gpunb"))

    def visit_Expr(self, node: ast.Expr) -> bool:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return False  # a docstring
        if isinstance(node.value, ast.Call):
            self.keep_optional.add(node.value)  # `f(x)` as a statement: its result unused
        self.expr(node.value)
        return False

    def visit_Pass(self, node) -> bool:
        return False

    def visit_Assert(self, node: ast.Assert) -> bool:
        """numba.cuda compiles assert only with debug=True (then a failure raises
        AssertionError on the host); without debug it is typed and compiles to nothing."""
        self.condition(node.test)
        if self.options.get("debug"):
            self.raises[node] = RaiseSite("AssertionError",
                                          self.checked_raise(node, exceptions.assert_message))
        elif node.msg is not None and not isinstance(node.msg, ast.Constant):
            self.expr(node.msg)
        return False

    def visit_Raise(self, node: ast.Raise) -> bool:
        """`raise Cls` / `raise Cls("constant")`: ends the thread (reported with debug=True)."""
        self.raises[node] = RaiseSite(*self.checked_raise(node, exceptions.raise_target))
        return True

    def checked_raise(self, node, read):
        try:
            return read(node, self.resolve_constant)
        except exceptions.BadRaise as bad:
            raise self.error(*bad.args) from None

    def visit_Break(self, node) -> bool:
        if not self.loop_frames:
            raise self.error(node, "'break' outside a loop")
        self.loop_frames[-1].breaks.append(dict(self.env))
        return True

    def visit_Continue(self, node) -> bool:
        if not self.loop_frames:
            raise self.error(node, "'continue' outside a loop")
        frame = self.loop_frames[-1]
        if frame.unrolled:  # literal_unroll: on to the next copy of the body
            frame.continues.append(dict(self.env))
        else:
            self.back_edge(dict(self.env))
        return True

    def visit_FunctionDef(self, node: ast.FunctionDef) -> bool:
        self.defined_inner.add(node.name)  # compiled at its calls (inner.call)
        return False

    def visit_Return(self, node: ast.Return) -> bool:
        if isinstance(node.value, (ast.Name, ast.Call)):
            self.keep_optional.add(node.value)  # `return x` returns an Optional as it is
        rt = t.none if node.value is None else self.expr(node.value)
        if isinstance(rt, t.Array):  # a view of an argument, shared or constant memory
            # on any path: a view that may be of the local array is refused
            local = local_allocation(Views.of_inferer(self).origins(node.value))
            if local is not None:
                raise self.error(node.value, "a GPU function cannot return a view of its own "
                                 f"cuda.local.array (line {self.source.loc(local).line}): "
                                 "that memory is this call's, gone when it returns",
                                 "make the local array in the caller and pass it in")
        if isinstance(rt, PyValue):
            raise self.error(node, f"cannot return {rt}")
        if _holds_fragment(rt):  # its storage is this frame's: gone once a real call returns
            raise self.error(node, f"GPU functions cannot return a wmma fragment ({rt}): it "
                             "refers to storage in this function's frame",
                             "make the fragment in the caller and pass it in: a fragment "
                             "argument is passed by reference, so the callee's fill, load and "
                             "mma_sync update the caller's fragment")
        self.return_types.append((node, rt))
        return True

    # ---- assignments ---------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> bool:
        if scopes.is_lambda_binding(node):
            self.defined_inner.add(node.targets[0].id)
            return False
        if isinstance(node.value, (ast.Name, ast.Call)) and \
                all(isinstance(x, ast.Name) for x in node.targets):
            self.keep_optional.add(node.value)  # `y = x`, `y = f()` keep an Optional as it is
        vt = self.expr(node.value)
        for target in node.targets:
            self.assign(target, vt, node.value)
            if isinstance(target, ast.Name):
                self.remember_constant(target, node.value, vt)
        return False

    def remember_constant(self, target: ast.Name, value_node, vt: t.Type) -> None:
        """Note a definition whose value is known at compile time (`N = 100`, `shape = (4, 4)`):
        numba types it as a literal, so it may be used where a constant is needed. An integer
        computed exactly (exact_constants) is also what reads of it are lowered as."""
        var = self.defs[target]
        try:
            if not (t.is_number(vt) or isinstance(vt, t.Tuple)):
                raise NotConstant
            value = const_eval(value_node, self.resolve_constant)
        except NotConstant:  # (a pass that knew more, before a loop's phi, may have noted one)
            self.var_constants.pop(var, None)
            self.exact_constants.discard(var)
            return
        self.var_constants[var] = value
        if isinstance(value, int) and _integer_steps_exact(value_node, self.resolve_constant):
            self.exact_constants.add(var)
        else:
            self.exact_constants.discard(var)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> bool:
        if node.value is None:
            return False
        vt = self.expr(node.value)
        if isinstance(node.target, ast.Name):
            declared = self.resolve_type_annotation(node.annotation)
            if declared is not None:
                if not promotion.can_convert(vt, declared):
                    raise self.error(node.value, f"cannot assign {vt} to '{node.target.id}', "
                                     f"annotated {declared}",
                                     "annotate the variable with the value's type, or drop the "
                                     "annotation")
                self.define(node.target, node.target.id, declared)
                return False
        self.assign(node.target, vt, node.value)
        return False

    def visit_AugAssign(self, node: ast.AugAssign) -> bool:
        target = node.target
        if isinstance(target, ast.Name):
            var, current = self.read(target, target.id)
            self.uses[target] = var
        else:
            current = self.expr(target)
        if isinstance(current, t.Array):
            return self.inplace_array_operator(node, current)
        value = self.expr(node.value)
        result = self.binop_type(node, node.op, current, value, False, node.value in self.weak)
        self.record(node, result)
        if isinstance(target, ast.Name):
            self.define(target, target.id, result)
        else:
            self.check_store(target, result, node.value)
        return False

    def inplace_array_operator(self, node: ast.AugAssign, current: t.Array) -> bool:
        """`a op= x` of an array: numba's in-place operator, np.<ufunc>(a, x, a) - numpy's
        loop, broadcasting x against a, the result cast "same_kind" into a."""
        ufunc = _INPLACE_UFUNCS.get(type(node.op))
        if ufunc is None:
            raise self.error(node, f"'{_OP_SYMBOLS.get(type(node.op), '?')}=' is not an "
                             "in-place operator of arrays", "index the elements: a[i] op= x")

        def make() -> ast.Call:
            operands = []
            for _ in range(2):  # the input and the output: the target, read
                operand = copy.deepcopy(node.target)
                operand.ctx = ast.Load()
                operands.append(operand)
            func = ast.copy_location(ast.Constant(ufunc), node)  # a ufunc: only made here
            return ast.copy_location(ast.Call(func=func, args=[operands[0], node.value,
                                                                 operands[1]], keywords=[]), node)

        call = self.synthetic(("inplace", node), make)
        self.expr(call)
        self.calls[node] = InplaceCall(call)
        self.record(node, current)
        return False

    def assign(self, target, vt: t.Type, value_node) -> None:
        if isinstance(target, ast.Name):
            self.define(target, target.id, vt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            starred = next((e for e in target.elts if isinstance(e, ast.Starred)), None)
            if starred is not None:
                raise self.error(starred, "starred assignment is not supported in GPU code",
                                 "unpack every item (a, b, c = t) or index the tuple (t[0])")
            items = self.unpack_types(target, vt, len(target.elts))
            for elt, item in zip(target.elts, items, strict=True):
                self.assign(elt, item, None)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            self.expr(target)
            self.check_store(target, vt, value_node)
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def unpack_types(self, node, vt: t.Type, n: int) -> tuple:
        if isinstance(vt, t.Tuple):
            if len(vt.items) != n:
                raise self.error(node, f"cannot unpack a tuple of {len(vt.items)} into {n} names",
                                 f"name all {len(vt.items)} items on the left")
            return vt.items
        if isinstance(vt, t.Complex):
            raise self.error(node, "cannot unpack a complex number")
        raise self.error(node, f"cannot unpack {vt}", "only tuples can be unpacked in GPU code")

    def check_store(self, target, vt: t.Type, value_node) -> None:
        slot = self.types[target]
        base = self.types[target.value]
        if isinstance(vt, t.Optional) and not isinstance(slot, t.Array):
            vt = vt.type  # numba's: the value stored, a None ends the thread (TypeError)
        if isinstance(target, ast.Attribute) and not isinstance(base, t.Record):
            raise self.error(target, f"cannot assign to '{target.attr}' of {base}",
                             "in GPU code only record fields can be assigned (rec.x = v); "
                             "array attributes and module names are read-only")
        if isinstance(base, t.Record) and base.readonly:
            raise self.error(target, "cannot store into a field of a record of a read-only "
                             "array", READONLY_HINT)
        if isinstance(base, t.Record) and isinstance(slot, t.Array):
            # rec.v = arr / rec['v'] = arr: the field's elements are copied, as numba does
            self.check_slice_store(target, vt, slot)
            return
        if isinstance(target, ast.Subscript):
            if isinstance(base, t.Tuple):
                raise self.error(target, "tuples are immutable", "build a new tuple instead")
            if isinstance(base, t.Array) and base.readonly:
                raise self.error(target, f"cannot store into a read-only array ({base})",
                                 READONLY_HINT)
            if isinstance(slot, t.Array):
                self.check_slice_store(target, vt, slot)
                return
        if isinstance(slot, t.CharSeq) and (isinstance(vt, t.StringLiteral) or isinstance(
                vt, PyValue) and isinstance(vt.obj, (str, bytes))):
            self.check_string_store(slot, vt, value_node or target)
            return
        if not promotion.can_convert(vt, slot):
            raise self.error(value_node or target, f"cannot store {vt} into an element of {slot}",
                             _store_hint(vt, slot))

    def check_string_store(self, slot: t.CharSeq, vt: t.Type, value_node) -> None:
        """A constant string (a literal or a global) into a string array's element or field
        (encoded when lowered)."""
        from gpunb.foundation import string_types

        if isinstance(vt, PyValue):
            text = vt.obj
        elif isinstance(value_node, ast.Constant):
            text = value_node.value
        else:
            raise self.error(value_node, f"only a constant string can be stored into {slot}",
                             "GPU code has no string values: write the literal in the store")
        try:
            string_types.encode(slot, text)
        except ValueError as exc:
            raise self.error(value_node, str(exc)) from None

    # ---- if ------------------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> bool:
        self.condition(node.test)
        known = self.static_truth(node.test)
        if known is not None:  # `if x is None:` with x known: the other branch is dead code
            self.branches[node] = known
            return self.visit_body(node.body if known else node.orelse)
        self.branches.pop(node, None)  # a pass that knew less (x None so far) may have pruned
        before = self.env
        ends = []
        for body in (node.body, node.orelse):
            self.env = dict(before)
            ends.append(None if self.visit_body(body) else self.env)
        merged = self.merge(node, JoinKind.IF, ends)
        if merged is None:
            self.env = dict(before)
            return True
        self.env = merged
        return False

    def static_truth(self, test) -> bool | None:
        """The truth of a condition known at compile time, whose dead branch numba prunes
        before typing (numba/core/analysis.py dead_branch_prune): `x is None`, a None value,
        and conditions made of constants and global constants (`if DEBUG:`, `if 2 > 1:`), and
        isinstance() tests."""
        found = self.types[test]
        if isinstance(found, t.NoneType):
            return False
        value = self.constants.get(test)
        if isinstance(test, (ast.Compare, ast.UnaryOp, ast.Call)) and isinstance(value, bool):
            return value
        try:
            value = constant_condition(test, self.resolve_constant)
        except NotConstant:
            return None
        return bool(value)

    def condition(self, node) -> None:
        found = self.expr(node)
        if not isinstance(found, _HAS_TRUTH):
            raise self.error(node, f"{found} cannot be used as a condition",
                             "compare explicitly, e.g. `if x > 0:`")


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def constant_condition(node, resolve):
    """The value of a condition of numbers, bools and global constants (NotConstant if any part
    is known only at run time, or is not a number)."""
    if isinstance(node, ast.Compare):
        left = constant_condition(node.left, resolve)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = constant_condition(right_node, resolve)
            if not _compare_constants(op, left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = [constant_condition(v, resolve) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not constant_condition(node.operand, resolve)
    value = const_eval(node, resolve)
    if not isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        raise NotConstant
    return value


def _compare_constants(op, left, right) -> bool:
    """`a < b` of two constants; `flag is True` / `is not` of two bools (the closure-constant
    idiom of overload implementations, `if is_tuple is True:`, which numba prunes): other
    identity tests say nothing about values, so they are not known at compile time."""
    if isinstance(op, (ast.Is, ast.IsNot)):
        if not all(isinstance(v, (bool, np.bool_)) for v in (left, right)):
            raise NotConstant
        return (bool(left) is bool(right)) == isinstance(op, ast.Is)
    if type(op) not in _COMPARE:
        raise NotConstant
    return bool(_COMPARE[type(op)](left, right))


def _store_hint(value: t.Type, slot: t.Type) -> str | None:
    if isinstance(value, t.NoneType):
        return "the value is None: a device function without `return value` gives None"
    if isinstance(value, t.Complex) and t.is_number(slot):
        return "store x.real (or abs(x)), or use a complex array"
    if isinstance(value, (t.Array, t.Tuple)):
        return "store one element at a time, e.g. out[i] = x[i]"
    if isinstance(value, PyValue):
        return "only numbers can be stored into arrays"
    return None


_INPLACE_UFUNCS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                   ast.Div: np.true_divide, ast.FloorDiv: np.floor_divide, ast.Mod: np.remainder,
                   ast.Pow: np.power, ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or,
                   ast.BitXor: np.bitwise_xor, ast.LShift: np.left_shift,
                   ast.RShift: np.right_shift}
_OP_SYMBOLS = {ast.MatMult: "@"}


def _holds_fragment(ty: t.Type) -> bool:
    if isinstance(ty, t.Tuple):
        return any(_holds_fragment(item) for item in ty.items)
    return isinstance(ty, Fragment)


_INT64 = range(-(1 << 63), 1 << 63)


def _integer_steps_exact(value_node, resolve) -> bool:
    """Whether every integer operation of a constant definition stays within int64, the type
    the typed code computes it in (literals and constants are int64; numba widens smaller
    integers to it): Python's unbounded `a * 4 // 4` is then what the kernel computes too."""
    for node in ast.walk(value_node):
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            try:
                step = const_eval(node, resolve)
            except NotConstant:
                return False
            if isinstance(step, int) and step not in _INT64:
                return False
    return True
