"""AsyncCopyError messages from a launch Status the asynchronous helpers wrote (ERROR_ASYNC):
what went wrong at which call, by which thread, and what to do instead."""

from __future__ import annotations

from gpunb.backends.cpu.async_state import (
    MB_COUNT_BITS,
    MB_INIT_BIT,
    MB_PHASE_BIT,
    MB_TX_BITS,
    MB_TX_SHIFT,
    Reason,
)
from gpunb.foundation.errors import AsyncCopyError, SourceLocation


def mbarrier_text(state: int) -> str:
    """An mbarrier's bits as words: its phase, pending and expected arrivals, tx-count."""
    state &= (1 << 64) - 1
    if not state >> MB_INIT_BIT & 1:
        return "an uninitialised mbarrier"
    mask = (1 << MB_COUNT_BITS) - 1
    tx = state >> MB_TX_SHIFT & ((1 << MB_TX_BITS) - 1)
    tx -= (tx >> (MB_TX_BITS - 1)) << MB_TX_BITS
    return (f"phase parity {state >> MB_PHASE_BIT & 1}, {state & mask} of "
            f"{state >> MB_COUNT_BITS & mask} arrivals pending, {tx} transaction bytes pending")


def _never_completes_hint(state: int) -> str:
    """What to change when a wait's phase never completes, from the mbarrier's bits: bytes
    that overshot or never came, or arrivals that never came."""
    state &= (1 << 64) - 1
    mask = (1 << MB_COUNT_BITS) - 1
    tx = state >> MB_TX_SHIFT & ((1 << MB_TX_BITS) - 1)
    tx -= (tx >> (MB_TX_BITS - 1)) << MB_TX_BITS
    pending, expected = state & mask, state >> MB_COUNT_BITS & mask
    if tx < 0:
        return (f"the copies brought {-tx} bytes more than the phase expected: pass "
                "arrive_expect_tx / expect_tx the bytes they bring (a TMA load: the whole box, "
                "box elements x itemsize, out-of-bounds elements included)")
    if tx > 0 and pending == 0:
        return (f"{tx} expected bytes never came: expect only the bytes of the copies issued "
                "on this mbarrier in this phase")
    if pending and pending == expected:
        return ("no thread arrived in this phase: wait for the parity of the phase your "
                "arrivals and copies complete (it starts at 0 and flips each time a phase "
                "completes; arrivals beyond the init count complete further phases)")
    return (f"{pending} of the {expected} arrivals never came: init the mbarrier with the "
            "number of threads (or arrive counts) that arrive in each phase")


def _not_shared(what: str, offset: int, limit: int) -> tuple[str, str]:
    """NOT_SHARED in words: which operand, and whether it is elsewhere (global or local
    memory: its "shared offset" would mean nothing) or runs past the block's shared memory."""
    if what == "cuda.cp_async.copy":
        noun, fix = "the destination", ("copy into a cuda.shared.array (or a view of one): "
                                        "cp.async copies global memory into shared memory")
    elif what == "cluster.map_shared_rank":
        return ("the array is not in the shared memory of the cluster's blocks",
                "pass an array made with cuda.shared.array (or a view of one)")
    elif what.startswith("cuda.mbarrier"):
        noun, fix = "the mbarrier", "declare the mbarriers with cuda.shared.array(n, uint64)"
    else:
        noun, fix = "the operand", "pass a cuda.shared.array (or a view of one)"
    if 0 <= offset < limit:
        return (f"{noun} runs past the end of the block's {limit} bytes of shared memory (it "
                f"starts {offset} bytes in)", "launch with enough dynamic shared memory for it")
    return f"{noun} is not in shared memory", fix


_CLUSTER_REASONS = (Reason.CLUSTER_RANK, Reason.MULTICAST_MASK, Reason.CLUSTER_REARRIVE,
                    Reason.CLUSTER_WAIT_UNARRIVED, Reason.CLUSTER_PEER_EXITED)


def _cluster_message(r: Reason, a: int, b: int) -> tuple[str, str]:
    """A thread-block cluster's misuse (cluster_ops.py) in words; b is the cluster's size for
    ranks and masks."""
    if r is Reason.CLUSTER_RANK:
        return (f"block rank {a} is outside the cluster, whose blocks have ranks 0 to {b - 1}",
                "use a rank below cluster.num_blocks() (the kernel's cluster_dims); on a GPU an "
                "out-of-range rank is undefined behaviour")
    if r is Reason.MULTICAST_MASK:
        named = "no block" if a == 0 else f"blocks beyond the cluster's {b} (ranks 0 to {b - 1})"
        return (f"the multicast mask {a:#06x} names {named}",
                f"set bit r for each destination block of rank r < {b}, e.g. "
                f"multicast={(1 << b) - 1:#x} for every block of the cluster")
    if r is Reason.CLUSTER_PEER_EXITED:
        return (f"block {a} of the cluster has exited: its shared memory (and its mbarriers) "
                "no longer belong to it (on a GPU another block may have them)",
                "end the kernel with cluster.sync() so that no block exits while the others "
                "still use its shared memory")
    if r is Reason.CLUSTER_REARRIVE:
        return ("arrives at the cluster barrier a second time before the phase it arrived for "
                "completed; each thread arrives once per phase (PTX barrier.cluster)",
                "call cluster.barrier_wait() between two cluster.barrier_arrive() calls")
    return ("waits at the cluster barrier without arriving first (barrier.cluster.wait needs a "
            "barrier.cluster.arrive of the same thread before it)",
            "call cluster.barrier_arrive() before cluster.barrier_wait(), or use cluster.sync()")


def _message(reason: int, a: int, b: int, what: str = "") -> tuple[str, str]:
    r = Reason(reason) if reason in Reason._value2member_map_ else None
    if r is Reason.NOT_SHARED:
        return _not_shared(what, a, b)
    if r in _CLUSTER_REASONS:
        return _cluster_message(r, a, b)
    table = {
        Reason.DST_SHORT: (f"the destination view holds {b} bytes, the copy moves {a}",
                           "slice a view with room for the copy, e.g. s[i:i + n]"),
        Reason.SRC_SHORT: (f"the source view holds {b} bytes, the copy moves {a}",
                           "slice a view with room for the copy, e.g. a[i:i + n]"),
        Reason.NOT_CONTIGUOUS: (f"a view with a stride of {a} bytes: the copied elements of "
                                f"{b} bytes must be contiguous", "copy from a row, not a column"),
        Reason.DST_MISALIGNED: (f"the destination (shared offset {a}) is not aligned to the "
                                f"copy's {b} bytes", "start the copy at a multiple of its size"),
        Reason.SRC_MISALIGNED: (f"the source address {a:#x} is not aligned to the copy's {b} "
                                "bytes", "start the copy at a multiple of its size"),
        Reason.SRC_BYTES: (f"src_bytes={a} is outside 0..{b}",
                           "src_bytes counts the bytes read; the rest is zero-filled"),
        Reason.MBAR_UNINITIALISED: ("the mbarrier was used before cuda.mbarrier.init (or after "
                                    "cuda.mbarrier.inval)",
                                    "init it in one thread, then cuda.syncthreads() before "
                                    "other threads use it"),
        Reason.MBAR_COUNT: (f"an mbarrier's arrival count must be 1 to {b}, got {a}", None),
        Reason.MBAR_OVERARRIVAL: (f"more arrivals than the phase expects ({b}); the phase "
                                  f"would be {a} below zero",
                                  "init the mbarrier with the number of arriving threads"),
        Reason.MBAR_TX_RANGE: (f"the mbarrier's tx-count would be {a}, outside +-{b}",
                               "expect at most 2**20 - 1 bytes per phase"),
        Reason.MBAR_NEVER_COMPLETES: (
            f"waits for the phase of parity {a}, which never completes ({mbarrier_text(b)}; "
            "every other thread has finished or waits too)", _never_completes_hint(b)),
        Reason.TMA_UNAWAITED: (
            f"the copy of {a} bytes was still in flight when every thread of the block had "
            f"finished: nothing waited for it (its mbarrier: {mbarrier_text(b)}), so any read of "
            "its tile saw the old bytes",
            "announce the load's bytes in the phase it completes, "
            "cuda.mbarrier.arrive_expect_tx(bars, i, nbytes) (or expect_tx) before "
            "cuda.mbarrier.wait, so the phase completes only when the tile has landed"),
        Reason.WGMMA_UNFENCED: (
            "no cuda.wgmma.fence() before it in this thread; the PTX ISA requires one before "
            "a warpgroup's first wgmma.mma_async (and after the thread writes or reads the "
            "accumulator or A registers), or the MMA may use stale registers",
            "call cuda.wgmma.fence() in every thread of the warpgroup before the MMAs "
            "(CUTLASS's warpgroup_arrive()), e.g. at the top of each K step"),
        Reason.TILE_SHAPE: (f"the shared tile's axis {a} has {b} elements, not the "
                            "descriptor's box", "pass a view of the box's shape"),
        Reason.TILE_NOT_CONTIGUOUS: (f"the shared tile's axis {a} has a stride of {b} bytes; "
                                     "a TMA tile is C-contiguous",
                                     "pass a whole shared array or a leading-index view"),
        Reason.TILE_MISALIGNED: (f"the shared tile (offset {a}) is not {b}-byte aligned, as TMA "
                                 "needs", "declare it with cuda.shared.array(..., "
                                 "alignment=128) (1024 for a 128-byte swizzle)"),
        Reason.WARPGROUP_PARTIAL: (
            f"reached by {a} of the 128 threads of warpgroup {b}; wgmma is issued by a whole "
            "warpgroup (4 warps, aligned) together",
            "launch a multiple of 128 threads and let every thread of the warpgroup call it"),
        Reason.ACC_SHORT: (f"the accumulator holds {a} values, the fragment has {b}",
                           f"acc = cuda.local.array({b}, float32)"),
        Reason.A_SHORT: (f"the A register array holds {a} values, not {b}",
                         "pass cuda.local.array(8, float16) (or bfloat16, or 4 packed uint32)"),
        Reason.DESCRIPTOR_RANGE: (f"a matrix descriptor reaches shared offset {a}, outside the "
                                  f"block's {b} bytes", "check the descriptor's tile, sbo and lbo"),
        Reason.DESCRIPTOR_BASE_OFFSET: (f"a matrix descriptor with base offset {a}: gpunb "
                                        "models canonical layouts (base offset 0)",
                                        "align swizzled tiles to their pattern (1024 bytes for "
                                        "128-byte swizzle)"),
    }
    return table.get(r, (f"asynchronous operation failed (reason {reason})", None))


def async_error(artifact, status) -> AsyncCopyError:
    filename, line, col, what = artifact.barrier_sites[status.site]
    message, hint = _message(status.count, status.index, status.extent, what)
    who = f"thread {tuple(status.tid)} of block {tuple(status.ctaid)}"
    return AsyncCopyError(f"{what}: {message} ({who})", SourceLocation(filename, line, col),
                          hint=hint, function=artifact.name)
