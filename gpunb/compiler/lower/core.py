"""Lowering machinery shared by the statement, loop, expression, index and call mixins.

Every SSA Var of the TypedFunction gets an alloca in the entry block (mem2reg turns them back
into SSA registers). Storing a definition also stores it, converted, into the slot of every phi
it flows into; at each join the phis defined there pass their values on to the phis they flow
into. Together these put the right value in a phi's slot on every path that reaches its join,
which is what numba's phi nodes mean.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.typed import JoinKind, TypedFunction, Var, VarKind
from gpunb.compiler.values import is_compile_time
from gpunb.foundation import types as t
from gpunb.foundation.abi import signature_slots
from gpunb.foundation.errors import CompileError

# iterations of a counted loop between two polls on a target that polls (compiler/target.py):
# a few microseconds of the tightest loop, one test per chunk
CHUNK = 1 << 12


class LoweringCore:
    """Lowers one TypedFunction into an ir.Function (or inline into a caller's function)."""

    def __init__(self, mb, typed: TypedFunction, fn: ir.Function,
                 builder: ir.IRBuilder | None = None, alloca_block=None, ctx=None):
        self.mb = mb
        self.target = mb.target
        self.typed = typed
        self.fn = fn
        self.builder = builder
        self.alloca_block = alloca_block
        self.ctx = ctx
        self.slots: dict = {}
        self.loops: list = []  # (continue block, break block) of the enclosing loops
        self.exit_block = None
        self.return_slot = None
        self.subprogram = None
        self.describes_variables = False  # this function's own (not an inlined callee's)
        self.name_types: dict | None = None
        self.is_kernel = False
        self.current_line = typed.source.first_line

    # ---- setup ---------------------------------------------------------------------------------

    def begin(self, kernel: bool) -> None:
        self.is_kernel = kernel
        self.alloca_block = self.fn.append_basic_block("entry")
        body = self.fn.append_basic_block("body")
        self.builder = ir.IRBuilder(body)
        self.exit_block = self.fn.append_basic_block("exit")
        n_extra = len(self.target.extra_params())
        self.ctx = self.fn.args[0] if n_extra else None
        if self.mb.debug is not None:
            self.subprogram = self.mb.debug.subprogram(
                self.fn, self.typed.source, (self.typed.return_type, self.typed.argtypes))
            self.builder.debug_metadata = self.mb.debug.entry(self)
            self.describes_variables = self.mb.debug.full  # debug=True: what cuda-gdb shows
        if not isinstance(self.typed.return_type, t.NoneType):
            self.return_slot = self.alloca(dm.value_type(self.typed.return_type), "retval")
            self.start_return_slot()

    def start_return_slot(self) -> None:
        """At each entry of the body: an Optional return starts as None, which a bare `return`
        or falling off the end then returns (numba's implicit `return None`)."""
        ret = self.typed.return_type
        if isinstance(ret, t.Optional):
            self.builder.store(ops.to_optional(self.builder, None, t.none, ret), self.return_slot)

    def alloca(self, llty: ir.Type, name: str = ""):
        # a builder starts at the block's end: the place after the last alloca, found without
        # position_after's list.index (a scan of the block per alloca: quadratic in a long
        # kernel's variables); the block gets its branch in finish()
        b = ir.IRBuilder(self.alloca_block)
        if self.alloca_block.is_terminated:
            b.position_before(self.alloca_block.terminator)
        return b.alloca(llty, name=name)

    def assemble_argument(self, argtype: t.Type, slots: list):
        b = self.builder
        if isinstance(argtype, t.Array):
            n = argtype.ndim
            return arrays.make_array(b, argtype, slots[0], slots[1:1 + n],
                                     slots[1 + n:1 + 2 * n])
        if isinstance(argtype, t.Complex):
            return ops.make_complex(b, slots[0], slots[1], argtype)
        if isinstance(argtype, t.Boolean):
            return b.trunc(slots[0], dm.i1)
        if isinstance(argtype, t.Tuple):
            out = ir.Constant(dm.value_type(argtype), ir.Undefined)
            pos = 0
            for i, item in enumerate(argtype.items):
                n = len(signature_slots((item,)))
                out = b.insert_value(out, self.assemble_argument(item, slots[pos:pos + n]), i)
                pos += n
            return out
        return slots[0]

    def bind_arguments(self, values: list) -> None:
        for var, argtype, value in zip(self.typed.params, self.typed.argtypes, values,
                                       strict=True):
            self.store_var(var, value, argtype)
        if self.describes_variables:  # each parameter lives in its stack slot (numba-cuda's)
            for number, var in enumerate(self.typed.params, start=1):
                described = self.debug_variable(var, number)
                if described is not None and self.slot(var) is not None:
                    self.mb.debug.declare(self.builder, self.slot(var), described)

    def debug_variable(self, var: Var, arg: int = 0):
        """The debugger's variable for `var`'s name (every type the name holds), or None."""
        if self.name_types is None:  # name -> the types its values take, once per function
            self.name_types = {}
            for v, vt in self.typed.var_types.items():
                if vt is not None and not isinstance(vt, t.NoneType) and not is_compile_time(vt):
                    self.name_types.setdefault(v.name, {})[vt] = None
        types = tuple(self.name_types.get(var.name, ()))
        if not var.name.isidentifier() or not types:
            return None
        line = getattr(var.site, "lineno", self.typed.source.first_line)
        return self.mb.debug.variable(self.subprogram, var.name, types, line, arg)

    def lower_body(self) -> None:
        self.statements(self.typed.source.tree.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(self.exit_block)

    def finish(self) -> None:
        ir.IRBuilder(self.alloca_block).branch(self.fn.blocks[1])
        self.builder.position_at_end(self.exit_block)
        if self.is_kernel:
            self.target.kernel_epilogue(self)
        elif self.return_slot is not None:
            self.builder.ret(self.builder.load(self.return_slot))
        else:
            self.builder.ret_void()

    # ---- SSA variables -------------------------------------------------------------------------

    def var_type(self, var: Var) -> t.Type | None:
        return self.typed.var_types.get(var)

    def slot(self, var: Var):
        """The alloca holding `var`, or None for a Var that holds no value (None, unread)."""
        found = self.slots.get(var)
        if found is None:
            vt = self.var_type(var)
            if vt is None or isinstance(vt, t.NoneType) or is_compile_time(vt):
                return None  # None holds nothing; a function, type or literal is compile-time
            found = self.slots[var] = self.alloca(dm.value_type(vt), var.name)
        return found

    def store_var(self, var: Var, value, value_type: t.Type) -> None:
        """Define `var` with `value` (of `value_type`), and pass it on to the phis it reaches."""
        slot = self.slot(var)
        vt = self.var_type(var)
        if slot is None and isinstance(vt, t.NoneType):
            self.flow(var, None, vt)  # a None reaching an Optional: its "is None" flag
        if slot is None or value is None:
            return
        b = self.builder
        value = ops.cast(b, value, value_type, vt)
        b.store(value, slot)
        if self.describes_variables and var.kind is not VarKind.PARAM:
            described = self.debug_variable(var)
            if described is not None:
                self.mb.debug.value(b, value, described)
        if self.target.instrumented:
            self.target.debug_define(self, var, value)
        self.flow(var, value, vt)

    def flow(self, var: Var, value, vt: t.Type) -> None:
        b = self.builder
        for phi in self.typed.flows.get(var, ()):
            phi_slot = self.slot(phi)
            if phi_slot is not None:
                b.store(ops.cast(b, value, vt, self.var_type(phi)), phi_slot)

    def load_var(self, var: Var):
        if var.kind is VarKind.UNBOUND:  # no assignment reaches this read (its site)
            return self.unbound_read(var.site, var)
        slot = self.slot(var)
        return None if slot is None else self.builder.load(slot)

    def join(self, node: ast.AST, kind: JoinKind) -> None:
        """At a join point: each phi defined here passes its value on to the phis it reaches."""
        for phi in self.typed.joins.get((node, kind), ()):
            if self.typed.flows.get(phi) and (self.slot(phi) is not None or
                                              isinstance(self.var_type(phi), t.NoneType)):
                self.flow(phi, self.load_var(phi), self.var_type(phi))
        if self.target.instrumented:
            self.target.debug_join(self, node, kind)

    # ---- helpers -------------------------------------------------------------------------------

    def error(self, node, message: str, hint: str | None = None) -> CompileError:
        return CompileError(message, self.typed.source.loc(node), hint,
                            function=self.typed.name)

    def type_of(self, node) -> t.Type:
        return self.typed.types[node]

    def is_weak(self, node) -> bool:
        return node in self.typed.weak

    def statements(self, body: list) -> None:
        for stmt in body:
            if self.builder.block.is_terminated:
                return  # after return/break/continue: unreachable, and not typed by infer
            if self.mb.debug is not None:
                self.builder.debug_metadata = self.mb.debug.statement(self, stmt)
            self.current_line = stmt.lineno
            if self.target.instrumented:
                self.target.debug_line(self, stmt)
            self.visit(stmt)

    def math_call(self, name: str, args: list, argtypes: list, result: t.Type):
        return self.target.math(self, name, args, argtypes, result)

    def new_block(self, name: str):
        return self.fn.append_basic_block(name)

    def emit_loop(self, first, condition, body, advance, header=None, prefix: str = "loop",
                  count=None):
        """The one loop emitter: index = first; while condition(index): body(index, continue
        block, break block), then index = advance(index). `header()` runs at the top of every
        iteration. Returns (the block where the condition fails, the block after the loop),
        the first unterminated; the builder is left in neither.

        `count`: the loop is `for k in range(count)` (i64; first 0, advance +1), and on a target
        that polls (compiler/target.py) it runs in chunks of CHUNK iterations: an outer loop
        over the chunks' starts polls, the inner loop tests only the chunk's end - one exit and
        an index LLVM can follow (non-negative, +1), as it wants to vectorise or unroll it."""
        b = self.builder
        index = self.alloca(first.type, f"{prefix}.index")
        b.store(first, index)
        cond_bb, body_bb = self.new_block(f"{prefix}.cond"), self.new_block(f"{prefix}.body")
        inc_bb, else_bb, end_bb = (self.new_block(f"{prefix}.{n}")
                                   for n in ("inc", "else", "end"))
        if count is None or not self.target.polls:
            b.branch(cond_bb)
            b.position_at_end(cond_bb)
            if header is not None:
                header()
            current = b.load(index)
            b.cbranch(condition(current), body_bb, else_bb)
        else:
            self._chunks(index, count, cond_bb, body_bb, else_bb, header, prefix)
            current = b.load(index)
            b.cbranch(b.icmp_signed("<", current, b.load(self._chunk_end)), body_bb,
                      self._chunk_past)
        b.position_at_end(body_bb)
        body(current, inc_bb, end_bb)
        if not b.block.is_terminated:
            b.branch(inc_bb)
        b.position_at_end(inc_bb)
        b.store(advance(b.load(index)), index)
        b.branch(cond_bb)
        return else_bb, end_bb

    def _chunks(self, index, count, cond_bb, body_bb, else_bb, header, prefix: str) -> None:
        """The outer loop of a chunked `for k in range(count)`: leaves the builder in the inner
        loop's condition block, with self._chunk_end (where this chunk ends) and
        self._chunk_past (the block after a chunk) set for the caller's test. The poll comes
        between chunks, never on entry: a loop of at most CHUNK iterations known at compile
        time keeps no poll at all (LLVM folds the next chunk away), so the loop around it (a
        work-group thread loop) still vectorises."""
        b = self.builder
        i64 = dm.i64
        start = self.alloca(i64, f"{prefix}.chunk.start")
        end = self.alloca(i64, f"{prefix}.chunk.end")
        b.store(ir.Constant(i64, 0), start)
        chunk_bb, past_bb = self.new_block(f"{prefix}.chunk"), self.new_block(f"{prefix}.past")
        poll_bb = self.new_block(f"{prefix}.poll")
        b.branch(chunk_bb)
        b.position_at_end(chunk_bb)
        first = b.load(start)
        b.store(first, index)
        left = b.sub(count, first, flags=["nsw"])
        step = b.select(b.icmp_signed("<", left, ir.Constant(i64, CHUNK)), left,
                        ir.Constant(i64, CHUNK))
        b.store(b.add(first, step, flags=["nsw"]), end)
        b.branch(cond_bb)
        b.position_at_end(past_bb)
        after = b.add(b.load(start), ir.Constant(i64, CHUNK), flags=["nsw"])
        b.store(after, start)
        b.cbranch(b.icmp_signed("<", after, count), poll_bb, else_bb)
        b.position_at_end(poll_bb)
        self.target.poll(self)
        b.branch(chunk_bb)
        b.position_at_end(cond_bb)
        if header is not None:
            header()  # runs again as a chunk starts: it only passes values on
        self._chunk_end, self._chunk_past = end, past_bb

    def loop_range(self, length, body, prefix: str = "loop") -> None:
        """for i in range(length) (i64) as IR, body(i); the builder ends after the loop."""
        b = self.builder
        one = ir.Constant(dm.i64, 1)
        else_bb, end_bb = self.emit_loop(
            ir.Constant(dm.i64, 0), lambda i: b.icmp_signed("<", i, length),
            lambda i, _continue, _break: body(i), lambda i: b.add(i, one), prefix=prefix)
        b.position_at_end(else_bb)
        b.branch(end_bb)
        b.position_at_end(end_bb)
