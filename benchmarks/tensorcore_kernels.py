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


def make_wmma_gemm(dtype=np.float16):
    """The WMMA GEMM kernel for float16 or bfloat16 inputs."""

    @cuda.jit
    def wmma_gemm(c, a, b, a64, b64):
        """c[M, N] = a[M, K] @ b[K, N]; a64 / b64 are a and b viewed as uint64 (4 halves a word)."""
        smem16 = cuda.shared.array(0, dtype)
        smem64 = cuda.shared.array(0, np.uint64)
        tid = cuda.threadIdx.x
        warp = tid // 32
        wm = (warp // 4) * 64
        wn = (warp % 4) * 32
        bm = cuda.blockIdx.y * BM
        bn = cuda.blockIdx.x * BN
        nk = a.shape[1] // BK
        # this thread's words of a tile: A rows tid // 8 + 32 i, word tid % 8;
        # B rows tid // 32 + 8 i, word tid % 32
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
        fa0 = wmma.fragment(wmma.matrix_a, 16, 16, 16, dtype, wmma.row_major)
        fa1 = wmma.fragment(wmma.matrix_a, 16, 16, 16, dtype, wmma.row_major)
        fa2 = wmma.fragment(wmma.matrix_a, 16, 16, 16, dtype, wmma.row_major)
        fa3 = wmma.fragment(wmma.matrix_a, 16, 16, 16, dtype, wmma.row_major)
        fb0 = wmma.fragment(wmma.matrix_b, 16, 16, 16, dtype, wmma.row_major)
        fb1 = wmma.fragment(wmma.matrix_b, 16, 16, 16, dtype, wmma.row_major)
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

    return wmma_gemm


def wmma_launch(kernel, c, a, b):
    """Launch a make_wmma_gemm kernel for arrays c (float32), a, b (16-bit) whose sizes are
    multiples of 128 (and K of 32)."""
    m, n = c.shape
    grid = (n // BN, m // BM)
    kernel[grid, THREADS, 0, WMMA_SHARED_BYTES](c, a, b, a.view(np.uint64), b.view(np.uint64))


# ---- mma.sync + ldmatrix + cp.async --------------------------------------------------------------

STAGES = 3
CP_ASYNC_16 = ("{ .reg .u64 s; cvta.to.shared.u64 s, %0; "
               "cp.async.cg.shared.global [s], [%1], 16; }")


def _tile_copier(async_copies: bool, stages: int):
    """A device function that starts the copy of this thread's four 16-byte pieces of k-tile
    `kt` (A: 128 x 32, B: 32 x 128) into pipeline stage `stage`: cp.async through inline PTX
    (one commit group per call), or, for the CPU target, plain element copies."""
    wait_text = f"cp.async.wait_group {stages - 2};"  # all but the newest stages - 2 landed

    @cuda.jit(device=True)
    def piece(smem16, dst, src):
        if async_copies:
            cuda.inline_ptx(CP_ASYNC_16, "l,l", smem16[dst:dst + 8], src, memory=True)
        else:
            for e in range(8):
                smem16[dst + e] = src[e]

    @cuda.jit(device=True)
    def issue_tile(smem16, a, b, stage, kt, bm, bn, tid):
        if kt * BK < a.shape[1]:
            base = stage * STAGE
            k0 = kt * BK
            for i in range(2):
                chunk = tid + 256 * i  # A: 128 rows x 4 pieces of 8 halves
                r, c8 = chunk // 4, (chunk % 4) * 8
                piece(smem16, base + r * LDA + c8, a[bm + r, k0 + c8:k0 + c8 + 8])
            for i in range(2):
                chunk = tid + 256 * i  # B: 32 rows x 16 pieces
                r, c8 = chunk // 16, (chunk % 16) * 8
                piece(smem16, base + A_TILE + r * LDB + c8, b[k0 + r, bn + c8:bn + c8 + 8])
        if async_copies:
            cuda.inline_ptx("cp.async.commit_group;", "", memory=True)

    @cuda.jit(device=True)
    def wait_tile():
        if async_copies:  # all but the newest group have landed (this thread's copies)
            cuda.inline_ptx(wait_text, "", memory=True)

    return issue_tile, wait_tile


def make_mma_gemm(dtype=np.float16, async_copies: bool = True, stages: int = STAGES):
    """The mma.sync GEMM kernel for float16 or bfloat16 inputs with a `stages`-deep pipeline;
    async_copies=False copies tiles with plain loads and stores (the CPU target runs no PTX)."""
    issue_tile, wait_tile = _tile_copier(async_copies, stages)

    @cuda.jit
    def mma_gemm(c, a, b):
        """c[M, N] = a[M, K] @ b[K, N] with mma.sync m16n8k16, ldmatrix and a cp.async pipeline."""
        smem16 = cuda.shared.array(0, dtype)
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        wm = (warp // 4) * 64
        wn = (warp % 4) * 32
        bm = cuda.blockIdx.y * BM
        bn = cuda.blockIdx.x * BN
        nk = a.shape[1] // BK
        acc = cuda.local.array((4, 4, 4), np.float32)
        for i in range(4):
            for j in range(4):
                for e in range(4):
                    acc[i, j, e] = 0.0
        a_reg = cuda.local.array((4, 8), dtype)
        b_reg = cuda.local.array((4, 4), dtype)
        for s in range(stages - 1):
            issue_tile(smem16, a, b, s, s, bm, bn, tid)
        for kt in range(nk):
            wait_tile()
            cuda.syncthreads()
            issue_tile(smem16, a, b, (kt + stages - 1) % stages, kt + stages - 1, bm, bn, tid)
            base = (kt % stages) * STAGE
            sa = smem16[base:base + A_TILE].reshape(BM, LDA)
            sb = smem16[base + A_TILE:base + STAGE].reshape(BK, LDB)
            for kk in range(0, BK, 16):
                for i in range(4):
                    frag = cuda.ldmatrix(sa, (wm + 16 * i + lane % 16, kk + 8 * (lane // 16)), 4)
                    for e in range(8):
                        a_reg[i, e] = frag[e]
                for jj in range(2):
                    row = kk + lane % 8 + 8 * ((lane // 8) % 2)
                    frag = cuda.ldmatrix(sb, (row, wn + 16 * jj + 8 * (lane // 16)), 4, True)
                    for e in range(4):
                        b_reg[2 * jj, e] = frag[e]
                        b_reg[2 * jj + 1, e] = frag[4 + e]
                for i in range(4):
                    av = (a_reg[i, 0], a_reg[i, 1], a_reg[i, 2], a_reg[i, 3], a_reg[i, 4],
                          a_reg[i, 5], a_reg[i, 6], a_reg[i, 7])
                    for j in range(4):
                        d = cuda.mma_sync("m16n8k16", av,
                                          (b_reg[j, 0], b_reg[j, 1], b_reg[j, 2], b_reg[j, 3]),
                                          (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]))
                        for e in range(4):
                            acc[i, j, e] = d[e]
        group, quad = lane // 4, lane % 4
        for i in range(4):
            for j in range(4):
                r = bm + wm + 16 * i + group
                col = bn + wn + 8 * j + 2 * quad
                c[r, col] = acc[i, j, 0]
                c[r, col + 1] = acc[i, j, 1]
                c[r + 8, col] = acc[i, j, 2]
                c[r + 8, col + 1] = acc[i, j, 3]

    return mma_gemm


def mma_launch(kernel, c, a, b, stages: int = STAGES):
    """Launch a make_mma_gemm kernel (sizes as for wmma_launch)."""
    m, n = c.shape
    kernel[(n // BN, m // BM), THREADS, 0, stages * STAGE * 2](c, a, b)
