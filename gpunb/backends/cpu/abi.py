"""Memory layouts shared by the CPU target's generated code and its Python launcher.

Thread context (one per simulated GPU thread), launch descriptor (one per host worker) and error
status (one per launch). Offsets are in bytes; everything is naturally aligned.
"""

from __future__ import annotations

import ctypes

# ---- thread context ----
CTX_TID = 0  # i32[3]
CTX_CTAID = 12  # i32[3]
CTX_NTID = 24  # i32[3]
CTX_NCTAID = 36  # i32[3]
CTX_WAIT_KIND = 48  # i32: 0 running/none, 1 block barrier, 2 warp barrier, 3 grid barrier
CTX_SITE = 52  # i32: barrier site id
CTX_PRED = 56  # i32: predicate for syncthreads_count/and/or
CTX_RESULT = 60  # i32: count of true predicates after a barrier
CTX_SHARED = 64  # ptr: the block's shared memory
CTX_STATUS = 72  # ptr: the launch's Status
CTX_DYN_SHARED = 80  # i64: dynamic shared bytes (the static area starts after it, 16-aligned)
CTX_LANE = 88  # i32
CTX_WARP = 92  # i32
CTX_LINEAR = 96  # i32
CTX_WAITING = 100  # i32: threads that reached the last barrier (for syncthreads_and)
CTX_XCHG = 104  # i64: this lane's contribution to a warp collective (shuffle value, vote)
CTX_SNAPSHOT = 112  # i64: CTX_XCHG copied by the scheduler when the warp collective completes
# access recording (racecheck, access maps): synchronisation epochs this thread has passed
CTX_BAR_EPOCH = 120  # i32: block barriers (and grid syncs)
CTX_WARP_EPOCH = 124  # i32: warp synchronisations (syncwarp, shuffles, votes, matches)
CTX_GRID_EPOCH = 128  # i32: grid syncs
CTX_MASK = 132  # i32: the member mask of the warp collective this thread waits at
# work-group mode: the block's per-thread variable arrays (wg_lower.py), allocated by the runner
# once per host thread and launch, not once per block
CTX_SCRATCH = 136  # ptr
# stopping a launch (guard.py): the launch's cancel word (polled at loop back-edges and
# barriers), this host thread's guard record (where a stop or a fault jumps back to), the
# coroutine frame's memory (freed by the guard when a launch is abandoned mid-way) and whether
# CTX_TID holds the running thread (always with coroutines; work-group mode only around calls)
CTX_CANCEL = 144  # ptr to i32
CTX_GUARD = 152  # ptr
CTX_FRAME = 160  # ptr
CTX_TID_KNOWN = 168  # i32
# the debug variant (always coroutine mode, so the slot is free): this thread's debug area
# (debug_abi.py)
CTX_DEBUG_AREA = CTX_SCRATCH
CTX_SIZE = 176

WAIT_NONE, WAIT_BLOCK, WAIT_WARP, WAIT_GRID = 0, 1, 2, 3

ERROR_NONE, ERROR_INDEX, ERROR_BARRIER, ERROR_RAISE, ERROR_WARP_MASK = 0, 1, 2, 3, 4
# the kernel faulted (a signal: invalid access, stack overflow...): guard.py records it
ERROR_FAULT = 5
# the runner could not allocate a launch's host memory (shared memory, contexts, scratch)
ERROR_NO_MEMORY = 6

# Launch.cancel: why a launch is being abandoned (0: it is not)
CANCEL_NONE, CANCEL_INTERRUPT, CANCEL_TIMEOUT, CANCEL_FAULT = 0, 1, 2, 3

# one recorded memory access (racecheck, access maps): 32 bytes, read back with numpy
RECORD_FIELDS = (("address", "<i8"), ("site", "<i4"), ("thread", "<i4"), ("block", "<i4"),
                 ("bar_epoch", "<i4"), ("warp_epoch", "<i4"), ("grid_epoch", "<i2"),
                 ("space", "<i2"))
RECORD_SIZE = 32
SPACE_GLOBAL, SPACE_SHARED = 0, 1


class Status(ctypes.Structure):
    """Written by generated code when something goes wrong; read by the launcher."""

    _fields_ = [
        ("code", ctypes.c_int32),
        ("site", ctypes.c_int32),
        ("index", ctypes.c_int64),
        ("extent", ctypes.c_int64),
        ("axis", ctypes.c_int32),
        ("tid", ctypes.c_int32 * 3),
        ("ctaid", ctypes.c_int32 * 3),
        ("site2", ctypes.c_int32),
        ("count", ctypes.c_int32),
        ("total", ctypes.c_int32),
        ("print_buf", ctypes.c_void_p),  # kernel print(): records [i32 block][i32 thread][i32 n]
        ("print_cap", ctypes.c_int64),  # followed by n bytes of text
        ("print_len", ctypes.c_int64),
        ("rec_buf", ctypes.c_void_p),  # access records (RECORD_FIELDS), when the kernel records
        ("rec_cap", ctypes.c_int64),  # records the buffer holds
        ("rec_len", ctypes.c_int64),  # records written (may exceed rec_cap: then truncated)
        ("rec_shared", ctypes.c_int64),  # shared bytes per block: offsets below are shared
        ("mask", ctypes.c_int32),  # warp-mask errors: the lanes named that did not arrive
        ("lane", ctypes.c_int32),
        # ERROR_FAULT (guard.py): the signal, its si_code, the address it names, the faulting
        # instruction and stack pointer, the stack the host thread had used, and whether
        # tid/ctaid name the faulting thread (1) or only its block (0)
        ("fault_signal", ctypes.c_int32),
        ("fault_code", ctypes.c_int32),
        ("fault_addr", ctypes.c_uint64),
        ("fault_pc", ctypes.c_uint64),
        ("fault_sp", ctypes.c_uint64),
        ("fault_depth", ctypes.c_int64),
        ("fault_tid_known", ctypes.c_int32),
        ("fault_ctaid_known", ctypes.c_int32),
        ("debug", ctypes.c_void_p),  # the debug variant's DebugControl (debug_abi.py)
    ]


STATUS_OFFSETS = {name: getattr(Status, name).offset for name, _ in Status._fields_}


class Launch(ctypes.Structure):
    """A launch's blocks [block_begin, block_end), shared by the host threads that run it: each
    claims `chunk` blocks at a time from `next_block` (an atomic counter) until none are left."""

    _fields_ = [
        ("grid", ctypes.c_int32 * 3),
        ("block", ctypes.c_int32 * 3),
        ("block_begin", ctypes.c_int64),
        ("block_end", ctypes.c_int64),
        ("next_block", ctypes.c_int64),
        ("chunk", ctypes.c_int64),
        ("shared_bytes", ctypes.c_int64),
        ("dyn_shared", ctypes.c_int64),
        ("status", ctypes.c_void_p),
        ("params", ctypes.c_void_p),
        # guard.py: the kernel's runner (the guard's job calls it), why the launch is to stop
        # (CANCEL_*: set by SIGINT, the watchdog or a faulting host thread; polled by the
        # kernel's code) and the launch's serial number (the watchdog's way to tell launches
        # that reuse one Launch apart)
        ("runner", ctypes.c_void_p),
        ("cancel", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("serial", ctypes.c_uint64),
    ]


LAUNCH_OFFSETS = {name: getattr(Launch, name).offset for name, _ in Launch._fields_}
