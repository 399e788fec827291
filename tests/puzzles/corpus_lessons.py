"""Wrong submissions for the puzzles of notebooks 11-16 (tensor cores and the cp.async double
buffer, streams, divergence, softmax, attention, convolution): see wrong_submissions.py."""

from __future__ import annotations

import math

import numpy as np
from solutions import (
    ATT_TPB,
    DB_T,
    FLASH_TILE,
    FULL,
    ROW_TPB,
)
from wrong_submissions import BARRIER_HINT, UNSET_HINT, Case, collector

from gpunb import cuda, float32
from gpunb.cuda import wmma

CASES: list[Case] = []
wrong = collector(CASES)


# ---- tensor cores (the puzzles of notebook 11) ------------------------------------------------


@wrong("wmma_gemm", "values", "", "the k loop stops one tile early")
def wmma_gemm_short(out, a, b):
    r = cuda.blockIdx.y * 16
    c = cuda.blockIdx.x * 16
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    for k in range(0, a.shape[1] - 16, 16):
        wmma.load_matrix_sync(fa, a[r:r + 16, k:k + 16])
        wmma.load_matrix_sync(fb, b[k:k + 16, c:c + 16])
        wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)


@wrong("ldmatrix_transpose", "values", "", "ldmatrix without .trans: a copy, not a transpose")
def ldmatrix_transpose_untransposed(out, a):
    lane = cuda.laneid
    block = cuda.blockIdx.x
    tile = cuda.shared.array((16, 16), np.float16)
    for j in range(8):
        tile[lane // 2, (lane % 2) * 8 + j] = a[16 * block + lane // 2, (lane % 2) * 8 + j]
    cuda.syncwarp()
    i = lane // 8
    v = cuda.ldmatrix(tile, (lane % 8 + 8 * (i % 2), 8 * (i // 2)), 4, False)
    g, q = lane // 4, lane % 4
    for m in range(4):
        row0, col0 = 8 * (m % 2), 8 * (m // 2)
        for j in range(2):
            out[col0 + g, 16 * block + row0 + 2 * q + j] = v[2 * m + j]


@wrong("cp_async_double_buffer", "race", "cuda.syncthreads()",
       "no barrier after the wait: other threads' copies are read unordered")
def cp_async_double_buffer_no_first_barrier(out, a, b):
    sa = cuda.shared.array((2, DB_T, DB_T), float32)
    sb = cuda.shared.array((2, DB_T, DB_T), float32)
    x, y = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
    tiles = a.shape[1] // DB_T
    cuda.cp_async.copy(sa[0, y, x:], a[row, x:], 4)
    cuda.cp_async.copy(sb[0, y, x:], b[y, col:], 4)
    cuda.cp_async.commit_group()
    acc = float32(0.0)
    for k in range(tiles):
        if k + 1 < tiles:
            cuda.cp_async.copy(sa[(k + 1) % 2, y, x:], a[row, (k + 1) * DB_T + x:], 4)
            cuda.cp_async.copy(sb[(k + 1) % 2, y, x:], b[(k + 1) * DB_T + y, col:], 4)
        cuda.cp_async.commit_group()
        cuda.cp_async.wait_group(1)
        for j in range(DB_T):
            acc += sa[k % 2, y, j] * sb[k % 2, j, x]
        cuda.syncthreads()
    out[row, col] = acc


@wrong("cp_async_double_buffer", "uninitialised", UNSET_HINT,
       "half the threads copy their element of a: half of each tile is never written")
def cp_async_double_buffer_half_copied(out, a, b):
    sa = cuda.shared.array((2, DB_T, DB_T), float32)
    sb = cuda.shared.array((2, DB_T, DB_T), float32)
    x, y = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
    tiles = a.shape[1] // DB_T
    if x < 4:
        cuda.cp_async.copy(sa[0, y, x:], a[row, x:], 4)
    cuda.cp_async.copy(sb[0, y, x:], b[y, col:], 4)
    cuda.cp_async.commit_group()
    acc = float32(0.0)
    for k in range(tiles):
        if k + 1 < tiles:
            if x < 4:
                cuda.cp_async.copy(sa[(k + 1) % 2, y, x:], a[row, (k + 1) * DB_T + x:], 4)
            cuda.cp_async.copy(sb[(k + 1) % 2, y, x:], b[(k + 1) * DB_T + y, col:], 4)
        cuda.cp_async.commit_group()
        cuda.cp_async.wait_group(1)
        cuda.syncthreads()
        for j in range(DB_T):
            acc += sa[k % 2, y, j] * sb[k % 2, j, x]
        cuda.syncthreads()
    out[row, col] = acc


@wrong("cp_async_double_buffer", "method", "tile k + 1",
       "one buffer: each tile is copied, waited for, then computed (no overlap)")
def cp_async_double_buffer_single(out, a, b):
    sa = cuda.shared.array((DB_T, DB_T), float32)
    sb = cuda.shared.array((DB_T, DB_T), float32)
    x, y = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * DB_T + y, cuda.blockIdx.x * DB_T + x
    acc = float32(0.0)
    for k in range(a.shape[1] // DB_T):
        cuda.cp_async.copy(sa[y, x:], a[row, k * DB_T + x:], 4)
        cuda.cp_async.copy(sb[y, x:], b[k * DB_T + y, col:], 4)
        cuda.cp_async.wait_all()
        cuda.syncthreads()
        for j in range(DB_T):
            acc += sa[y, j] * sb[j, x]
        cuda.syncthreads()
    out[row, col] = acc


# ---- notebooks 12-16 ---------------------------------------------------------------------------


@wrong("chunk_saxpy", "method", "offset + count", "guarded by the array's end, not the chunk's")
def chunk_saxpy_whole_array_guard(out, x, y, a, offset, count):
    i = offset + cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@wrong("chunk_saxpy", "values", "", "offset forgotten")
def chunk_saxpy_no_offset(out, x, y, a, offset, count):
    i = cuda.grid(1)
    if i < count:
        out[i] = a * x[i] + y[i]


@wrong("chunk_stencil", "method", "i >= 1", "x[i - 1] at i = 0 wraps to the last element")
def chunk_stencil_wraps(out, x, offset, count):
    i = offset + cuda.grid(1)
    if i < offset + count:
        total = x[i - 1] + x[i]
        if i + 1 < x.size:
            total += x[i + 1]
        out[i] = total


@wrong("warp_uniform", "method", "warp 0 of the block gets the even elements",
       "one thread per element: every warp diverges")
def warp_uniform_divergent(out, a, size):
    e = cuda.grid(1)
    if e < size:
        v = a[e]
        if e % 2 == 0:
            out[e] = 2 * v + 1
        else:
            out[e] = v * v


@wrong("warp_count", "warp_mask", "", "lanes past the end skip the vote")
def warp_count_divergent(out, a, size):
    i = cuda.grid(1)
    if i < size:
        votes = cuda.ballot_sync(FULL, a[i] > 0)
        if cuda.laneid == 0:
            out[i // 32] = cuda.popc(votes)


@wrong("warp_count", "global_reads", "one thread doing several", "lane 0 reads the warp's 32")
def warp_count_lane_zero(out, a, size):
    i = cuda.grid(1)
    if cuda.laneid == 0 and i < size:
        count = 0
        for k in range(i, min(i + 32, size)):
            if a[k] > 0:
                count += 1
        out[i // 32] = count


@wrong("row_max", "step_work", "sequential reduction", "thread 0 combines the 8 alone")
def row_max_serial(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    cuda.syncthreads()
    if t == 0:
        best = cache[0]
        for j in range(1, ROW_TPB):
            best = max(best, cache[j])
        out[r, 0] = best


@wrong("row_max", "uninitialised", UNSET_HINT, "threads without elements store nothing")
def row_max_unset(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < n:
        m = a[r, t]
        for j in range(t + ROW_TPB, n, ROW_TPB):
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


@wrong("row_max", "race", BARRIER_HINT, "no barrier after the stores")
def row_max_no_barrier(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[r, 0] = cache[0]


@wrong("flash_attention", "race", BARRIER_HINT, "the next tile's scores stored too early")
def flash_attention_no_second_barrier(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < dim:
        qs[t] = q[r, t]
    cuda.syncthreads()
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score /= math.sqrt(dim)
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
    if t < dim:
        out[r, t] = acc / total


@wrong("softmax", "race", BARRIER_HINT, "cache reused for the sum before every thread read m")
def softmax_reuse_race(out, a, n):
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


@wrong("softmax", "global_reads", "shared memory", "every thread reads the whole row")
def softmax_whole_row(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    cache[t] = 0.0
    m = -math.inf
    for j in range(n):
        m = max(m, a[r, j])
    total = float32(0.0)
    for j in range(n):
        total += math.exp(a[r, j] - m)
    for j in range(t, n, ROW_TPB):
        out[r, j] = math.exp(a[r, j] - m) / total


@wrong("attention_row", "race", BARRIER_HINT, "no barrier after the scores are stored")
def attention_no_barrier(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = -math.inf
    if t < seq:
        s = float32(0.0)
        for d in range(dim):
            s += q[r, d] * k[t, d]
        s /= math.sqrt(dim)
    scores[t] = s
    if t < dim:
        m = -math.inf
        for j in range(seq):
            m = max(m, scores[j])
        total = float32(0.0)
        acc = float32(0.0)
        for j in range(seq):
            p = math.exp(scores[j] - m)
            total += p
            acc += p * v[j, t]
        out[r, t] = acc / total


@wrong("attention_row", "barriers", "one per step of the tree", "no trees: every thread scans")
def attention_no_trees(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = -math.inf
    if t < seq:
        s = float32(0.0)
        for d in range(dim):
            s += q[r, d] * k[t, d]
        s /= math.sqrt(dim)
    scores[t] = s
    cuda.syncthreads()
    if t < dim:
        m = -math.inf
        for j in range(seq):
            m = max(m, scores[j])
        total = float32(0.0)
        acc = float32(0.0)
        for j in range(seq):
            p = math.exp(scores[j] - m)
            total += p
            acc += p * v[j, t]
        out[r, t] = acc / total


@wrong("flash_attention", "method", "one shared array of TILE scores",
       "all the scores in shared memory")
def flash_attention_whole_row(out, q, k, v, seq, dim):
    s = cuda.shared.array(40, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    for j in range(t, seq, 8):
        score = float32(0.0)
        for d in range(dim):
            score += q[r, d] * k[j, d]
        s[j] = score / math.sqrt(dim)
    cuda.syncthreads()
    if t < dim:
        m = -math.inf
        for j in range(seq):
            m = max(m, s[j])
        total = float32(0.0)
        acc = float32(0.0)
        for j in range(seq):
            p = math.exp(s[j] - m)
            total += p
            acc += p * v[j, t]
        out[r, t] = acc / total


@wrong("flash_attention", "values", "", "running sums not rescaled when the maximum grows")
def flash_attention_no_rescale(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < dim:
        qs[t] = q[r, t]
    cuda.syncthreads()
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score /= math.sqrt(dim)
        s[t] = score
        cuda.syncthreads()
        for j in range(FLASH_TILE):
            m = max(m, s[j])
        for j in range(FLASH_TILE):
            if j0 + j < seq:
                p = math.exp(s[j] - m)
                total += p
                if t < dim:
                    acc += p * v[j0 + j, t]
        cuda.syncthreads()
    if t < dim:
        out[r, t] = acc / total


@wrong("softmax", "uninitialised", UNSET_HINT, "threads without elements store nothing")
def softmax_unset(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < n:
        m = a[r, t]
        for j in range(t + ROW_TPB, n, ROW_TPB):
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


@wrong("attention_row", "uninitialised", UNSET_HINT, "no -inf score past seq")
def attention_unset(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    cache = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
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


@wrong("flash_attention", "uninitialised", UNSET_HINT, "q staged only by thread 0, for d = 0")
def flash_attention_unset(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t == 0:
        qs[0] = q[r, 0]
    cuda.syncthreads()
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score /= math.sqrt(dim)
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


@wrong("conv2d_direct", "out_of_bounds", "check the index", "window not clipped at the edges")
def conv2d_unclipped(out, a, w, rows, cols):
    c, r = cuda.grid(2)
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += a[r + i - 1, c + j - 1] * w[i, j]
        out[r, c] = acc


@wrong("conv2d_tiled", "uninitialised", UNSET_HINT, "the tile without its halo")
def conv2d_no_halo(out, a, w, rows, cols):
    tile = cuda.shared.array((10, 10), float32)
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r, c = cuda.blockIdx.y * 8 + ty, cuda.blockIdx.x * 8 + tx
    tile[ty + 1, tx + 1] = a[r, c] if r < rows and c < cols else 0.0
    t = ty * 8 + tx
    if t < 9:
        weights[t // 3, t % 3] = w[t // 3, t % 3]
    cuda.syncthreads()
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += tile[ty + i, tx + j] * weights[i, j]
        out[r, c] = acc


@wrong("conv2d_tiled", "global_reads", "shared memory", "the window read from global memory")
def conv2d_tiled_global(out, a, w, rows, cols):
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    t = ty * 8 + tx
    if t < 9:
        weights[t // 3, t % 3] = w[t // 3, t % 3]
    cuda.syncthreads()
    r, c = cuda.blockIdx.y * 8 + ty, cuda.blockIdx.x * 8 + tx
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                rr, cc = r + i - 1, c + j - 1
                if 0 <= rr < rows and 0 <= cc < cols:
                    acc += a[rr, cc] * weights[i, j]
        out[r, c] = acc


@wrong("conv2d_tiled", "race", BARRIER_HINT, "no barrier after the tile is loaded")
def conv2d_tiled_no_barrier(out, a, w, rows, cols):
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
    r, c = r0 + 1 + ty, c0 + 1 + tx
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += tile[ty + i, tx + j] * weights[i, j]
        out[r, c] = acc
