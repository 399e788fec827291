"""Wrong submissions for puzzles 11-22 (shared memory, reductions, scans, warps, atomics,
transpose, matmul): see wrong_submissions.py."""

from __future__ import annotations

from solutions import (
    AXIS_TPB,
    CONV_TPB,
    DOT_TPB,
    FULL,
    MAX_CONV,
    MM_TPB,
    POOL_TPB,
    SCAN_TPB,
    SHARED_TPB,
    SUM_TPB,
)
from wrong_submissions import BARRIER_HINT, UNSET_HINT, Case, collector

from gpunb import cuda, float32

CASES: list[Case] = []
wrong = collector(CASES)


# ---- shared memory ----------------------------------------------------------------------------


@wrong("shared", "barriers", BARRIER_HINT, "missing barrier (no race: own element)")
def shared_no_barrier(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
        out[i] = shared[local_i] + 10


@wrong("shared", "shared_flow", "not from a register copy", "register copy, shared unused")
def shared_register_copy(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        v = a[i]
        shared[local_i] = v
        cuda.syncthreads()
        out[i] = v + 10
    else:
        cuda.syncthreads()


@wrong("shared", "uninitialised", UNSET_HINT, "reads its unwritten slot past the end")
def shared_unset_slot(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    total = shared[local_i] + 10
    if i < size:
        out[i] = total


@wrong("pooling", "race", BARRIER_HINT, "missing barrier")
def pooling_no_barrier(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
        total = shared[local_i]
        if local_i >= 1:
            total += shared[local_i - 1]
        if local_i >= 2:
            total += shared[local_i - 2]
        out[i] = total


@wrong("pooling", "warp_ops", "shared array instead of shuffles", "shuffles for the neighbours")
def pooling_shuffles(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    v = a[i] if i < size else float32(0.0)
    shared[local_i] = v
    cuda.syncthreads()
    mine = shared[local_i]
    one = cuda.shfl_up_sync(0xFF, mine, 1)
    two = cuda.shfl_up_sync(0xFF, mine, 2)
    if i < size:
        total = mine
        if local_i >= 1:
            total += one
        if local_i >= 2:
            total += two
        out[i] = total


@wrong("pooling", "uninitialised", UNSET_HINT, "reads unwritten slots past the end")
def pooling_unset(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    total = shared[local_i]
    if local_i >= 1:
        total += shared[local_i - 1]
    if local_i >= 2:
        total += shared[local_i - 2]
    if i < size:
        out[i] = total


@wrong("pooling", "values", "redo its arithmetic", "off by one in the window")
def pooling_off_by_one(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    if i < size:
        total = shared[local_i]
        if local_i >= 1:
            total += shared[local_i - 1]
        if local_i >= 3:
            total += shared[local_i - 2]
        out[i] = total


@wrong("pooling", "global_reads", "shared memory", "neighbours read from global memory")
def pooling_global(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    if i < size:
        shared[i] = a[i]
        total = a[i]
        if i >= 1:
            total += a[i - 1]
        if i >= 2:
            total += a[i - 2]
        out[i] = total


@wrong("dot", "uninitialised", UNSET_HINT, "threads past the end leave their slot unwritten")
def dot_unset(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i] * b[i]
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(DOT_TPB):
            total += shared[k]
        out[0] = total


@wrong("dot", "race", BARRIER_HINT, "missing barrier")
def dot_no_barrier(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared[local_i] = a[i] * b[i] if i < size else 0.0
    if local_i == 0:
        total = float32(0.0)
        for k in range(DOT_TPB):
            total += shared[k]
        out[0] = total


@wrong("dot", "global_reads", "shared memory", "one thread reads everything")
def dot_one_thread(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    if cuda.threadIdx.x == 0:
        total = float32(0.0)
        for k in range(size):
            total += a[k] * b[k]
        shared[0] = total
        out[0] = shared[0]


@wrong("dot", "warp_ops", "shared array instead of shuffles", "warp shuffles instead")
def dot_shuffles(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    v = a[i] * b[i] if i < size else float32(0.0)
    shared[i] = v
    cuda.syncthreads()
    v = shared[i]
    offset = 4
    while offset > 0:
        v += cuda.shfl_down_sync(0xFF, v, offset)
        offset //= 2
    if i == 0:
        out[0] = v


@wrong("conv1d", "uninitialised", UNSET_HINT, "halo never loaded")
def conv1d_no_halo(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(CONV_TPB + MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    shared_a[local_i] = a[i] if i < a_size else 0.0
    if local_i < b_size:
        shared_b[local_i] = b[local_i]
    cuda.syncthreads()
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


@wrong("conv1d", "race", BARRIER_HINT, "missing barrier")
def conv1d_no_barrier(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(CONV_TPB + MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    shared_a[local_i] = a[i] if i < a_size else 0.0
    if local_i < MAX_CONV:
        halo = i + CONV_TPB
        shared_a[local_i + CONV_TPB] = a[halo] if halo < a_size else 0.0
        shared_b[local_i] = b[local_i] if local_i < b_size else 0.0
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


@wrong("conv1d", "values", "", "one tap of b left out")
def conv1d_short(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(CONV_TPB + MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    shared_a[local_i] = a[i] if i < a_size else 0.0
    if local_i < MAX_CONV:
        halo = i + CONV_TPB
        shared_a[local_i + CONV_TPB] = a[halo] if halo < a_size else 0.0
        shared_b[local_i] = b[local_i] if local_i < b_size else 0.0
    cuda.syncthreads()
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size - 1):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


@wrong("conv1d", "global_reads", "shared memory", "reads a from global memory for every tap")
def conv1d_global(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    if cuda.threadIdx.x < b_size:
        shared_b[cuda.threadIdx.x] = b[cuda.threadIdx.x]
    cuda.syncthreads()
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size):
            if i + j < a_size:
                total += a[i + j] * shared_b[j]
        out[i] = total


@wrong("block_sum", "step_work", "sequential sum", "thread 0 sums the block")
def block_sum_one_thread(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(SUM_TPB):
            total += cache[k]
        out[cuda.blockIdx.x] = total


@wrong("block_sum", "race", BARRIER_HINT, "no barrier between the tree's steps")
def block_sum_no_step_barrier(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < SUM_TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
        step *= 2
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@wrong("block_sum", "uninitialised", UNSET_HINT, "the last block's missing elements unwritten")
def block_sum_unset(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        cache[local_i] = a[i]
    cuda.syncthreads()
    step = 1
    while step < SUM_TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
        step *= 2
        cuda.syncthreads()
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@wrong("block_sum", "warp_ops", "shared array instead of shuffles", "warp shuffles instead")
def block_sum_shuffles(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    v = cache[local_i]
    offset = 4
    while offset > 0:
        v += cuda.shfl_down_sync(0xFF, v, offset)
        offset //= 2
    if local_i == 0:
        out[cuda.blockIdx.x] = v


@wrong("block_sum", "barriers", "log2(n)", "one element per step: n steps")
def block_sum_linear_steps(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    for k in range(1, SUM_TPB):
        if local_i == 0:
            cache[0] += cache[k]
        cuda.syncthreads()
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@wrong("prefix_sum", "step_work", "O(n²) scan", "each thread sums everything before it")
def prefix_sum_quadratic(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    total = float32(0.0)
    for k in range(i + 1):
        total += cache[k]
    if i < size:
        out[i] = total


@wrong("prefix_sum", "warp_ops", "O(n²) scan", "one shuffle per earlier element")
def prefix_sum_quadratic_shuffles(out, a, size):
    i = cuda.threadIdx.x
    v = a[i] if i < size else float32(0.0)
    total = float32(0.0)
    for k in range(SCAN_TPB):
        other = cuda.shfl_sync(0xFFFF, v, k)
        if k <= i:
            total += other
    if i < size:
        out[i] = total


@wrong("prefix_sum", "race", BARRIER_HINT, "no barrier between a step's reads and writes")
def prefix_sum_no_middle_barrier(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < SCAN_TPB:
        if i >= step:
            cache[i] += cache[i - step]
        cuda.syncthreads()
        step *= 2
    if i < size:
        out[i] = cache[i]


@wrong("prefix_sum", "uninitialised", UNSET_HINT, "slots past the end unwritten")
def prefix_sum_unset(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    if i < size:
        cache[i] = a[i]
    cuda.syncthreads()
    step = 1
    while step < SCAN_TPB:
        value = cache[i - step] if i >= step else 0.0
        cuda.syncthreads()
        cache[i] += value
        cuda.syncthreads()
        step *= 2
    if i < size:
        out[i] = cache[i]


@wrong("prefix_sum", "barriers", "log2(n)", "a chain: one element per step")
def prefix_sum_chain(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    for k in range(1, SCAN_TPB):
        if i == k:
            cache[i] += cache[i - 1]
        cuda.syncthreads()
    if i < size:
        out[i] = cache[i]


@wrong("axis_sum", "step_work", "sequential sum", "thread 0 sums the row")
def axis_sum_one_thread(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    cache[local_i] = a[batch, local_i] if local_i < size else 0.0
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(AXIS_TPB):
            total += cache[k]
        out[batch, 0] = total


@wrong("axis_sum", "race", BARRIER_HINT, "barrier inside the if: skipped by idle threads")
def axis_sum_no_barrier(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    cache[local_i] = a[batch, local_i] if local_i < size else 0.0
    cuda.syncthreads()
    step = AXIS_TPB // 2
    while step > 0:
        if local_i < step:
            cache[local_i] += cache[local_i + step]
        step //= 2
    if local_i == 0:
        out[batch, 0] = cache[0]


@wrong("axis_sum", "uninitialised", UNSET_HINT, "slots past the row's end unwritten")
def axis_sum_unset(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    if local_i < size:
        cache[local_i] = a[batch, local_i]
    cuda.syncthreads()
    step = AXIS_TPB // 2
    while step > 0:
        if local_i < step:
            cache[local_i] += cache[local_i + step]
        cuda.syncthreads()
        step //= 2
    if local_i == 0:
        out[batch, 0] = cache[0]


@wrong("warp_sum", "warp_mask", "", "lanes past the end skip the shuffles")
def warp_sum_divergent(out, a, size):
    i = cuda.grid(1)
    if i < size:
        v = a[i]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL, v, offset)
            offset //= 2
        if cuda.laneid == 0:
            out[i // 32] = v


@wrong("warp_sum", "global_reads", "one thread doing several", "lane 0 reads the warp's values")
def warp_sum_lane_zero(out, a, size):
    i = cuda.grid(1)
    if cuda.laneid == 0 and i < size:
        total = float32(0.0)
        for k in range(i, min(i + 32, size)):
            total += a[k]
        out[i // 32] = total


@wrong("warp_sum", "values", "", "offsets start at 8: half the warp")
def warp_sum_half(out, a, size):
    i = cuda.grid(1)
    v = a[i] if i < size else float32(0.0)
    offset = 8
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0 and i < size:
        out[i // 32] = v


@wrong("count_positive", "race", "cuda.atomic.add", "plain += on the counter")
def count_positive_racy(out, a, size):
    i = cuda.grid(1)
    if i < size and a[i] > 0:
        out[0] += 1


@wrong("histogram", "race", "cuda.atomic", "plain += on the bins")
def histogram_racy(out, a, size):
    i = cuda.grid(1)
    if i < size:
        out[a[i]] += 1


@wrong("transpose", "out_of_bounds", "check the index", "no guard")
def transpose_unguarded(out, a, rows, cols):
    x, y = cuda.grid(2)
    out[x, y] = a[y, x]


@wrong("transpose", "values", "", "copies instead of transposing (square sizes only)")
def transpose_copy(out, a, rows, cols):
    x, y = cuda.grid(2)
    if x < cols and y < rows and x < rows and y < cols:
        out[y, x] = a[y, x]


@wrong("matmul", "race", BARRIER_HINT, "no barrier before the next tile's loads")
def matmul_one_barrier(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    li, lj = cuda.threadIdx.y, cuda.threadIdx.x
    acc = float32(0.0)
    for k0 in range(0, size, MM_TPB):
        a_shared[li, lj] = a[i, k0 + lj] if i < size and k0 + lj < size else 0.0
        b_shared[li, lj] = b[k0 + li, j] if j < size and k0 + li < size else 0.0
        cuda.syncthreads()
        for k in range(MM_TPB):
            acc += a_shared[li, k] * b_shared[k, lj]
    if i < size and j < size:
        out[i, j] = acc


@wrong("matmul", "uninitialised", UNSET_HINT, "outside the matrix, nothing stored")
def matmul_unset(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    li, lj = cuda.threadIdx.y, cuda.threadIdx.x
    acc = float32(0.0)
    for k0 in range(0, size, MM_TPB):
        if i < size and k0 + lj < size:
            a_shared[li, lj] = a[i, k0 + lj]
        if j < size and k0 + li < size:
            b_shared[li, lj] = b[k0 + li, j]
        cuda.syncthreads()
        for k in range(MM_TPB):
            acc += a_shared[li, k] * b_shared[k, lj]
        cuda.syncthreads()
    if i < size and j < size:
        out[i, j] = acc


@wrong("matmul", "global_reads", "shared memory", "every product read from global memory")
def matmul_global(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    a_shared[cuda.threadIdx.y, cuda.threadIdx.x] = 0.0
    if i < size and j < size:
        acc = float32(0.0)
        for k in range(size):
            acc += a[i, k] * b[k, j]
        out[i, j] = acc
