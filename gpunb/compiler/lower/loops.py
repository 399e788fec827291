"""Lowering of `for` loops from their LoopPlan, through one counted-loop emitter.

Every loop over ranges and arrays is `for k in range(trip count)`: a range source contributes
start + k * step (its trip count is computed once, 0 for an empty range or a zero step), an array
source its element (or row view) k; zip advances all of them in lock step and stops at the
shortest; enumerate binds (start + k, item). zip and enumerate nest (zip(range(n), enumerate(a)))
as sources of sources. A loop over a tuple is unrolled.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.typed import EnumerateSource, JoinKind, LoopPlan, RangeSource, ZipSource
from gpunb.foundation import types as t


class LoopLowering:
    def visit_For(self, node: ast.For) -> None:
        plan: LoopPlan = self.typed.loops[node]
        if plan.copies:
            self.literal_unroll_loop(node, plan)
            return
        if plan.unrolled:
            self.unrolled_loop(node, plan)
            return
        if len(plan.sources) == 1 and isinstance(plan.sources[0], RangeSource) and \
                not plan.enumerate:
            self.range_loop(node, plan.sources[0])
            return
        b = self.builder
        (source,) = plan.sources  # zip and enumerate are one source of sources
        get, length = self.loop_source(source)

        def bind(k):
            self.store_target(node.target, get(k), plan.item)

        self.counted_loop(node, ir.Constant(dm.i64, 0),
                          lambda k: b.icmp_signed("<", k, length), bind,
                          lambda k: b.add(k, ir.Constant(dm.i64, 1), flags=["nsw"]), length)

    def range_loop(self, node: ast.For, source: RangeSource) -> None:
        """for i in range(...): i itself is the loop's index, compared with stop in the step's
        direction (the form LLVM keeps as one grid-stride loop rather than unrolling it); a zero
        step runs no iteration (Python raises; with debug=True so does the kernel). A target
        that polls counts iterations instead (k in range(trip count), i = start + k * step),
        the form its chunked loops need."""
        b = self.builder
        if self.target.polls:
            start, step, count = self.range_bounds(source)
            item = source.item

            def bind_item(k):
                i = b.add(start, b.mul(ops.cast(b, k, t.int64, item), step))
                self.store_target(node.target, i, item)

            self.counted_loop(node, ir.Constant(dm.i64, 0),
                              lambda k: b.icmp_signed("<", k, count), bind_item,
                              lambda k: b.add(k, ir.Constant(dm.i64, 1), flags=["nsw"]), count)
            return
        start, stop, step = self.range_operands(source)
        cmp = b.icmp_signed if source.item.signed else b.icmp_unsigned
        zero = ir.Constant(step.type, 0)

        def condition(i):
            if source.step_value is not None:
                return cmp("<", i, stop) if source.step_value > 0 else cmp(">", i, stop)
            up = b.and_(b.icmp_signed(">", step, zero), cmp("<", i, stop))
            down = b.and_(b.icmp_signed("<", step, zero), cmp(">", i, stop))
            return b.or_(up, down)

        self.counted_loop(node, start, condition,
                          lambda i: self.store_target(node.target, i, source.item),
                          lambda i: b.add(i, step))

    def counted_loop(self, node: ast.For, first, condition, bind, advance,
                     count=None) -> None:
        """A `for` statement on the one loop emitter: the loop's header joins at the condition,
        `bind` binds the loop target, `continue` advances, and the exit runs the else clause.
        `count`: the loop is k in range(count) (emit_loop chunks it on a target that polls)."""

        def header():
            self.join(node, JoinKind.HEADER)

        def body(index, continue_bb, break_bb):
            bind(index)
            self.loop_body(node.body, continue_bb, break_bb)

        else_bb, end_bb = self.emit_loop(first, condition, body, advance, header, "for",
                                         count=count)
        self.loop_else(node, else_bb, end_bb)

    def loop_source(self, source) -> tuple:
        """(k -> item, trip count as i64) of one source, its operands evaluated once here."""
        b = self.builder
        if isinstance(source, ZipSource):  # stops at its shortest source
            parts = [self.loop_source(s) for s in source.sources]
            length = parts[0][1]
            for _, n in parts[1:]:
                length = b.select(b.icmp_signed("<", n, length), n, length)
            return (lambda k: self.build_tuple([get(k) for get, _ in parts], source.item),
                    length)
        if isinstance(source, EnumerateSource):
            get, length = self.loop_source(source.inner)
            start = self.counter_start(source.start)
            return (lambda k: self.build_tuple([b.add(start, k), get(k)], source.item),
                    length)
        if isinstance(source, RangeSource):
            start, step, n = self.range_bounds(source)
            item_t = source.item

            def range_item(k):
                return b.add(start, b.mul(ops.cast(b, k, t.int64, item_t), step))

            return range_item, n
        arr_t = self.type_of(source.array)
        value = self.expr(source.array)
        data, shape, strides = arrays.parts(b, value, arr_t.ndim)

        def array_item(k):
            if arr_t.ndim > 1:  # the rows of a 2-d+ array are views, as numba iterates them
                return arrays.view(b, arr_t, value, [("int", k)], source.item)
            pointer = arrays.element_pointer(b, arr_t, data, shape, strides, [k])
            return arrays.load_element(b, arr_t.dtype, pointer, arrays.access_alignment(arr_t))

        return array_item, shape[0]

    def range_operands(self, source: RangeSource) -> tuple:
        """start, stop and step of a range, evaluated once, in its loop type."""
        b = self.builder
        item_t = source.item
        lty = dm.value_type(item_t)

        def operand(node, default: int):
            if node is None:
                return ir.Constant(lty, default)
            return ops.cast(b, self.expr(node), self.type_of(node), item_t)

        start, stop, step = operand(source.start, 0), operand(source.stop, 0), \
            operand(source.step, 1)
        if source.step is not None and source.step_value is None and \
                (self.mb.options.get("debug") or self.target.checks_always):
            self.check_nonzero_step(source.step, step)
        return start, stop, step

    def range_bounds(self, source: RangeSource) -> tuple:
        """start and step of a range, and its trip count as an i64 (for zip and enumerate,
        which advance in lock step): 0 for an empty range and for a zero step."""
        b = self.builder
        item_t = source.item
        start, stop, step = self.range_operands(source)
        wide = t.Integer(64, item_t.signed)
        lo, hi, st = (ops.cast(b, v, item_t, wide) for v in (start, stop, step))
        zero, one = ir.Constant(dm.i64, 0), ir.Constant(dm.i64, 1)
        if item_t.signed:
            if source.step_value is not None:  # a constant step (the usual case) folds here
                positive = ir.Constant(dm.i1, int(source.step_value > 0))
            else:
                positive = b.icmp_signed(">", st, zero)
            span = b.select(positive, b.sub(hi, lo), b.sub(lo, hi))
            stride = b.select(positive, st, b.neg(st))
            nonempty = b.icmp_signed(">", span, zero)
            divide = b.sdiv
        else:  # an unsigned range counts up: its step is an unsigned value
            span, stride = b.sub(hi, lo), st
            nonempty = b.icmp_unsigned(">", hi, lo)
            divide = b.udiv
        stride_is_zero = b.icmp_signed("==", stride, zero)
        safe = b.select(stride_is_zero, one, stride)
        n = divide(b.add(span, b.sub(safe, one)), safe)
        return start, step, b.select(b.and_(nonempty, b.not_(stride_is_zero)), n, zero)

    def check_nonzero_step(self, node, step) -> None:
        b = self.builder
        bad, ok = self.new_block("range.zero_step"), self.new_block("range.ok")
        b.cbranch(b.icmp_signed("==", step, ir.Constant(step.type, 0)), bad, ok)
        b.position_at_end(bad)
        self.raise_exception(node, "ValueError", "range() arg 3 must not be zero",
                             report=self.target.checks_always)
        b.position_at_end(ok)

    def enumerate_start(self, plan: LoopPlan):
        return self.counter_start(plan.enumerate_start) if plan.enumerate else None

    def counter_start(self, node):
        """enumerate's first counter value, as an i64 (node None: 0)."""
        if node is None:
            return ir.Constant(dm.i64, 0)
        return ops.cast(self.builder, self.expr(node), self.type_of(node), t.int64)

    def unrolled_loop(self, node: ast.For, plan: LoopPlan) -> None:
        """A loop over a tuple, unrolled: tuples are small and their items may differ in width."""
        seq_t = self.type_of(plan.tuple_seq)
        seq = self.expr(plan.tuple_seq)
        start = self.enumerate_start(plan)
        b = self.builder
        end_bb = self.new_block("tuple.end")
        for k, item_t in enumerate(seq_t.items):
            here, cont = self.new_block("tuple.item"), self.new_block("tuple.next")
            b.branch(here)
            b.position_at_end(here)
            self.join(node, JoinKind.HEADER)
            item = ops.cast(b, b.extract_value(seq, k), item_t, plan.item)
            if start is not None:
                pair = t.Tuple((t.int64, plan.item))
                counter = b.add(start, ir.Constant(dm.i64, k))
                self.store_target(node.target, self.build_tuple([counter, item], pair), pair)
            else:
                self.store_target(node.target, item, plan.item)
            self.loop_body(node.body, cont, end_bb)
            b.position_at_end(cont)
        # past the last item: the loop leaves through its header, into the else clause
        self.join(node, JoinKind.HEADER)
        self.statements(node.orelse)
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)
        self.join(node, JoinKind.EXIT)

    def literal_unroll_loop(self, node: ast.For, plan: LoopPlan) -> None:
        """literal_unroll(tup): each item's own copy of the body, one after the other; the
        tuple is evaluated once, `continue` jumps to the next copy, `break` past the last."""
        b = self.builder
        seq = self.expr(plan.tuple_seq)
        end_bb = self.new_block("unroll.end")
        for k, ((target, body), item_t) in enumerate(zip(plan.copies, plan.item.items,
                                                          strict=True)):
            here, after = self.new_block(f"unroll.{k}"), self.new_block(f"unroll.{k}.next")
            if not b.block.is_terminated:
                b.branch(here)
            b.position_at_end(here)
            self.join(body[0], JoinKind.HEADER)
            self.store_target(target, b.extract_value(seq, k), item_t)
            self.loop_body(body, after, end_bb)
            b.position_at_end(after)
        self.join(node, JoinKind.HEADER)  # past the last copy: the else clause
        self.statements(node.orelse)
        if not b.block.is_terminated:
            b.branch(end_bb)
        b.position_at_end(end_bb)
        self.join(node, JoinKind.EXIT)
