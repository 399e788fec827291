"""Lowering of expressions: constants, names, attributes, operators, comparisons, conditionals."""

from __future__ import annotations

import ast

import numpy as np
from llvmlite import ir

from gpunb.compiler import arrays, datetimes
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.typed import GpuCall
from gpunb.compiler.values import ArrayCTypes, PyValue, foreign_array
from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import Fragment


class ExpressionLowering:
    def expr(self, node):
        if node in self.typed.constants and not isinstance(node, (ast.Constant, ast.Call)):
            return self.frozen_constant(node, self.typed.constants[node])
        return getattr(self, "expr_" + type(node).__name__)(node)

    def frozen_constant(self, node, value):
        found = self.type_of(node)
        if isinstance(found, t.Array) and not isinstance(value, np.ndarray):
            return self.captured_device_array(node, found, value)
        if isinstance(found, t.Array):
            data = self.mb.const_array(self.builder, value)
            shape = [ir.Constant(dm.i64, s) for s in value.shape]
            strides = [ir.Constant(dm.i64, s) for s in arrays.contiguous_strides(
                list(value.shape), value.itemsize)]
            return arrays.make_array(self.builder, found, data, shape, strides)
        if isinstance(found, (PyValue, t.NoneType)):
            return None
        if isinstance(found, t.Tuple) and any(isinstance(i, t.Array) for i in found.items):
            # a global tuple holding arrays: each array frozen into constant memory
            return self.build_tuple([self.frozen_item(item_t, item)
                                     for item_t, item in zip(found.items, value, strict=True)],
                                    found)
        return ops.constant(found, value)

    def captured_device_array(self, node, found: t.Array, value):
        """A device array global: its address, shape and strides at compile time (numba-cuda
        captures device arrays by reference, so later in-place changes are seen; the cache key
        holds the address, cache/encode.py)."""
        foreign = None if hasattr(type(value), "__gpunb_device_array__") else \
            foreign_array(value)
        if foreign is not None:  # another library's GPU array (its __cuda_array_interface__)
            if self.mb.target.name != "cuda":
                raise self.error(node, "a CUDA array of another library (its "
                                 "__cuda_array_interface__) cannot be read by a kernel compiled "
                                 f"for the {self.mb.target.name} target",
                                 "run the kernel on the CUDA target, or pass a host array")
            address, shape, strides, _, _ = foreign
            data = self.builder.inttoptr(ir.Constant(dm.i64, address), dm.ptr)
            return arrays.make_array(self.builder, found,
                                     data, [ir.Constant(dm.i64, s) for s in shape],
                                     [ir.Constant(dm.i64, s) for s in strides])
        owner = type(value).__gpunb_device_array__
        if owner != self.mb.target.name:
            raise self.error(node, f"a {owner}-target device array cannot be read by a kernel "
                             f"compiled for the {self.mb.target.name} target",
                             "make the global with cuda.to_device while that target is active, "
                             "or pass the array as an argument")
        data = self.builder.inttoptr(ir.Constant(dm.i64, value._ptr), dm.ptr)
        shape = [ir.Constant(dm.i64, s) for s in value.shape]
        strides = [ir.Constant(dm.i64, s) for s in value.strides]
        return arrays.make_array(self.builder, found, data, shape, strides)

    def frozen_item(self, item_t: t.Type, value):
        if isinstance(item_t, t.Array):
            data = self.mb.const_array(self.builder, value)
            shape = [ir.Constant(dm.i64, s) for s in value.shape]
            strides = [ir.Constant(dm.i64, s) for s in value.strides]
            return arrays.make_array(self.builder, item_t, data, shape, strides)
        if isinstance(item_t, t.Tuple):
            return self.build_tuple([self.frozen_item(i, v) for i, v in
                                     zip(item_t.items, value, strict=True)], item_t)
        return ops.constant(item_t, value)

    def condition(self, node):
        return ops.truth(self.builder, self.expr(node), self.type_of(node))

    def expr_Constant(self, node: ast.Constant):
        found = self.type_of(node)
        if isinstance(found, t.NoneType):
            return None
        return ops.constant(found, node.value)

    def expr_Name(self, node: ast.Name):
        call = self.typed.calls.get(node)
        if call is not None:  # a builtin value such as cuda.warpsize
            return call.builtin.lower_value(self, node, call.result)
        var = self.typed.uses.get(node)
        if var is None:
            return None  # a compile-time object (module, function, type)
        vt = self.var_type(var)
        if isinstance(vt, t.Optional) and not isinstance(self.type_of(node), t.Optional):
            return self.unwrap_optional(node, self.load_var(var), vt)
        return self.load_var(var)

    def unbound_read(self, node: ast.AST, var):
        """A read no assignment reaches: Python's UnboundLocalError when it runs (reported as
        a raise is: always on the CPU target, with debug=True on a GPU, where without it the
        thread ends, as numba-cuda's raise); the rest of the statement lowers in a dead block."""
        self.raise_exception(node, "UnboundLocalError",
                             f"cannot access local variable '{var.name}' where it is not "
                             "associated with a value", report=self.target.checks_always)
        self.builder.position_at_end(self.new_block("unbound.after"))
        return ir.Constant(dm.value_type(self.var_type(var)), ir.Undefined)

    def unwrap_optional(self, node, value, vt: t.Optional):
        """An Optional used as its value: a None ends the thread with numba's TypeError."""
        b = self.builder
        bad, ok = self.new_block("optional.none"), self.new_block("optional.value")
        b.cbranch(b.extract_value(value, 0), ok, bad)
        b.position_at_end(bad)
        self.raise_exception(node, "TypeError", f"expected {vt.type}, got None",
                             report=self.target.checks_always)
        b.position_at_end(ok)
        return b.extract_value(value, 1)

    def optional_is_none(self, node: ast.Compare, left, lt: t.Type, right):
        """`x is None` / `x is not None` on an Optional: its flag."""
        value = left if isinstance(lt, t.Optional) else right
        present = self.builder.extract_value(value, 0)
        return self.builder.not_(present) if isinstance(node.ops[0], ast.Is) else present

    def expr_Tuple(self, node: ast.Tuple):
        return self.build_tuple([self.expr(e) for e in node.elts], self.type_of(node))

    def build_tuple(self, items: list, tuple_type: t.Tuple):
        value = ir.Constant(dm.value_type(tuple_type), ir.Undefined)
        for k, item in enumerate(items):
            value = self.builder.insert_value(value, item, k)
        return value

    def expr_Attribute(self, node: ast.Attribute):
        found = self.type_of(node)
        call = self.typed.calls.get(node)
        if isinstance(call, GpuCall):  # an @overload_attribute: its implementation, called
            return self.call_gpu_function(call)
        if call is not None:  # a builtin value such as cuda.threadIdx.x
            return call.builtin.lower_value(self, node, found)
        if isinstance(found, PyValue):
            return None
        base_t = self.type_of(node.value)
        base = self.expr(node.value)
        b = self.builder
        if isinstance(base_t, t.Array) and node.attr == "ctypes":
            return base  # only its .data is read, below
        if isinstance(base_t, ArrayCTypes):  # arr.ctypes.data
            return b.ptrtoint(b.extract_value(base, 0), dm.i64)
        if isinstance(base_t, t.Array):
            return arrays.attribute(b, base_t, base, node.attr, found)
        if isinstance(base_t, Fragment):
            from gpunb.compiler.builtins.tensorcore_wmma import lower_fragment_attribute

            return lower_fragment_attribute(self, node, base_t, base, node.attr)
        if isinstance(base_t, t.Complex):
            return b.extract_value(base, 0 if node.attr == "real" else 1)
        if isinstance(base_t, t.Record):
            pointer, ftype, align = arrays.field_address(b, base_t, base, node.attr)
            return arrays.load_element(b, ftype, pointer, align)
        if isinstance(base_t, t.Tuple) and node.attr in base_t.names:
            return b.extract_value(base, base_t.names.index(node.attr))
        if isinstance(base_t, t.Group):
            from gpunb.compiler.builtins.group_ranks import group_size

            return group_size(self, base_t)
        if node.attr == "real":
            return base
        if node.attr == "imag":
            return ops.constant(base_t, 0)
        raise self.error(node, f"unsupported attribute {node.attr}")

    # ---- operators -----------------------------------------------------------------------------

    def expr_BinOp(self, node: ast.BinOp):
        left = self.expr(node.left)
        right = self.expr(node.right)
        return self.arith(node.op, left, self.type_of(node.left), right,
                          self.type_of(node.right), self.type_of(node), node.right)

    def arith(self, op, x, xt: t.Type, y, yt: t.Type, result: t.Type, rhs_node):
        """`x op y` in the result type (a float raised to an integer keeps the integer)."""
        b = self.builder
        if isinstance(result, t.Tuple):  # tuple + tuple
            items = [b.extract_value(x, i) for i in range(len(xt.items))] + \
                [b.extract_value(y, i) for i in range(len(yt.items))]
            return self.build_tuple(items, result)
        if datetimes.involved(xt, yt):
            return datetimes.lower_binop(b, op, x, xt, y, yt, result)
        rhs_const = self.typed.constants.get(rhs_node)
        if isinstance(rhs_node, ast.Constant):
            rhs_const = rhs_node.value
        if isinstance(op, ast.Pow) and isinstance(result, t.Float) and t.is_int(yt):
            return ops.binary(b, op, ops.cast(b, x, xt, result), y, result, self.math_call,
                              yt, rhs_const)
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)) and self.mb.options.get("debug") \
                and (rhs_const is None or rhs_const == 0) and t.is_number(yt):
            # a literal 0 divisor raises too (numba's check folds to an unconditional raise)
            self.check_divisor(rhs_node, y, yt, result)
        return ops.binary(b, op, ops.cast(b, x, xt, result), ops.cast(b, y, yt, result),
                          result, self.math_call, yt, rhs_const)

    def check_divisor(self, node, y, yt: t.Type, result: t.Type) -> None:
        """debug=True: numba's Python error model, a division by zero raises ZeroDivisionError
        (integer and float alike, float not with fastmath); without debug it gives numba's
        0 / inf / nan."""
        b = self.builder
        if isinstance(result, t.Float) and self.mb.options.get("fastmath"):
            return  # numba: fastmath float division gives inf / nan, never raises
        zero = b.fcmp_ordered("==", y, ir.Constant(y.type, 0.0)) if isinstance(yt, t.Float) \
            else None
        if zero is None:
            if isinstance(yt, t.Complex) or not isinstance(yt, (t.Integer, t.Boolean)):
                return  # complex, bfloat16, fp8: left to the arithmetic
            zero = b.icmp_unsigned("==", y, ir.Constant(y.type, 0))
        fail, ok = self.new_block("div.zero"), self.new_block("div.ok")
        b.cbranch(zero, fail, ok)
        b.position_at_end(fail)
        what = "float" if isinstance(result, t.Float) else "integer"
        self.raise_exception(node, "ZeroDivisionError", f"{what} division by zero")
        b.position_at_end(ok)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        b = self.builder
        value = self.expr(node.operand)
        vt = self.type_of(node.operand)
        result = self.type_of(node)
        if isinstance(node.op, ast.Not):
            return b.not_(ops.truth(b, value, vt))
        if isinstance(node.op, ast.UAdd):
            return ops.cast(b, value, vt, result)
        if isinstance(vt, t.Integer):
            # numba negates and inverts at the operand's own width, then widens:
            # -uint32(1) is 4294967295, ~uint32(1) is 4294967294
            done = b.neg(value) if isinstance(node.op, ast.USub) else b.not_(value)
            return ops.cast(b, done, vt, result)
        value = ops.cast(b, value, vt, result)
        if isinstance(node.op, ast.USub):
            return ops.negate(b, value, result)
        return b.not_(value)  # ~bool

    def expr_BoolOp(self, node: ast.BoolOp):
        b = self.builder
        result_t = self.type_of(node)
        live = self.typed.branches.get(node)  # constant operands pruned, as numba does
        values = node.values if live is None else [node.values[k] for k in live]
        end_bb = self.new_block("boolop.end")
        incoming = []
        is_and = isinstance(node.op, ast.And)
        for i, v in enumerate(values):
            value = ops.cast(b, self.expr(v), self.type_of(v), result_t)
            if i == len(values) - 1:
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
        operand_types = self.typed.comparisons[node]
        left_node = node.left
        left = self.expr(left_node)
        end_bb = self.new_block("cmp.end") if len(node.ops) > 1 else None
        incoming = []
        for k, (op, right_node) in enumerate(zip(node.ops, node.comparators, strict=True)):
            right = self.expr(right_node)
            lt, rt = self.type_of(left_node), self.type_of(right_node)
            if {type(lt), type(rt)} == {t.Optional, t.NoneType}:
                return self.optional_is_none(node, left, lt, right)
            if isinstance(op, (ast.In, ast.NotIn)):
                result = self.contains(left, lt, right, rt, operand_types[k])
                if isinstance(op, ast.NotIn):
                    result = b.not_(result)
            else:
                ct = operand_types[k]
                if isinstance(op, (ast.Is, ast.IsNot)):  # Enum members of one class
                    op = ast.Eq() if isinstance(op, ast.Is) else ast.NotEq()
                if isinstance(lt, enum_types.EnumMember):  # positions in the class, as int64
                    lt = rt = t.int64
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

    def contains(self, item, item_t: t.Type, seq, seq_t: t.Type, compare_types):
        """`item in seq` (i1): == against each tuple item, or a scan of a 1-d array."""
        b = self.builder
        eq = ast.Eq()
        if isinstance(seq_t, t.Tuple):
            found = ir.Constant(dm.i1, 0)
            for k, (elem_t, ct) in enumerate(zip(seq_t.items, compare_types, strict=True)):
                hit = ops.compare(b, eq, ops.cast(b, item, item_t, ct),
                                  ops.cast(b, b.extract_value(seq, k), elem_t, ct), ct)
                found = b.or_(found, hit)
            return found
        ct = compare_types
        data, shape, strides = arrays.parts(b, seq, 1)
        found = self.alloca(dm.i1, "in.found")
        b.store(ir.Constant(dm.i1, 0), found)

        def scan(i, _continue, done):
            elem = arrays.load_element(
                b, seq_t.dtype, arrays.element_pointer(b, seq_t, data, shape, strides, [i]),
                arrays.access_alignment(seq_t))
            hit = ops.compare(b, eq, ops.cast(b, item, item_t, ct),
                              ops.cast(b, elem, seq_t.dtype, ct), ct)
            b.store(hit, found)
            b.cbranch(hit, done, _continue)  # stop at the first match

        else_bb, end_bb = self.emit_loop(ir.Constant(dm.i64, 0),
                                         lambda i: b.icmp_signed("<", i, shape[0]), scan,
                                         lambda i: b.add(i, ir.Constant(dm.i64, 1)), prefix="in")
        b.position_at_end(else_bb)
        b.branch(end_bb)
        b.position_at_end(end_bb)
        return b.load(found)

    def expr_IfExp(self, node: ast.IfExp):
        b = self.builder
        result_t = self.type_of(node)
        known = self.typed.branches.get(node)
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
