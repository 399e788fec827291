"""Solutions of the exercises that end the teaching notebooks (gpunb.puzzles.exercises()), kept
out of the package, and the finding each exercise's starter must get from the grader (the bug
or the slowness the exercise is about)."""

from __future__ import annotations

import math

import numpy as np

from gpunb import cuda, float32, int32
from gpunb.cuda import wmma

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
    "ex11_wmma_accumulate": "values", "ex11_wmma_shared": "method",
    "ex11_cp_async_wait": "pending_copy",
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


def ex11_wmma_accumulate(out, a, b):
    r = cuda.blockIdx.y * 16
    c = cuda.blockIdx.x * 16
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    for k in range(0, a.shape[1], 16):
        wmma.load_matrix_sync(fa, a[r:r + 16, k:k + 16])
        wmma.load_matrix_sync(fb, b[k:k + 16, c:c + 16])
        wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)


def ex11_wmma_shared(out, a, b):
    sa = cuda.shared.array((32, 16), np.float16)
    sb = cuda.shared.array((16, 32), np.float16)
    t = cuda.threadIdx.x
    warp = t // 32
    wy = warp // 2
    wx = warp % 2
    r0 = cuda.blockIdx.y * 32
    c0 = cuda.blockIdx.x * 32
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    for k in range(0, a.shape[1], 16):
        for j in range(4):  # thread t copies row t // 4 of sa and row t // 8 of sb, 4 each
            sa[t // 4, 4 * (t % 4) + j] = a[r0 + t // 4, k + 4 * (t % 4) + j]
            sb[t // 8, 4 * (t % 8) + j] = b[k + t // 8, c0 + 4 * (t % 8) + j]
        cuda.syncthreads()
        wmma.load_matrix_sync(fa, sa[16 * wy:16 * wy + 16, :])
        wmma.load_matrix_sync(fb, sb[:, 16 * wx:16 * wx + 16])
        wmma.mma_sync(acc, fa, fb, acc)
        cuda.syncthreads()  # every warp has its fragments before the slices are refilled
    wmma.store_matrix_sync(out[r0 + 16 * wy:r0 + 16 * wy + 16, c0 + 16 * wx:c0 + 16 * wx + 16],
                           acc, wmma.mem_row_major)


TC = 16


def ex11_cp_async_wait(out, a, b):
    sa = cuda.shared.array((2, TC, TC), np.float16)
    sb = cuda.shared.array((2, TC, TC), np.float16)
    lane = cuda.threadIdx.x
    row = lane // 2
    col = (lane % 2) * 8
    r = cuda.blockIdx.y * TC
    c = cuda.blockIdx.x * TC
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    tiles = a.shape[1] // TC
    cuda.cp_async.copy(sa[0, row, col:], a[r + row, col:], 16)
    cuda.cp_async.copy(sb[0, row, col:], b[row, c + col:], 16)
    cuda.cp_async.commit_group()
    for k in range(tiles):
        if k + 1 < tiles:
            nxt = (k + 1) % 2
            cuda.cp_async.copy(sa[nxt, row, col:], a[r + row, (k + 1) * TC + col:], 16)
            cuda.cp_async.copy(sb[nxt, row, col:], b[(k + 1) * TC + row, c + col:], 16)
        cuda.cp_async.commit_group()
        cuda.cp_async.wait_group(1)  # this lane's copies of tile k have landed
        cuda.syncthreads()  # ... and every lane's
        wmma.load_matrix_sync(fa, sa[k % 2, :, :])
        wmma.load_matrix_sync(fb, sb[k % 2, :, :])
        wmma.mma_sync(acc, fa, fb, acc)
        cuda.syncthreads()  # buffer k % 2 is read before tile k + 2 refills it
    wmma.store_matrix_sync(out[r:r + TC, c:c + TC], acc, wmma.mem_row_major)


SOLUTIONS = {name: f for name, f in dict(globals()).items()
             if name.startswith("ex") and name[2:4].isdigit() and callable(f)}
