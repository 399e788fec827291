"""Lowering of statements: assignments, if, while, return, raise/assert, break/continue."""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays, exceptions, scopes
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.folding import never_runs, runs_forever
from gpunb.compiler.lower.core import CHUNK
from gpunb.compiler.typed import InplaceCall, JoinKind
from gpunb.foundation import types as t

# calls that only compute (safe to evaluate again, and to lower twice): pure builtins and math
_PURE_CALLS = frozenset({"len", "min", "max", "abs", "int", "float", "bool", "round"})


def _pure_call(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in _PURE_CALLS
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
        func.value.id == "math"


def _pure(test: ast.AST) -> bool:
    """Whether evaluating `test` once more changes nothing: no calls but pure ones, no :=."""
    for node in ast.walk(test):
        if isinstance(node, ast.NamedExpr) or (isinstance(node, ast.Call) and
                                               not _pure_call(node)):
            return False
    return True


def _plain(body: list) -> bool:
    """Whether a loop body may be lowered twice: expressions, assignments and ifs, with no
    inner loop, no call but pure ones (no barrier, atomic, local array or device function)."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.With)):
                return False
            if isinstance(node, ast.Call) and not _pure_call(node):
                return False
    return True


class StatementLowering:
    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported statement: {type(node).__name__}")
        return method(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        self.expr(node.value)

    def visit_Pass(self, node) -> None:
        return

    def visit_Assert(self, node: ast.Assert) -> None:
        site = self.typed.raises.get(node)
        if site is None:
            return  # typed, never evaluated: as numba.cuda without debug checks (python -O)
        fail, ok = self.new_block("assert.fail"), self.new_block("assert.ok")
        self.builder.cbranch(self.condition(node.test), ok, fail)
        self.builder.position_at_end(fail)
        self.raise_exception(node, site.exception, site.message)
        self.builder.position_at_end(ok)

    def visit_Raise(self, node: ast.Raise) -> None:
        site = self.typed.raises[node]
        self.raise_exception(node, site.exception, site.message)

    def raise_exception(self, node, exc_name: str, message: str, report: bool = False) -> None:
        """End this thread (numba.cuda's raise); with debug (or `report`: a check the target
        always makes), first record which raise it was."""
        site = None
        if self.mb.options.get("debug") or report:
            site = len(self.mb.raise_sites)
            self.mb.raise_sites.append(exceptions.site_record(
                exc_name, message, self.typed.source.filename, node.lineno, node.col_offset,
                self.typed.name))
        self.target.end_thread(self, site)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return  # an inner function: lowered at its calls, as a device function of its own

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and self.return_slot is not None:
            value = self.expr(node.value)
            self.builder.store(ops.cast(self.builder, value, self.type_of(node.value),
                                        self.typed.return_type), self.return_slot)
        elif node.value is not None:
            self.expr(node.value)
        self.builder.branch(self.exit_block)

    def visit_Break(self, node) -> None:
        self.builder.branch(self.loops[-1][1])

    def visit_Continue(self, node) -> None:
        self.builder.branch(self.loops[-1][0])

    # ---- assignments ---------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        if scopes.is_lambda_binding(node):
            return  # as visit_FunctionDef
        if len(node.targets) == 1 and self.unpacks_items(node.targets[0], node.value):
            return
        value = self.expr(node.value)
        vt = self.type_of(node.value)
        if value is None and isinstance(getattr(vt, "obj", None), (str, bytes)):
            value = vt.obj  # a global string (a compile-time object), stored into a string
        for target in node.targets:
            self.store_target(target, value, vt)

    def unpacks_items(self, target, value_node) -> bool:
        """`a, b = x, y`: each item evaluated, then stored, without building the tuple (whose
        items may be compile-time objects such as cuda.blockIdx, with no LLVM value)."""
        if not (isinstance(target, (ast.Tuple, ast.List)) and
                isinstance(value_node, (ast.Tuple, ast.List)) and
                len(target.elts) == len(value_node.elts) and
                not any(isinstance(e, ast.Starred) for e in value_node.elts)):
            return False
        values = [(self.expr(item), self.type_of(item)) for item in value_node.elts]
        for elt, (value, vt) in zip(target.elts, values, strict=True):
            self.store_target(elt, value, vt)
        return True

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.store_target(node.target, self.expr(node.value), self.type_of(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        inplace = self.typed.calls.get(node)
        if isinstance(inplace, InplaceCall):  # `a += x` of an array: np.add(a, x, a)
            self.expr(inplace.call)
            return
        result_t = self.type_of(node)
        target = node.target
        if isinstance(target, ast.Name):
            var = self.typed.uses[target]
            new = self.arith(node.op, self.load_var(var), self.var_type(var),
                             self.expr(node.value), self.type_of(node.value), result_t,
                             node.value)
            self.store_var(self.typed.defs[target], new, result_t)
            return
        if isinstance(target, ast.Subscript):
            pointer, dtype, align = self.element_address(target)
            self.target.record_access(self, target, pointer, "read")
            current = arrays.load_element(self.builder, dtype, pointer, align)
            new = self.arith(node.op, current, dtype, self.expr(node.value),
                             self.type_of(node.value), result_t, node.value)
            self.target.record_access(self, target, pointer, "write")
            arrays.store_element(self.builder, dtype, pointer,
                                 ops.cast(self.builder, new, result_t, dtype), align)
            return
        current = self.expr(target)
        new = self.arith(node.op, current, self.type_of(target), self.expr(node.value),
                         self.type_of(node.value), result_t, node.value)
        self.store_target(target, new, result_t)

    def store_target(self, target, value, vt: t.Type) -> None:
        b = self.builder
        if isinstance(target, ast.Name):
            self.store_var(self.typed.defs[target], value, vt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                self.store_target(elt, b.extract_value(value, i), vt.items[i])
        elif isinstance(target, (ast.Subscript, ast.Attribute)) and \
                isinstance(self.type_of(target), t.Array):  # a slice, or a record's array field
            self.store_slice(target, value, vt)
        elif isinstance(vt, t.Optional):  # an element or field holds the value (None: raise)
            self.store_target(target, self.unwrap_optional(target, value, vt), vt.type)
        elif isinstance(target, ast.Subscript):
            pointer, dtype, align = self.element_address(target)
            self.target.record_access(self, target, pointer, "write")
            arrays.store_element(b, dtype, pointer, ops.cast(b, value, vt, dtype), align)
        elif isinstance(target, ast.Attribute):
            pointer, ftype, align = arrays.field_address(
                b, self.type_of(target.value), self.expr(target.value), target.attr)
            arrays.store_element(b, ftype, pointer, ops.cast(b, value, vt, ftype), align)
        else:
            raise self.error(target, "unsupported assignment target")

    # ---- control flow --------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        known = self.typed.branches.get(node)
        if known is not None:  # `if x is None:` with x known: only the branch taken
            self.statements(node.body if known else node.orelse)
            return
        cond = self.condition(node.test)
        then_bb = self.new_block("if.then")
        else_bb = self.new_block("if.else") if node.orelse else None
        end_bb = self.new_block("if.end")
        self.builder.cbranch(cond, then_bb, else_bb or end_bb)
        reached = else_bb is None  # whether any path falls through to the code after the if
        self.builder.position_at_end(then_bb)
        self.statements(node.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(end_bb)
            reached = True
        if else_bb is not None:
            self.builder.position_at_end(else_bb)
            self.statements(node.orelse)
            if not self.builder.block.is_terminated:
                self.builder.branch(end_bb)
                reached = True
        self.builder.position_at_end(end_bb)
        if not reached:  # every branch returned (or raised): what follows is dead, and untyped
            self.builder.unreachable()
            return
        self.join(node, JoinKind.IF)

    def visit_While(self, node: ast.While) -> None:
        if never_runs(node):  # `while False:` - as inference, the else clause alone
            self.statements(node.orelse)
            return
        if self.target.polls and _pure(node.test) and _plain(node.body):
            self.two_version_while(node)
            return
        cond_bb, body_bb = self.new_block("while.cond"), self.new_block("while.body")
        else_bb, end_bb = self.new_block("while.else"), self.new_block("while.end")
        self.builder.branch(cond_bb)
        self.builder.position_at_end(cond_bb)
        self.target.poll(self)  # every iteration: a while loop has no count to chunk
        self.join(node, JoinKind.HEADER)
        self.builder.cbranch(self.condition(node.test), body_bb, else_bb)
        self.builder.position_at_end(body_bb)
        self.loop_body(node.body, cond_bb, end_bb)
        self.loop_else(node, else_bb, end_bb)

    def two_version_while(self, node: ast.While) -> None:
        """A plain while loop (a condition without effects, a body of expressions and ifs) on a
        target that polls: its first CHUNK iterations run in a copy without the poll - one exit
        test beside an iteration count, a loop LLVM can still vectorise - and any further ones
        in a copy that polls every iteration. A stopping point per iteration in the only copy
        cost a vectorisable while loop ~3x (benchmarks/bench_cpu_target.py)."""
        b = self.builder
        i64 = dm.i64
        count = self.alloca(i64, "while.count")
        b.store(ir.Constant(i64, 0), count)
        fast_bb, fast_body, fast_inc, fast_past = (self.new_block(f"while.fast.{n}") for n in
                                                   ("cond", "body", "inc", "past"))
        slow_bb, slow_body = self.new_block("while.cond"), self.new_block("while.body")
        else_bb, end_bb = self.new_block("while.else"), self.new_block("while.end")
        b.branch(fast_bb)
        b.position_at_end(fast_bb)
        self.join(node, JoinKind.HEADER)
        holds = self.condition(node.test)
        in_chunk = b.icmp_signed("<", b.load(count), ir.Constant(i64, CHUNK))
        b.cbranch(b.and_(holds, in_chunk), fast_body, fast_past)
        b.position_at_end(fast_past)
        b.cbranch(holds, slow_bb, else_bb)  # the condition held: the count ran out
        b.position_at_end(fast_inc)
        b.store(b.add(b.load(count), ir.Constant(i64, 1), flags=["nsw"]), count)
        b.branch(fast_bb)
        b.position_at_end(fast_body)
        self.loop_body(node.body, fast_inc, end_bb)
        b.position_at_end(slow_bb)
        self.target.poll(self)
        self.join(node, JoinKind.HEADER)
        b.cbranch(self.condition(node.test), slow_body, else_bb)
        b.position_at_end(slow_body)
        self.loop_body(node.body, slow_bb, end_bb)
        self.loop_else(node, else_bb, end_bb)

    def loop_body(self, body: list, continue_bb, end_bb) -> None:
        self.loops.append((continue_bb, end_bb))
        self.statements(body)
        self.loops.pop()
        if not self.builder.block.is_terminated:
            self.builder.branch(continue_bb)

    def loop_else(self, node, else_bb, end_bb) -> None:
        b = self.builder
        b.position_at_end(else_bb)
        if isinstance(node, ast.While) and runs_forever(node):
            b.unreachable()  # the else of `while True:` never runs (and was never typed)
        else:
            self.statements(node.orelse)
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)
        self.join(node, JoinKind.EXIT)
