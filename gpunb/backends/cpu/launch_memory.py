"""What a CPU-target runner allocates for a launch (runner.py): freeing it, checking that it
was had, and noting it in the host thread's guard record, from which the guard frees it when a
launch is abandoned mid-way (a stop, a fault: guard_ir.py)."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm


def _at(b, base, offset):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


def _i32(v):
    return ir.Constant(dm.i32, v)


def _i64(v):
    return ir.Constant(dm.i64, v)


def free_all(b, free, shared, ctxs, handles, scratch=None, areas=None) -> None:
    """Free what the runner allocated (None: not allocated for this kernel)."""
    b.call(free, [shared])
    b.call(free, [ctxs])
    for block in (handles, scratch, areas):
        if block is not None:
            b.call(free, [block])


def if_guarded(b: ir.IRBuilder, guard, emit) -> None:
    """emit() where the host thread has a guard record (None only where the process has no
    guard: guard.py could not be built)."""
    fn = b.function
    yes, done = fn.append_basic_block("guarded"), fn.append_basic_block("guarded.done")
    b.cbranch(b.icmp_unsigned("!=", b.ptrtoint(guard, dm.i64), _i64(0)), yes, done)
    b.position_at_end(yes)
    emit()
    b.branch(done)
    b.position_at_end(done)


def note_allocations(b, guard, shared, ctxs, n_ctx, handles, scratch, areas) -> None:
    """What the guard frees when the launch is abandoned (abi.py's guard record layout)."""
    null = ir.Constant(dm.ptr, None)

    def note():
        for offset, value in ((abi.REC_SHARED, shared), (abi.REC_CTXS, ctxs),
                              (abi.REC_HANDLES, handles or null),
                              (abi.REC_SCRATCH, scratch or null), (abi.REC_AREAS, areas or null)):
            b.store(value, _at(b, guard, offset))
        b.store(n_ctx, _at(b, guard, abi.REC_NCTX))

    if_guarded(b, guard, note)


def note_current(b, guard, ctx) -> None:
    """The context of the thread about to run: a fault names its thread and block."""
    if_guarded(b, guard, lambda: b.store(ctx, _at(b, guard, abi.REC_CTX)))


def check_allocations(b, status, free, shared, ctxs, handles, scratch, areas) -> None:
    """A launch whose host memory cannot be had (a huge shared or scratch area) reports it
    instead of writing through a null pointer."""
    fn = b.function
    missing = None
    for block in (shared, ctxs, handles, scratch, areas):
        if block is not None:
            null = b.icmp_unsigned("==", b.ptrtoint(block, dm.i64), _i64(0))
            missing = null if missing is None else b.or_(missing, null)
    fail, ok = fn.append_basic_block("nomem"), fn.append_basic_block("mem.ok")
    b.cbranch(missing, fail, ok)
    b.position_at_end(fail)
    b.cmpxchg(status, _i32(abi.ERROR_NONE), _i32(abi.ERROR_NO_MEMORY), "seq_cst", "monotonic")
    free_all(b, free, shared, ctxs, handles, scratch, areas)
    b.ret_void()
    b.position_at_end(ok)


# the alignment of each block's shared memory (cuda.shared.array takes alignment= up to it):
# an array's address and its offset from the block's base then agree modulo any alignment=
# (numba-cuda's tests check the address; TMA and swizzle checks read the offset, as on a GPU,
# whose shared window starts at 0)
SHARED_ALIGN = 4096


def shared_block_stride(b, shared_bytes, cooperative: bool):
    """Bytes between the shared memory of blocks run together (a cooperative launch runs all
    of them): SHARED_ALIGN-rounded there, 16-rounded for the one block of other launches."""
    align = SHARED_ALIGN if cooperative else 16
    return b.and_(b.add(shared_bytes, _i64(align - 1)), _i64(-align))


def aligned_shared(b, malloc, total) -> tuple:
    """(the malloc'd block, which the guard frees; its first SHARED_ALIGN-aligned byte)."""
    block = b.call(malloc, [b.add(total, _i64(SHARED_ALIGN))])
    start = b.and_(b.add(b.ptrtoint(block, dm.i64), _i64(SHARED_ALIGN - 1)), _i64(-SHARED_ALIGN))
    return block, b.inttoptr(start, dm.ptr)


def publish_group(b, memset, control, ctxs, areas, areas_bytes, group_threads, first) -> None:
    """The debug variant's runner: fresh debug areas for the blocks about to run, and where the
    debugger finds them (a debug launch runs on one host thread, so one group at a time)."""
    from gpunb.backends.cpu.debug_abi import CONTROL_OFFSETS as co

    b.call(memset, [areas, ir.Constant(dm.i8, 0), areas_bytes, ir.Constant(dm.i1, 0)])
    for name, value in (("group_ctxs", ctxs), ("group_areas", areas),
                        ("group_threads", group_threads), ("group_first_block", first)):
        b.store(value, b.gep(control, [ir.Constant(dm.i64, co[name])], source_etype=dm.i8))
