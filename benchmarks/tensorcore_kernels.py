"""The tensor-core GEMM kernels of benchmarks/bench_tensorcore.py (FP16 or BF16 in, FP32
accumulate, C = A @ B with A M x K and B K x N row-major): plain gpunb kernels, tested on the
CPU target at small sizes (tests/language/test_tensorcore_gemm.py) and timed on a GPU beside
cuBLAS.

Both stage A and B tiles (BM x BK and BK x BN, rows padded by 8 elements so that ldmatrix and
WMMA loads hit distinct banks) through shared memory in a `stages`-deep pipeline of cp.async
copies, 16 bytes per thread and piece, written with `cuda.inline_ptx`. On the CPU target, which
runs no PTX, the pieces are copied element by element instead. 8 warps (2 x 4) share a block.

- `make_wmma_gemm`: nvcuda::wmma spelling. A 128 x 128 block tile, warps of 64 x 32 (4 x 2
  fragments of 16 x 16).
- `make_mma_gemm`: PTX level. mma.sync m16n8k16 fed by ldmatrix (.x4 for A, .x4.trans for B),
  a 128 x `bn` block tile (bn 128 or 256: warps of 64 x 32 or 64 x 64).
"""

from __future__ import annotations

import numpy as np

from gpunb import cuda
from gpunb.cuda import wmma

BM, BK, THREADS = 128, 32, 256
LDA = BK + 8  # padded A row (elements): 80 bytes
# cp.async of 16 bytes from global (array + byte offset) to shared (array + byte offset)
CP_ASYNC_16 = ("{ .reg .u64 s, g; add.u64 s, %0, %1; cvta.to.shared.u64 s, s; "
               "add.u64 g, %2, %3; cp.async.cg.shared.global [s], [g], 16; }")


def layout(bn: int) -> tuple[int, int, int]:
    """(padded B row, elements of A's tile, elements of one pipeline stage)."""
    ldb = bn + 8
    return ldb, BM * LDA, BM * LDA + BK * ldb


def shared_bytes(bn: int, stages: int, itemsize: int = 2) -> int:
    return stages * layout(bn)[2] * itemsize


def _copier(bn: int, stages: int, async_copies: bool):
    """(issue, wait) device functions: issue starts this thread's copies of k-tile `kt` into
    pipeline stage `stage` (one commit group per call, empty past the end of K); wait lets the
    newest stages - 2 groups still be in flight."""
    ldb, a_tile, stage_size = layout(bn)
    wait_text = f"cp.async.wait_group {stages - 2};"
    b_pieces = BK * bn // 8 // THREADS  # 16-byte pieces of B per thread
    b_per_row = bn // 8

    @cuda.jit(device=True)
    def piece(smem, dst, src, src_index):
        """16 bytes from src (flat element index) to smem (flat element index)."""
        if async_copies:
            cuda.inline_ptx(CP_ASYNC_16, "l,l,l,l", smem, dst * 2, src, src_index * 2,
                            memory=True)
        else:
            for e in range(8):
                smem[dst + e] = src[src_index + e]

    @cuda.jit(device=True)
    def issue(smem, a_flat, b_flat, k_total, n_total, stage, kt, bm, bn0, tid):
        if kt * BK < k_total:
            base = stage * stage_size
            k0 = kt * BK
            for i in range(2):  # A: BM rows x 4 pieces
                chunk = tid + THREADS * i
                r, c8 = chunk // 4, (chunk % 4) * 8
                piece(smem, base + r * LDA + c8, a_flat, (bm + r) * k_total + k0 + c8)
            for i in range(b_pieces):  # B: BK rows x bn / 8 pieces
                chunk = tid + THREADS * i
                r, c8 = chunk // b_per_row, (chunk % b_per_row) * 8
                piece(smem, base + a_tile + r * ldb + c8, b_flat, (k0 + r) * n_total + bn0 + c8)
        if async_copies:
            cuda.inline_ptx("cp.async.commit_group;", "", memory=True)

    @cuda.jit(device=True)
    def wait():
        if async_copies:
            cuda.inline_ptx(wait_text, "", memory=True)

    return issue, wait


def make_wmma_gemm(dtype=np.float16, async_copies: bool = True, stages: int = 3):
    """The WMMA GEMM kernel for float16 or bfloat16 inputs: kernel(c, a, b) for C-contiguous
    c (m x n, float32), a (m x k) and b (k x n)."""
    bn = 128
    ldb, a_tile, stage_size = layout(bn)
    issue, wait = _copier(bn, stages, async_copies)

    @cuda.jit
    def wmma_gemm(c, a, b):
        k_total, n_total = a.shape[1], b.shape[1]
        a_flat = a.reshape(a.shape[0] * k_total)  # flat views: 16-byte pieces by offset
        b_flat = b.reshape(k_total * n_total)
        smem = cuda.shared.array(0, dtype)
        tid = cuda.threadIdx.x
        warp = tid // 32
        wm = (warp // 4) * 64
        wn = (warp % 4) * 32
        bm = cuda.blockIdx.y * BM
        bn0 = cuda.blockIdx.x * bn
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
        for s in range(stages - 1):
            issue(smem, a_flat, b_flat, k_total, n_total, s, s, bm, bn0, tid)
        for kt in range(k_total // BK):
            wait()
            cuda.syncthreads()
            issue(smem, a_flat, b_flat, k_total, n_total, (kt + stages - 1) % stages,
                  kt + stages - 1, bm, bn0, tid)
            base = (kt % stages) * stage_size
            sa = smem[base:base + a_tile].reshape(BM, LDA)
            sb = smem[base + a_tile:base + stage_size].reshape(BK, ldb)
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
        r, col = bm + wm, bn0 + wn
        wmma.store_matrix_sync(c[r:r + 16, col:col + 16], c00, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r:r + 16, col + 16:col + 32], c01, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r + 16:r + 32, col:col + 16], c10, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r + 16:r + 32, col + 16:col + 32], c11, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r + 32:r + 48, col:col + 16], c20, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r + 32:r + 48, col + 16:col + 32], c21, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r + 48:r + 64, col:col + 16], c30, wmma.mem_row_major)
        wmma.store_matrix_sync(c[r + 48:r + 64, col + 16:col + 32], c31, wmma.mem_row_major)

    wmma_gemm.tile = (BM, bn, stages)
    return wmma_gemm


def make_mma_gemm(dtype=np.float16, async_copies: bool = True, stages: int = 3,
                  bn: int = 128):
    """The mma.sync GEMM kernel: kernel(c, a, b) as make_wmma_gemm's."""
    ldb, a_tile, stage_size = layout(bn)
    issue, wait = _copier(bn, stages, async_copies)
    wn_size = bn // 4
    n_tiles = wn_size // 8  # n8 tiles per warp
    n_pairs = n_tiles // 2  # ldmatrix .x4.trans loads two of them
    # loops over register tiles are unrolled when compiling (literal_unroll), so that every
    # index into the per-thread arrays is a constant and they live in registers
    m_range, n_range, pair_range = (0, 1, 2, 3), tuple(range(n_tiles)), tuple(range(n_pairs))

    @cuda.jit
    def mma_gemm(c, a, b):
        k_total, n_total = a.shape[1], b.shape[1]
        a_flat = a.reshape(a.shape[0] * k_total)  # flat views: 16-byte pieces by offset
        b_flat = b.reshape(k_total * n_total)
        smem = cuda.shared.array(0, dtype)
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        wm = (warp // 4) * 64
        wn = (warp % 4) * wn_size
        bm = cuda.blockIdx.y * BM
        bn0 = cuda.blockIdx.x * bn
        acc = cuda.local.array((4, n_tiles, 4), np.float32)
        for i in cuda.literal_unroll(m_range):
            for j in cuda.literal_unroll(n_range):
                for e in range(4):
                    acc[i, j, e] = 0.0
        a_reg = cuda.local.array((4, 8), dtype)
        b_reg = cuda.local.array((n_tiles, 4), dtype)
        # this lane's row addresses for ldmatrix: A .x4 (rows 0-15, k 0 / 8), B .x4.trans
        a_row = (wm + lane % 16) * LDA + 8 * (lane // 16)
        b_row = (lane % 8 + 8 * ((lane // 8) % 2)) * ldb + wn + 8 * (lane // 16)
        for s in range(stages - 1):
            issue(smem, a_flat, b_flat, k_total, n_total, s, s, bm, bn0, tid)
        for kt in range(k_total // BK):
            wait()
            cuda.syncthreads()
            issue(smem, a_flat, b_flat, k_total, n_total, (kt + stages - 1) % stages,
                  kt + stages - 1, bm, bn0, tid)
            base = (kt % stages) * stage_size
            for kk in range(0, BK, 16):
                for i in cuda.literal_unroll(m_range):
                    frag = cuda.ldmatrix(smem, base + a_row + 16 * i * LDA + kk, 4)
                    for e in range(8):
                        a_reg[i, e] = frag[e]
                for jj in cuda.literal_unroll(pair_range):
                    frag = cuda.ldmatrix(smem, base + a_tile + b_row + kk * ldb + 16 * jj, 4,
                                         True)
                    for e in range(4):
                        b_reg[2 * jj, e] = frag[e]
                        b_reg[2 * jj + 1, e] = frag[4 + e]
                for i in cuda.literal_unroll(m_range):
                    av = (a_reg[i, 0], a_reg[i, 1], a_reg[i, 2], a_reg[i, 3], a_reg[i, 4],
                          a_reg[i, 5], a_reg[i, 6], a_reg[i, 7])
                    for j in cuda.literal_unroll(n_range):
                        d = cuda.mma_sync("m16n8k16", av,
                                          (b_reg[j, 0], b_reg[j, 1], b_reg[j, 2], b_reg[j, 3]),
                                          (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2],
                                           acc[i, j, 3]))
                        for e in range(4):
                            acc[i, j, e] = d[e]
        group, quad = lane // 4, lane % 4
        for i in cuda.literal_unroll(m_range):
            for j in cuda.literal_unroll(n_range):
                r = bm + wm + 16 * i + group
                col = bn0 + wn + 8 * j + 2 * quad
                c[r, col] = acc[i, j, 0]
                c[r, col + 1] = acc[i, j, 1]
                c[r + 8, col] = acc[i, j, 2]
                c[r + 8, col + 1] = acc[i, j, 3]

    mma_gemm.tile = (BM, bn, stages)
    return mma_gemm


def launch(kernel, c, a, b) -> None:
    """Launch a make_*_gemm kernel for c (m x n, float32), a (m x k), b (k x n), all
    C-contiguous, m a multiple of 128, n of the kernel's block width, k of 32."""
    bm, bn, stages = kernel.tile
    m, n = c.shape
    kernel[(n // bn, m // bm), THREADS, 0, shared_bytes(bn, stages)](c, a, b)
