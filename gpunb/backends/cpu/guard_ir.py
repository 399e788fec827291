"""The guard's machine code: the job every host thread of a CPU launch runs, and the handlers of
SIGINT and of the faults kernel code can raise (SIGSEGV, SIGBUS, SIGFPE, SIGILL).

`gpunb_job(launch)` is what the launching thread and the pool's workers call. It gives its host
thread an alternate signal stack (once), fills a guard record on its stack (the thread, the
launch, a jmp_buf), lists it in a registry, `_setjmp`s and calls the kernel's runner. A stop
(the kernel's code polls the launch's cancel word at loop back-edges and barriers and, when it
is set, `_longjmp`s to its record) or a fault (the handler finds the faulting thread's record in
the registry and jumps to it) lands back in `gpunb_job`, which frees what the runner had
allocated (the runner writes each allocation into the record) and returns normally: no lock is
held across kernel code, so the pool and the process stay usable.

The SIGINT handler sets the cancel word of every launch in the registry, then calls the handler
it replaced (Python's), so Ctrl-C keeps raising KeyboardInterrupt. Only registry reads and
atomic stores happen in handlers; the registry lives in this module's globals, which stay valid
for the life of the process.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.backends.cpu.abi import (
    ALTSTACK_BYTES,
    JUMP_FAULT,
    PLATFORM_SI_ADDR,
    PLATFORM_SS_DISABLE,
    PLATFORM_SS_FLAGS,
    PLATFORM_SS_SIZE,
    PLATFORM_UC_PC,
    PLATFORM_UC_SP,
    REC_ADDR,
    REC_AREAS,
    REC_BYTES,
    REC_CODE,
    REC_CTX,
    REC_CTXS,
    REC_HANDLES,
    REC_LAUNCH,
    REC_NCTX,
    REC_PC,
    REC_SCRATCH,
    REC_SHARED,
    REC_SIGNAL,
    REC_SLOT,
    REC_SP,
    REC_THREAD,
    SLOT_BYTES,
    SLOT_LAUNCH,
    SLOT_REC,
    SLOT_THREAD,
    SLOTS,
)
from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import declare

# void runner(launch, guard record): the kernel's entry (runner.py)
RUNNER = ir.FunctionType(dm.void, [dm.ptr, dm.ptr])
_HANDLER = ir.FunctionType(dm.void, [dm.i32])
_HANDLER_INFO = ir.FunctionType(dm.void, [dm.i32, dm.ptr, dm.ptr])
_NSIG = 65


def _i32(v: int):
    return ir.Constant(dm.i32, v)


def _i64(v: int):
    return ir.Constant(dm.i64, v)


def _at(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [_i64(offset)], source_etype=dm.i8)


def _buffer(b: ir.IRBuilder, size: int):
    """`size` bytes on the stack, as an opaque pointer (16-byte aligned)."""
    slot = b.alloca(ir.ArrayType(dm.i8, size))
    slot.align = 16
    slot.type = dm.ptr  # llvmlite types allocas as typed pointers; the module is opaque
    return slot


def _global(module: ir.Module, name: str, ty: ir.Type) -> ir.GlobalVariable:
    gv = ir.GlobalVariable(module, ty, name)
    gv.initializer = ir.Constant(ty, None)
    gv.align = 16
    return gv


class GuardModule:
    """Builds the module: its globals first, then one method per function."""

    def __init__(self):
        # no triple or data layout: the text is the same on every host (guard.ll), and
        # guard.py gives the parsed module the host's
        self.module = m = ir.Module(name="gpunb_guard")
        m.triple = ""
        # pthread_key_t is 32 bits on Linux, 64 on macOS: kept in 64 (the key is small, and
        # the calling conventions pass the low half where 32 bits are expected)
        self.key_type = dm.i64
        self.platform = _global(m, "gpunb_guard_platform", ir.ArrayType(dm.i64, 8))
        self.slots = _global(m, "gpunb_guard_slots", ir.ArrayType(dm.i8, SLOTS * SLOT_BYTES))
        # the handlers replaced (written by guard.py when it installs ours): function and
        # whether it takes siginfo, by signal number
        self.previous = _global(m, "gpunb_guard_previous", ir.ArrayType(dm.ptr, _NSIG))
        self.previous_info = _global(m, "gpunb_guard_previous_info", ir.ArrayType(dm.i32, _NSIG))
        self.key = _global(m, "gpunb_guard_key", self.key_type)
        p = dm.ptr
        self.lib = {
            "self": declare(m, "pthread_self", dm.i64, []),
            "getspecific": declare(m, "pthread_getspecific", p, [self.key_type]),
            "setspecific": declare(m, "pthread_setspecific", dm.i32, [self.key_type, p]),
            "key_create": declare(m, "pthread_key_create", dm.i32, [p, p]),
            "sigaltstack": declare(m, "sigaltstack", dm.i32, [p, p]),
            "malloc": declare(m, "malloc", p, [dm.i64]),
            "free": declare(m, "free", dm.void, [p]),
            "signal": declare(m, "signal", p, [dm.i32, p]),
            "memset": declare(m, "llvm.memset.p0.i64", dm.void, [p, dm.i8, dm.i64, dm.i1]),
        }
        setjmp = declare(m, "_setjmp", dm.i32, [p])
        setjmp.attributes.add("returns_twice")
        self.lib["setjmp"] = setjmp
        longjmp = declare(m, "_longjmp", dm.void, [p, dm.i32])
        longjmp.attributes.add("noreturn")
        self.lib["longjmp"] = longjmp

    def build(self) -> str:
        destructor = self.emit_altstack_destructor()
        self.emit_init(destructor)
        setup = self.emit_thread_setup()
        land = self.emit_landing()
        self.emit_job(setup, land)
        self.emit_sigint()
        self.emit_fault()
        return str(self.module)

    # ---- helpers -------------------------------------------------------------------------------

    def plat(self, b: ir.IRBuilder, k: int):
        """Platform value k (PLATFORM_*), an i64."""
        slot = b.gep(self.platform, [_i64(0), _i64(k)], source_etype=self.platform.value_type)
        return b.load(slot, typ=dm.i64)

    def at_plat(self, b: ir.IRBuilder, base, k: int):
        """base + platform value k (an offset)."""
        return b.gep(base, [self.plat(b, k)], source_etype=dm.i8)

    def slot(self, b: ir.IRBuilder, i, field: int):
        offset = b.add(b.mul(b.zext(i, dm.i64), _i64(SLOT_BYTES)), _i64(field))
        return b.gep(self.slots, [_i64(0), offset], source_etype=self.slots.value_type)

    def for_slots(self, fn: ir.Function, b: ir.IRBuilder, name: str, body) -> None:
        """for i in range(SLOTS): body(i, next block); the builder ends after the loop."""
        pre = b.block
        head, step, done = (fn.append_basic_block(f"{name}.{s}") for s in ("head", "step",
                                                                           "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(dm.i32, name)
        i.add_incoming(_i32(0), pre)
        visit = fn.append_basic_block(f"{name}.visit")
        b.cbranch(b.icmp_signed("<", i, _i32(SLOTS)), visit, done)
        b.position_at_end(visit)
        body(i, step)
        if not b.block.is_terminated:
            b.branch(step)
        b.position_at_end(step)
        i.add_incoming(b.add(i, _i32(1)), step)
        b.branch(head)
        b.position_at_end(done)

    def chain(self, fn: ir.Function, b: ir.IRBuilder, sig, info, uctx) -> None:
        """Call the handler ours replaced, as it expects to be called; a default disposition is
        restored (the faulting instruction then runs again and the OS does what it did before
        gpunb was loaded)."""
        index = [_i64(0), b.zext(sig, dm.i64)]
        where = b.gep(self.previous, index, source_etype=self.previous.value_type)
        prev = b.load(where, typ=dm.ptr)
        with_info = b.load(b.gep(self.previous_info, index,
                                 source_etype=self.previous_info.value_type), typ=dm.i32)
        call_bb, default_bb, info_bb, plain_bb, out_bb = (
            fn.append_basic_block(n) for n in ("chain", "chain.default", "chain.info",
                                               "chain.plain", "chain.out"))
        b.cbranch(b.icmp_unsigned(">", b.ptrtoint(prev, dm.i64), _i64(1)), call_bb, default_bb)
        b.position_at_end(default_bb)  # SIG_DFL (0) or SIG_IGN (1): the default again
        b.call(self.lib["signal"], [sig, ir.Constant(dm.ptr, None)])
        b.branch(out_bb)
        b.position_at_end(call_bb)
        b.cbranch(b.icmp_signed("!=", with_info, _i32(0)), info_bb, plain_bb)
        b.position_at_end(info_bb)
        b.call(b.load(where, typ=_HANDLER_INFO.as_pointer()), [sig, info, uctx])
        b.branch(out_bb)
        b.position_at_end(plain_bb)
        b.call(b.load(where, typ=_HANDLER.as_pointer()), [sig])
        b.branch(out_bb)
        b.position_at_end(out_bb)

    # ---- per-thread alternate signal stack -----------------------------------------------------

    def emit_altstack_destructor(self) -> ir.Function:
        """At thread exit: turn off and free the alternate stack this module gave the thread
        (1 marks a thread that had one of its own: left alone)."""
        lib = self.lib
        fn = ir.Function(self.module, ir.FunctionType(dm.void, [dm.ptr]),
                         "gpunb_guard_altstack_free")
        fn.linkage = "internal"
        mem = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        current = _buffer(b, 32)
        ours_bb, free_bb, out_bb = (fn.append_basic_block(n) for n in ("ours", "free", "out"))
        b.cbranch(b.icmp_unsigned(">", b.ptrtoint(mem, dm.i64), _i64(1)), ours_bb, out_bb)
        b.position_at_end(ours_bb)
        b.call(lib["sigaltstack"], [ir.Constant(dm.ptr, None), current])
        installed = b.load(current, typ=dm.ptr)
        b.cbranch(b.icmp_unsigned("==", installed, mem), free_bb, out_bb)
        b.position_at_end(free_bb)
        off = _buffer(b, 32)
        b.call(lib["memset"], [off, ir.Constant(dm.i8, 0), _i64(32), ir.Constant(dm.i1, 0)])
        b.store(b.trunc(self.plat(b, PLATFORM_SS_DISABLE), dm.i32),
                self.at_plat(b, off, PLATFORM_SS_FLAGS))
        b.call(lib["sigaltstack"], [off, ir.Constant(dm.ptr, None)])
        b.call(lib["free"], [mem])
        b.branch(out_bb)
        b.position_at_end(out_bb)
        b.ret_void()
        return fn

    def emit_init(self, destructor: ir.Function) -> None:
        fn = ir.Function(self.module, ir.FunctionType(dm.i32, []), "gpunb_guard_init")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(self.lib["key_create"], [self.key, destructor]))

    def emit_thread_setup(self) -> ir.Function:
        """Once per host thread: an alternate signal stack, so a stack overflow can still be
        handled (a thread that has one already keeps it)."""
        lib = self.lib
        fn = ir.Function(self.module, ir.FunctionType(dm.void, []), "gpunb_guard_thread")
        fn.linkage = "internal"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        key = b.load(self.key, typ=self.key_type)
        known = b.call(lib["getspecific"], [key])
        new_bb, has_bb, make_bb, out_bb = (fn.append_basic_block(n) for n in
                                           ("new", "has", "make", "out"))
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(known, dm.i64), _i64(0)), new_bb, out_bb)
        b.position_at_end(new_bb)
        current = _buffer(b, 32)
        b.call(lib["memset"], [current, ir.Constant(dm.i8, 0), _i64(32), ir.Constant(dm.i1, 0)])
        b.call(lib["sigaltstack"], [ir.Constant(dm.ptr, None), current])
        flags = b.load(self.at_plat(b, current, PLATFORM_SS_FLAGS), typ=dm.i32)
        disable = b.trunc(self.plat(b, PLATFORM_SS_DISABLE), dm.i32)
        disabled = b.icmp_unsigned("!=", b.and_(flags, disable), _i32(0))
        b.cbranch(disabled, make_bb, has_bb)
        b.position_at_end(has_bb)
        b.call(lib["setspecific"], [key, b.inttoptr(_i64(1), dm.ptr)])
        b.branch(out_bb)
        b.position_at_end(make_bb)
        mem = b.call(lib["malloc"], [_i64(ALTSTACK_BYTES)])
        got_bb = fn.append_basic_block("got")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(mem, dm.i64), _i64(0)), out_bb, got_bb)
        b.position_at_end(got_bb)
        stack = _buffer(b, 32)
        b.call(lib["memset"], [stack, ir.Constant(dm.i8, 0), _i64(32), ir.Constant(dm.i1, 0)])
        b.store(mem, stack)
        b.store(_i64(ALTSTACK_BYTES), self.at_plat(b, stack, PLATFORM_SS_SIZE))
        b.call(lib["sigaltstack"], [stack, ir.Constant(dm.ptr, None)])
        b.call(lib["setspecific"], [key, mem])
        b.branch(out_bb)
        b.position_at_end(out_bb)
        b.ret_void()
        return fn

    # ---- the job -------------------------------------------------------------------------------

    def emit_job(self, setup: ir.Function, land: ir.Function) -> None:
        """void gpunb_job(launch): the launch's runner on this host thread, under the guard."""
        lib = self.lib
        fn = ir.Function(self.module, ir.FunctionType(dm.void, [dm.ptr]), "gpunb_job")
        launch = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        rec = _buffer(b, REC_BYTES)
        b.call(lib["memset"], [rec, ir.Constant(dm.i8, 0), _i64(REC_BYTES),
                               ir.Constant(dm.i1, 0)])
        b.call(setup, [])
        me = b.call(lib["self"], [])
        b.store(me, _at(b, rec, REC_THREAD))
        b.store(launch, _at(b, rec, REC_LAUNCH))
        slot_ptr = _at(b, rec, REC_SLOT)
        b.store(_i32(-1), slot_ptr)

        def claim(i, next_bb):
            pair = b.cmpxchg(self.slot(b, i, SLOT_REC), ir.Constant(dm.ptr, None), rec,
                             "acq_rel", "monotonic")
            won = fn.append_basic_block("claim.won")
            b.cbranch(b.extract_value(pair, 1), won, next_bb)
            b.position_at_end(won)
            b.atomic_rmw("xchg", self.slot(b, i, SLOT_THREAD), me, "release")
            b.atomic_rmw("xchg", self.slot(b, i, SLOT_LAUNCH), launch, "release")
            b.store(i, slot_ptr)
            b.branch(registered)

        registered = fn.append_basic_block("registered")
        self.for_slots(fn, b, "claim", claim)
        b.branch(registered)
        b.position_at_end(registered)
        jumped = b.call(lib["setjmp"], [rec])
        run_bb, land_bb, done_bb = (fn.append_basic_block(n) for n in ("run", "land", "done"))
        b.cbranch(b.icmp_signed("==", jumped, _i32(0)), run_bb, land_bb)
        b.position_at_end(run_bb)
        runner = b.load(_at(b, launch, abi.LAUNCH_OFFSETS["runner"]), typ=RUNNER.as_pointer())
        b.call(runner, [launch, rec])
        b.branch(done_bb)
        b.position_at_end(land_bb)
        b.call(land, [rec, jumped])
        b.branch(done_bb)
        b.position_at_end(done_bb)
        slot = b.load(slot_ptr, typ=dm.i32)  # from memory: read after _setjmp returned twice
        free_bb, out_bb = fn.append_basic_block("release"), fn.append_basic_block("out")
        b.cbranch(b.icmp_signed(">=", slot, _i32(0)), free_bb, out_bb)
        b.position_at_end(free_bb)
        null = ir.Constant(dm.ptr, None)
        b.atomic_rmw("xchg", self.slot(b, slot, SLOT_LAUNCH), null, "release")
        b.atomic_rmw("xchg", self.slot(b, slot, SLOT_THREAD), _i64(0), "release")
        b.atomic_rmw("xchg", self.slot(b, slot, SLOT_REC), null, "release")
        b.branch(out_bb)
        b.position_at_end(out_bb)
        b.ret_void()

    def emit_landing(self) -> ir.Function:
        """After a jump back: record a fault in the launch's Status (the first error of a launch
        wins), tell the launch's other host threads to stop, free what the runner allocated."""
        lib = self.lib
        fn = ir.Function(self.module, ir.FunctionType(dm.void, [dm.ptr, dm.i32]),
                         "gpunb_guard_land")
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        rec, why = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        launch = b.load(_at(b, rec, REC_LAUNCH), typ=dm.ptr)
        fault_bb, free_bb = fn.append_basic_block("fault"), fn.append_basic_block("free")
        b.cbranch(b.icmp_signed("==", why, _i32(JUMP_FAULT)), fault_bb, free_bb)
        b.position_at_end(fault_bb)
        self.record_fault(fn, b, rec, launch)
        b.cmpxchg(_at(b, launch, abi.LAUNCH_OFFSETS["cancel"]), _i32(abi.CANCEL_NONE),
                  _i32(abi.CANCEL_FAULT), "seq_cst", "monotonic")
        b.branch(free_bb)
        b.position_at_end(free_bb)
        ctxs = b.load(_at(b, rec, REC_CTXS), typ=dm.ptr)
        n = b.load(_at(b, rec, REC_NCTX), typ=dm.i64)
        pre = b.block
        head, body, step, done = (fn.append_basic_block(f"frames.{s}") for s in
                                  ("head", "body", "step", "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(dm.i64, "i")
        i.add_incoming(_i64(0), pre)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        ctx = b.gep(ctxs, [b.mul(i, _i64(abi.CTX_SIZE))], source_etype=dm.i8)
        b.call(lib["free"], [b.load(_at(b, ctx, abi.CTX_FRAME), typ=dm.ptr)])  # a coroutine's
        b.branch(step)
        b.position_at_end(step)
        i.add_incoming(b.add(i, _i64(1)), step)
        b.branch(head)
        b.position_at_end(done)
        for offset in (REC_SHARED, REC_CTXS, REC_HANDLES, REC_SCRATCH, REC_AREAS):
            b.call(lib["free"], [b.load(_at(b, rec, offset), typ=dm.ptr)])
        b.ret_void()
        return fn

    def record_fault(self, fn: ir.Function, b: ir.IRBuilder, rec, launch) -> None:
        so = abi.STATUS_OFFSETS
        status = b.load(_at(b, launch, abi.LAUNCH_OFFSETS["status"]), typ=dm.ptr)
        pair = b.cmpxchg(status, _i32(abi.ERROR_NONE), _i32(abi.ERROR_FAULT), "seq_cst",
                         "monotonic")
        write_bb, out_bb = fn.append_basic_block("fault.write"), fn.append_basic_block("fault.out")
        b.cbranch(b.extract_value(pair, 1), write_bb, out_bb)
        b.position_at_end(write_bb)
        for src, dst, ty in ((REC_SIGNAL, "fault_signal", dm.i32), (REC_CODE, "fault_code", dm.i32),
                             (REC_ADDR, "fault_addr", dm.i64), (REC_PC, "fault_pc", dm.i64),
                             (REC_SP, "fault_sp", dm.i64)):
            b.store(b.load(_at(b, rec, src), typ=ty), _at(b, status, so[dst]))
        # the stack this thread had used: from its guard record (near the top of what the
        # launch used) down to the faulting stack pointer
        depth = b.sub(b.ptrtoint(rec, dm.i64), b.load(_at(b, rec, REC_SP), typ=dm.i64))
        b.store(depth, _at(b, status, so["fault_depth"]))
        ctx = b.load(_at(b, rec, REC_CTX), typ=dm.ptr)
        ids_bb = fn.append_basic_block("fault.ids")
        b.cbranch(b.icmp_unsigned("!=", b.ptrtoint(ctx, dm.i64), _i64(0)), ids_bb, out_bb)
        b.position_at_end(ids_bb)
        for k in range(3):
            b.store(b.load(_at(b, ctx, abi.CTX_TID + 4 * k), typ=dm.i32),
                    _at(b, status, so["tid"] + 4 * k))
            b.store(b.load(_at(b, ctx, abi.CTX_CTAID + 4 * k), typ=dm.i32),
                    _at(b, status, so["ctaid"] + 4 * k))
        b.store(b.load(_at(b, ctx, abi.CTX_TID_KNOWN), typ=dm.i32),
                _at(b, status, so["fault_tid_known"]))
        b.store(_i32(1), _at(b, status, so["fault_ctaid_known"]))
        b.branch(out_bb)
        b.position_at_end(out_bb)

    # ---- signal handlers -----------------------------------------------------------------------

    def emit_sigint(self) -> None:
        """SIGINT: every launch in the registry is to stop; then the replaced handler runs."""
        fn = ir.Function(self.module, ir.FunctionType(dm.void, [dm.i32, dm.ptr, dm.ptr]),
                         "gpunb_guard_sigint")
        sig, info, uctx = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def cancel(i, next_bb):
            launch = b.load_atomic(self.slot(b, i, SLOT_LAUNCH), "acquire", 8, typ=dm.ptr)
            hit = fn.append_basic_block("sigint.hit")
            b.cbranch(b.icmp_unsigned("!=", b.ptrtoint(launch, dm.i64), _i64(0)), hit, next_bb)
            b.position_at_end(hit)
            b.cmpxchg(_at(b, launch, abi.LAUNCH_OFFSETS["cancel"]), _i32(abi.CANCEL_NONE),
                      _i32(abi.CANCEL_INTERRUPT), "seq_cst", "monotonic")

        self.for_slots(fn, b, "sigint", cancel)
        self.chain(fn, b, sig, info, uctx)
        b.ret_void()

    def emit_fault(self) -> None:
        """SIGSEGV & co.: on a host thread running a guarded launch, note where and jump back
        to its record; elsewhere, what the process did before gpunb."""
        lib = self.lib
        fn = ir.Function(self.module, ir.FunctionType(dm.void, [dm.i32, dm.ptr, dm.ptr]),
                         "gpunb_guard_fault")
        sig, info, uctx = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        me = b.call(lib["self"], [])
        found = _buffer(b, 8)
        b.store(ir.Constant(dm.ptr, None), found)

        def match(i, next_bb):
            rec = b.load_atomic(self.slot(b, i, SLOT_REC), "acquire", 8, typ=dm.ptr)
            thread = b.load_atomic(self.slot(b, i, SLOT_THREAD), "acquire", 8, typ=dm.i64)
            ours = b.and_(b.icmp_unsigned("!=", b.ptrtoint(rec, dm.i64), _i64(0)),
                          b.icmp_unsigned("==", thread, me))
            hit = fn.append_basic_block("fault.hit")
            b.cbranch(ours, hit, next_bb)
            b.position_at_end(hit)
            b.store(rec, found)
            b.branch(done_bb)

        done_bb = fn.append_basic_block("fault.searched")
        self.for_slots(fn, b, "fault", match)
        b.branch(done_bb)
        b.position_at_end(done_bb)
        rec = b.load(found, typ=dm.ptr)
        jump_bb, chain_bb = fn.append_basic_block("jump"), fn.append_basic_block("chain")
        b.cbranch(b.icmp_unsigned("!=", b.ptrtoint(rec, dm.i64), _i64(0)), jump_bb, chain_bb)
        b.position_at_end(chain_bb)
        self.chain(fn, b, sig, info, uctx)
        b.ret_void()
        b.position_at_end(jump_bb)
        b.store(sig, _at(b, rec, REC_SIGNAL))
        b.store(b.load(_at(b, info, 8), typ=dm.i32), _at(b, rec, REC_CODE))  # si_code
        b.store(b.load(self.at_plat(b, info, PLATFORM_SI_ADDR), typ=dm.i64), _at(b, rec, REC_ADDR))
        context_bb, go_bb = fn.append_basic_block("context"), fn.append_basic_block("go")
        known = b.icmp_signed(">=", self.plat(b, PLATFORM_UC_PC), _i64(0))
        b.cbranch(known, context_bb, go_bb)  # where the OS's context says pc and sp
        b.position_at_end(context_bb)
        b.store(b.load(self.at_plat(b, uctx, PLATFORM_UC_PC), typ=dm.i64), _at(b, rec, REC_PC))
        b.store(b.load(self.at_plat(b, uctx, PLATFORM_UC_SP), typ=dm.i64), _at(b, rec, REC_SP))
        b.branch(go_bb)
        b.position_at_end(go_bb)
        b.call(lib["longjmp"], [rec, _i32(JUMP_FAULT)])
        b.unreachable()


def guard_module() -> str:
    """The guard's LLVM IR (the same for every host: platform values are data)."""
    return GuardModule().build()


GUARD_LL = "guard.ll"  # beside this file: guard_module()'s text, read at run time


def write_guard_ll() -> str:
    """Write guard.ll from guard_module() (run after editing this module:
    `python -c "from gpunb.backends.cpu.guard_ir import write_guard_ll; write_guard_ll()"`;
    tests/backends/cpu/test_guard.py checks it is up to date). Building the text here at run
    time would import llvmlite.ir, ~50 ms of a process's first launch."""
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), GUARD_LL)
    with open(path, "w") as f:
        f.write(guard_module())
    return path
