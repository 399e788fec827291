"""NVPTX target: address spaces, special registers, barriers, atomics, libdevice math -> PTX.

Address spaces: 1 global, 3 shared, 4 const, 5 local; arrays are generic pointers (the backend
infers global/shared from addrspacecasts). Math comes from libdevice, parsed and linked only when a
kernel calls into it. llvmlite's NVPTX backend writes the PTX.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading

import numpy as np
from llvmlite import ir

from gpunb.backends.cuda import abi as cuda_abi
from gpunb.backends.cuda.cluster_ops import CLUSTER_SREGS, ClusterLowering, check_cluster_arch
from gpunb.compiler import datamodel as dm
from gpunb.compiler.target import LLVM_MATH_INTRINSICS, Target, llvm_math
from gpunb.foundation import types as t
from gpunb.foundation.arch import PTX_ISA_FOR_ARCH

TRIPLE = "nvptx64-nvidia-cuda"
# the lowest PTX ISA LLVM accepts for each architecture (what we ask the backend to write);
# sm_80 asks 7.1, which has mbarrier.test_wait.parity (cuda.mbarrier.wait on Ampere), sm_90
# 8.0, where LLVM selects the mbarrier expect_tx and counted arrive intrinsics
# (LLVM 22 aborts the process - "LLVM ERROR: PTX version 8.7 does not support target 'sm_121'" -
# for a lower one: no entry is below LLVM 22's minimum, measured)
# (the table is foundation/arch.py's, which also refuses an arch asked for by name that is not
# in it: --arch, inspect(arch=))
_PTX_VERSION = PTX_ISA_FOR_ARCH
_SREG_NAMES = {"tid": "tid", "ctaid": "ctaid", "ntid": "ntid", "nctaid": "nctaid"}
_LIBDEVICE_NAMES = {"gamma": "tgamma"}
_FAST_VARIANTS = {"sin", "cos", "tan", "exp", "exp10", "log", "log2", "log10", "pow"}


def supported_arches() -> list:
    """The (major, minor) compute capabilities this backend writes PTX for."""
    return [(k // 10, k % 10) for k in sorted(_PTX_VERSION)]


def llvm_arch(cc: tuple) -> tuple:
    """The architecture LLVM writes PTX for: `cc` where the table has it, else the newest one
    before it (a GPU newer than this table, or GPUNB_ARCH naming one): PTX runs on every later
    GPU through the driver's JIT, whereas asking LLVM for an arch whose PTX ISA it does not
    know aborts the process. Arch-specific (a) and family (f) code has no such fallback."""
    key = cc[0] * 10 + cc[1]
    if key in _PTX_VERSION:
        return tuple(cc)
    older = [k for k in _PTX_VERSION if k <= key]
    if len(cc) > 2 or not older:
        raise ValueError(f"gpunb's LLVM writes no PTX for {arch_string(cc)}; it knows "
                         f"{', '.join(arch_string(a) for a in supported_arches())}")
    return divmod(max(older), 10)


def arch_string(cc: tuple) -> str:
    """`sm_90`; `sm_90a` / `sm_100f` for numba's arch-specific cc=(9, 0, 'a') / (10, 0, 'f')."""
    return f"sm_{cc[0]}{cc[1]}{cc[2] if len(cc) > 2 else ''}"


@functools.cache
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def ptx_isa_version(cc: tuple) -> int:
    """The PTX ISA version (78 for 7.8) the modules for this arch declare."""
    base = llvm_arch(cc)
    ptx = _PTX_VERSION[base[0] * 10 + base[1]]
    if len(cc) > 2:  # arch- and family-specific targets need newer PTX ISAs
        ptx = max(ptx, 88 if cc[2] == "f" else 80 if cc[0] == 9 else 86)
    return ptx


@functools.cache
def target_machine(cc: tuple, opt: int = 3):
    llvm = _llvm()
    ptx = ptx_isa_version(cc)
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch_string(llvm_arch(cc)), features=f"+ptx{ptx}",
                                        opt=opt)


def add_launch_bounds(module: ir.Module, symbol: str, bounds: tuple) -> None:
    """numba's launch_bounds=(max threads, min blocks per SM, max cluster rank) as the PTX
    directives .maxntid / .minnctapersm / .maxclusterrank (NVVM annotations of the kernel)."""
    fn = module.get_global(symbol)
    names = ("maxntidx", "minctasm", "maxclusterrank")
    entries = [("maxntidy", 1), ("maxntidz", 1)] + list(zip(names, bounds, strict=False))
    for name, value in entries:
        module.add_named_metadata("nvvm.annotations",
                                  [fn, ir.MetaDataString(module, name), ir.Constant(dm.i32, value)])


def keep_shared_arrays(module: ir.Module) -> None:
    """Static shared arrays stay in the PTX even when LLVM sees through every access (a thread
    that writes and reads back its own slots): the block reserves what the kernel declares, as
    numba-cuda's NVVM does, so `get_shared_mem_per_block()` and occupancy match its figures."""
    shared = [gv for gv in module.global_values
              if isinstance(gv, ir.GlobalVariable) and gv.name.startswith("_gpunb_shared")]
    if not shared:
        return
    used = ir.GlobalVariable(module, ir.ArrayType(ir.PointerType(addrspace=3), len(shared)),
                             "llvm.compiler.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(used.value_type, shared)


def _grid_constant(module: ir.Module, fn: ir.Function, k: int) -> None:
    """Parameter k of kernel `fn` passed by value as a __grid_constant__ (CUDA's spelling for a
    parameter whose address is taken): `byval` 64-byte aligned, annotated so that the backend
    reads it in place in param space (cvta.param) rather than copying it to local memory."""
    arg = fn.args[k]
    arg.add_attribute("byval")
    arg.attributes.align = 64
    module.add_named_metadata("nvvm.annotations", [fn, ir.MetaDataString(module, "grid_constant"),
                                                   module.add_metadata([ir.Constant(dm.i32,
                                                                                    k + 1)])])


class CudaTarget(ClusterLowering, Target):
    name = "cuda"
    triple = TRIPLE
    emits_line_info = True

    def __init__(self, cc: tuple = (9, 0), fastmath: bool = False):
        self.cc = tuple(cc)
        self.fastmath = fastmath
        self.data_layout = str(target_machine(self.cc).target_data)

    # ---- functions -----------------------------------------------------------------------------

    def define_kernel(self, mb, symbol: str, slot_types: list):
        fn = ir.Function(mb.module, ir.FunctionType(dm.void, slot_types), symbol)
        fn.calling_convention = "ptx_kernel"
        for k, slot in enumerate(slot_types):
            if isinstance(slot, dm.TensorMapSlot):  # a TMA descriptor: 128 bytes in param space
                _grid_constant(mb.module, fn, k)
        return fn, list(fn.args)

    def async_ops(self):
        ops = getattr(self, "_async_ops", None)
        if ops is None:
            from gpunb.backends.cuda.async_ops import CudaAsyncOps

            ops = self._async_ops = CudaAsyncOps(self)
        return ops

    # ---- threads -------------------------------------------------------------------------------

    def sreg(self, low, kind: str, axis: str):
        reg = _SREG_NAMES.get(kind)
        if reg is None:  # %cluster_ctaid / %cluster_nctaid (sm_90)
            check_cluster_arch(low, self.cc)
            reg = CLUSTER_SREGS[kind]
        name = f"llvm.nvvm.read.ptx.sreg.{reg}.{axis}"
        return low.builder.call(self.intrinsic(low.mb.module, name, dm.i32, []), [])

    def laneid(self, low):
        fn = self.intrinsic(low.mb.module, "llvm.nvvm.read.ptx.sreg.laneid", dm.i32, [])
        return low.builder.call(fn, [])

    def barrier(self, low, node, kind: str, pred):
        m, b = low.mb.module, low.builder
        if kind == "sync":
            b.call(self.intrinsic(m, "llvm.nvvm.barrier0", dm.void, []), [])
            return None
        name = {"count": "llvm.nvvm.barrier0.popc", "and": "llvm.nvvm.barrier0.and",
                "or": "llvm.nvvm.barrier0.or"}[kind]
        return b.call(self.intrinsic(m, name, dm.i32, [dm.i32]), [b.zext(pred, dm.i32)])

    def tensor_cores(self):
        from gpunb.backends.cuda.tensorcore import CudaTensorCores

        return CudaTensorCores(self, arch_string(self.cc), ptx_isa_version(self.cc))

    def string_constant(self, low, text: str, addrspace: int = 4):
        return super().string_constant(low, text, addrspace)

    def printf(self, low, node, fmt: str, values: list) -> None:
        """vprintf(format, packed 8-byte-aligned arguments), as CUDA's printf lowers."""
        m, b = low.mb.module, low.builder
        data = bytearray(fmt.encode("utf-8") + b"\0")
        gv = ir.GlobalVariable(m, ir.ArrayType(dm.i8, len(data)), low.mb.unique("_gpunb_fmt"),
                               addrspace=4)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(gv.value_type, data)
        fmt_ptr = b.addrspacecast(gv, dm.ptr)
        vprintf = self.intrinsic(m, "vprintf", dm.i32, [dm.ptr, dm.ptr])
        if not values:
            b.call(vprintf, [fmt_ptr, ir.Constant(dm.ptr, None)])
            return
        struct = ir.LiteralStructType([v.type for v, _ in values])
        buf = low.alloca(struct, "printf.args")
        for k, (v, _) in enumerate(values):
            b.store(v, b.gep(buf, [ir.Constant(dm.i32, 0), ir.Constant(dm.i32, k)]))
        b.call(vprintf, [fmt_ptr, buf])

    def grid_sync(self, low, node) -> None:
        """Cooperative groups' grid barrier: one arrival counter whose top bit flips per round."""
        m, b = low.mb.module, low.builder
        counter = m.globals.get("_gpunb_grid_barrier")
        if counter is None:
            counter = ir.GlobalVariable(m, dm.i32, "_gpunb_grid_barrier", addrspace=1)
            counter.linkage = "internal"
            counter.initializer = ir.Constant(dm.i32, 0)
            counter.align = 4
        self.barrier(low, node, "sync", None)
        tid = [self.sreg(low, "tid", a) for a in "xyz"]
        cta = [self.sreg(low, "ctaid", a) for a in "xyz"]
        n = [self.sreg(low, "nctaid", a) for a in "xyz"]
        is_cta_master = b.icmp_unsigned("==", b.or_(b.or_(tid[0], tid[1]), tid[2]),
                                        ir.Constant(dm.i32, 0))
        master_bb = low.fn.append_basic_block("gridsync.master")
        wait_bb = low.fn.append_basic_block("gridsync.wait")
        done_bb = low.fn.append_basic_block("gridsync.done")
        b.cbranch(is_cta_master, master_bb, done_bb)
        b.position_at_end(master_bb)
        blocks = b.mul(b.mul(n[0], n[1]), n[2])
        is_gpu_master = b.icmp_unsigned("==", b.or_(b.or_(cta[0], cta[1]), cta[2]),
                                        ir.Constant(dm.i32, 0))
        add = b.select(is_gpu_master,
                       b.sub(ir.Constant(dm.i32, 0x80000000),
                             b.sub(blocks, ir.Constant(dm.i32, 1))),
                       ir.Constant(dm.i32, 1))
        self.threadfence(low, "device")
        old = b.atomic_rmw("add", counter, add, "monotonic")
        b.branch(wait_bb)
        b.position_at_end(wait_bb)
        current = b.load_atomic(counter, "monotonic", 4)
        flipped = b.icmp_unsigned("!=", b.and_(b.xor(old, current),
                                               ir.Constant(dm.i32, 0x80000000)),
                                  ir.Constant(dm.i32, 0))
        after_bb = low.fn.append_basic_block("gridsync.after")
        b.cbranch(flipped, after_bb, wait_bb)
        b.position_at_end(after_bb)
        self.threadfence(low, "device")
        b.branch(done_bb)
        b.position_at_end(done_bb)
        self.barrier(low, node, "sync", None)

    def syncwarp(self, low, node, mask) -> None:
        fn = self.intrinsic(low.mb.module, "llvm.nvvm.bar.warp.sync", dm.void, [dm.i32])
        low.builder.call(fn, [mask])

    def hinted_load(self, low, pointer, dtype: t.Type, hint: str):
        """ld.global.<hint>.b<bits> as inline PTX (bytes through a 32-bit register: PTX has no
        8-bit registers), reinterpreted as the element type."""
        b = low.builder
        bits = dtype.bitwidth
        reg = ir.IntType(max(bits, 32) if bits == 8 else bits)
        asm = ir.InlineAsm(ir.FunctionType(reg, [dm.ptr]),
                           f"ld.global.{hint}.b{bits} $0, [$1];",
                           f"={_ASM_REGISTER[reg.width]},l", side_effect=True)
        raw = b.call(asm, [pointer])
        raw = b.trunc(raw, ir.IntType(bits)) if reg.width != bits else raw
        return b.bitcast(raw, dm.value_type(dtype)) if isinstance(dtype, t.Float) else raw

    def hinted_store(self, low, pointer, dtype: t.Type, value, hint: str) -> None:
        b = low.builder
        bits = dtype.bitwidth
        raw = b.bitcast(value, ir.IntType(bits)) if isinstance(dtype, t.Float) else value
        reg = ir.IntType(32) if bits == 8 else ir.IntType(bits)
        raw = b.zext(raw, reg) if reg.width != bits else raw
        asm = ir.InlineAsm(ir.FunctionType(dm.void, [dm.ptr, reg]),
                           f"st.global.{hint}.b{bits} [$0], $1;",
                           f"l,{_ASM_REGISTER[reg.width]},~{{memory}}", side_effect=True)
        b.call(asm, [pointer, raw])

    def threadfence(self, low, scope: str) -> None:
        name = {"block": "llvm.nvvm.membar.cta", "device": "llvm.nvvm.membar.gl",
                "system": "llvm.nvvm.membar.sys"}[scope]
        low.builder.call(self.intrinsic(low.mb.module, name, dm.void, []), [])

    def warp_shuffle(self, low, node, mode: str, mask, value, ty: t.Type, operand):
        b, m = low.builder, low.mb.module
        c = ir.Constant(dm.i32, 0 if mode == "up" else 0x1F)
        fn = self.intrinsic(m, f"llvm.nvvm.shfl.sync.{mode}.i32", dm.i32,
                            [dm.i32, dm.i32, dm.i32, dm.i32])
        if isinstance(ty, t.Boolean):
            out = b.call(fn, [mask, b.zext(value, dm.i32), operand, c])
            return b.trunc(out, dm.i1)
        width = t.sizeof(ty) * 8
        bits = b.bitcast(value, ir.IntType(width)) if isinstance(ty, t.Float) else value
        if width == 32:
            out = b.call(fn, [mask, bits, operand, c])
        else:
            lo = b.call(fn, [mask, b.trunc(bits, dm.i32), operand, c])
            hi = b.call(fn, [mask, b.trunc(b.lshr(bits, ir.Constant(dm.i64, 32)), dm.i32),
                             operand, c])
            out = b.or_(b.zext(lo, dm.i64), b.shl(b.zext(hi, dm.i64), ir.Constant(dm.i64, 32)))
        return b.bitcast(out, dm.value_type(ty)) if isinstance(ty, t.Float) else out

    def warp_vote(self, low, node, mode: str, mask, pred):
        b, m = low.builder, low.mb.module
        if mode == "ballot":
            fn = self.intrinsic(m, "llvm.nvvm.vote.ballot.sync", dm.i32, [dm.i32, dm.i1])
            return b.call(fn, [mask, pred])
        fn = self.intrinsic(m, f"llvm.nvvm.vote.{mode}.sync", dm.i1, [dm.i32, dm.i1])
        return b.call(fn, [mask, pred])

    def warp_match(self, low, node, mode: str, mask, value, ty: t.Type):
        b, m = low.builder, low.mb.module
        width = t.sizeof(ty) * 8
        it = ir.IntType(width)
        bits = b.bitcast(value, it) if isinstance(ty, t.Float) else value
        if mode == "any":
            fn = self.intrinsic(m, f"llvm.nvvm.match.any.sync.i{width}", dm.i32, [dm.i32, it])
            return b.call(fn, [mask, bits])
        pair_t = ir.LiteralStructType([dm.i32, dm.i1])
        fn = self.intrinsic(m, f"llvm.nvvm.match.all.sync.i{width}p", pair_t, [dm.i32, it])
        return b.call(fn, [mask, bits])

    def lane_mask(self, low, mode: str, node=None):
        name = "llvm.nvvm.activemask" if mode == "active" else \
            "llvm.nvvm.read.ptx.sreg.lanemask.lt"
        return low.builder.call(self.intrinsic(low.mb.module, name, dm.i32, []), [])

    def nanosleep(self, low, ns) -> None:
        fn = self.intrinsic(low.mb.module, "llvm.nvvm.nanosleep", dm.void, [dm.i32])
        low.builder.call(fn, [ns])

    def end_thread(self, low, site: int | None) -> None:
        """A kernel returns; a device function (a real call here) ends the thread with PTX
        `exit`, so its caller never resumes."""
        b = low.builder
        if site is not None:
            self._record_exception(low, site)
        if low.is_kernel:
            b.branch(low.exit_block)
            return
        b.call(ir.InlineAsm(ir.FunctionType(dm.void, []), "exit;", "", side_effect=True), [])
        b.unreachable()

    def _record_exception(self, low, site: int) -> None:
        """The first raising thread of a launch claims the record, then writes its ids."""
        m, b = low.mb.module, low.builder
        record = m.globals.get(cuda_abi.EXCEPTION_SYMBOL)
        if record is None:
            words = ir.ArrayType(dm.i32, cuda_abi.EXCEPTION_WORDS)
            record = ir.GlobalVariable(m, words, cuda_abi.EXCEPTION_SYMBOL, addrspace=1)
            record.initializer = ir.Constant(words, None)  # external: the launcher reads it
            record.align = 4
        def word(k: int):
            return b.gep(record, [ir.Constant(dm.i32, 0), ir.Constant(dm.i32, k)])

        pair = b.cmpxchg(word(0), ir.Constant(dm.i32, 0), ir.Constant(dm.i32, site + 1),
                         "monotonic", "monotonic")
        claim, done = low.new_block("raise.record"), low.new_block("raise.recorded")
        b.cbranch(b.extract_value(pair, 1), claim, done)
        b.position_at_end(claim)
        ids = [self.sreg(low, "tid", a) for a in "xyz"] + [self.sreg(low, "ctaid", a)
                                                          for a in "xyz"]
        for k, value in enumerate(ids, start=1):
            b.store(value, word(k))
        self.threadfence(low, "system")
        b.branch(done)
        b.position_at_end(done)

    # ---- memory --------------------------------------------------------------------------------

    def shared_array(self, low, elem: t.Type, count: int, dynamic: bool, align: int = 16):
        m = low.mb.module
        shared_ptr = ir.PointerType(addrspace=3)
        if dynamic:
            gv = m.globals.get("_gpunb_dynamic_shared")
            if gv is None:
                gv = ir.GlobalVariable(m, ir.ArrayType(dm.i8, 0), "_gpunb_dynamic_shared",
                                       addrspace=3)
                gv.linkage = "external"
                gv.align = 16
            gv.align = max(gv.align, align)
        else:
            gv = ir.GlobalVariable(m, ir.ArrayType(dm.memory_type(elem), count),
                                   low.mb.unique("_gpunb_shared"), addrspace=3)
            gv.linkage = "internal"
            gv.initializer = ir.Constant(gv.value_type, ir.Undefined)
            gv.align = align
            # an aligned array may need padding before it (ptxas and the driver count exactly)
            low.mb.shared_static_bytes += count * t.sizeof(elem) + (align - 16)
        return low.builder.addrspacecast(gv.bitcast(shared_ptr) if gv.type != shared_ptr else gv,
                                         dm.ptr)

    def dynamic_shared_bytes(self, low):
        fn = self.intrinsic(low.mb.module, "llvm.nvvm.read.ptx.sreg.dynamic_smem_size", dm.i32, [])
        return low.builder.zext(low.builder.call(fn, []), dm.i64)

    def constant_data(self, mb, builder, array):
        data = np.ascontiguousarray(array).tobytes()
        gv = ir.GlobalVariable(mb.module, ir.ArrayType(dm.i8, len(data)),
                               mb.unique("_gpunb_const"), addrspace=4)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(gv.value_type, bytearray(data))
        gv.align = 16
        return builder.addrspacecast(gv, dm.ptr)

    # ---- arithmetic ----------------------------------------------------------------------------

    def bf16_fma(self, low, x, y, z):
        fn = self.intrinsic(low.mb.module, "llvm.fma.bf16", dm.bfloat, [dm.bfloat] * 3)
        return low.builder.call(fn, [x, y, z])  # fma.rn.bf16 (sm_80 and later)

    def math(self, low, name: str, args: list, argtypes: list, result: t.Type):
        ft = argtypes[0] if isinstance(argtypes[0], t.Float) else result
        if name in LLVM_MATH_INTRINSICS and ft.bitwidth in (32, 64) and not (
                name == "sqrt" and self.fastmath):
            return llvm_math(low, name, args, ft)
        b = low.builder
        if isinstance(ft, t.Float) and ft.bitwidth == 16:
            widened = [b.fpext(a, ir.FloatType()) if a.type == ir.HalfType() else a for a in args]
            out = self.math(low, name, widened, [t.float32] * len(args), t.float32)
            return b.fptrunc(out, ir.HalfType()) if isinstance(result, t.Float) else out
        base = _LIBDEVICE_NAMES.get(name, name)
        f32 = ft.bitwidth == 32
        if name == "frexp":
            slot = low.alloca(dm.i32, "frexp.exp")
            fname = "__nv_frexpf" if f32 else "__nv_frexp"
            fn = self.intrinsic(low.mb.module, fname, args[0].type, [args[0].type, dm.ptr])
            mant = b.call(fn, [args[0], slot])
            out = ir.Constant(dm.value_type(result), ir.Undefined)
            return b.insert_value(b.insert_value(out, mant, 0), b.load(slot), 1)
        if name == "ldexp":
            fname = "__nv_ldexpf" if f32 else "__nv_ldexp"
            fn = self.intrinsic(low.mb.module, fname, args[0].type, [args[0].type, dm.i32])
            return b.call(fn, args)
        if self.fastmath and f32 and base == "tanh" and self.cc >= (7, 5):
            # numba-cuda's fastmath tanhf: the hardware's approximation (sm_75 and later)
            asm = ir.InlineAsm(ir.FunctionType(ir.FloatType(), [ir.FloatType()]),
                               "tanh.approx.f32 $0, $1;", "=f,f")
            return b.call(asm, args)
        if self.fastmath and f32 and base in _FAST_VARIANTS:
            fname = f"__nv_fast_{base}f"
        else:
            fname = f"__nv_{base}f" if f32 else f"__nv_{base}"
        fn = self.intrinsic(low.mb.module, fname, args[0].type, [a.type for a in args])
        return b.call(fn, args)


_ASM_REGISTER = {16: "h", 32: "r", 64: "l"}  # PTX inline-asm constraint per register width


# ---- build: LLVM IR -> optimised IR -> PTX ---------------------------------------------------


_reflect_lock = threading.Lock()
_prec_sqrt_told: int | None = None  # the value LLVM was last told (None: never told)


@contextlib.contextmanager
def _reflect_answers(precise_sqrt: bool):
    """For the block (one libdevice module's passes and codegen): libdevice's
    __nvvm_reflect("__CUDA_PREC_SQRT") answers as NVVM's -prec-sqrt does for numba-cuda, 1 by
    default (square roots inside libdevice functions such as hypotf round correctly) and 0 with
    fastmath (approximate roots). LLVM's reflect pass answers 0 to names it is not told
    (float32 math.hypot was 1 ulp from numpy's). The answer is a process-wide LLVM option whose
    later entries win, so it is held for the block and told again only when it changes."""
    global _prec_sqrt_told
    value = 1 if precise_sqrt else 0
    with _reflect_lock:
        if _prec_sqrt_told != value:
            _llvm().set_option("", f"-nvvm-reflect-add=__CUDA_PREC_SQRT={value}")
            _prec_sqrt_told = value
        yield


def emit_ptx(module_text: str, cc: tuple, *, opt: bool = True, fastmath: bool = False,
             kernel_symbols: tuple = (), lineinfo: bool = False) -> tuple[str, str]:
    """Parse, link libdevice when used, optimise, emit PTX. Returns (ptx, optimised_ir)."""
    llvm = _llvm()
    # Flags and attributes are written into the text: llvmlite's binding layer can set neither
    # fast-math flags on instructions nor string attributes on functions, and setting them where
    # the IR is built (llvmlite.ir) would need every floating-point operation of the lowering,
    # libm and complex helpers included, to carry the kernel's options; one pass over the text
    # covers them all (measured 2026-11-28 on the 2-core host: 0.33 ms for a kernel's 8 kB
    # module with fastmath, whose whole compile took 206 ms there)
    if fastmath:
        module_text = re.sub(r"= (fadd|fsub|fmul|fdiv|frem) ", r"= \1 fast ", module_text)
        module_text = flush_denormals(module_text)
    elif opt:  # (NVVM at -opt=0 fuses nothing: numba-cuda's opt=False gives no fma)
        # a * b + c may become one fma, as numba-cuda's NVVM contracts by default (-fma=1):
        # the GPU's speed, and the results numba-cuda users get
        # (half, float and double: bfloat16 arithmetic rounds each operation, as cuda_bf16.h's)
        module_text = re.sub(r"= (fadd|fsub|fmul) (half|float|double) ", r"= \1 contract \2 ",
                             module_text)
    mod = llvm.parse_assembly(module_text)
    # opt=False: no IR passes and no codegen optimisation either (NVPTX's codegen runs SROA
    # from -O1 on), as numba-cuda's NVVM at -opt=0: locals stay in local memory
    tm = target_machine(tuple(cc), 3 if opt else 0)
    uses_libdevice = "__nv_" in module_text
    if uses_libdevice:  # only the functions it calls: libdevice_subset.py says why
        from gpunb.backends.cuda.libdevice_subset import link_libdevice

        link_libdevice(mod, tm)
    with _reflect_answers(not fastmath) if uses_libdevice else contextlib.nullcontext():
        _optimise(mod, tm, 3 if opt else 0, keep=kernel_symbols)
        ptx = tm.emit_assembly(mod)  # (NVPTX's codegen runs the reflect pass too)
    if ".e4m3" in ptx or ".e5m2" in ptx:  # fp8 mma.sync needs a newer PTX ISA than the default
        from gpunb.backends.cuda.ptx_check import raise_ptx_version

        ptx = raise_ptx_version(ptx)
    # `.loc` lines stay either way (the inspector's line map); DWARF sections only for lineinfo
    return (ptx if lineinfo else strip_debug_sections(ptx)), str(mod)


_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug_\w+\s*\{.*?^\s*\}\s*$\n?",
                            re.MULTILINE | re.DOTALL)


def strip_debug_sections(ptx: str) -> str:
    """Drop DWARF sections: `.loc` lines stay (line info for profilers and our line map)."""
    return _DEBUG_SECTION.sub("", ptx)


_FTZ_ATTRIBUTE = ' "denormal-fp-math-f32"="preserve-sign,preserve-sign"'
_MODULE_FLAGS = re.compile(r"^!llvm\.module\.flags = !\{(.*)\}$", re.MULTILINE)


def flush_denormals(module_text: str) -> str:
    """numba-cuda's fastmath flushes float32 denormals to zero (ftz): every function defined
    gets LLVM's denormal attribute (the NVPTX backend then emits .ftz instructions) and
    libdevice's __nvvm_reflect("__CUDA_FTZ") answers 1 (its ftz code paths)."""
    lines = module_text.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("define "):
            end = _parameters_end(line)
            if end is not None:
                lines[k] = line[:end] + _FTZ_ATTRIBUTE + line[end:]
    text = "\n".join(lines)
    ids = [int(n) for n in re.findall(r"^!(\d+) = ", text, re.MULTILINE)]
    flag = max(ids, default=-1) + 1
    text += f'\n!{flag} = !{{ i32 4, !"nvvm-reflect-ftz", i32 1 }}\n'
    found = _MODULE_FLAGS.search(text)
    if found is None:
        return text + f"!llvm.module.flags = !{{ !{flag} }}\n"
    listed = found.group(1).strip()
    merged = f"{listed}, !{flag}" if listed else f"!{flag}"
    return text[:found.start()] + f"!llvm.module.flags = !{{ {merged} }}" + text[found.end():]


def _parameters_end(define: str) -> int | None:
    """Index just past the parameter list's closing parenthesis of a `define` line."""
    start = define.find("(", define.find("@"))
    depth = 0
    for k in range(start, len(define)):
        if define[k] == "(":
            depth += 1
        elif define[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return None


def _optimise(mod, tm, level: int, keep: tuple = ()) -> None:
    llvm = _llvm()
    if keep:
        for fn in mod.functions:
            if not fn.is_declaration and fn.name not in keep and fn.linkage == \
                    llvm.Linkage.external:
                fn.linkage = llvm.Linkage.internal
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def ptx_line_map(ptx: str, source_file: str = "", llvm_ir: str = "") -> tuple:
    """((source_line, (ptx_line, ...)), ...) from `.loc` and inlinedAt (see linemap.py)."""
    from gpunb.backends.cuda.linemap import ptx_line_map as line_map

    return line_map(ptx, source_file, llvm_ir)
