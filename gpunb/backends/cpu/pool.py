"""A native thread pool for CPU-target launches: one call hands a launch to every worker.

A Python thread pool costs a submit, a wake-up and a GIL hand-over per piece of work: measured
on the 2-core development machine, 100 us per launch with 2 threads and 0.7-4 ms with 16 (the
njit figures the CPU target is compared with take 0.3-2 ms in all). Here the workers are
pthreads started by generated code, parked on a condition variable; `run(runner, launch, n)`
publishes the job under the pool's mutex, wakes them, works on it on the calling thread too and
waits until the workers that joined it are done. The GIL is released for the whole call (ctypes),
and no worker touches Python. Each worker runs the same block runner on the same abi.Launch,
which hands out ranges of blocks through an atomic counter (runner.py), so there is one native
call per host thread and no per-chunk overhead.

The calling thread does not wait for workers that have not joined by the time it runs out of
blocks: it then closes the job (under the mutex), and waits only for those inside the runner. A
worker that wakes late - its core busy with another process, a virtual CPU slow to wake, an idle
pool woken after a pause - finds the job closed and never touches the launch; before, every
launch waited for its slowest worker to wake even when the other threads had run every block
(measured on the loaded 2-core development machine: 8-20 ms of wall time for 2 ms of work).

Idle workers first poll the job counter for a while, yielding the core each time (back-to-back
launches then start without a futex wake-up), then sleep on the condition variable.
The pool is per process: a forked child (whose copy has no worker threads) makes a new one. At
exit the workers are told to end and are waited for, before the interpreter frees the pool's
memory and the code they run.
"""

from __future__ import annotations

import ctypes
import os
import threading

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler.ir_functions import declare

# pool memory: three pthread objects (128 bytes each is more than glibc or macOS need), then
# the job: generation (i64), workers inside its runner (i32), workers that may take part (i32),
# the runner and its argument
MUTEX, COND_WORK, COND_DONE = 0, 128, 256
GENERATION, PENDING, ACTIVE, FN, ARG = 384, 392, 396, 400, 408
QUIT, LIVE = 416, 420  # i32: workers are to end; i32: workers not yet ended
OPEN = 424  # i32: the job still takes workers (the caller has blocks left to share)
POOL_BYTES = 448
# worker argument: the pool, the worker's index, the generation it has seen
W_POOL, W_INDEX, W_SEEN = 0, 8, 16
WORKER_BYTES = 24
# polls of the job counter (each a sched_yield, ~0.1-1 us) before an idle worker sleeps: a
# launch that follows within tens of microseconds finds the workers awake; longer polling
# would take cores from whatever runs between launches
SPIN = 200
_JOB = ir.FunctionType(dm.void, [dm.ptr])  # void runner(abi.Launch *)

_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_INIT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_SPAWN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_QUIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _i32(v: int):
    return ir.Constant(dm.i32, v)


def _i64(v: int):
    return ir.Constant(dm.i64, v)


def _at(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [_i64(offset)], source_etype=dm.i8)


def _lib(module: ir.Module) -> dict:
    p = dm.ptr
    return {
        "mutex_init": declare(module, "pthread_mutex_init", dm.i32, [p, p]),
        "cond_init": declare(module, "pthread_cond_init", dm.i32, [p, p]),
        "lock": declare(module, "pthread_mutex_lock", dm.i32, [p]),
        "unlock": declare(module, "pthread_mutex_unlock", dm.i32, [p]),
        "wait": declare(module, "pthread_cond_wait", dm.i32, [p, p]),
        "broadcast": declare(module, "pthread_cond_broadcast", dm.i32, [p]),
        "create": declare(module, "pthread_create", dm.i32, [p, p, p, p]),
        "detach": declare(module, "pthread_detach", dm.i32, [dm.i64]),
        "yield": declare(module, "sched_yield", dm.i32, []),
    }


def _spin_until(fn: ir.Function, b: ir.IRBuilder, lib: dict, ready, name: str) -> None:
    """Poll `ready()` (an i1) up to SPIN times, yielding the core in between; the builder ends
    after the loop, whether or not it became true (the caller checks again under the mutex)."""
    head, body, done = (fn.append_basic_block(f"{name}.{s}") for s in ("head", "body", "done"))
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(dm.i32, name)
    k.add_incoming(_i32(0), pre)
    go_on = b.and_(b.icmp_signed("<", k, _i32(SPIN)), b.not_(ready()))
    b.cbranch(go_on, body, done)
    b.position_at_end(body)
    b.call(lib["yield"], [])
    k.add_incoming(b.add(k, _i32(1)), body)
    b.branch(head)
    b.position_at_end(done)


def _emit_worker(module: ir.Module, lib: dict) -> ir.Function:
    """void *gpunb_pool_worker(worker): wait for a new generation, run it if taking part."""
    fn = ir.Function(module, ir.FunctionType(dm.ptr, [dm.ptr]), "gpunb_pool_worker")
    arg = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    pool = b.load(_at(b, arg, W_POOL), typ=dm.ptr)
    index = b.load(_at(b, arg, W_INDEX), typ=dm.i32)
    seen_slot = _at(b, arg, W_SEEN)
    mutex = _at(b, pool, MUTEX)
    gen_ptr = _at(b, pool, GENERATION)
    loop = fn.append_basic_block("loop")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.load(seen_slot, typ=dm.i64)

    def fresh():
        return b.icmp_unsigned("!=", b.load_atomic(gen_ptr, "acquire", 8, typ=dm.i64), seen)

    _spin_until(fn, b, lib, fresh, "poll")
    b.call(lib["lock"], [mutex])
    check, sleep, got = (fn.append_basic_block(n) for n in ("check", "sleep", "got"))
    b.branch(check)
    b.position_at_end(check)
    gen = b.load(gen_ptr, typ=dm.i64)
    b.cbranch(b.icmp_unsigned("!=", gen, seen), got, sleep)
    b.position_at_end(sleep)
    b.call(lib["wait"], [_at(b, pool, COND_WORK), mutex])
    b.branch(check)
    b.position_at_end(got)
    quit_bb, job_bb = fn.append_basic_block("quit"), fn.append_basic_block("job")
    b.cbranch(b.icmp_signed("!=", b.load(_at(b, pool, QUIT), typ=dm.i32), _i32(0)), quit_bb,
              job_bb)
    b.position_at_end(quit_bb)  # the process is exiting: leave before its memory goes
    b.call(lib["unlock"], [mutex])
    b.atomic_rmw("sub", _at(b, pool, LIVE), _i32(1), "acq_rel")
    b.ret(ir.Constant(dm.ptr, None))
    b.position_at_end(job_bb)
    # the job is read under the mutex with its generation: a consistent snapshot. A worker joins
    # only while the job is open, and counts itself in PENDING before it lets go of the mutex:
    # once the caller has closed the job, no worker starts on the launch
    active = b.load(_at(b, pool, ACTIVE), typ=dm.i32)
    job = b.load(_at(b, pool, FN), typ=_JOB.as_pointer())  # typed: llvmlite calls through it
    data = b.load(_at(b, pool, ARG), typ=dm.ptr)
    b.store(gen, seen_slot)
    is_open = b.icmp_signed("!=", b.load(_at(b, pool, OPEN), typ=dm.i32), _i32(0))
    joins = b.and_(b.icmp_signed("<", index, active), is_open)
    run, finished, last, skip = (fn.append_basic_block(n) for n in ("run", "finished", "last",
                                                                     "skip"))
    b.cbranch(joins, run, skip)
    b.position_at_end(skip)
    b.call(lib["unlock"], [mutex])
    b.branch(loop)
    b.position_at_end(run)
    b.atomic_rmw("add", _at(b, pool, PENDING), _i32(1), "acq_rel")
    b.call(lib["unlock"], [mutex])
    b.call(job, [data])
    old = b.atomic_rmw("sub", _at(b, pool, PENDING), _i32(1), "acq_rel")
    b.cbranch(b.icmp_signed("==", old, _i32(1)), last, finished)
    b.position_at_end(last)
    b.call(lib["lock"], [mutex])
    b.call(lib["broadcast"], [_at(b, pool, COND_DONE)])
    b.call(lib["unlock"], [mutex])
    b.branch(finished)
    b.position_at_end(finished)
    b.branch(loop)
    return fn


def _emit_run(module: ir.Module, lib: dict) -> None:
    """void gpunb_pool_run(pool, fn, data, i32 workers): fn(data) here and on up to `workers`
    pool threads: those that join before this thread has run out of work; returns when they
    have all finished."""
    fn = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr, _JOB.as_pointer(), dm.ptr,
                                                       dm.i32]), "gpunb_pool_run")
    pool, job, data, workers = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    mutex = _at(b, pool, MUTEX)
    pending = _at(b, pool, PENDING)
    b.call(lib["lock"], [mutex])
    b.store(job, _at(b, pool, FN))
    b.store(data, _at(b, pool, ARG))
    b.store(workers, _at(b, pool, ACTIVE))
    b.store(_i32(1), _at(b, pool, OPEN))
    # atomic stores (llvmlite's store_atomic needs typed pointers): polling workers read these
    b.atomic_rmw("xchg", pending, _i32(0), "release")
    b.atomic_rmw("add", _at(b, pool, GENERATION), _i64(1), "release")
    b.call(lib["broadcast"], [_at(b, pool, COND_WORK)])
    b.call(lib["unlock"], [mutex])
    b.call(job, [data])  # returns when no block is left to claim
    b.call(lib["lock"], [mutex])
    b.store(_i32(0), _at(b, pool, OPEN))  # those not in by now find nothing to do: let them be
    b.call(lib["unlock"], [mutex])

    def done():
        return b.icmp_signed("==", b.load_atomic(pending, "acquire", 4, typ=dm.i32), _i32(0))

    _spin_until(fn, b, lib, done, "join")
    b.call(lib["lock"], [mutex])
    check, sleep, out = (fn.append_basic_block(n) for n in ("check", "sleep", "out"))
    b.branch(check)
    b.position_at_end(check)
    b.cbranch(done(), out, sleep)
    b.position_at_end(sleep)
    b.call(lib["wait"], [_at(b, pool, COND_DONE), mutex])
    b.branch(check)
    b.position_at_end(out)
    b.call(lib["unlock"], [mutex])
    b.ret_void()


def _emit_setup(module: ir.Module, lib: dict, worker: ir.Function) -> None:
    init = ir.Function(module, ir.FunctionType(dm.i32, [dm.ptr]), "gpunb_pool_init")
    b = ir.IRBuilder(init.append_basic_block("entry"))
    pool = init.args[0]
    null = ir.Constant(dm.ptr, None)
    rc = b.call(lib["mutex_init"], [_at(b, pool, MUTEX), null])
    rc = b.or_(rc, b.call(lib["cond_init"], [_at(b, pool, COND_WORK), null]))
    b.ret(b.or_(rc, b.call(lib["cond_init"], [_at(b, pool, COND_DONE), null])))
    spawn = ir.Function(module, ir.FunctionType(dm.i32, [dm.ptr]), "gpunb_pool_spawn")
    b = ir.IRBuilder(spawn.append_basic_block("entry"))
    handle = b.alloca(dm.i64)
    rc = b.call(lib["create"], [handle, null, worker, spawn.args[0]])
    ok, out = spawn.append_basic_block("ok"), spawn.append_basic_block("out")
    b.cbranch(b.icmp_signed("==", rc, _i32(0)), ok, out)
    b.position_at_end(ok)
    b.call(lib["detach"], [b.load(handle)])
    b.branch(out)
    b.position_at_end(out)
    b.ret(rc)
    stop = ir.Function(module, ir.FunctionType(dm.void, [dm.ptr]), "gpunb_pool_quit")
    b = ir.IRBuilder(stop.append_basic_block("entry"))
    pool = stop.args[0]
    mutex = _at(b, pool, MUTEX)
    b.call(lib["lock"], [mutex])
    b.atomic_rmw("xchg", _at(b, pool, QUIT), _i32(1), "release")
    b.atomic_rmw("add", _at(b, pool, GENERATION), _i64(1), "release")
    b.call(lib["broadcast"], [_at(b, pool, COND_WORK)])
    b.call(lib["unlock"], [mutex])
    b.ret_void()


def pool_module() -> str:
    """The pool's LLVM IR (init, spawn, worker, run)."""
    from gpunb.backends.cpu.target import host_target_machine

    module = ir.Module(name="gpunb_pool")
    tm = host_target_machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    lib = _lib(module)
    worker = _emit_worker(module, lib)
    _emit_run(module, lib)
    _emit_setup(module, lib, worker)
    return str(module)


class HostPool:
    """The process's workers. `run` is used by one launch at a time (`busy`); a launch that
    finds it taken runs on its own thread."""

    def __init__(self):
        import llvmlite.binding as llvm

        from gpunb.backends.cpu.target import host_target_machine
        from gpunb.backends.llvm_lock import LLVM_LOCK

        with LLVM_LOCK:
            mod = llvm.parse_assembly(pool_module())
            mod.verify()
            tm = host_target_machine.__wrapped__()  # MCJIT owns (and frees) its machine
            self.engine = llvm.create_mcjit_compiler(mod, tm)
            self.engine.finalize_object()
            address = self.engine.get_function_address
            self._run = _RUN(address("gpunb_pool_run"))
            init = _INIT(address("gpunb_pool_init"))
            self._spawn = _SPAWN(address("gpunb_pool_spawn"))
            self._quit = _QUIT(address("gpunb_pool_quit"))
        self.memory = ctypes.create_string_buffer(POOL_BYTES + 64)
        self.address = (ctypes.addressof(self.memory) + 63) // 64 * 64
        if init(self.address) != 0:
            raise OSError("gpunb CPU pool: pthread_mutex_init/pthread_cond_init failed")
        self.workers: list = []  # their argument buffers (kept alive with the threads)
        self.busy = threading.Lock()
        self.pid = os.getpid()

    def _grow(self, count: int) -> int:
        """Start workers up to `count` (called with `busy` held: no job is running)."""
        generation = ctypes.c_int64.from_address(self.address + GENERATION).value
        live = ctypes.c_int32.from_address(self.address + LIVE)
        while len(self.workers) < count:
            arg = ctypes.create_string_buffer(WORKER_BYTES)
            base = ctypes.addressof(arg)
            ctypes.c_void_p.from_address(base + W_POOL).value = self.address
            ctypes.c_int32.from_address(base + W_INDEX).value = len(self.workers)
            ctypes.c_int64.from_address(base + W_SEEN).value = generation
            live.value += 1  # no worker can end before shutdown(): no race on it here
            if self._spawn(base) != 0:
                live.value -= 1
                break  # no more threads to be had: run with those there are
            self.workers.append(arg)
        return min(count, len(self.workers))

    def run(self, runner_address: int, launch_address: int, threads: int) -> bool:
        """runner(launch) on `threads` host threads (this one included). False when the pool
        is in use by another launch (the caller then runs the launch alone)."""
        if not self.busy.acquire(blocking=False):
            return False
        try:
            workers = self._grow(threads - 1)
            self._run(self.address, runner_address, launch_address, workers)
        finally:
            self.busy.release()
        return True


    def shutdown(self, timeout: float = 2.0) -> None:
        """End the workers (at exit: their code and this memory are freed with the module)."""
        import time

        if not self.busy.acquire(timeout=timeout):
            return
        self._quit(self.address)
        live = ctypes.c_int32.from_address(self.address + LIVE)
        deadline = time.monotonic() + timeout
        while live.value > 0 and time.monotonic() < deadline:
            time.sleep(0.0005)
        # `busy` stays held: nothing may use the pool after this


_pool: HostPool | None = None
_pool_lock = threading.Lock()


def _shutdown() -> None:
    pool = _pool
    if pool is not None and pool.pid == os.getpid():
        pool.shutdown()


def host_pool() -> HostPool:
    """This process's pool, made on first use (and again in a forked child)."""
    global _pool
    pool = _pool
    if pool is not None and pool.pid == os.getpid():
        return pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            if _pool is None:
                import atexit

                atexit.register(_shutdown)
            _pool = HostPool()
        return _pool
