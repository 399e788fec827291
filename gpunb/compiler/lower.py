"""Typed AST -> llvmlite IR, target-neutral: everything target-specific goes through a Target.

One visitor method per statement and expression kind. Every variable lives in an alloca in the
entry block (mem2reg promotes it). Targets that cannot call across suspend points (the CPU target's
coroutine threads) lower GPU-function calls inline; the CUDA target emits real device functions.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays, exceptions, inner
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.debuginfo import DebugInfo
from gpunb.compiler.infer import TypedFunction
from gpunb.compiler.values import PyValue
from gpunb.foundation import types as t
from gpunb.foundation.abi import signature_slots
from gpunb.foundation.errors import CompileError


class ModuleBuilder:
    """Owns one ir.Module: the kernel, its device functions, globals for shared/const arrays."""

    def __init__(self, target, options: dict, name: str):
        self.target = target
        self.options = options
        self.module = ir.Module(name=name)
        self.module.triple = target.triple
        self.module.data_layout = target.data_layout
        self.device_functions: dict = {}
        self.const_arrays: dict = {}
        self.counter = 0
        self.debug = DebugInfo(self.module) if target.emits_line_info else None
        self.features: set = set()
        self.shared_static_bytes = 0
        self.raise_sites: list = []  # debug: exceptions.site_record by site id (the artifact's)

    def unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}.{self.counter}"

    def lower_kernel(self, typed: TypedFunction, symbol: str):
        slots = signature_slots(typed.argtypes)
        self.features = typed.all_features()
        fn, slot_values = self.target.define_kernel(self, symbol, [dm.slot_type(s) for s in slots])
        low = FunctionLowerer(self, typed, fn)
        low.begin(kernel=True)
        self.target.kernel_prologue(low)
        args, pos = [], 0
        for ty in typed.argtypes:
            n = len(signature_slots((ty,)))
            args.append(low.assemble_argument(ty, slot_values[pos:pos + n]))
            pos += n
        low.bind_arguments(args)
        low.lower_body()
        low.finish()
        return fn

    def device_function(self, typed: TypedFunction) -> ir.Function:
        key = id(typed)
        fn = self.device_functions.get(key)
        if fn is not None:
            return fn
        extra = self.target.extra_params()
        ret = dm.void if isinstance(typed.return_type, t.NoneType) else \
            dm.value_type(typed.return_type)
        fnty = ir.FunctionType(ret, extra + [dm.value_type(a) for a in typed.argtypes])
        fn = ir.Function(self.module, fnty, self.unique(f"{typed.name}"))
        fn.linkage = "internal"
        self.device_functions[key] = fn
        low = FunctionLowerer(self, typed, fn)
        low.begin(kernel=False)
        low.bind_arguments(list(fn.args[len(extra):]))
        low.lower_body()
        low.finish()
        return fn

    def const_array(self, builder: ir.IRBuilder, array):
        """A global numpy array frozen into constant memory (numba's semantics)."""
        return self.target.constant_data(self, builder, array)


class FunctionLowerer(ast.NodeVisitor):
    """Lowers one TypedFunction into an ir.Function (or inline into a caller's function)."""

    def __init__(self, mb: ModuleBuilder, typed: TypedFunction, fn: ir.Function,
                 builder: ir.IRBuilder | None = None, alloca_block=None, ctx=None):
        self.mb = mb
        self.target = mb.target
        self.typed = typed
        self.fn = fn
        self.builder = builder
        self.alloca_block = alloca_block
        self.ctx = ctx
        self.vars: dict = {}
        self.loops: list = []
        self.exit_block = None
        self.return_slot = None
        self.subprogram = None

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
            self.subprogram = self.mb.debug.subprogram(self.fn, self.typed.source)
            self.builder.debug_metadata = self.mb.debug.location(self.typed.source.first_line,
                                                                 0, self.subprogram)
        if not isinstance(self.typed.return_type, t.NoneType):
            self.return_slot = self.alloca(dm.value_type(self.typed.return_type), "retval")
        self.declare_variables()

    def declare_variables(self) -> None:
        for name, ty in self.typed.var_types.items():
            if isinstance(ty, PyValue):
                continue
            self.vars[name] = self.alloca(dm.value_type(ty), name)

    def alloca(self, ty: ir.Type, name: str = ""):
        b = ir.IRBuilder(self.alloca_block)
        if self.alloca_block.instructions:
            b.position_after(self.alloca_block.instructions[-1])
        if self.alloca_block.is_terminated:
            b.position_before(self.alloca_block.terminator)
        return b.alloca(ty, name=name)

    def assemble_argument(self, ty: t.Type, slots: list):
        b = self.builder
        if isinstance(ty, t.Array):
            n = ty.ndim
            return arrays.make_array(b, ty, slots[0], slots[1:1 + n], slots[1 + n:1 + 2 * n])
        if isinstance(ty, t.Complex):
            return ops.make_complex(b, slots[0], slots[1], ty)
        if isinstance(ty, t.Boolean):
            return b.trunc(slots[0], dm.i1)
        if isinstance(ty, t.Tuple):
            out = ir.Constant(dm.value_type(ty), ir.Undefined)
            pos = 0
            for i, item in enumerate(ty.items):
                n = len(signature_slots((item,)))
                out = b.insert_value(out, self.assemble_argument(item, slots[pos:pos + n]), i)
                pos += n
            return out
        return slots[0]

    def bind_arguments(self, values: list) -> None:
        for name, ty, value in zip(self.typed.argnames, self.typed.argtypes, values, strict=False):
            if isinstance(ty, t.NoneType):
                continue  # None holds nothing
            declared = self.typed.var_types[name]
            self.builder.store(ops.cast(self.builder, value, ty, declared), self.vars[name])

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

    # ---- helpers -------------------------------------------------------------------------------

    def error(self, node, message: str, hint: str | None = None) -> CompileError:
        return CompileError(message, self.typed.source.loc(node), hint,
                            function=self.typed.name)

    def type_of(self, node) -> t.Type:
        return self.typed.expr_types[id(node)]

    def statements(self, body: list) -> None:
        for stmt in body:
            if self.builder.block.is_terminated:
                return  # after return/break/continue: unreachable, and not typed by infer
            if self.mb.debug is not None:
                self.builder.debug_metadata = self.mb.debug.location(
                    stmt.lineno, stmt.col_offset, self.subprogram)
            self.current_line = stmt.lineno
            self.visit(stmt)

    def math_call(self, name: str, args: list, argtypes: list, result: t.Type):
        return self.target.math(self, name, args, argtypes, result)

    def new_block(self, name: str):
        return self.fn.append_basic_block(name)

    # ---- statements ----------------------------------------------------------------------------

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        self.expr(node.value)

    def visit_Pass(self, node) -> None:
        return

    def visit_Assert(self, node: ast.Assert) -> None:
        checked = self.typed.constants.get(id(node))
        if checked is None:
            return  # typed, never evaluated: as numba.cuda without debug checks (python -O)
        fail, ok = self.new_block("assert.fail"), self.new_block("assert.ok")
        self.builder.cbranch(self.condition(node.test), ok, fail)
        self.builder.position_at_end(fail)
        self.raise_exception(node, *checked)
        self.builder.position_at_end(ok)

    def visit_Raise(self, node: ast.Raise) -> None:
        self.raise_exception(node, *self.typed.constants[id(node)])

    def raise_exception(self, node, exc_name: str, message: str) -> None:
        """End this thread (numba.cuda's raise); with debug, first record which raise it was."""
        site = None
        if self.mb.options.get("debug"):
            site = len(self.mb.raise_sites)
            self.mb.raise_sites.append(exceptions.site_record(
                exc_name, message, self.typed.source.filename, node.lineno, node.col_offset,
                self.typed.name))
        self.target.end_thread(self, site)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return  # an inner function: lowered at its calls, as a device function of its own

    def visit_Assign(self, node: ast.Assign) -> None:
        if inner.is_lambda_binding(node):
            return  # as visit_FunctionDef
        value = self.expr(node.value)
        vt = self.type_of(node.value)
        for target in node.targets:
            self.store_target(target, value, vt)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.store_target(node.target, self.expr(node.value), self.type_of(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        result_t = self.typed.expr_types[id(node)]
        if isinstance(node.target, ast.Name):
            current = self.builder.load(self.vars[node.target.id])
            current_t = self.typed.var_types[node.target.id]
            new = self.arith(node.op, current, current_t, self.expr(node.value),
                             self.type_of(node.value), result_t, node.value)
            self.store_target(node.target, new, result_t)
            return
        if isinstance(node.target, ast.Subscript):
            pointer, dtype, align = self.element_address(node.target)
            current = arrays.load_element(self.builder, dtype, pointer, align)
            new = self.arith(node.op, current, dtype, self.expr(node.value),
                             self.type_of(node.value), result_t, node.value)
            arrays.store_element(self.builder, dtype, pointer,
                                 ops.cast(self.builder, new, result_t, dtype), align)
            return
        current = self.expr(node.target)
        current_t = self.type_of(node.target)
        new = self.arith(node.op, current, current_t, self.expr(node.value),
                         self.type_of(node.value), result_t, node.value)
        self.store_target(node.target, new, result_t)

    def store_target(self, target, value, vt: t.Type) -> None:
        b = self.builder
        if isinstance(target, ast.Name):
            declared = self.typed.var_types[target.id]
            if isinstance(declared, t.NoneType):  # `stop = None`: no value to keep
                return
            b.store(ops.cast(b, value, vt, declared), self.vars[target.id])
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                self.store_target(elt, b.extract_value(value, i), vt.items[i])
        elif isinstance(target, ast.Subscript) and isinstance(self.type_of(target), t.Array):
            self.store_slice(target, value, vt)
        elif isinstance(target, ast.Subscript):
            pointer, dtype, align = self.element_address(target)
            arrays.store_element(b, dtype, pointer, ops.cast(b, value, vt, dtype), align)
        elif isinstance(target, ast.Attribute):
            pointer, ftype, align = arrays.field_address(
                b, self.type_of(target.value), self.expr(target.value), target.attr)
            arrays.store_element(b, ftype, pointer, ops.cast(b, value, vt, ftype), align)
        else:
            raise self.error(target, "unsupported assignment target")

    def store_slice(self, target: ast.Subscript, value, vt: t.Type) -> None:
        """a[lo:hi] = x: a loop nest over the view. A number fills it; an array is read at the
        same trailing indices (index 0 along its extents of 1): numpy's broadcasting. Shapes
        that do not broadcast store nothing (numba raises ValueError there, which ends the
        thread unless debugging): the source is never read past its end. A source overlapping
        the target from below is copied backwards (memmove's rule), as numpy's result needs."""
        b = self.builder
        base_t, dst_t = self.type_of(target.value), self.type_of(target)
        base = self.expr(target.value)
        dst = arrays.view(b, base_t, base, self.index_parts(target, base_t, base), dst_t)
        d_data, d_shape, d_strides = arrays.parts(b, dst, dst_t.ndim)

        def store(indices, item):
            arrays.store_element(b, dst_t.dtype, arrays.element_pointer(
                b, dst_t, d_data, d_shape, d_strides, indices), item,
                arrays.access_alignment(dst_t))

        if not isinstance(vt, t.Array):
            item = ops.cast(b, value, vt, dst_t.dtype)
            self.loop_nest(d_shape, lambda indices: store(indices, item))
            return
        s_data, s_shape, s_strides = arrays.parts(b, value, vt.ndim)
        zero, one, lead = ir.Constant(dm.i64, 0), ir.Constant(dm.i64, 1), dst_t.ndim - vt.ndim
        fits = ir.Constant(dm.i1, 1)
        for k in range(vt.ndim):  # each source extent equals the target's or is 1
            same = b.icmp_signed("==", s_shape[k], d_shape[lead + k])
            fits = b.and_(fits, b.or_(same, b.icmp_signed("==", s_shape[k], one)))
        copy_bb, done_bb = self.new_block("slice.copy"), self.new_block("slice.done")
        b.cbranch(fits, copy_bb, done_bb)
        b.position_at_end(copy_bb)
        d_lo, d_hi = _byte_range(b, d_data, d_shape, d_strides, t.sizeof(dst_t.dtype))
        s_lo, s_hi = _byte_range(b, s_data, s_shape, s_strides, t.sizeof(vt.dtype))
        overlap = b.and_(b.icmp_unsigned("<", d_lo, s_hi), b.icmp_unsigned("<", s_lo, d_hi))
        reverse = b.and_(overlap, b.icmp_unsigned(">", b.ptrtoint(d_data, dm.i64),
                                                  b.ptrtoint(s_data, dm.i64)))

        def copy(indices):
            indices = [b.select(reverse, b.sub(b.sub(d_shape[k], one), i), i)
                       for k, i in enumerate(indices)]
            src_idx = [b.select(b.icmp_signed("==", s_shape[k], one), zero, i)
                       for k, i in enumerate(indices[lead:])]
            item = arrays.load_element(b, vt.dtype, arrays.element_pointer(
                b, vt, s_data, s_shape, s_strides, src_idx), arrays.access_alignment(vt))
            store(indices, ops.cast(b, item, vt.dtype, dst_t.dtype))

        self.loop_nest(d_shape, copy)
        b.branch(done_bb)
        b.position_at_end(done_bb)

    def loop_nest(self, extents: list, body, indices: tuple = ()) -> None:
        """for i0 in range(e0): for i1 in range(e1): ... body([i0, i1, ...]) as IR."""
        if len(indices) == len(extents):
            body(list(indices))
            return
        b = self.builder
        slot = self.alloca(dm.i64, "nest.i")
        b.store(ir.Constant(dm.i64, 0), slot)
        cond_bb, body_bb, end_bb = (self.new_block(f"nest.{n}") for n in ("cond", "body", "end"))
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(slot)
        b.cbranch(b.icmp_signed("<", i, extents[len(indices)]), body_bb, end_bb)
        b.position_at_end(body_bb)
        self.loop_nest(extents, body, indices + (i,))
        b.store(b.add(b.load(slot), ir.Constant(dm.i64, 1)), slot)
        b.branch(cond_bb)
        b.position_at_end(end_bb)

    def visit_If(self, node: ast.If) -> None:
        known = self.typed.static_branches.get(id(node))
        if known is not None:  # `if x is None:` with x known: only the branch taken
            self.statements(node.body if known else node.orelse)
            return
        cond = self.condition(node.test)
        then_bb = self.new_block("if.then")
        else_bb = self.new_block("if.else") if node.orelse else None
        end_bb = self.new_block("if.end")
        self.builder.cbranch(cond, then_bb, else_bb or end_bb)
        self.builder.position_at_end(then_bb)
        self.statements(node.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(end_bb)
        if else_bb is not None:
            self.builder.position_at_end(else_bb)
            self.statements(node.orelse)
            if not self.builder.block.is_terminated:
                self.builder.branch(end_bb)
        self.builder.position_at_end(end_bb)

    def visit_While(self, node: ast.While) -> None:
        cond_bb = self.new_block("while.cond")
        body_bb = self.new_block("while.body")
        else_bb = self.new_block("while.else")
        end_bb = self.new_block("while.end")
        self.builder.branch(cond_bb)
        self.builder.position_at_end(cond_bb)
        self.builder.cbranch(self.condition(node.test), body_bb, else_bb)
        self.builder.position_at_end(body_bb)
        self.loops.append((cond_bb, end_bb))
        self.statements(node.body)
        self.loops.pop()
        if not self.builder.block.is_terminated:
            self.builder.branch(cond_bb)
        self.builder.position_at_end(else_bb)
        self.statements(node.orelse)
        if not self.builder.block.is_terminated:
            self.builder.branch(end_bb)
        self.builder.position_at_end(end_bb)

    def visit_For(self, node: ast.For) -> None:
        kind, item_t = self.typed.loops[id(node)]
        if kind == "range":
            self.range_loop(node, node.iter, item_t, None)
        elif kind == "enumerate_range":
            self.range_loop(node, node.iter.args[0], item_t, self.enumerate_counter(node))
        elif kind == "enumerate_array":
            self.array_loop(node, node.iter.args[0], self.enumerate_counter(node))
        elif kind == "array":
            self.array_loop(node, node.iter, None)
        elif kind == "zip":
            self.zip_loop(node, item_t)
        elif kind == "enumerate_zip":
            self.zip_loop(node, item_t, node.iter.args[0], self.enumerate_counter(node))
        else:
            self.sequence_loop(node)

    def enumerate_counter(self, node: ast.For):
        """(alloca, start) for `for i, x in enumerate(..., start)`; the counter is int64."""
        it = node.iter
        start_node = it.args[1] if len(it.args) > 1 else next(
            (k.value for k in it.keywords if k.arg == "start"), None)
        start = ir.Constant(dm.i64, 0) if start_node is None else ops.cast(
            self.builder, self.expr(start_node), self.type_of(start_node), t.int64)
        counter = self.alloca(dm.i64, "enumerate.i")
        self.builder.store(start, counter)
        return counter

    def bind_loop_item(self, node: ast.For, value, item_t: t.Type, counter) -> None:
        if counter is None:
            self.store_target(node.target, value, item_t)
            return
        self.store_target(node.target.elts[0], self.builder.load(counter), t.int64)
        self.store_target(node.target.elts[1], value, item_t)

    def advance_counter(self, counter) -> None:
        if counter is not None:
            b = self.builder
            b.store(b.add(b.load(counter), ir.Constant(dm.i64, 1)), counter)

    def range_loop(self, node: ast.For, range_call, loop_t: t.Integer, counter) -> None:
        b = self.builder
        args = [ops.cast(b, self.expr(a), self.type_of(a), loop_t) for a in range_call.args]
        lty = dm.value_type(loop_t)
        start, stop, step = ir.Constant(lty, 0), None, ir.Constant(lty, 1)
        if len(args) == 1:
            stop = args[0]
        elif len(args) == 2:
            start, stop = args
        else:
            start, stop, step = args
        step_const = None
        if len(range_call.args) == 3:
            arg = range_call.args[2]
            step_const = self.typed.constants.get(id(arg))
            if isinstance(arg, ast.Constant):
                step_const = arg.value
            elif isinstance(arg, ast.UnaryOp) and isinstance(arg.operand, ast.Constant):
                step_const = -arg.operand.value if isinstance(arg.op, ast.USub) else None
        if step_const == 0:
            raise self.error(range_call, "range() step must not be zero")
        index = self.alloca(lty, "range.i")
        b.store(start, index)
        cond_bb, body_bb = self.new_block("for.cond"), self.new_block("for.body")
        inc_bb, else_bb, end_bb = self.new_block("for.inc"), self.new_block("for.else"), \
            self.new_block("for.end")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(index)
        cmp = b.icmp_signed if loop_t.signed else b.icmp_unsigned
        if step_const is not None:
            cond = cmp("<", i, stop) if step_const > 0 else cmp(">", i, stop)
        else:
            positive = b.icmp_signed(">", step, ir.Constant(lty, 0))
            cond = b.select(positive, cmp("<", i, stop), cmp(">", i, stop))
        b.cbranch(cond, body_bb, else_bb)
        b.position_at_end(body_bb)
        self.bind_loop_item(node, i, loop_t, counter)
        self.loop_body(node, inc_bb, end_bb)
        b.position_at_end(inc_bb)
        b.store(b.add(b.load(index), step), index)
        self.advance_counter(counter)
        b.branch(cond_bb)
        self.loop_else(node, else_bb, end_bb)

    def loop_body(self, node: ast.For, continue_bb, end_bb) -> None:
        self.loops.append((continue_bb, end_bb))
        self.statements(node.body)
        self.loops.pop()
        if not self.builder.block.is_terminated:
            self.builder.branch(continue_bb)

    def loop_else(self, node: ast.For, else_bb, end_bb) -> None:
        b = self.builder
        b.position_at_end(else_bb)
        self.statements(node.orelse)
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)

    def array_loop(self, node: ast.For, seq_node, counter) -> None:
        seq_t = self.type_of(seq_node)
        seq = self.expr(seq_node)
        b = self.builder
        data, shape, strides = arrays.parts(b, seq, 1)

        def bind(i):
            if seq_t.ndim > 1:  # the rows of a 2-d+ array are views, as numba iterates them
                item_t = self.typed.loops[id(node)][1]
                self.bind_loop_item(node, arrays.view(b, seq_t, seq, [("int", i)], item_t),
                                    item_t, counter)
                return
            pointer = arrays.element_pointer(b, seq_t, data, shape, strides, [i])
            item = arrays.load_element(b, seq_t.dtype, pointer, arrays.access_alignment(seq_t))
            self.bind_loop_item(node, item, seq_t.dtype, counter)

        self.counted_loop(node, shape[0], "iter", bind, lambda: self.advance_counter(counter))

    def counted_loop(self, node: ast.For, length, prefix: str, bind, on_increment=None) -> None:
        """for i in range(length) as IR: `bind(i)` binds the loop target at the top of the body;
        `on_increment` runs where the counter advances (after the body and after `continue`)."""
        b = self.builder
        index = self.alloca(dm.i64, f"{prefix}.i")
        b.store(ir.Constant(dm.i64, 0), index)
        cond_bb, body_bb = self.new_block(f"{prefix}.cond"), self.new_block(f"{prefix}.body")
        inc_bb, else_bb, end_bb = self.new_block(f"{prefix}.inc"), \
            self.new_block(f"{prefix}.else"), self.new_block(f"{prefix}.end")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(index)
        b.cbranch(b.icmp_signed("<", i, length), body_bb, else_bb)
        b.position_at_end(body_bb)
        bind(i)
        self.loop_body(node, inc_bb, end_bb)
        b.position_at_end(inc_bb)
        b.store(b.add(b.load(index), ir.Constant(dm.i64, 1)), index)
        if on_increment is not None:
            on_increment()
        b.branch(cond_bb)
        self.loop_else(node, else_bb, end_bb)

    def zip_loop(self, node: ast.For, kinds: tuple, zip_call=None, counter=None) -> None:
        """zip over ranges and 1-d arrays: one i64 counter up to the shortest length.
        Inside enumerate(), `zip_call` is the zip and `counter` the enumerate counter."""
        b = self.builder
        zip_call = node.iter if zip_call is None else zip_call
        items_t = self.type_of(zip_call)
        sources, length = [], None
        for arg, kind, item_t in zip(zip_call.args, kinds, items_t.items, strict=True):
            if kind == "range":
                start, step, n = self.range_start_step_length(arg, item_t)
                sources.append((start, step))
            else:
                arr_t = self.type_of(arg)
                data, shape, strides = arrays.parts(b, self.expr(arg), 1)
                n = shape[0]
                sources.append((arr_t, data, shape, strides))
            length = n if length is None else b.select(b.icmp_signed("<", n, length), n, length)

        def bind(i):
            value = ir.Constant(dm.value_type(items_t), ir.Undefined)
            for k, (source, item_t) in enumerate(zip(sources, items_t.items, strict=True)):
                if len(source) == 2:
                    start, step = source
                    offset = ops.cast(b, i, t.int64, item_t)
                    item = b.add(start, b.mul(offset, step))
                else:
                    arr_t, data, shape, strides = source
                    pointer = arrays.element_pointer(b, arr_t, data, shape, strides, [i])
                    item = arrays.load_element(b, arr_t.dtype, pointer,
                                               arrays.access_alignment(arr_t))
                value = b.insert_value(value, item, k)
            self.bind_loop_item(node, value, items_t, counter)

        self.counted_loop(node, length, "zip", bind, lambda: self.advance_counter(counter))

    def range_start_step_length(self, range_call, loop_t: t.Integer):
        """start and step of range(...) in its loop type, and its length as an i64 (0 for a
        zero step, where Python raises)."""
        b = self.builder
        args = [ops.cast(b, self.expr(a), self.type_of(a), loop_t) for a in range_call.args]
        lty = dm.value_type(loop_t)
        start, step = ir.Constant(lty, 0), ir.Constant(lty, 1)
        if len(args) == 1:
            stop = args[0]
        elif len(args) == 2:
            start, stop = args
        else:
            start, stop, step = args
        wide = [ops.cast(b, v, loop_t, t.Integer(64, loop_t.signed)) for v in (start, stop, step)]
        lo, hi, st = wide
        zero, one = ir.Constant(dm.i64, 0), ir.Constant(dm.i64, 1)
        positive = b.icmp_signed(">", st, zero)
        span = b.select(positive, b.sub(hi, lo), b.sub(lo, hi))
        stride = b.select(positive, st, b.neg(st))
        stride_is_zero = b.icmp_signed("==", stride, zero)
        safe = b.select(stride_is_zero, one, stride)
        n = b.sdiv(b.add(span, b.sub(safe, one)), safe)
        n = b.select(b.or_(stride_is_zero, b.icmp_signed("<", n, zero)), zero, n)
        return start, step, n

    def sequence_loop(self, node: ast.For) -> None:
        """A loop over a tuple, unrolled: tuples are small and their items may differ in width."""
        seq_t = self.type_of(node.iter)
        seq = self.expr(node.iter)
        b = self.builder
        end_bb = self.new_block("tuple.end")
        for k, item_t in enumerate(seq_t.items):
            cont = self.new_block("tuple.next")
            self.store_loop_item(node.target, b.extract_value(seq, k), item_t)
            self.loop_body(node, cont, end_bb)
            b.position_at_end(cont)
        self.statements(node.orelse)
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)

    def store_loop_item(self, target, value, item_t: t.Type) -> None:
        self.store_target(target, value, item_t)

    def visit_Break(self, node) -> None:
        if not self.loops:
            raise self.error(node, "'break' outside a loop")
        self.builder.branch(self.loops[-1][1])

    def visit_Continue(self, node) -> None:
        if not self.loops:
            raise self.error(node, "'continue' outside a loop")
        self.builder.branch(self.loops[-1][0])

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and self.return_slot is not None:
            value = self.expr(node.value)
            self.builder.store(ops.cast(self.builder, value, self.type_of(node.value),
                                        self.typed.return_type), self.return_slot)
        elif node.value is not None:
            self.expr(node.value)
        self.builder.branch(self.exit_block)

    def generic_visit(self, node):
        raise self.error(node, f"unsupported statement: {type(node).__name__}")

    # ---- expressions ---------------------------------------------------------------------------

    def expr(self, node):
        if id(node) in self.typed.constants and not isinstance(node, (ast.Constant, ast.Call)):
            return self.frozen_constant(node, self.typed.constants[id(node)])
        return getattr(self, "expr_" + type(node).__name__)(node)

    def frozen_constant(self, node, value):
        ty = self.type_of(node)
        if isinstance(ty, t.Array):
            data = self.mb.const_array(self.builder, value)
            shape = [ir.Constant(dm.i64, s) for s in value.shape]
            strides = [ir.Constant(dm.i64, s) for s in arrays.contiguous_strides(
                list(value.shape), value.itemsize)]
            return arrays.make_array(self.builder, ty, data, shape, strides)
        if isinstance(ty, PyValue):
            return None
        return ops.constant(ty, value)

    def condition(self, node):
        return ops.truth(self.builder, self.expr(node), self.type_of(node))

    def expr_Constant(self, node: ast.Constant):
        ty = self.type_of(node)
        if isinstance(ty, t.NoneType):
            return None
        return ops.constant(ty, node.value)

    def expr_Name(self, node: ast.Name):
        call = self.typed.calls.get(id(node))
        if call is not None:
            return call.target.lower_value(self, node, call.result)
        if node.id in self.vars:
            if isinstance(self.typed.var_types.get(node.id), t.NoneType):
                return None  # None is no value, as a None constant (expr_Constant)
            return self.builder.load(self.vars[node.id])
        return None  # a compile-time object (module, function, type)

    def expr_Tuple(self, node: ast.Tuple):
        ty = self.type_of(node)
        out = ir.Constant(dm.value_type(ty), ir.Undefined)
        for i, elt in enumerate(node.elts):
            out = self.builder.insert_value(out, self.expr(elt), i)
        return out

    def expr_BinOp(self, node: ast.BinOp):
        left = self.expr(node.left)
        right = self.expr(node.right)
        return self.arith(node.op, left, self.type_of(node.left), right,
                          self.type_of(node.right), self.type_of(node), node.right)

    def arith(self, op, x, xt: t.Type, y, yt: t.Type, result: t.Type, rhs_node):
        b = self.builder
        if isinstance(result, t.Tuple):
            out = ir.Constant(dm.value_type(result), ir.Undefined)
            items = [b.extract_value(x, i) for i in range(len(xt.items))] + \
                [b.extract_value(y, i) for i in range(len(yt.items))]
            for i, v in enumerate(items):
                out = b.insert_value(out, v, i)
            return out
        rhs_const = self.typed.constants.get(id(rhs_node))
        if isinstance(rhs_node, ast.Constant):
            rhs_const = rhs_node.value
        if isinstance(op, ast.Pow) and isinstance(result, t.Float) and t.is_int(yt):
            return ops.binary(b, op, ops.cast(b, x, xt, result), y, result, self.math_call,
                              yt, rhs_const)
        operand_t = result
        if isinstance(op, ast.Div) and isinstance(result, t.Float):
            operand_t = result
        return ops.binary(b, op, ops.cast(b, x, xt, operand_t), ops.cast(b, y, yt, operand_t),
                          operand_t, self.math_call, yt, rhs_const)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        b = self.builder
        value = self.expr(node.operand)
        vt = self.type_of(node.operand)
        result = self.type_of(node)
        if isinstance(node.op, ast.Not):
            return b.not_(ops.truth(b, value, vt))
        value = ops.cast(b, value, vt, result)
        if isinstance(node.op, ast.USub):
            return ops.negate(b, value, result)
        if isinstance(node.op, ast.Invert):
            return b.not_(value)
        return value

    def expr_BoolOp(self, node: ast.BoolOp):
        b = self.builder
        result_t = self.type_of(node)
        end_bb = self.new_block("boolop.end")
        incoming = []
        is_and = isinstance(node.op, ast.And)
        for i, v in enumerate(node.values):
            value = ops.cast(b, self.expr(v), self.type_of(v), result_t)
            if i == len(node.values) - 1:
                incoming.append((value, b.block))
                b.branch(end_bb)
                break
            truth = ops.truth(b, value, result_t)
            next_bb = self.new_block("boolop.next")
            incoming.append((value, b.block))
            if is_and:
                b.cbranch(truth, next_bb, end_bb)
            else:
                b.cbranch(truth, end_bb, next_bb)
            b.position_at_end(next_bb)
        b.position_at_end(end_bb)
        phi = b.phi(dm.value_type(result_t))
        for value, block in incoming:
            phi.add_incoming(value, block)
        return phi

    def expr_Compare(self, node: ast.Compare):
        b = self.builder
        left_node = node.left
        left = self.expr(left_node)
        end_bb = self.new_block("cmp.end") if len(node.ops) > 1 else None
        incoming = []
        for k, (op, right_node) in enumerate(zip(node.ops, node.comparators, strict=False)):
            right = self.expr(right_node)
            lt, rt = self.type_of(left_node), self.type_of(right_node)
            if isinstance(op, (ast.In, ast.NotIn)):
                result = self.contains(left, lt, right, rt, id(left_node) in self.typed.weak)
                if isinstance(op, ast.NotIn):
                    result = b.not_(result)
            else:
                ct = ops.comparison_type(lt, rt, id(left_node) in self.typed.weak,
                                         id(right_node) in self.typed.weak)
                result = ops.compare(b, op, ops.cast(b, left, lt, ct), ops.cast(b, right, rt, ct),
                                     ct)
            if end_bb is None:
                return result
            incoming.append((result, b.block))
            if k == len(node.ops) - 1:
                b.branch(end_bb)
            else:
                next_bb = self.new_block("cmp.next")
                b.cbranch(result, next_bb, end_bb)
                b.position_at_end(next_bb)
            left_node, left = right_node, right
        b.position_at_end(end_bb)
        phi = b.phi(dm.i1)
        for value, block in incoming:
            phi.add_incoming(value, block)
        return phi

    def build_tuple(self, items: list, ty: t.Tuple):
        value = ir.Constant(dm.value_type(ty), ir.Undefined)
        for k, item in enumerate(items):
            value = self.builder.insert_value(value, item, k)
        return value

    def contains(self, item, item_t: t.Type, seq, seq_t: t.Type, weak_item: bool):
        """`item in seq` (i1): == against each tuple item, or a scan of a 1-d array."""
        b = self.builder
        eq = ast.Eq()
        if isinstance(seq_t, t.Tuple):
            found = ir.Constant(dm.i1, 0)
            for k, elem_t in enumerate(seq_t.items):
                ct = ops.comparison_type(item_t, elem_t, weak_item, False)
                hit = ops.compare(b, eq, ops.cast(b, item, item_t, ct),
                                  ops.cast(b, b.extract_value(seq, k), elem_t, ct), ct)
                found = b.or_(found, hit)
            return found
        ct = ops.comparison_type(item_t, seq_t.dtype, weak_item, False)
        data, shape, strides = arrays.parts(b, seq, 1)
        index = self.alloca(dm.i64, "in.i")
        b.store(ir.Constant(dm.i64, 0), index)
        cond_bb, body_bb, end_bb = (self.new_block(f"in.{n}") for n in ("cond", "body", "end"))
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(index)
        more = b.icmp_signed("<", i, shape[0])
        cond_end = b.block
        b.cbranch(more, body_bb, end_bb)
        b.position_at_end(body_bb)
        elem = arrays.load_element(b, seq_t.dtype,
                                   arrays.element_pointer(b, seq_t, data, shape, strides, [i]),
                                   arrays.access_alignment(seq_t))
        hit = ops.compare(b, eq, ops.cast(b, item, item_t, ct),
                          ops.cast(b, elem, seq_t.dtype, ct), ct)
        b.store(b.add(i, ir.Constant(dm.i64, 1)), index)
        body_end = b.block
        b.cbranch(hit, end_bb, cond_bb)
        b.position_at_end(end_bb)
        phi = b.phi(dm.i1)
        phi.add_incoming(ir.Constant(dm.i1, 0), cond_end)
        phi.add_incoming(ir.Constant(dm.i1, 1), body_end)
        return phi

    def expr_IfExp(self, node: ast.IfExp):
        b = self.builder
        result_t = self.type_of(node)
        known = self.typed.static_branches.get(id(node))
        if known is not None:
            live = node.body if known else node.orelse
            return ops.cast(b, self.expr(live), self.type_of(live), result_t)
        cond = self.condition(node.test)
        then_bb, else_bb, end_bb = self.new_block("ifexp.then"), self.new_block("ifexp.else"), \
            self.new_block("ifexp.end")
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        a = ops.cast(b, self.expr(node.body), self.type_of(node.body), result_t)
        then_end = b.block
        b.branch(end_bb)
        b.position_at_end(else_bb)
        c = ops.cast(b, self.expr(node.orelse), self.type_of(node.orelse), result_t)
        else_end = b.block
        b.branch(end_bb)
        b.position_at_end(end_bb)
        phi = b.phi(dm.value_type(result_t))
        phi.add_incoming(a, then_end)
        phi.add_incoming(c, else_end)
        return phi

    def expr_Attribute(self, node: ast.Attribute):
        ty = self.type_of(node)
        call = self.typed.calls.get(id(node))
        if call is not None:  # a builtin value such as cuda.threadIdx.x
            return call.target.lower_value(self, node, ty)
        if isinstance(ty, PyValue):
            return None
        base_t = self.type_of(node.value)
        base = self.expr(node.value)
        b = self.builder
        if isinstance(base_t, t.Array):
            return arrays.attribute(b, base_t, base, node.attr, ty)
        if isinstance(base_t, t.Complex):
            return b.extract_value(base, 0 if node.attr == "real" else 1)
        if isinstance(base_t, t.Record):
            pointer, ftype, align = arrays.field_address(b, base_t, base, node.attr)
            return arrays.load_element(b, ftype, pointer, align)
        if isinstance(base_t, t.Group):
            from gpunb.compiler.builtins.groups import group_size

            return group_size(self, base_t)
        if node.attr == "real":
            return base
        if node.attr == "imag":
            return ops.constant(base_t, 0)
        raise self.error(node, f"unsupported attribute {node.attr}")

    def expr_Subscript(self, node: ast.Subscript):
        base_t = self.type_of(node.value)
        b = self.builder
        if isinstance(base_t, t.Tuple):
            base = self.expr(node.value)
            index = self.typed.constants.get(id(node.slice))
            if isinstance(index, slice):  # t[1:]: a new tuple of the items picked
                return self.build_tuple([b.extract_value(base, k) for k in
                                         range(len(base_t.items))[index]], self.type_of(node))
            if index is None and isinstance(node.slice, ast.Constant):
                index = node.slice.value
            if isinstance(index, int):
                return b.extract_value(base, index % len(base_t.items))
            return self.dynamic_tuple_index(node, base, base_t)
        result = self.type_of(node)
        if isinstance(base_t, t.Record):
            pointer, dtype, align = self.element_address(node)
            return arrays.load_element(b, dtype, pointer, align)
        if isinstance(result, t.Array):
            base = self.expr(node.value)
            parts = self.index_parts(node, base_t, base)
            return arrays.view(b, base_t, base, parts, result)
        pointer, dtype, align = self.element_address(node)
        return arrays.load_element(b, dtype, pointer, align)

    def dynamic_tuple_index(self, node, base, base_t: t.Tuple):
        b = self.builder
        item = dm.value_type(base_t.items[0])
        n = len(base_t.items)
        storage = self.alloca(ir.ArrayType(item, n), "tuple.items")
        for k in range(n):
            b.store(b.extract_value(base, k),
                    b.gep(storage, [ir.Constant(dm.i32, 0), ir.Constant(dm.i32, k)]))
        index = self.expr(node.slice)
        index = arrays.normalise_index(b, index, self.type_of(node.slice),
                                       ir.Constant(dm.i64, n))
        return b.load(b.gep(storage, [ir.Constant(dm.i32, 0), index]))

    def index_parts(self, node, base_t: t.Array, base):
        b = self.builder
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        expanded = self.typed.constants.get(id(index))
        if isinstance(expanded, list):  # the items with `...` expanded into full slices
            items = expanded
        shape = [b.extract_value(base, [1, k]) for k in range(base_t.ndim)]
        out = []
        for k, item in enumerate(items):
            if isinstance(item, ast.Slice):
                vals = []
                for s in (item.lower, item.upper, item.step):
                    if s is None or isinstance(self.type_of(s), t.NoneType):  # a[None:3]
                        vals.append(None)
                    else:
                        vals.append(ops.cast(b, self.expr(s), self.type_of(s), t.int64))
                out.append(("slice", *vals))
            else:
                value = self.expr(item)
                idx = arrays.normalise_index(b, value, self.type_of(item), shape[k])
                self.target.check_bounds(self, node, base_t, k, idx, shape[k])
                out.append(("int", idx))
        return out

    def element_address(self, node: ast.Subscript):
        """(pointer, dtype, alignment or None) of an element access arr[i, j, ...] (also
        arr[i][j]) or a record field rec['x']."""
        base_t = self.type_of(node.value)
        base = self.expr(node.value)
        b = self.builder
        if isinstance(base_t, t.Record):
            return arrays.field_address(b, base_t, base, node.slice.value)
        data, shape, strides = arrays.parts(b, base, base_t.ndim)
        parts = self.index_parts(node, base_t, base)
        indices = [p[1] for p in parts]
        return (arrays.element_pointer(b, base_t, data, shape, strides, indices), base_t.dtype,
                arrays.access_alignment(base_t))

    def expr_Call(self, node: ast.Call):
        call = self.typed.calls[id(node)]
        b = self.builder
        if call.kind == "cast":
            arg = node.args[0]
            return ops.cast(b, self.expr(arg), self.type_of(arg), call.target)
        if call.kind == "builtin":
            return call.target.lower_call(self, node, call)
        return self.call_gpu_function(node, call)

    def call_gpu_function(self, node, call):
        b = self.builder
        callee: TypedFunction = call.target
        values = []
        for arg, declared in zip(call.args, call.argtypes, strict=False):
            if isinstance(declared, t.NoneType):
                values.append(ir.Constant(dm.value_type(declared), None))
            elif isinstance(arg, tuple) and arg and arg[0] == "const":
                values.append(ops.constant(declared, arg[1]))
            else:
                values.append(ops.cast(b, self.expr(arg), self.type_of(arg), declared))
        if self.target.inline_calls:
            return self.inline_call(callee, values)
        fn = self.mb.device_function(callee)
        extra = [self.ctx] if self.ctx is not None else []
        result = b.call(fn, extra + values)
        return None if isinstance(callee.return_type, t.NoneType) else result

    def inline_call(self, callee: TypedFunction, values: list):
        """Lower the callee's body here (CPU target: suspend points must be in the kernel)."""
        inner = FunctionLowerer(self.mb, callee, self.fn, self.builder, self.alloca_block,
                                self.ctx)
        inner.is_kernel = False
        inner.exit_block = self.new_block(f"{callee.name}.return")
        if not isinstance(callee.return_type, t.NoneType):
            inner.return_slot = self.alloca(dm.value_type(callee.return_type),
                                            f"{callee.name}.ret")
        inner.declare_variables()
        inner.bind_arguments(values)
        inner.statements(callee.source.tree.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(inner.exit_block)
        self.builder.position_at_end(inner.exit_block)
        if inner.return_slot is not None:
            return self.builder.load(inner.return_slot)
        return None

    def generic_expr(self, node):
        raise self.error(node, f"unsupported expression {type(node).__name__}")


def _byte_range(b: ir.IRBuilder, data, shape: list, strides: list, itemsize: int) -> tuple:
    """[lo, hi) of the bytes an array view can touch, as i64 addresses."""
    zero = ir.Constant(dm.i64, 0)
    lo = hi = b.ptrtoint(data, dm.i64)
    for n, stride in zip(shape, strides, strict=True):
        span = b.mul(b.sub(n, ir.Constant(dm.i64, 1)), stride)
        negative = b.icmp_signed("<", span, zero)
        lo = b.add(lo, b.select(negative, span, zero))
        hi = b.add(hi, b.select(negative, zero, span))
    return lo, b.add(hi, ir.Constant(dm.i64, itemsize))
