"""The Target interface: everything lowering needs that differs between GPU and host code.

Lowering (compiler/lower.py) is written once against these methods; targets/cuda.py emits NVPTX
intrinsics and address spaces, targets/cpu.py emits host code where threads are coroutines.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler.debuginfo import DebugInfo
from gpunb.compiler.ir_functions import declare
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError


class Target:
    name = "?"
    triple = ""
    data_layout = ""
    emits_line_info = False
    inline_calls = False
    # the target reports a kernel's errors (a zero range step) even without debug=True: the
    # CPU target does, so that no input can hang or crash the host process
    checks_always = False
    # lowering calls the debug_* hooks below only when this is true: the CPU target's debug
    # variant (breakpoints, stepping, traces); every other compile pays one attribute test
    instrumented = False

    # ---- functions -----------------------------------------------------------------------------

    def debug_info(self, module: ir.Module, full: bool = False):
        """The module's line-table builder (compiler/debuginfo.py), or None for none; `full`
        (debug=True) asks for a full compile unit."""
        return DebugInfo(module, full=full) if self.emits_line_info else None

    def extra_params(self) -> list:
        """Hidden leading parameters of every GPU function (the CPU target's thread context)."""
        return []

    def define_kernel(self, mb, symbol: str, slot_types: list):
        raise NotImplementedError

    def kernel_prologue(self, low) -> None:
        return

    def kernel_epilogue(self, low) -> None:
        low.builder.ret_void()

    # ---- threads, barriers, memory -------------------------------------------------------------

    def sreg(self, low, kind: str, axis: str):
        raise NotImplementedError

    def laneid(self, low):
        raise NotImplementedError

    def barrier(self, low, node, kind: str, pred):
        raise NotImplementedError

    def syncwarp(self, low, node, mask) -> None:
        raise NotImplementedError

    def threadfence(self, low, scope: str) -> None:
        low.builder.fence("seq_cst")

    def shared_array(self, low, elem: t.Type, count: int, dynamic: bool, align: int = 16):
        raise NotImplementedError

    def dynamic_shared_bytes(self, low):
        raise NotImplementedError

    def constant_data(self, mb, builder, array):
        raise NotImplementedError

    def end_thread(self, low, site: int | None) -> None:
        """End the calling GPU thread from anywhere (a raise, a failed debug assert), leaving
        the builder's block terminated; with a site id, first record it for the launcher."""
        raise NotImplementedError

    # ---- stopping points -----------------------------------------------------------------------

    # the target wants `poll` at loop back-edges and before real calls (the CPU target: a
    # launch told to stop - Ctrl-C, the watchdog - stops there); counted loops are then cut into
    # chunks (lower/loops.py) so that their inner loop stays plain for LLVM
    polls = False

    def poll(self, low) -> None:
        """A point where a running launch may be told to stop (loop back-edges, calls); the
        builder continues after it."""
        return

    def enter_call(self, low) -> None:
        """Before a real (not inlined) call of a GPU function."""
        return

    def leave_call(self, low) -> None:
        """After that call returned."""
        return

    def hinted_load(self, low, pointer, dtype: t.Type, hint: str):
        """A load with a cache hint (cuda.ldcs and friends); targets without hints load."""
        return arrays.load_element(low.builder, dtype, pointer)

    def hinted_store(self, low, pointer, dtype: t.Type, value, hint: str) -> None:
        arrays.store_element(low.builder, dtype, pointer, value)

    def record_access(self, low, node, pointer, kind: str, role: str = "",
                      succeeded=None) -> None:
        """Access recording hook ("read", "write" or "atomic" at `pointer`; `role` says more,
        e.g. which atomic; `succeeded`, an i1, tells a compare-and-swap that wrote from one
        that only read); targets without it (the GPU) do nothing."""
        return

    def check_bounds(self, low, node, arr: t.Array, axis: int, index, extent,
                     signed: bool = True) -> None:
        """Bounds checking hook (`index` normalised: wrapped if `signed` and negative;
        `extent` the axis's extent or a function giving it); targets without it do nothing."""
        return

    def check_cluster_query(self, low, node) -> None:
        """A cluster query (block_rank() & co) at `node`: a target whose architecture has no
        clusters raises its CompileError there; targets with clusters do nothing."""
        return

    def async_ops(self):
        """The lowering of cp.async, mbarriers, TMA and wgmma (an object with one method per
        operation, from the backend's async_ops module), or None where the target has none."""
        return None

    def string_constant(self, low, text: str, addrspace: int = 0):
        """A generic pointer to a NUL-terminated constant string (print()'s %s arguments)."""
        data = bytearray(text.encode("utf-8") + b"\0")
        gv = ir.GlobalVariable(low.mb.module, ir.ArrayType(dm.i8, len(data)),
                               low.mb.unique("_gpunb_str"), addrspace=addrspace)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(gv.value_type, data)
        if addrspace == 0:  # a pointer to the first byte: every string gets one type
            return gv.gep([ir.Constant(dm.i32, 0), ir.Constant(dm.i32, 0)])
        return low.builder.addrspacecast(gv, dm.ptr)

    # ---- debugger (breakpoint(); the CPU target's debug variant) ------------------------------

    def debug_break(self, low, node) -> None:
        """breakpoint(): targets without a debugger refuse it."""
        raise CompileError(
            f"breakpoint() stops a thread in gpunb's debugger, which runs kernels on the CPU "
            f"target; '{low.typed.name}' is being compiled for the {self.name} target",
            low.typed.source.loc(node), function=low.typed.name,
            hint="run it on the CPU target (GPUNB_TARGET=cpu, gpunb.set_target('cpu'), "
                 "@cuda.jit(target='cpu') or %%gpukernel --target cpu), or remove breakpoint()")

    def debug_line(self, low, node) -> None:
        """Before a statement (and at the top of each loop iteration, `node` the loop)."""
        return

    def debug_define(self, low, var, value) -> None:
        """A definition of the SSA variable `var` just stored `value` (of its own type)."""
        return

    def debug_join(self, low, node, kind) -> None:
        """Control flow joined at `node` (the phis defined there now hold their values)."""
        return

    def debug_inline(self, caller, inner) -> None:
        """`inner` is about to lower an inlined call's body inside `caller`'s function."""
        return

    def debug_return(self, caller, inner) -> None:
        """The inlined body of `inner` returned to `caller`."""
        return

    # ---- arithmetic ----------------------------------------------------------------------------

    def math(self, low, name: str, args: list, argtypes: list, result: t.Type):
        raise NotImplementedError

    def bf16_fma(self, low, x, y, z):
        """bfloat16 x * y + z rounded once (cuda.bf16.hfma): emulated unless the target has one."""
        from gpunb.compiler.lowfloat import bf16_fma_exact

        return bf16_fma_exact(low.builder, x, y, z)

    def atomic(self, low, op: str, pointer, value, dtype: t.Type):
        return low.builder.atomic_rmw(op, pointer, value, "monotonic")

    def atomic_cas(self, low, pointer, expected, value, dtype: t.Type):
        b = low.builder
        if isinstance(dtype, t.Float):
            int_t = ir.IntType(dtype.bitwidth)
            pair = b.cmpxchg(pointer, b.bitcast(expected, int_t), b.bitcast(value, int_t),
                             "monotonic", "monotonic")
            return b.bitcast(b.extract_value(pair, 0), dm.value_type(dtype))
        pair = b.cmpxchg(pointer, expected, value, "monotonic", "monotonic")
        return b.extract_value(pair, 0)

    # ---- tensor cores and inline PTX (compiler/builtins/tensorcore_*, inline_ptx) ------------

    def tensor_cores(self):
        """The object that lowers WMMA, mma.sync, ldmatrix/stmatrix and inline PTX for this
        target (backends/<target>/tensorcore.py)."""
        raise NotImplementedError

    # ---- helpers shared by targets -------------------------------------------------------------

    @staticmethod
    def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
        return declare(module, name, ret, args)


LLVM_MATH_INTRINSICS = {"sqrt", "fabs", "floor", "ceil", "trunc", "copysign", "rint", "fma"}


def llvm_math(low, name: str, args: list, ft: t.Float):
    """Math that every LLVM target lowers natively: llvm.sqrt.f32 and friends."""
    suffix = "f32" if ft.bitwidth == 32 else ("f64" if ft.bitwidth == 64 else "f16")
    lname = {"fabs": "fabs"}.get(name, name)
    fn = Target.intrinsic(low.mb.module, f"llvm.{lname}.{suffix}", args[0].type,
                          [a.type for a in args])
    return low.builder.call(fn, args)
