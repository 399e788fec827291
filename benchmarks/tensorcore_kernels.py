"""The tensor-core GEMM kernels of benchmarks/bench_tensorcore.py (FP16 in, FP32 accumulate,
C = A @ B with A M x K and B K x N row-major): plain gpunb kernels, tested on the CPU target at
small sizes (tests/language/test_tensorcore_gemm.py) and timed on a GPU beside cuBLAS.

- `wmma_gemm`: nvcuda::wmma spelling. A 128 x 128 block tile, 8 warps of 64 x 32, K steps of
  32 staged through shared memory twice over (the next tile is read into registers, as 8-byte
  words, while the tensor cores work on the current one).
- `mma_gemm`: PTX level. The same tiling with mma.sync m16n8k16 fed by ldmatrix (x4 for A, x4
  .trans for B), and a 3-stage cp.async pipeline global -> shared.
"""

from __future__ import annotations

import numpy as np

from gpunb import cuda
from gpunb.cuda import wmma

BM, BN, BK = 128, 128, 32  # block tile
LDA, LDB = BK + 8, BN + 8  # padded rows (halves): 80 and 272 bytes, no bank conflicts
A_TILE, B_TILE = BM * LDA, BK * LDB
STAGE = A_TILE + B_TILE  # halves per pipeline stage
THREADS = 256
WMMA_SHARED_BYTES = 2 * STAGE * 2


@cuda.jit
def wmma_gemm(c, a, b, a64, b64):
    """c[M, N] = a[M, K] @ b[K, N]; a64 / b64 are a and b viewed as uint64 (4 halves a word)."""
    smem16 = cuda.shared.array(0, np.float16)
    smem64 = cuda.shared.array(0, np.uint64)
    tid = cuda.threadIdx.x
    warp = tid // 32
    wm = (warp // 4) * 64
    wn = (warp % 4) * 32
    bm = cuda.blockIdx.y * BM
    bn = cuda.blockIdx.x * BN
    nk = a.shape[1] // BK
    # this thread's words of a tile: A rows tid // 8 + 32 i, word tid % 8; B rows tid // 32 + 8 i
    ar, ac = tid // 8, tid % 8
    br, bc = tid // 32, tid % 32
    ra0 = a64[bm + ar, ac]
    ra1 = a64[bm + ar + 32, ac]
    ra2 = a64[bm + ar + 64, ac]
    ra3 = a64[bm + ar + 96, ac]
    rb0 = b64[br, bn // 4 + bc]
    rb1 = b64[br + 8, bn // 4 + bc]
    rb2 = b64[br + 16, bn // 4 + bc]
    rb3 = b64[br + 24, bn // 4 + bc]
    smem64[ar * (LDA // 4) + ac] = ra0
    smem64[(ar + 32) * (LDA // 4) + ac] = ra1
    smem64[(ar + 64) * (LDA // 4) + ac] = ra2
    smem64[(ar + 96) * (LDA // 4) + ac] = ra3
    smem64[A_TILE // 4 + br * (LDB // 4) + bc] = rb0
    smem64[A_TILE // 4 + (br + 8) * (LDB // 4) + bc] = rb1
    smem64[A_TILE // 4 + (br + 16) * (LDB // 4) + bc] = rb2
    smem64[A_TILE // 4 + (br + 24) * (LDB // 4) + bc] = rb3
    cuda.syncthreads()
    fa0 = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fa1 = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fa2 = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fa3 = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb0 = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    fb1 = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    c00 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c01 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c10 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c11 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c20 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c21 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c30 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    c31 = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(c00, 0.0)
    wmma.fill_fragment(c01, 0.0)
    wmma.fill_fragment(c10, 0.0)
    wmma.fill_fragment(c11, 0.0)
    wmma.fill_fragment(c20, 0.0)
    wmma.fill_fragment(c21, 0.0)
    wmma.fill_fragment(c30, 0.0)
    wmma.fill_fragment(c31, 0.0)
    for kt in range(nk):
        stage = (kt % 2) * STAGE
        nxt = ((kt + 1) % 2) * STAGE
        more = kt + 1 < nk
        if more:  # the next tile, into registers while the tensor cores work
            k64 = (kt + 1) * (BK // 4)
            kb = (kt + 1) * BK
            ra0 = a64[bm + ar, k64 + ac]
            ra1 = a64[bm + ar + 32, k64 + ac]
            ra2 = a64[bm + ar + 64, k64 + ac]
            ra3 = a64[bm + ar + 96, k64 + ac]
            rb0 = b64[kb + br, bn // 4 + bc]
            rb1 = b64[kb + br + 8, bn // 4 + bc]
            rb2 = b64[kb + br + 16, bn // 4 + bc]
            rb3 = b64[kb + br + 24, bn // 4 + bc]
        sa = smem16[stage:stage + A_TILE].reshape(BM, LDA)
        sb = smem16[stage + A_TILE:stage + STAGE].reshape(BK, LDB)
        for kk in range(0, BK, 16):
            wmma.load_matrix_sync(fb0, sb[kk:kk + 16, wn:wn + 16])
            wmma.load_matrix_sync(fb1, sb[kk:kk + 16, wn + 16:wn + 32])
            wmma.load_matrix_sync(fa0, sa[wm:wm + 16, kk:kk + 16])
            wmma.load_matrix_sync(fa1, sa[wm + 16:wm + 32, kk:kk + 16])
            wmma.load_matrix_sync(fa2, sa[wm + 32:wm + 48, kk:kk + 16])
            wmma.load_matrix_sync(fa3, sa[wm + 48:wm + 64, kk:kk + 16])
            wmma.mma_sync(c00, fa0, fb0, c00)
            wmma.mma_sync(c01, fa0, fb1, c01)
            wmma.mma_sync(c10, fa1, fb0, c10)
            wmma.mma_sync(c11, fa1, fb1, c11)
            wmma.mma_sync(c20, fa2, fb0, c20)
            wmma.mma_sync(c21, fa2, fb1, c21)
            wmma.mma_sync(c30, fa3, fb0, c30)
            wmma.mma_sync(c31, fa3, fb1, c31)
        if more:
            base = nxt // 4
            smem64[base + ar * (LDA // 4) + ac] = ra0
            smem64[base + (ar + 32) * (LDA // 4) + ac] = ra1
            smem64[base + (ar + 64) * (LDA // 4) + ac] = ra2
            smem64[base + (ar + 96) * (LDA // 4) + ac] = ra3
            bbase = (nxt + A_TILE) // 4
            smem64[bbase + br * (LDB // 4) + bc] = rb0
            smem64[bbase + (br + 8) * (LDB // 4) + bc] = rb1
            smem64[bbase + (br + 16) * (LDB // 4) + bc] = rb2
            smem64[bbase + (br + 24) * (LDB // 4) + bc] = rb3
        cuda.syncthreads()
    r, col = bm + wm, bn + wn
    wmma.store_matrix_sync(c[r:r + 16, col:col + 16], c00, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r:r + 16, col + 16:col + 32], c01, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r + 16:r + 32, col:col + 16], c10, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r + 16:r + 32, col + 16:col + 32], c11, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r + 32:r + 48, col:col + 16], c20, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r + 32:r + 48, col + 16:col + 32], c21, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r + 48:r + 64, col:col + 16], c30, wmma.mem_row_major)
    wmma.store_matrix_sync(c[r + 48:r + 64, col + 16:col + 32], c31, wmma.mem_row_major)


def wmma_launch(c, a, b):
    """Launch wmma_gemm for device arrays c (f32), a, b (f16) whose sizes are multiples of 128
    (and K of 32)."""
    m, n = c.shape
    grid = (n // BN, m // BM)
    wmma_gemm[grid, THREADS, 0, WMMA_SHARED_BYTES](c, a, b, a.view(np.uint64),
                                                   b.view(np.uint64))
