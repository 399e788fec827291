"""Barrier-heavy kernels give exact results: syncthreads and its _count/_and/_or forms, fences,
tree reductions, tiled matrix multiply with 2-d blocks, Hillis-Steele and Blelloch prefix scans."""

import numpy as np
import pytest

from gpunb import cuda, float32, float64, int32, int64

TPB = 128
TILE = 8


# ---- kernels --------------------------------------------------------------------------------


@cuda.jit
def sync_reductions(out, x):
    i = cuda.grid(1)
    v = x[i]
    b = cuda.blockIdx.x
    c = cuda.syncthreads_count(v > 0)
    a = cuda.syncthreads_and(v > 0)
    o = cuda.syncthreads_or(v > 0)
    # used twice in a row: the predicates of one barrier must not leak into the next
    c2 = cuda.syncthreads_count(v < 0)
    if cuda.threadIdx.x == 0:
        out[b, 0] = c
        out[b, 1] = a
        out[b, 2] = o
        out[b, 3] = c2


@cuda.jit
def tree_reduce(out, x):
    s = cuda.shared.array(TPB, int64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < x.size else 0
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_reduce_for(out, x):
    # the same reduction with a range loop, a block-uniform branch around the barrier and a
    # float64 accumulator of integers (exact)
    s = cuda.shared.array(TPB, float64)
    tid = cuda.threadIdx.x
    s[tid] = x[cuda.grid(1)]
    cuda.syncthreads()
    for level in range(7):
        stride = TPB >> (level + 1)
        if tid < stride:
            s[tid] = s[tid] + s[tid + stride]
        if stride > 0:  # uniform across the block: every thread reaches the barrier
            cuda.syncthreads()
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def tiled_matmul(c, a, b):
    sa = cuda.shared.array((TILE, TILE), int64)
    sb = cuda.shared.array((TILE, TILE), int64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row, col = cuda.grid(2)
    acc = 0
    for t in range((a.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sa[tx, ty] = a[row, k + ty] if row < a.shape[0] and k + ty < a.shape[1] else 0
        sb[tx, ty] = b[k + tx, col] if k + tx < b.shape[0] and col < b.shape[1] else 0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[tx, j] * sb[j, ty]
        cuda.syncthreads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


@cuda.jit
def hillis_steele_scan(out, x):
    # inclusive scan of each block with double buffering
    buf = cuda.shared.array((2, TPB), int64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[0, tid] = x[i]
    cuda.syncthreads()
    src = 0
    offset = 1
    while offset < TPB:
        dst = 1 - src
        if tid >= offset:
            buf[dst, tid] = buf[src, tid] + buf[src, tid - offset]
        else:
            buf[dst, tid] = buf[src, tid]
        cuda.syncthreads()
        src = dst
        offset *= 2
    out[i] = buf[src, tid]


@cuda.jit
def blelloch_scan(out, totals, x):
    # exclusive work-efficient scan: up-sweep, clear, down-sweep (two elements per thread)
    n = 2 * TPB
    temp = cuda.shared.array(2 * TPB, int32)
    tid = cuda.threadIdx.x
    base = cuda.blockIdx.x * n
    temp[2 * tid] = x[base + 2 * tid]
    temp[2 * tid + 1] = x[base + 2 * tid + 1]
    offset = 1
    d = n >> 1
    while d > 0:
        cuda.syncthreads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d >>= 1
    if tid == 0:
        totals[cuda.blockIdx.x] = temp[n - 1]
        temp[n - 1] = 0
    d = 1
    while d < n:
        offset >>= 1
        cuda.syncthreads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    cuda.syncthreads()
    out[base + 2 * tid] = temp[2 * tid]
    out[base + 2 * tid + 1] = temp[2 * tid + 1]


@cuda.jit
def fences(out, flag):
    i = cuda.grid(1)
    out[i] = i
    cuda.threadfence_block()
    cuda.threadfence()
    cuda.threadfence_system()
    if i == 0:
        flag[0] = 1


@cuda.jit
def odd_even_sort(out, x):
    # a block-uniform while loop driven by syncthreads_or: sort until no thread swaps
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    s[tid] = x[cuda.blockIdx.x * TPB + tid]
    cuda.syncthreads()
    rounds = 0
    changed = True
    while cuda.syncthreads_or(changed):
        changed = False
        if tid % 2 == rounds % 2 and tid + 1 < TPB:
            a = s[tid]
            b = s[tid + 1]
            if a > b:
                s[tid] = b
                s[tid + 1] = a
                changed = True
        cuda.syncthreads()
        rounds += 1
    out[cuda.blockIdx.x * TPB + tid] = s[tid]


@cuda.jit(device=True)
def shift_stage(s, tid, t):
    mine = (s[tid], tid, s[(tid + 1) % 32])  # a tuple live across the barrier
    cuda.syncthreads()
    s[tid] = mine[0] + mine[2] * t
    cuda.syncthreads()
    return mine[1]


@cuda.jit
def barriers_in_device_function(out, x):
    s = cuda.shared.array(32, float32)
    scratch = cuda.local.array(4, float32)
    tid = cuda.threadIdx.x
    s[tid] = x[tid]
    for k in range(4):
        scratch[k] = tid * k
    cuda.syncthreads()
    acc = 0
    for t in range(3):
        acc += shift_stage(s, tid, t)
        if t == 1:
            for k in range(4):
                scratch[(k + tid) % 4] += 1.0
    out[tid] = s[tid] + scratch[0] + scratch[3] + acc


# ---- tests ----------------------------------------------------------------------------------

def test_syncthreads_count_and_or(target):
    x = np.zeros(4 * 64, np.int64)
    x[0:64] = 1  # block 0: all positive
    x[64:128] = np.arange(64) - 10  # block 1: mixed
    x[128:192] = -1  # block 2: none positive
    out = np.zeros((4, 4), np.int64)
    sync_reductions[4, 64](out, x)
    assert out.tolist() == [[64, 1, 1, 0], [53, 0, 1, 10], [0, 0, 0, 64], [0, 0, 0, 0]]


@pytest.mark.parametrize("blocks", [1, 7, 33])
def test_tree_reduction_exact(target, blocks):
    rng = np.random.default_rng(blocks)
    x = rng.integers(-(2**40), 2**40, blocks * TPB - 5)
    out = np.zeros(blocks, np.int64)
    tree_reduce[blocks, TPB](out, x)
    padded = np.concatenate([x, np.zeros(5, np.int64)])
    np.testing.assert_array_equal(out, padded.reshape(blocks, TPB).sum(axis=1))


def test_tree_reduction_range_loop_uniform_branch(target):
    x = np.arange(16 * TPB, dtype=np.float64)  # integers: the float sums are exact
    out = np.zeros(1, np.float64)
    tree_reduce_for[16, TPB](out, x)
    assert out[0] == x.sum()


@pytest.mark.parametrize("m,k,n", [(16, 16, 16), (19, 13, 23), (1, 40, 3)])
def test_tiled_matmul_exact(target, m, k, n):
    rng = np.random.default_rng(m * k * n)
    a = rng.integers(-1000, 1000, (m, k))
    b = rng.integers(-1000, 1000, (k, n))
    c = np.zeros((m, n), np.int64)
    tiled_matmul[((m + TILE - 1) // TILE, (n + TILE - 1) // TILE), (TILE, TILE)](c, a, b)
    np.testing.assert_array_equal(c, a @ b)


def test_hillis_steele_scan_exact(target):
    rng = np.random.default_rng(11)
    x = rng.integers(-(2**30), 2**30, 6 * TPB)
    out = np.zeros_like(x)
    hillis_steele_scan[6, TPB](out, x)
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(6, TPB), axis=1).ravel())


def test_blelloch_scan_exact(target):
    rng = np.random.default_rng(12)
    blocks = 5
    x = rng.integers(-1000, 1000, blocks * 2 * TPB).astype(np.int32)
    out = np.zeros_like(x)
    totals = np.zeros(blocks, np.int32)
    blelloch_scan[blocks, TPB](out, totals, x)
    rows = x.reshape(blocks, 2 * TPB)
    inclusive = np.cumsum(rows, axis=1)
    np.testing.assert_array_equal(out.reshape(blocks, -1), inclusive - rows)
    np.testing.assert_array_equal(totals, rows.sum(axis=1))


def test_fences(target):
    out = np.zeros(64, np.int64)
    flag = np.zeros(1, np.int64)
    fences[2, 32](out, flag)
    np.testing.assert_array_equal(out, np.arange(64))
    assert flag[0] == 1


def test_while_syncthreads_or_sort(target):
    x = np.random.default_rng(13).integers(-1000, 1000, 3 * TPB).astype(np.int32)
    out = np.zeros_like(x)
    odd_even_sort[3, TPB](out, x)
    np.testing.assert_array_equal(out.reshape(3, TPB), np.sort(x.reshape(3, TPB), axis=1))


def test_barriers_in_device_function_with_live_locals(target):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    barriers_in_device_function[1, 32](out, x)
    s = x.copy()
    for t in range(3):
        s = s + np.roll(s, -1) * t
    scratch = np.arange(32)[:, None] * np.arange(4)[None, :] + 1.0
    np.testing.assert_array_equal(out, s + scratch[:, 0] + scratch[:, 3] + 3 * np.arange(32))


PTX_CASES = [
    (sync_reductions, "void(int64[:, ::1], int64[::1])", "bar.red.popc"),
    (tree_reduce, "void(int64[::1], int64[::1])", "bar.sync"),
    (tree_reduce_for, "void(float64[::1], float64[::1])", "bar.sync"),
    (tiled_matmul, "void(int64[:, ::1], int64[:, ::1], int64[:, ::1])", "bar.sync"),
    (hillis_steele_scan, "void(int64[::1], int64[::1])", "bar.sync"),
    (blelloch_scan, "void(int32[::1], int32[::1], int32[::1])", "bar.sync"),
    (fences, "void(int64[::1], int64[::1])", "membar.sys"),
    (odd_even_sort, "void(int32[::1], int32[::1])", "bar.red.or"),
    (barriers_in_device_function, "void(float32[::1], float32[::1])", "bar.sync"),
]


@pytest.mark.parametrize("kernel,sig,needle", PTX_CASES, ids=[k.__name__ for k, _, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig, needle):
    ptx = check_ptx(kernel, sig)
    assert needle in ptx or needle.replace("bar.", "barrier.") in ptx
    if kernel is sync_reductions:
        assert "bar.red.and" in ptx and "bar.red.or" in ptx
    if kernel is fences:
        assert "membar.cta" in ptx and "membar.gl" in ptx or "fence." in ptx
