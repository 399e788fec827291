"""Wrong submissions for the exercises of notebooks 01-11, beyond each starter (which
test_exercises.py checks): see wrong_submissions.py."""

from __future__ import annotations

import numpy as np
from solutions import (
    FULL,
)
from wrong_submissions import UNSET_HINT, Case, collector

from gpunb import cuda, float32, int32
from gpunb.cuda import wmma

CASES: list[Case] = []
wrong = collector(CASES)


# ---- exercises: mistakes beyond each starter's own ---------------------------------------------


@wrong("ex07_private_histogram", "uninitialised", "still store their slot",
       "private bins never zeroed")
def private_histogram_unzeroed(out, a):
    local = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(local, a[i], 1)
    cuda.syncthreads()
    if t < 8:
        cuda.atomic.add(out, t, local[t])


@wrong("ex07_private_histogram", "race", "cuda.syncthreads()", "no barrier before the merge")
def private_histogram_no_barrier(out, a):
    local = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if t < 8:
        local[t] = 0
    cuda.syncthreads()
    if i < a.size:
        cuda.atomic.add(local, a[i], 1)
    if t < 8:
        cuda.atomic.add(out, t, local[t])


@wrong("ex04_shuffle_all_lanes", "values", "", "offsets from 8: half a warp")
def shuffle_half_warp(out, a):
    i = cuda.grid(1)
    v = a[i] if i < a.size else float32(0.0)
    offset = 8
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0 and i < a.size:
        out[i // 32] = v


@wrong("ex06_bank_conflicts", "coalescing", "threadIdx.x", "padded, but the write goes down "
       "a column again")
def transpose_padded_strided(out, a):
    tile = cuda.shared.array((32, 33), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    out[x, y] = tile[ty, tx]


@wrong("ex09_coarsen", "race", "cuda.syncthreads()", "coarsened, second barrier dropped")
def coarsen_one_barrier(C, A, B):
    sA = cuda.shared.array((8, 8), float32)
    sB = cuda.shared.array((8, 16), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * 8 + ty
    col = cuda.blockIdx.x * 16 + tx
    acc0 = float32(0.0)
    acc1 = float32(0.0)
    for k0 in range(0, A.shape[1], 8):
        sA[ty, tx] = A[row, k0 + tx]
        sB[ty, tx] = B[k0 + ty, col]
        sB[ty, tx + 8] = B[k0 + ty, col + 8]
        cuda.syncthreads()
        for k in range(8):
            v = sA[ty, k]
            acc0 += v * sB[k, tx]
            acc1 += v * sB[k, tx + 8]
    C[row, col] = acc0
    C[row, col + 8] = acc1


# ---- notebook 11: tensor cores -------------------------------------------------------------------


@wrong("ex11_wmma_accumulate", "crash", "tensor-core operands",
       "b declared column-major: its row-major tile is refused at the load")
def wmma_accumulate_b_col_major(out, a, b):
    r = cuda.blockIdx.y * 16
    c = cuda.blockIdx.x * 16
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.col_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    for k in range(0, a.shape[1], 16):
        wmma.load_matrix_sync(fa, a[r:r + 16, k:k + 16])
        wmma.load_matrix_sync(fb, b[k:k + 16, c:c + 16])
        wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)


@wrong("ex11_wmma_accumulate", "method", "wmma.mma_sync", "each lane multiplies on its own")
def wmma_accumulate_scalar(out, a, b):
    lane = cuda.laneid
    row = cuda.blockIdx.y * 16 + lane // 2
    c0 = cuda.blockIdx.x * 16 + (lane % 2) * 8
    for j in range(8):
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += float32(a[row, k]) * float32(b[k, c0 + j])
        out[row, c0 + j] = acc


def _staged_gemm(barrier_after_copy: bool, barrier_after_mma: bool, stage_b: bool,
                 b_columns: int):
    """The solution of ex11_wmma_shared with one of its steps broken."""
    def kernel(out, a, b):
        sa = cuda.shared.array((32, 16), np.float16)
        sb = cuda.shared.array((16, 32), np.float16)
        t = cuda.threadIdx.x
        wy = t // 64
        wx = (t // 32) % 2
        r0 = cuda.blockIdx.y * 32
        c0 = cuda.blockIdx.x * 32
        fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
        fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
        acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
        wmma.fill_fragment(acc, 0.0)
        for k in range(0, a.shape[1], 16):
            for j in range(4):
                sa[t // 4, 4 * (t % 4) + j] = a[r0 + t // 4, k + 4 * (t % 4) + j]
            if stage_b:
                for j in range(b_columns):
                    sb[t // 8, 4 * (t % 8) + j] = b[k + t // 8, c0 + 4 * (t % 8) + j]
            if barrier_after_copy:
                cuda.syncthreads()
            wmma.load_matrix_sync(fa, sa[16 * wy:16 * wy + 16, :])
            if stage_b:
                wmma.load_matrix_sync(fb, sb[:, 16 * wx:16 * wx + 16])
            else:
                wmma.load_matrix_sync(fb, b[k:k + 16, c0 + 16 * wx:c0 + 16 * wx + 16])
            wmma.mma_sync(acc, fa, fb, acc)
            if barrier_after_mma:
                cuda.syncthreads()
        wmma.store_matrix_sync(out[r0 + 16 * wy:r0 + 16 * wy + 16,
                                   c0 + 16 * wx:c0 + 16 * wx + 16], acc, wmma.mem_row_major)
    return kernel


for _what, _args, _kind, _hint in (
        ("no barrier between the copies and the fragment loads", (False, True, True, 4), "race",
         "cuda.syncthreads()"),
        ("no barrier before the next step's copies", (True, False, True, 4), "race",
         "cuda.syncthreads()"),
        ("only a staged: every warp still loads b from global memory", (True, True, False, 4),
         "method", "shared memory"),
        ("half of each row of sb copied", (True, True, True, 2), "uninitialised",
         UNSET_HINT)):
    wrong("ex11_wmma_shared", _kind, _hint, _what)(_staged_gemm(*_args))


def _pipelined_gemm(wait: int | None, wait_first: bool, first_barrier: bool,
                    second_barrier: bool):
    """The solution of ex11_cp_async_wait with its waits or barriers changed (wait None: no
    wait_group; wait_first: the wait before the commit of tile k + 1)."""
    def kernel(out, a, b):
        sa = cuda.shared.array((2, 16, 16), np.float16)
        sb = cuda.shared.array((2, 16, 16), np.float16)
        lane = cuda.threadIdx.x
        row = lane // 2
        col = (lane % 2) * 8
        r = cuda.blockIdx.y * 16
        c = cuda.blockIdx.x * 16
        fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
        fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
        acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
        wmma.fill_fragment(acc, 0.0)
        tiles = a.shape[1] // 16
        cuda.cp_async.copy(sa[0, row, col:], a[r + row, col:], 16)
        cuda.cp_async.copy(sb[0, row, col:], b[row, c + col:], 16)
        cuda.cp_async.commit_group()
        for k in range(tiles):
            if wait_first:
                cuda.cp_async.wait_group(1)
            if k + 1 < tiles:
                nxt = (k + 1) % 2
                cuda.cp_async.copy(sa[nxt, row, col:], a[r + row, (k + 1) * 16 + col:], 16)
                cuda.cp_async.copy(sb[nxt, row, col:], b[(k + 1) * 16 + row, c + col:], 16)
            cuda.cp_async.commit_group()
            if wait is not None and not wait_first:
                cuda.cp_async.wait_group(wait)
            if first_barrier:
                cuda.syncthreads()
            wmma.load_matrix_sync(fa, sa[k % 2, :, :])
            wmma.load_matrix_sync(fb, sb[k % 2, :, :])
            wmma.mma_sync(acc, fa, fb, acc)
            if second_barrier:
                cuda.syncthreads()
        wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)
    return kernel


for _what, _args, _kind, _hint in (
        ("wait_group(0): tile k + 1 waited for too, nothing in flight", (0, False, True, True),
         "method", "wait_group(1)"),
        ("wait_group(1) before the commit: it leaves tile k in flight", (1, True, True, True),
         "pending_copy", "wait_group")):
    # (a one-warp block without its barriers is not reported: the CPU target orders a warp's
    # accesses at each warp-wide operation, here the fragment loads, as a __syncwarp would)
    wrong("ex11_cp_async_wait", _kind, _hint, _what)(_pipelined_gemm(*_args))
