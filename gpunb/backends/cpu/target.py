"""Host target: the same lowered kernels compiled for the CPU, with GPU semantics.

A kernel runs in one of two modes, chosen per kernel at compile time (backend.py):

- **workgroup** (the default): the body is called once per block and the code between barriers
  is a loop over the block's threads (wg_lower.py), threadIdx being the loop counters - plain
  loops that LLVM vectorises. Barriers inside uniform if/while/for range() are split by loop
  fission; wg_plan.py decides, conservatively, when that keeps the GPU's meaning.
- **coroutine** (the fallback, and what `cpu_mode="coroutine"` or GPUNB_CPU_MODE=coroutine
  force): each GPU thread is an LLVM switch-resumed coroutine; `syncthreads` is a suspend point
  and a block scheduler (runner.py) resumes the threads round-robin, so barriers, shared memory
  and warp collectives keep their meaning under any control flow. Kept for warp collectives,
  grid sync and barriers the plan cannot prove safe (an early return before a barrier, a barrier
  in a device function or under a thread-dependent condition).

`kernel.cpu_mode()` says which mode a specialisation got, and why. Tools that must observe every
thread interleaving as a GPU would (a race detector, access maps) force the coroutine mode.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from gpunb.backends.cpu import abi, cluster_ops, instrument, reporting
from gpunb.backends.cpu.warp_ops import WarpCollectives
from gpunb.compiler import datamodel as dm
from gpunb.compiler.builtins import atomics
from gpunb.compiler.target import LLVM_MATH_INTRINSICS, Target, llvm_math
from gpunb.foundation import types as t

_LIBM_NAMES = {"gamma": "tgamma"}


@functools.cache
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@functools.cache
def host_target_machine(opt: int = 3):
    llvm = _llvm()
    target = llvm.Target.from_default_triple()
    from gpunb.backends.cpu.host_cpu import host_features

    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=host_features(),
                                        opt=opt, reloc="static", codemodel="large")


class TokenType(ir.Type):
    """LLVM's `token` type (coroutine ids and saves), which llvmlite.ir does not provide."""

    def _to_string(self) -> str:
        return "token"

    def __eq__(self, other) -> bool:
        return isinstance(other, TokenType)

    def __hash__(self) -> int:
        return hash("token")


class TokenNone(ir.Constant):
    def __init__(self):
        super().__init__(TokenType(), None)

    def get_reference(self) -> str:
        return "none"

    def _to_string(self) -> str:
        return "token none"


def _field(b: ir.IRBuilder, base, offset: int, ty: ir.Type = dm.i32):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


class CpuTarget(WarpCollectives, Target):
    name = "cpu"
    inline_calls = True
    checks_always = True

    def __init__(self, coroutine: bool = False, boundscheck: bool = False,
                 record: bool = False, polls: bool = True, debugger: bool = False,
                 cluster_dims: tuple = (1, 1, 1)):
        # recording and the debugger need one context per thread
        self.coroutine = coroutine or record or debugger
        self.polls = polls  # stopping points (a launch told to stop stops there)
        self.instrumented = debugger
        self.debug = None
        if debugger:
            from gpunb.backends.cpu.debug_lower import DebugInstrumentation

            self.debug = DebugInstrumentation(self)
        self.wg = None  # wg_lower.WorkGroupState in workgroup mode
        self.wg_types: list = []  # llvm types of the per-thread arrays, by layout index
        self.boundscheck = boundscheck
        self.record = record
        self.access_sites: list = []
        self.shared_layout: list = []
        tm = host_target_machine()
        self.triple = tm.triple
        self.data_layout = str(tm.target_data)
        self.barrier_sites: list = []
        self.error_sites: list = []
        self.static_shared = 0
        self.uses_async = False  # cp.async / TMA / wgmma: threads have async areas
        self.cluster_dims = cluster_dims  # the kernel's cluster_dims ((1, 1, 1) without)
        self.clustered = False  # blocks run as clusters (the kernel uses a cluster feature)
        self._async_ops = None

    def extra_params(self) -> list:
        return [dm.ptr]

    def debug_info(self, module: ir.Module, full: bool = False):
        """Line tables of code-site ids (codesites.py): a fault names its source line."""
        from gpunb.backends.cpu.codesites import SiteDebugInfo

        return SiteDebugInfo(module)

    # ---- kernel function -----------------------------------------------------------------------

    def define_kernel(self, mb, symbol: str, slot_types: list):
        ret = dm.ptr if self.coroutine else dm.void
        fn = ir.Function(mb.module, ir.FunctionType(ret, [dm.ptr] + slot_types), symbol + ".body")
        fn.linkage = "internal"
        if not self.coroutine:
            fn.attributes.add("alwaysinline")
            fn.args[0].add_attribute("noalias")
        self.symbol = symbol
        self.body = fn
        self.slot_types = slot_types
        return fn, list(fn.args[1:])

    def kernel_prologue(self, low) -> None:
        low.mb.kernel_exit = low.exit_block
        if self.wg is not None:
            self._workgroup_prologue(low)
        if not self.coroutine:
            return
        m, b = low.mb.module, low.builder
        token = TokenType()
        coro_id = b.call(self.intrinsic(m, "llvm.coro.id", token, [dm.i32, dm.ptr, dm.ptr,
                                                                   dm.ptr]),
                         [ir.Constant(dm.i32, 0), ir.Constant(dm.ptr, None),
                          ir.Constant(dm.ptr, None), ir.Constant(dm.ptr, None)])
        size = b.call(self.intrinsic(m, "llvm.coro.size.i64", dm.i64, []), [])
        # noted in the context: a launch abandoned mid-way frees it (guard_ir.py), and a
        # recording thread's recorder skips it
        mem = instrument.allocate_frame(b, low.ctx, size, self.record)
        handle = b.call(self.intrinsic(m, "llvm.coro.begin", dm.ptr, [token, dm.ptr]),
                        [coro_id, mem])
        self.coro_id, self.handle = coro_id, handle
        self.cleanup = low.fn.append_basic_block("coro.cleanup")
        self.suspend_ret = low.fn.append_basic_block("coro.suspend")
        cb = ir.IRBuilder(self.cleanup)
        freed = cb.call(self.intrinsic(m, "llvm.coro.free", dm.ptr, [token, dm.ptr]),
                        [coro_id, handle])
        cb.store(ir.Constant(dm.ptr, None), _field(cb, low.ctx, abi.CTX_FRAME))
        cb.call(self.intrinsic(m, "free", dm.void, [dm.ptr]), [freed])
        cb.branch(self.suspend_ret)
        sb = ir.IRBuilder(self.suspend_ret)
        sb.call(self.intrinsic(m, "llvm.coro.end", dm.void, [dm.ptr, dm.i1, token]),
                [handle, ir.Constant(dm.i1, 0), TokenNone()])
        sb.ret(handle)
        if self.debug is not None:
            self.debug.start(low)

    def _workgroup_prologue(self, low) -> None:
        """Block-wide values read once (so region loops see no memory behind them) and the
        bases of the per-thread arrays in the block's scratch (the runner allocates it once per
        host thread and launch, `scratch_bytes_per_thread()` for each thread of the block)."""
        b, wg = low.builder, self.wg
        values = wg.block_values
        m = low.mb.module
        for kind, base, top in (("ntid", abi.CTX_NTID, 1025), ("ctaid", abi.CTX_CTAID, 2**31 - 1),
                                ("nctaid", abi.CTX_NCTAID, 2**31 - 1)):
            for k, axis in enumerate("xyz"):
                value = b.load(_field(b, low.ctx, base + 4 * k), typ=dm.i32)
                # the launch limits: LLVM then knows threadIdx is non-negative (no wrap-around
                # of negative indices to handle) and can vectorise the thread loops
                value.set_metadata("range", m.add_metadata(
                    [ir.Constant(dm.i32, int(kind != "ctaid")), ir.Constant(dm.i32, top)]))
                values[(kind, axis)] = value
        values["shared"] = b.load(_field(b, low.ctx, abi.CTX_SHARED), typ=dm.ptr)
        values["cancel"] = b.load(_field(b, low.ctx, abi.CTX_CANCEL), typ=dm.ptr)
        values["dyn_shared"] = b.load(_field(b, low.ctx, abi.CTX_DYN_SHARED), typ=dm.i64)
        n = b.mul(b.mul(values[("ntid", "x")], values[("ntid", "y")]), values[("ntid", "z")])
        n = values["n"] = b.zext(n, dm.i64)
        if not self.wg_types:
            return
        wg.scratch = b.load(_field(b, low.ctx, abi.CTX_SCRATCH), typ=dm.ptr)
        wg.bases = [b.gep(wg.scratch, [b.mul(n, ir.Constant(dm.i64, off))], source_etype=dm.i8)
                    for off in self._scratch_offsets()[0]]

    def _scratch_offsets(self) -> tuple[list, int]:
        """Each per-thread array's offset per thread of the block (16-byte aligned), and the
        bytes of all of them for one thread."""
        td = host_target_machine().target_data
        offsets, total = [], 0
        for llty in self.wg_types:
            offsets.append(total)
            total += (llty.get_abi_size(td) + 15) // 16 * 16
        return offsets, total

    def scratch_bytes_per_thread(self) -> int:
        """Work-group mode: the per-thread arrays' bytes for one thread of a block (0: none)."""
        return self._scratch_offsets()[1] if self.wg is not None else 0

    def publish_thread(self, low) -> None:
        """Workgroup mode: write the current thread's ids into the context before code that
        reads them from there (error records, print)."""
        wg = self.wg
        if wg is None or wg.thread is None:
            return
        b = low.builder
        x, y, z, linear = wg.thread
        for k, v in enumerate((x, y, z)):
            b.store(v, _field(b, low.ctx, abi.CTX_TID + 4 * k))
        b.store(linear, _field(b, low.ctx, abi.CTX_LINEAR))
        b.store(b.urem(linear, ir.Constant(dm.i32, 32)), _field(b, low.ctx, abi.CTX_LANE))
        b.store(b.udiv(linear, ir.Constant(dm.i32, 32)), _field(b, low.ctx, abi.CTX_WARP))

    # ---- stopping points -----------------------------------------------------------------------

    def poll(self, low) -> None:
        """Stop here when the launch's cancel word is set (SIGINT, the watchdog, a fault on
        another host thread): one load and a branch LLVM lays out of the way."""
        if not self.polls:
            return
        b = low.builder
        if self.wg is not None:
            word = self.wg.block_values["cancel"]
        else:
            word = b.load(_field(b, low.ctx, abi.CTX_CANCEL), typ=dm.ptr)
        flag = b.load_atomic(word, "monotonic", 4, typ=dm.i32)
        stop_bb = low.fn.append_basic_block("poll.stop")
        go_bb = low.fn.append_basic_block("poll.go")
        branch = b.cbranch(b.icmp_unsigned("!=", flag, ir.Constant(dm.i32, 0)), stop_bb, go_bb)
        branch.set_weights([1, 1 << 20])
        b.position_at_end(stop_bb)
        b.call(reporting.stop_function(low.mb.module), [low.ctx])
        b.branch(go_bb)
        b.position_at_end(go_bb)

    def enter_call(self, low) -> None:
        """Before a real call (a recursive device function, which makes the kernel a coroutine
        one): a stopping point, so deep or endless recursion stops too."""
        self.poll(low)

    def async_ops(self):
        if self._async_ops is None:
            from gpunb.backends.cpu.async_ops import CpuAsyncOps

            self._async_ops = CpuAsyncOps(self)
        return self._async_ops

    def kernel_epilogue(self, low) -> None:
        if self.uses_async:  # copies the thread queued and never waited for still land
            self.async_ops().thread_end(low)
        if self.clustered:
            cluster_ops.thread_exits(self, low)
        if not self.coroutine:
            low.builder.ret_void()
            return
        b = low.builder
        if self.debug is not None:
            self.debug.exit(low)
        state = self._suspend(low, final=True)
        trap = low.fn.append_basic_block("coro.final.resumed")
        switch = b.switch(state, self.suspend_ret)
        switch.add_case(ir.Constant(dm.i8, 0), trap)
        switch.add_case(ir.Constant(dm.i8, 1), self.cleanup)
        ir.IRBuilder(trap).unreachable()

    def _suspend(self, low, final: bool):
        fn = self.intrinsic(low.mb.module, "llvm.coro.suspend", dm.i8, [TokenType(), dm.i1])
        return low.builder.call(fn, [TokenNone(), ir.Constant(dm.i1, int(final))])

    # ---- threads -------------------------------------------------------------------------------

    def sreg(self, low, kind: str, axis: str):
        if kind in ("cluster_ctaid", "cluster_nctaid"):
            return cluster_ops.sreg(self, low, kind, axis)
        if self.wg is not None:
            if kind != "tid":
                return self.wg.block_values[(kind, axis)]
            if self.wg.thread is None:
                raise low.error(low.typed.source.tree, "internal: threadIdx read at block level")
            return self.wg.thread["xyz".index(axis)]
        base = {"tid": abi.CTX_TID, "ctaid": abi.CTX_CTAID, "ntid": abi.CTX_NTID,
                "nctaid": abi.CTX_NCTAID}[kind]
        offset = base + 4 * "xyz".index(axis)
        return low.builder.load(_field(low.builder, low.ctx, offset), typ=dm.i32)

    def laneid(self, low):
        if self.wg is not None:
            return low.builder.urem(self.wg.thread[3], ir.Constant(dm.i32, 32))
        return low.builder.load(_field(low.builder, low.ctx, abi.CTX_LANE), typ=dm.i32)

    def _wait(self, low, node, kind: int, what: str, pred=None, mask=None):
        b = low.builder
        site = len(self.barrier_sites)
        src = low.typed.source
        self.barrier_sites.append((src.filename, node.lineno, node.col_offset, what))
        if kind == abi.WAIT_WARP:
            self._check_own_lane(low, site, mask)
        b.store(ir.Constant(dm.i32, kind), _field(b, low.ctx, abi.CTX_WAIT_KIND))
        b.store(ir.Constant(dm.i32, site), _field(b, low.ctx, abi.CTX_SITE))
        if pred is not None:
            b.store(b.zext(pred, dm.i32), _field(b, low.ctx, abi.CTX_PRED))
        if self.debug is not None:
            self.debug.barrier(low, site)
        state = self._suspend(low, final=False)
        resume = low.fn.append_basic_block("barrier.resume")
        switch = b.switch(state, self.suspend_ret)
        switch.add_case(ir.Constant(dm.i8, 0), resume)
        switch.add_case(ir.Constant(dm.i8, 1), self.cleanup)
        b.position_at_end(resume)
        if self.record:
            for offset in instrument.EPOCH_OF_WAIT[kind]:
                instrument.bump_epoch(b, low.ctx, offset)

    def wait_at(self, low, node, kind: int, what: str, pred=None) -> None:
        """Suspend the calling thread at a wait of `kind` (abi.WAIT_*) until the scheduler
        resumes it (async_ops.py's mbarrier waits and warpgroup rendezvous)."""
        self._wait(low, node, kind, what, pred)

    def _check_own_lane(self, low, site: int, mask) -> None:
        """Store the collective's member mask for the scheduler; a mask without the calling
        lane is undefined behaviour on a GPU: report it (WarpMaskError) and end the thread.
        Without a mask (activemask) the lane names only itself."""
        b = low.builder
        lane = b.load(_field(b, low.ctx, abi.CTX_LANE), typ=dm.i32)
        own = b.shl(ir.Constant(dm.i32, 1), lane)
        if mask is None:
            b.store(own, _field(b, low.ctx, abi.CTX_MASK))
            return
        b.store(mask, _field(b, low.ctx, abi.CTX_MASK))
        excluded = b.icmp_unsigned("==", b.and_(mask, own), ir.Constant(dm.i32, 0))
        fail = low.fn.append_basic_block("warpmask.fail")
        cont = low.fn.append_basic_block("warpmask.ok")
        b.cbranch(excluded, fail, cont)
        b.position_at_end(fail)
        b.call(reporting.warp_error_function(low.mb.module),
               [low.ctx, ir.Constant(dm.i32, site), mask, ir.Constant(dm.i32, 1)])
        b.branch(low.mb.kernel_exit)
        b.position_at_end(cont)

    def barrier(self, low, node, kind: str, pred):
        if self.wg is not None:  # wg_lower splits regions at barrier statements instead
            raise low.error(node, "internal: a barrier the work-group plan did not split")
        name = "cuda.syncthreads" if kind == "sync" else f"cuda.syncthreads_{kind}"
        self._wait(low, node, abi.WAIT_BLOCK, name, pred)
        if kind == "sync":
            return None
        b = low.builder
        count = b.load(_field(b, low.ctx, abi.CTX_RESULT), typ=dm.i32)
        if kind == "count":
            return count
        if kind == "or":
            return b.zext(b.icmp_signed("!=", count, ir.Constant(dm.i32, 0)), dm.i32)
        waiting = b.load(_field(b, low.ctx, abi.CTX_WAITING), typ=dm.i32)
        return b.zext(b.icmp_signed("==", count, waiting), dm.i32)

    def printf(self, low, node, fmt: str, values: list) -> None:
        """Format with snprintf into the launch's print buffer, tagged with block and thread."""
        m, b = low.mb.module, low.builder
        data = bytearray(fmt.encode("utf-8") + b"\0")
        gv = ir.GlobalVariable(m, ir.ArrayType(dm.i8, len(data)), low.mb.unique("_gpunb_fmt"))
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(gv.value_type, data)
        text = low.alloca(ir.ArrayType(dm.i8, 512), "print.text")
        snprintf = m.globals.get("snprintf") or ir.Function(
            m, ir.FunctionType(dm.i32, [dm.ptr, dm.i64, dm.ptr], var_arg=True), "snprintf")
        length = b.call(snprintf, [text, ir.Constant(dm.i64, 512), gv] + [v for v, _ in values])
        self.publish_thread(low)
        b.call(reporting.print_record_function(m), [low.ctx, text, length])

    def grid_sync(self, low, node) -> None:
        self._wait(low, node, abi.WAIT_GRID, "grid.sync()")

    # ---- thread-block clusters (cluster_ops.py) ---------------------------------------------

    def cluster_rank(self, low):
        return cluster_ops.rank(self, low)

    def cluster_size(self, low):
        return ir.Constant(dm.i32, cluster_ops.cluster_size(self))

    def cluster_barrier(self, low, node, arrive: bool, wait: bool) -> None:
        cluster_ops.barrier(self, low, node, arrive, wait)

    def map_shared_rank(self, low, node, pointer, rank):
        return cluster_ops.map_shared_rank(self, low, node, pointer, rank)

    def syncwarp(self, low, node, mask) -> None:
        self._wait(low, node, abi.WAIT_WARP, "cuda.syncwarp", mask=mask)

    def nanosleep(self, low, ns) -> None:
        return

    def tensor_cores(self):
        from gpunb.backends.cpu.tensorcore import CpuTensorCores

        return CpuTensorCores(self)

    # ---- memory --------------------------------------------------------------------------------

    def shared_array(self, low, elem: t.Type, count: int, dynamic: bool, align: int = 16):
        """Dynamic shared memory starts at the block's shared base; static arrays follow it,
        16-byte aligned (or `align`: offsets from the base are what the GPU's addresses are
        modulo the alignment, so TMA and wgmma swizzles, computed from offsets, agree)."""
        b = low.builder
        if self.wg is not None:
            base = self.wg.block_values["shared"]
        else:
            base = b.load(_field(b, low.ctx, abi.CTX_SHARED), typ=dm.ptr)
        if dynamic:
            return base
        offset = (self.static_shared + align - 1) // align * align
        # with dynamic shared memory before it the array moves up to `align - 16` bytes
        self.static_shared = offset + count * t.sizeof(elem) + (align - 16)
        self.shared_layout.append((offset, count, str(elem)))
        low.mb.shared_static_bytes = self.static_shared
        dyn = self.dynamic_shared_bytes(low)
        dyn = b.and_(b.add(dyn, ir.Constant(dm.i64, 15)), ir.Constant(dm.i64, ~15))
        start = b.add(dyn, ir.Constant(dm.i64, offset))
        if align > 16:
            start = b.and_(b.add(start, ir.Constant(dm.i64, align - 1)),
                           ir.Constant(dm.i64, -align))
        return b.gep(base, [start], source_etype=dm.i8)

    def dynamic_shared_bytes(self, low):
        if self.wg is not None:
            return self.wg.block_values["dyn_shared"]
        return low.builder.load(_field(low.builder, low.ctx, abi.CTX_DYN_SHARED), typ=dm.i64)

    def constant_data(self, mb, builder, array):
        data = np.ascontiguousarray(array).tobytes()
        gv = ir.GlobalVariable(mb.module, ir.ArrayType(dm.i8, len(data)),
                               mb.unique("_gpunb_const"))
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(gv.value_type, bytearray(data))
        gv.align = 16
        return gv

    def check_bounds(self, low, node, arr: t.Array, axis: int, index, extent,
                     signed: bool = True) -> None:
        if not self.boundscheck:
            return
        if self.wg is not None and (node, axis) in self.wg.unchecked:
            return  # proved for the whole block before the thread loop (wg_hoist.py)
        import ast

        b = low.builder
        extent = extent() if callable(extent) else extent  # (the lowering's lazy extent)
        site = len(self.error_sites)
        src = low.typed.source
        what = ast.unparse(node.value) if hasattr(node, "value") else "array"
        if isinstance(node, ast.Call):
            what = ast.unparse(node.args[0])
        self.error_sites.append((src.filename, node.lineno, node.col_offset, what, low.typed.name,
                                 not signed))
        ok = b.icmp_unsigned("<", index, extent)
        fail = low.fn.append_basic_block("bounds.fail")
        cont = low.fn.append_basic_block("bounds.ok")
        b.cbranch(ok, cont, fail)
        b.position_at_end(fail)
        self.publish_thread(low)
        reporter = reporting.index_error_function(low.mb.module)
        # report the index as written: a negative one was wrapped by adding the extent (an
        # unsigned one never was: 2**64 - 1 stays what it is)
        written = index if not signed else b.select(
            b.icmp_signed("<", index, ir.Constant(index.type, 0)), b.sub(index, extent), index)
        b.call(reporter, [low.ctx, ir.Constant(dm.i32, site), ir.Constant(dm.i32, axis), written,
                          extent])
        if self.debug is not None:
            self.debug.error(low, raised=False)
        b.branch(low.mb.kernel_exit)
        b.position_at_end(cont)

    def record_access(self, low, node, pointer, kind: str, role: str = "",
                      succeeded=None) -> None:
        """Racecheck / access maps: log this access (address, site, thread, epochs). A role
        goes into the site (abi.atomic_role: which atomic); with `succeeded` (a
        compare-and-swap, recorded after it) the record names one of two sites, the role's
        or atomics.CAS_FAILED_ROLE's (a failed swap only read)."""
        if not self.record:
            return
        site = self._access_site(low, node, kind, role)
        b = low.builder
        site_value = ir.Constant(dm.i32, site)
        if succeeded is not None:
            failed = self._access_site(low, node, kind, atomics.CAS_FAILED_ROLE)
            site_value = b.select(succeeded, site_value, ir.Constant(dm.i32, failed))
        b.call(instrument.record_function(low.mb.module),
               [low.ctx, site_value, b.bitcast(pointer, dm.ptr)])

    def _access_site(self, low, node, kind: str, role: str) -> int:
        import ast

        what = "array"
        if isinstance(node, ast.Subscript):
            what = ast.unparse(node.value)
        elif isinstance(node, ast.Call) and node.args:
            what = ast.unparse(node.args[0])
        src = low.typed.source
        self.access_sites.append((src.filename, node.lineno, node.col_offset, what, kind,
                                  low.typed.name) + ((role,) if role else ()))
        return len(self.access_sites) - 1

    def end_thread(self, low, site: int | None) -> None:
        """Device functions are inlined here, so the kernel's exit block ends the thread from
        any depth; a coroutine thread reaches its final suspend, which barriers count as exited."""
        b = low.builder
        if site is not None:
            self.publish_thread(low)
            b.call(reporting.raise_function(low.mb.module), [low.ctx, ir.Constant(dm.i32, site)])
        if self.debug is not None:
            self.debug.error(low, raised=site is None)
        b.branch(low.mb.kernel_exit)

    # ---- arithmetic ----------------------------------------------------------------------------

    def math(self, low, name: str, args: list, argtypes: list, result: t.Type):
        ft = argtypes[0] if isinstance(argtypes[0], t.Float) else result
        b = low.builder
        if isinstance(ft, t.Float) and ft.bitwidth == 16:
            widened = [b.fpext(a, ir.FloatType()) if a.type == ir.HalfType() else a for a in args]
            out = self.math(low, name, widened, [t.float32] * len(args), t.float32)
            return b.fptrunc(out, ir.HalfType()) if isinstance(result, t.Float) else out
        if name in LLVM_MATH_INTRINSICS:
            return llvm_math(low, name, args, ft)
        f32 = ft.bitwidth == 32
        base = _LIBM_NAMES.get(name, name)
        fname = base + ("f" if f32 else "")
        m = low.mb.module
        if name == "frexp":
            slot = low.alloca(dm.i32, "frexp.exp")
            fn = self.intrinsic(m, fname, args[0].type, [args[0].type, dm.ptr])
            mant = b.call(fn, [args[0], slot])
            out = ir.Constant(dm.value_type(result), ir.Undefined)
            return b.insert_value(b.insert_value(out, mant, 0), b.load(slot), 1)
        if name == "ldexp":
            fn = self.intrinsic(m, fname, args[0].type, [args[0].type, dm.i32])
            return b.call(fn, args)
        fn = self.intrinsic(m, fname, args[0].type, [a.type for a in args])
        return b.call(fn, args)

    def threadfence(self, low, scope: str) -> None:
        low.builder.fence("seq_cst")
        if self.record:  # racecheck orders threads of different blocks through it and atomics
            code = {"block": abi.FENCE_BLOCK, "device": abi.FENCE_DEVICE,
                    "system": abi.FENCE_SYSTEM}[scope]
            instrument.record_sync(low.builder, low.ctx, abi.SYNC_THREADFENCE,
                                   ir.Constant(dm.i32, code))

    def atomic(self, low, op: str, pointer, value, dtype: t.Type):
        return low.builder.atomic_rmw(op, pointer, value, "seq_cst")

    # ---- the debug variant (debug_lower.py) ----------------------------------------------------

    def debug_break(self, low, node) -> None:
        if self.debug is not None:
            self.debug.breakpoint(low, node)
        # a plain compile of a kernel with breakpoint() (inspection): the call does nothing

    def debug_line(self, low, node) -> None:
        self.debug.line(low, node)

    def debug_define(self, low, var, value) -> None:
        self.debug.define(low, var, value)

    def debug_join(self, low, node, kind) -> None:
        self.debug.join(low, node, kind)

    def debug_inline(self, caller, inner) -> None:
        self.debug.inline(caller, inner)

    def debug_return(self, caller, inner) -> None:
        self.debug.returned(caller, inner)
