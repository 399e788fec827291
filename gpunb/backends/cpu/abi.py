"""Memory layouts shared by the CPU target's generated code and its Python launcher.

Thread context (one per simulated GPU thread), launch descriptor (one per host worker) and error
status (one per launch). Offsets are in bytes; everything is naturally aligned.
"""

from __future__ import annotations

import ctypes
import dataclasses
import signal
import sys

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
# kernels with asynchronous copies (cp.async, TMA, wgmma): this thread's queues and state
# (backends/cpu/async_state.py), allocated by the runner
CTX_ASYNC = 144  # ptr
# stopping a launch (guard.py): the launch's cancel word (polled at loop back-edges and
# barriers), this host thread's guard record (where a stop or a fault jumps back to), the
# coroutine frame's memory (freed by the guard when a launch is abandoned mid-way; a recording
# thread's local arrays live there, and the recorder skips it) and whether CTX_TID holds the
# running thread (always with coroutines; work-group mode only around calls)
CTX_CANCEL = 152  # ptr to i32
CTX_GUARD = 160  # ptr
CTX_FRAME = 168  # ptr
CTX_TID_KNOWN = 176  # i32
# a recording coroutine thread's frame size (beside CTX_FRAME: the recorder skips the frame)
CTX_FRAME_BYTES = 184  # i32 (its upper half: CTX_REC_CLUSTER_WAITED)
# the debug variant (always coroutine mode, so the slot is free): this thread's debug area
# (debug_abi.py)
CTX_DEBUG_AREA = CTX_SCRATCH
CTX_SIZE = 192
# thread-block clusters (cluster_ops.py, cluster_schedule.py): a cluster kernel is never
# recorded (racecheck refuses it), so the cluster barrier's counts take the epochs' slots - this
# thread's arrivals and waits, and the phases completed when the scheduler last resumed it (the
# runner zeroes them per group) - and the context of a block's thread 0 counts the block's
# exited threads in the padding after CTX_TID_KNOWN (a peer's remote arrive, multicast or
# mapping of an exited block's shared memory is an error). A larger context made every
# coroutine launch slower (measured: 5 % of a block-barrier kernel's).
CTX_CLUSTER_ARRIVED = CTX_BAR_EPOCH  # i32
CTX_CLUSTER_WAITED = CTX_WARP_EPOCH  # i32
CTX_CLUSTER_PHASE = CTX_GRID_EPOCH  # i32
CTX_CLUSTER_EXITED = 180  # i32
# a recording cluster kernel (racecheck, access maps: coroutines, never the debugger, whose area
# is the scratch slot) keeps its epochs in their slots: its cluster barrier's counts take the
# scratch slot (work-group mode only) and the upper half of CTX_FRAME_BYTES (an i32: no
# coroutine frame is 4 GiB). Its scheduler (runtime_lib's record_cluster variants) reads them
CTX_REC_CLUSTER_ARRIVED = CTX_SCRATCH  # i32
CTX_REC_CLUSTER_PHASE = CTX_SCRATCH + 4  # i32
CTX_REC_CLUSTER_WAITED = CTX_FRAME_BYTES + 4  # i32


def cluster_slots(record: bool) -> tuple[int, int, int]:
    """(arrived, waited, phase): the context slots of a thread's cluster barrier counts in a
    kernel that records its accesses (`record`) or not."""
    if record:
        return CTX_REC_CLUSTER_ARRIVED, CTX_REC_CLUSTER_WAITED, CTX_REC_CLUSTER_PHASE
    return CTX_CLUSTER_ARRIVED, CTX_CLUSTER_WAITED, CTX_CLUSTER_PHASE

WAIT_NONE, WAIT_BLOCK, WAIT_WARP, WAIT_GRID = 0, 1, 2, 3
# an mbarrier wait (CTX_XCHG: the barrier's address, CTX_PRED: the parity waited for) and a
# warpgroup's rendezvous at a wgmma.mma_async (all 128 threads of an aligned warpgroup)
WAIT_MBARRIER, WAIT_WARPGROUP = 4, 5
# a cluster barrier's wait (cluster.sync(), cluster.barrier_wait()): resumed when the phase this
# thread arrived for has completed
WAIT_CLUSTER = 6

ERROR_NONE, ERROR_INDEX, ERROR_BARRIER, ERROR_RAISE, ERROR_WARP_MASK = 0, 1, 2, 3, 4
ERROR_ASYNC = 5  # site: the operation's barrier site, count: async_state.Reason, index/extent
# the kernel faulted (a signal: invalid access, stack overflow...): guard.py records it
ERROR_FAULT = 6
# the runner could not allocate a launch's host memory (shared memory, contexts, scratch)
ERROR_NO_MEMORY = 7

# Launch.cancel: why a launch is being abandoned (0: it is not)
CANCEL_NONE, CANCEL_INTERRUPT, CANCEL_TIMEOUT, CANCEL_FAULT = 0, 1, 2, 3

# one recorded memory access (racecheck, access maps): 32 bytes, read back with numpy
RECORD_FIELDS = (("address", "<i8"), ("site", "<i4"), ("thread", "<i4"), ("block", "<i4"),
                 ("bar_epoch", "<i4"), ("warp_epoch", "<i4"), ("grid_epoch", "<i2"),
                 ("space", "<i2"))
RECORD_SIZE = 32
SPACE_GLOBAL, SPACE_SHARED = 0, 1
# the role (last field) of the access site of a cp.async's reads of its global source: recorded
# at the issue as the issuing thread's reads (access maps count them; the puzzles' rules tell
# them from direct loads)
ROLE_COPY_SOURCE = "async_source"
# and of a TMA load's reads of the box (recorded at the issue, likewise) and a TMA store's writes
# of it: the TMA unit moves a box in bulk, not as warp requests (access maps' coalescing skips
# them)
ROLE_TMA_SOURCE, ROLE_TMA_DEST = "tma_source", "tma_dest"
# the CPU target's TMA descriptor (runtime/tma.py's CPU_LAYOUT): byte offsets of its fields
# (dims, strides and box innermost first, 5 each) and the magic word that ends it
(TMAP_ADDRESS, TMAP_RANK, TMAP_ITEMSIZE, TMAP_DIMS, TMAP_STRIDES, TMAP_BOX, TMAP_SWIZZLE,
 TMAP_FILL, TMAP_MAGIC) = 0, 8, 12, 16, 56, 96, 116, 120, 124
TMAP_MAGIC_WORD = 0x544D4150  # runtime/tma.py's CPU_MAGIC
# a synchronisation record (racecheck of asynchronous kernels, backends/cpu/happens_before.py):
# its address field is a value - bits 0-31 the object (an mbarrier's shared offset, a copy's or
# wgmma's serial), 32-39 the SYNC_* kind, bit 40 "this update completed the phase", 41-62 extra
SPACE_SYNC = 2
(SYNC_MB_INIT, SYNC_MB_ARRIVE, SYNC_MB_TX, SYNC_MB_COMPLETE_TX, SYNC_MB_WAIT, SYNC_COPY_ISSUE,
 SYNC_COPY_LAND, SYNC_COPY_END, SYNC_FENCE, SYNC_WGMMA_ISSUE, SYNC_WGMMA_END,
 SYNC_WGMMA_WAIT) = range(1, 13)
# the cluster barrier (cluster_ops.py): a thread's arrive and its wait; the object is the phase
# (1, 2, ...) the thread arrived for / waited for. In a cluster kernel an mbarrier's object is
# its offset from the recording thread's own shared memory, signed (another block's mbarrier:
# a remote arrive, a multicast's complete_tx), and a shared access's address is its offset from
# the cluster's rank-0 block's shared memory (accesses.AccessLog decodes both)
SYNC_CLUSTER_ARRIVE, SYNC_CLUSTER_WAIT = 13, 14
# cuda.threadfence*(): the object is its scope (fence_sync.py: with atomics, it orders threads
# of different blocks, the CUDA memory model's release and acquire patterns)
SYNC_THREADFENCE = 15
FENCE_BLOCK, FENCE_DEVICE, FENCE_SYSTEM = 0, 1, 2
SYNC_KIND_SHIFT, SYNC_DONE_BIT, SYNC_EXTRA_SHIFT = 32, 40, 41


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
        ("rec_shared", ctypes.c_int64),  # shared bytes per block (every launch): offsets below
        # it are shared memory (access records; ldmatrix/stmatrix's check)
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
        # a launch of a kernel with cluster dims (x | y << 8 | z << 16; 0: none), set with
        # rec_shared: the recorder takes a shared address's offset from the cluster's rank-0
        # block's shared memory, so that another block's (distributed shared memory) is shared
        ("rec_cluster", ctypes.c_int32),
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
        # kernel's code), whether a debugger holds it stopped now (the watchdog's clock stops
        # meanwhile: a debugger holds a launch as long as it likes) and the launch's serial
        # number (the watchdog's way to tell launches that reuse one Launch apart)
        ("runner", ctypes.c_void_p),
        ("cancel", ctypes.c_int32),
        ("held", ctypes.c_int32),
        ("serial", ctypes.c_uint64),
    ]


LAUNCH_OFFSETS = {name: getattr(Launch, name).offset for name, _ in Launch._fields_}


# ---- the guard (guard_ir.py, guard.py) ----
# guard record (one per host thread and launch, on the stack of gpunb_job)
REC_JMPBUF = 0  # 512 bytes: more than any libc's jmp_buf
REC_THREAD = 512  # pthread_self()
REC_LAUNCH = 520
REC_CTX = 528  # the context of the thread running now (its ids name a fault's thread)
REC_SHARED, REC_CTXS, REC_NCTX, REC_HANDLES, REC_SCRATCH = 536, 544, 552, 560, 568
REC_SIGNAL, REC_CODE, REC_ADDR, REC_PC, REC_SP = 576, 580, 584, 592, 600
REC_SLOT = 608  # i32: its registry slot (-1: none free)
REC_AREAS = 616  # the runner's asynchronous-copy areas (async_state.py)
REC_BYTES = 640
# registry entry: the record, its thread, its launch
SLOTS = 256
SLOT_REC, SLOT_THREAD, SLOT_LAUNCH = 0, 8, 16
SLOT_BYTES = 32
ALTSTACK_BYTES = 1 << 16  # room for the kernel's signal frame (AVX-512 state) and a handler
JUMP_STOP, JUMP_FAULT = 1, 2
FAULT_SIGNALS = tuple(s for s in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL") if hasattr(signal, s))


@dataclasses.dataclass(frozen=True)
class Platform:
    """Where this OS keeps what the handlers read (offsets in bytes; -1: not known here)."""

    si_addr: int
    uc_pc: int
    uc_sp: int
    ss_flags: int  # stack_t: ss_sp at 0, then flags and size in the OS's order
    ss_size: int
    ss_disable: int
    sa_siginfo: int
    sa_onstack: int
    sa_nodefer: int

    def values(self) -> list:
        """The values guard.py writes into the module's `gpunb_guard_platform` (PLATFORM_*)."""
        return [self.si_addr, self.uc_pc, self.uc_sp, self.ss_flags, self.ss_size,
                self.ss_disable]

    @classmethod
    def host(cls) -> Platform:
        import platform

        machine = platform.machine().lower()
        if sys.platform.startswith("linux"):
            pc, sp = {"x86_64": (168, 160), "amd64": (168, 160),
                      "aarch64": (440, 432), "arm64": (440, 432)}.get(machine, (-1, -1))
            return cls(16, pc, sp, 8, 16, 2, 4, 0x08000000, 0x40000000)
        # macOS (and the BSDs' layout): the machine context is behind a pointer: no pc/sp
        return cls(24, -1, -1, 16, 8, 4, 0x40, 1, 0x10)


# gpunb_guard_platform: i64 slots the handlers read (the same code then serves every OS)
PLATFORM_SI_ADDR, PLATFORM_UC_PC, PLATFORM_UC_SP, PLATFORM_SS_FLAGS, PLATFORM_SS_SIZE, \
    PLATFORM_SS_DISABLE = range(6)


