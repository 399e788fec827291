"""Reference solutions of gpunb.puzzles (kept out of the package on purpose), one per puzzle.

Constants carry the puzzle's name (the starters all say TPB) because they share one module here.
"""

from __future__ import annotations

import math

import numpy as np

from gpunb import cuda, float32
from gpunb.cuda import wmma

FULL = 0xFFFFFFFF


def map_kernel(out, a):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10


def zip_kernel(out, a, b):
    i = cuda.threadIdx.x
    out[i] = a[i] + b[i]


def guards_kernel(out, a, size):
    i = cuda.threadIdx.x
    if i < size:
        out[i] = a[i] + 10


def map_2d_kernel(out, a, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    if x < size and y < size:
        out[x, y] = a[x, y] + 10


def broadcast_kernel(out, a, b, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    if x < size and y < size:
        out[x, y] = a[x, 0] + b[0, y]


def blocks_kernel(out, a, size):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < size:
        out[i] = a[i] + 10


def blocks_2d_kernel(out, a, size):
    x, y = cuda.grid(2)
    if x < size and y < size:
        out[x, y] = a[x, y] + 10


def grid_stride_kernel(out, a, size):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, size, stride):
        out[i] = a[i] * 2


def reverse_kernel(out, a, size):
    i = cuda.grid(1)
    if i < size:
        out[i] = a[size - 1 - i]


def saxpy_kernel(out, x, y, alpha, size):
    i = cuda.grid(1)
    if i < size:
        out[i] = alpha * x[i] + y[i]


SHARED_TPB = 4


def shared_kernel(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    if i < size:
        out[i] = shared[local_i] + 10


POOL_TPB = 8


def pooling_kernel(out, a, size):
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
        if local_i >= 2:
            total += shared[local_i - 2]
        out[i] = total


DOT_TPB = 8


def dot_kernel(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared[local_i] = a[i] * b[i] if i < size else 0.0
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(DOT_TPB):
            total += shared[k]
        out[0] = total


CONV_TPB = 8
MAX_CONV = 4


def conv1d_kernel(out, a, b, a_size, b_size):
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
        for j in range(b_size):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


SUM_TPB = 8


def block_sum_kernel(out, a, size):
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
        cuda.syncthreads()
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


SCAN_TPB = 16


def prefix_sum_kernel(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
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


def prefix_sum_shuffle_kernel(out, a, size):
    """The same scan in registers: 16 threads are one (partial) warp."""
    i = cuda.threadIdx.x
    v = a[i] if i < size else float32(0.0)
    step = 1
    while step < SCAN_TPB:
        other = cuda.shfl_up_sync(0xFFFF, v, step)
        if i >= step:
            v += other
        step *= 2
    if i < size:
        out[i] = v


AXIS_TPB = 8


def axis_sum_kernel(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    cache[local_i] = a[batch, local_i] if local_i < size else 0.0
    cuda.syncthreads()
    step = AXIS_TPB // 2
    while step > 0:
        if local_i < step:
            cache[local_i] += cache[local_i + step]
        cuda.syncthreads()
        step //= 2
    if local_i == 0:
        out[batch, 0] = cache[0]


def warp_sum_kernel(out, a, size):
    i = cuda.grid(1)
    v = a[i] if i < size else float32(0.0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0 and i < size:
        out[i // 32] = v


def count_positive_kernel(out, a, size):
    i = cuda.grid(1)
    if i < size and a[i] > 0:
        cuda.atomic.add(out, 0, 1)


def histogram_kernel(out, a, size):
    i = cuda.grid(1)
    if i < size:
        cuda.atomic.add(out, a[i], 1)


TILE = 4


def transpose_kernel(out, a, rows, cols):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    if x < cols and y < rows:
        tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    ox = cuda.blockIdx.y * TILE + tx      # the output's column is the input's row
    oy = cuda.blockIdx.x * TILE + ty
    if ox < rows and oy < cols:
        out[oy, ox] = tile[tx, ty]


def transpose_simple_kernel(out, a, rows, cols):
    x, y = cuda.grid(2)
    if x < cols and y < rows:
        out[x, y] = a[y, x]


MM_TPB = 4


def matmul_kernel(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    local_i = cuda.threadIdx.y
    local_j = cuda.threadIdx.x
    acc = float32(0.0)
    for k0 in range(0, size, MM_TPB):
        a_shared[local_i, local_j] = a[i, k0 + local_j] if i < size and k0 + local_j < size \
            else 0.0
        b_shared[local_i, local_j] = b[k0 + local_i, j] if j < size and k0 + local_i < size \
            else 0.0
        cuda.syncthreads()
        for k in range(MM_TPB):
            acc += a_shared[local_i, k] * b_shared[k, local_j]
        cuda.syncthreads()
    if i < size and j < size:
        out[i, j] = acc


def wmma_gemm_kernel(out, a, b):
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


def ldmatrix_transpose_kernel(out, a):
    lane = cuda.laneid
    block = cuda.blockIdx.x
    tile = cuda.shared.array((16, 16), np.float16)
    for j in range(8):
        tile[lane // 2, (lane % 2) * 8 + j] = a[16 * block + lane // 2, (lane % 2) * 8 + j]
    cuda.syncwarp()
    i = lane // 8  # the matrix whose row this lane addresses: the quarters, down then across
    v = cuda.ldmatrix(tile, (lane % 8 + 8 * (i % 2), 8 * (i // 2)), 4, True)
    g, q = lane // 4, lane % 4
    for m in range(4):
        row0, col0 = 8 * (m % 2), 8 * (m // 2)
        for j in range(2):  # value 2m + j is tile[row0 + 2q + j, col0 + g]
            out[col0 + g, 16 * block + row0 + 2 * q + j] = v[2 * m + j]


DB_T = 8


def cp_async_double_buffer_kernel(out, a, b):
    sa = cuda.shared.array((2, DB_T, DB_T), float32)
    sb = cuda.shared.array((2, DB_T, DB_T), float32)
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    row = cuda.blockIdx.y * DB_T + y
    col = cuda.blockIdx.x * DB_T + x
    tiles = a.shape[1] // DB_T
    cuda.cp_async.copy(sa[0, y, x:], a[row, x:], 4)
    cuda.cp_async.copy(sb[0, y, x:], b[y, col:], 4)
    cuda.cp_async.commit_group()
    acc = float32(0.0)
    for k in range(tiles):
        if k + 1 < tiles:  # tile k + 1 travels while tile k is computed
            nxt = (k + 1) % 2
            cuda.cp_async.copy(sa[nxt, y, x:], a[row, (k + 1) * DB_T + x:], 4)
            cuda.cp_async.copy(sb[nxt, y, x:], b[(k + 1) * DB_T + y, col:], 4)
        cuda.cp_async.commit_group()  # an empty group after the last tile keeps the count
        cuda.cp_async.wait_group(1)  # this thread's copies of tile k have landed
        cuda.syncthreads()  # ... and every thread's
        for j in range(DB_T):
            acc += sa[k % 2, y, j] * sb[k % 2, j, x]
        cuda.syncthreads()  # everyone is done with buffer k % 2 before it is refilled
    out[row, col] = acc


# ---- notebooks 12-16 ----------------------------------------------------------------------------


def chunk_saxpy_kernel(out, x, y, a, offset, count):
    i = offset + cuda.grid(1)
    if i < offset + count:
        out[i] = a * x[i] + y[i]


def chunk_stencil_kernel(out, x, offset, count):
    i = offset + cuda.grid(1)
    if i < offset + count:
        total = x[i]
        if i >= 1:
            total += x[i - 1]
        if i + 1 < x.size:
            total += x[i + 1]
        out[i] = total


def warp_uniform_kernel(out, a, size):
    t = cuda.threadIdx.x
    e = 64 * cuda.blockIdx.x + 2 * (t % 32) + t // 32
    if e < size:
        v = a[e]
        if e % 2 == 0:
            out[e] = 2 * v + 1
        else:
            out[e] = v * v


def warp_count_kernel(out, a, size):
    i = cuda.grid(1)
    votes = cuda.ballot_sync(FULL, i < size and a[i] > 0)
    if cuda.laneid == 0 and i < size:
        out[i // 32] = cuda.popc(votes)


ROW_TPB = 8


def row_max_kernel(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[r, 0] = cache[0]


def softmax_kernel(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    m = cache[0]
    cuda.syncthreads()
    total = float32(0.0)
    for j in range(t, n, ROW_TPB):
        total += math.exp(a[r, j] - m)
    cache[t] = total
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    total = cache[0]
    for j in range(t, n, ROW_TPB):
        out[r, j] = math.exp(a[r, j] - m) / total


ATT_TPB = 16


def attention_row_kernel(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    cache = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = -math.inf
    if t < seq:
        s = float32(0.0)
        for d in range(dim):
            s += q[r, d] * k[t, d]
        s /= math.sqrt(dim)
    scores[t] = s
    cache[t] = s
    cuda.syncthreads()
    step = ATT_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    m = cache[0]
    cuda.syncthreads()
    p = math.exp(scores[t] - m)
    scores[t] = p
    cache[t] = p
    cuda.syncthreads()
    step = ATT_TPB // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    if t < dim:
        acc = float32(0.0)
        for j in range(seq):
            acc += scores[j] * v[j, t]
        out[r, t] = acc / cache[0]


FLASH_TILE = 8


def flash_attention_kernel(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < dim:
        qs[t] = q[r, t]
    cuda.syncthreads()
    scale = 1.0 / math.sqrt(dim)
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score *= scale
        s[t] = score
        cuda.syncthreads()
        tile_max = -math.inf
        for j in range(FLASH_TILE):
            tile_max = max(tile_max, s[j])
        m_new = max(m, tile_max)
        rescale = math.exp(m - m_new)
        total *= rescale
        acc *= rescale
        for j in range(FLASH_TILE):
            if j0 + j < seq:
                p = math.exp(s[j] - m_new)
                total += p
                if t < dim:
                    acc += p * v[j0 + j, t]
        m = m_new
        cuda.syncthreads()
    if t < dim:
        out[r, t] = acc / total


def conv2d_direct_kernel(out, a, w, rows, cols):
    c, r = cuda.grid(2)
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                rr, cc = r + i - 1, c + j - 1
                if 0 <= rr < rows and 0 <= cc < cols:
                    acc += a[rr, cc] * w[i, j]
        out[r, c] = acc


def conv2d_tiled_kernel(out, a, w, rows, cols):
    tile = cuda.shared.array((10, 10), float32)
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r0 = cuda.blockIdx.y * 8 - 1
    c0 = cuda.blockIdx.x * 8 - 1
    t = ty * 8 + tx
    for e in range(t, 100, 64):
        rr, cc = r0 + e // 10, c0 + e % 10
        tile[e // 10, e % 10] = a[rr, cc] if 0 <= rr < rows and 0 <= cc < cols else 0.0
    if t < 9:
        weights[t // 3, t % 3] = w[t // 3, t % 3]
    cuda.syncthreads()
    r, c = r0 + 1 + ty, c0 + 1 + tx
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += tile[ty + i, tx + j] * weights[i, j]
        out[r, c] = acc


SOLUTIONS = {name[:-len("_kernel")]: f for name, f in dict(globals()).items()
             if name.endswith("_kernel") and callable(f) and "shuffle" not in name
             and "simple" not in name}
