"""Wrong submissions for the exercises of notebooks 01-10, beyond each starter (which
test_exercises.py checks): see wrong_submissions.py."""

from __future__ import annotations

from solutions import (
    FULL,
)
from wrong_submissions import Case, collector

from gpunb import cuda, float32, int32

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
