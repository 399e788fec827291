"""Solutions of the exercises that end the teaching notebooks (gpunb.puzzles.exercises()), kept
out of the package, and the finding each exercise's starter must get from the grader (the bug
or the slowness the exercise is about)."""

from __future__ import annotations

import math

from gpunb import cuda, float32, int32

FULL = 0xFFFFFFFF

# the kind of finding each starter must be rejected with
STARTER_KINDS = {
    "ex01_saxpy_guard": "out_of_bounds", "ex01_block_sum_tail": "uninitialised",
    "ex02_stencil_barrier": "race", "ex02_matmul_coalesced": "coalescing",
    "ex02_divergent_barrier": "barrier_divergence",
    "ex03_global_is_frozen": "values", "ex03_fix_the_helper": "values",
    "ex04_shuffle_all_lanes": "warp_mask", "ex04_ballot_count": "atomics",
    "ex04_broadcast": "global_reads",
    "ex05_one_pass": "global_reads", "ex05_fused_sum": "atomics",
    "ex06_coalesced_scale": "coalescing", "ex06_transpose_tiled": "coalescing",
    "ex06_bank_conflicts": "bank_conflicts",
    "ex07_histogram_race": "race", "ex07_private_histogram": "shared_missing",
    "ex08_grid_stride_sum": "coalescing", "ex08_warp_scan": "values",
    "ex08_block_sum_shuffles": "barriers",
    "ex09_second_barrier": "race", "ex09_coarsen": "step_work",
    "ex10_shift_left": "out_of_bounds", "ex10_block_sum_race": "race",
    "ex10_block_max": "uninitialised",
}


def ex01_saxpy_guard(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


SUM32 = 32


def ex01_block_sum_tail(partial, values):
    buf = cuda.shared.array(SUM32, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = values[i] if i < values.size else 0.0
    cuda.syncthreads()
    step = SUM32 // 2
    while step > 0:
        if tid < step:
            buf[tid] += buf[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]


STENCIL_TPB = 16


def ex02_stencil_barrier(out, a):
    buf = cuda.shared.array(STENCIL_TPB + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t + 1] = a[i] if i < a.size else 0.0
    if t == 0:
        buf[0] = a[i - 1] if i >= 1 else 0.0
    if t == STENCIL_TPB - 1:
        buf[STENCIL_TPB + 1] = a[i + 1] if i + 1 < a.size else 0.0
    cuda.syncthreads()
    if i < a.size:
        out[i] = buf[t] + buf[t + 1] + buf[t + 2]


TILE8 = 8


def ex02_matmul_coalesced(C, A, B):
    sA = cuda.shared.array((TILE8, TILE8), float32)
    sB = cuda.shared.array((TILE8, TILE8), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE8 + ty
    col = cuda.blockIdx.x * TILE8 + tx
    acc = float32(0.0)
    for k in range(0, A.shape[1], TILE8):
        sA[ty, tx] = A[row, k + tx]
        sB[ty, tx] = B[k + ty, col]
        cuda.syncthreads()
        for j in range(TILE8):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    C[row, col] = acc


ROT = 32


def ex02_divergent_barrier(out, a):
    buf = cuda.shared.array(ROT, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = a[i]
    cuda.syncthreads()
    out[i] = buf[(t + 1) % ROT]


def ex03_global_is_frozen(out, a, factor):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * factor


@cuda.jit(device=True)
def leaky(v):
    return v if v > 0 else v * 0.125


def ex03_fix_the_helper(out, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = leaky(a[i])


def ex04_shuffle_all_lanes(out, a):
    i = cuda.grid(1)
    v = a[i] if i < a.size else float32(0.0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0 and i < a.size:
        out[i // 32] = v


def ex04_ballot_count(out, a):
    i = cuda.grid(1)
    votes = cuda.ballot_sync(FULL, i < a.size and a[i] > 0)
    if cuda.laneid == 0:
        cuda.atomic.add(out, 0, cuda.popc(votes))


def ex04_broadcast(out, a):
    i = cuda.grid(1)
    v = a[i] if i < a.size else float32(0.0)
    first = cuda.shfl_sync(FULL, v, 0)
    if i < a.size:
        out[i] = v - first


def ex05_one_pass(out, x):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i]
        out[i] = v if v > 0 else v * 0.25


FUSED_TPB = 64


def ex05_fused_sum(out, x, y):
    buf = cuda.shared.array(FUSED_TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] * y[i] + 1 if i < x.size else float32(0.0)
    cuda.syncthreads()
    step = FUSED_TPB // 2
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, buf[0])


def ex06_coalesced_scale(out, a):
    c, r = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = 2 * a[r, c]


TILE32 = 32


def ex06_transpose_tiled(out, a):
    tile = cuda.shared.array((TILE32, TILE32 + 1), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    out[cuda.blockIdx.x * TILE32 + ty, cuda.blockIdx.y * TILE32 + tx] = tile[tx, ty]


def ex06_bank_conflicts(out, a):
    tile = cuda.shared.array((TILE32, TILE32 + 1), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    out[cuda.blockIdx.x * TILE32 + ty, cuda.blockIdx.y * TILE32 + tx] = tile[tx, ty]


def ex07_histogram_race(out, a):
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(out, a[i], 1)


BINS = 8


def ex07_private_histogram(out, a):
    local = cuda.shared.array(BINS, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if t < BINS:
        local[t] = 0
    cuda.syncthreads()
    if i < a.size:
        cuda.atomic.add(local, a[i], 1)
    cuda.syncthreads()
    if t < BINS:
        cuda.atomic.add(out, t, local[t])


def ex08_grid_stride_sum(out, a):
    t = cuda.grid(1)
    threads = cuda.gridsize(1)
    acc = float32(0.0)
    for k in range(t, a.size, threads):
        acc += a[k]
    cuda.atomic.add(out, 0, acc)


def ex08_warp_scan(out, a):
    i = cuda.grid(1)
    lane = cuda.laneid
    v = a[i] if i < a.size else float32(0.0)
    d = 1
    while d < 32:
        other = cuda.shfl_up_sync(FULL, v, d)
        if lane >= d:
            v += other
        d *= 2
    if i < a.size:
        out[i] = v


def ex08_block_sum_shuffles(out, a):
    warp_sums = cuda.shared.array(2, float32)
    i = cuda.grid(1)
    v = a[i] if i < a.size else float32(0.0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        warp_sums[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = warp_sums[0] + warp_sums[1]


def ex09_second_barrier(C, A, B):
    sA = cuda.shared.array((TILE8, TILE8), float32)
    sB = cuda.shared.array((TILE8, TILE8), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE8 + ty
    col = cuda.blockIdx.x * TILE8 + tx
    acc = float32(0.0)
    for k0 in range(0, A.shape[1], TILE8):
        sA[ty, tx] = A[row, k0 + tx]
        sB[ty, tx] = B[k0 + ty, col]
        cuda.syncthreads()
        for k in range(TILE8):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[row, col] = acc


def ex09_coarsen(C, A, B):
    sA = cuda.shared.array((TILE8, TILE8), float32)
    sB = cuda.shared.array((TILE8, 2 * TILE8), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE8 + ty
    col = cuda.blockIdx.x * 2 * TILE8 + tx
    acc0 = float32(0.0)
    acc1 = float32(0.0)
    for k0 in range(0, A.shape[1], TILE8):
        sA[ty, tx] = A[row, k0 + tx]
        sB[ty, tx] = B[k0 + ty, col]
        sB[ty, tx + TILE8] = B[k0 + ty, col + TILE8]
        cuda.syncthreads()
        for k in range(TILE8):
            a = sA[ty, k]
            acc0 += a * sB[k, tx]
            acc1 += a * sB[k, tx + TILE8]
        cuda.syncthreads()
    C[row, col] = acc0
    C[row, col + TILE8] = acc1


def ex10_shift_left(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[(i + 1) % x.size]


def ex10_block_sum_race(out, x):
    buf = cuda.shared.array(SUM32, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    if t == 0:
        s = float32(0.0)
        for k in range(SUM32):
            s += buf[k]
        out[cuda.blockIdx.x] = s


def ex10_block_max(out, x):
    buf = cuda.shared.array(SUM32, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.size else -math.inf
    cuda.syncthreads()
    step = SUM32 // 2
    while step > 0:
        if t < step:
            buf[t] = max(buf[t], buf[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = buf[0]


SOLUTIONS = {name: f for name, f in dict(globals()).items()
             if name.startswith("ex") and name[2:4].isdigit() and callable(f)}
