"""Lowering of calls: builtins, conversions, GPU and inner functions (called, or inlined)."""

from __future__ import annotations

import ast
import contextlib

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.typed import (
    BuiltinCall,
    Cast,
    Const,
    Feature,
    GpuCall,
    RecursiveRef,
    StarredCall,
    TypedFunction,
)
from gpunb.compiler.values import is_compile_time
from gpunb.foundation import types as t


class CallLowering:
    star_values: dict | None = None  # star_scope's: t -> its value, for `*t` in the call

    def expr_Call(self, node: ast.Call):
        call = self.typed.calls.get(node)
        if call is None and is_compile_time(self.type_of(node)):
            return None  # a compile-time object made by the call (slice(1, 5), np.dtype(...))
        call = self.typed.calls[node]
        if isinstance(call, Cast):
            if isinstance(call.argtype, t.StringLiteral):  # float("nan"): checked by inference
                return ops.constant(call.target, float(call.arg.value))
            return ops.cast(self.builder, self.expr(call.arg), call.argtype, call.target)
        if isinstance(call, BuiltinCall):
            if any(getattr(arg, "star_of", None) is not None for arg in call.args):
                with self.star_scope():  # Point(*t) of a namedtuple class
                    return call.builtin.lower_call(self, node, call)
            return call.builtin.lower_call(self, node, call)
        if isinstance(call, StarredCall):
            with self.star_scope():
                return self.expr(call.expanded)
        with self.star_scope():
            value = self.call_gpu_function(call)
        returned = call.callee.return_type
        if isinstance(returned, t.Optional) and not isinstance(self.type_of(node), t.Optional):
            return self.unwrap_optional(node, value, returned)  # used as its value
        return value

    @contextlib.contextmanager
    def star_scope(self):
        """While a call's arguments are lowered: `*t`'s items (infer.calls._star_item) take
        their values from one evaluation of t."""
        outer, self.star_values = self.star_values, {}
        try:
            yield
        finally:
            self.star_values = outer

    def star_tuple(self, source: ast.AST):
        """The value of `*t`'s t in the call being lowered, evaluated at its first item."""
        if self.star_values is None:  # (not inside a call: evaluated where it stands)
            return self.expr(source)
        found = self.star_values.get(source)
        if found is None:
            found = self.star_values[source] = self.expr(source)
        return found

    def call_gpu_function(self, call: GpuCall):
        b = self.builder
        callee = call.callee
        recursive = isinstance(callee, RecursiveRef)
        if recursive:
            callee = callee.target
        values = []
        for arg, declared in zip(call.args, call.argtypes, strict=True):
            if is_compile_time(declared):
                values.append(None)  # a function, type or literal the callee is specialised on
            elif isinstance(declared, t.NoneType):
                values.append(ir.Constant(dm.value_type(declared), None))
            elif isinstance(arg, Const):
                values.append(ops.constant(declared, arg.value))
            else:
                values.append(ops.cast(b, self.expr(arg), self.type_of(arg), declared))
        if (self.target.inline_calls or call.inline) and not (recursive or callee.recursive):
            return self.inline_call(callee, values)
        if self.target.inline_calls and Feature.BARRIER in callee.all_features():
            raise self.error(call.args[0] if call.args and isinstance(call.args[0], ast.AST)
                             else self.typed.source.tree,
                             f"the recursive function '{callee.name}' uses a barrier, which "
                             "the CPU target cannot suspend inside a real call",
                             "move the barrier out of the recursion")
        fn = self.mb.device_function(callee)
        if call.forceinline and "alwaysinline" not in fn.attributes:
            fn.attributes.add("alwaysinline")  # numba's forceinline: inlined at every call
        extra = [self.ctx] if self.ctx is not None else []
        passed = [v for v, a in zip(values, call.argtypes, strict=True)
                  if not is_compile_time(a)]
        self.target.enter_call(self)
        result = b.call(fn, extra + passed)
        self.target.leave_call(self)
        return None if isinstance(callee.return_type, t.NoneType) else result

    def inline_call(self, callee: TypedFunction, values: list):
        """Lower the callee's body here (CPU target: suspend points must be in the kernel)."""
        inner = type(self)(self.mb, callee, self.fn, self.builder, self.alloca_block, self.ctx)
        inner.exit_block = self.new_block(f"{callee.name}.return")
        inner.subprogram = self.subprogram  # its code is this function's, for line tables
        if not isinstance(callee.return_type, t.NoneType):
            inner.return_slot = self.alloca(dm.value_type(callee.return_type),
                                            f"{callee.name}.ret")
            inner.start_return_slot()  # (at the call: a call in a loop starts afresh)
        if self.target.instrumented:
            self.target.debug_inline(self, inner)
        inner.bind_arguments(values)
        inner.statements(callee.source.tree.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(inner.exit_block)
        self.builder.position_at_end(inner.exit_block)
        if self.target.instrumented:
            self.target.debug_return(self, inner)
        if inner.return_slot is not None:
            return self.builder.load(inner.return_slot)
        return None
