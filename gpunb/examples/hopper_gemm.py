"""A Hopper GEMM in gpunb's kernel language: TMA loads, mbarrier pipeline, wgmma, warp
specialisation - C = A @ B.T for A (M, K) and B (N, K), float16 or bfloat16, float32
accumulation, C in the inputs' type.

A persistent block computes BM x BN tiles one after another with three warpgroups: warpgroup 0
is the producer (one thread issues the TMA loads of a STAGES-deep ring of K-slices, each
completing on its "full" mbarrier, after waiting for the consumers to free the slot on its
"empty" mbarrier; it gives its registers away with setmaxnreg_dec and runs ahead into the next
tile while the consumers store the last), warpgroups 1 and 2 each own 64 rows of the tile and
multiply with wgmma m64n256k16 straight from the 128-byte-swizzled shared tiles. The same
kernels run on the CPU target (slowly, exactly) and compile for sm_90a on an H100.

    from gpunb.examples import hopper_gemm
    c = hopper_gemm.matmul(a, b)            # a (M, K), b (N, K): device or numpy arrays
"""

from __future__ import annotations

import numpy as np

from gpunb import cuda, float32, uint64

BM, BN, BK, STAGES = 128, 256, 64, 4
A_TILE, B_TILE = BM * BK, BN * BK  # elements of one stage's tiles
STAGE = A_TILE + B_TILE
FULL = STAGES * STAGE * 2 // 8  # the mbarriers, as uint64 indices after the tiles
EMPTY = FULL + STAGES
SMEM_BYTES = STAGES * STAGE * 2 + 2 * STAGES * 8
GROUP_M = 8  # tiles of one column group share B slices in L2
THREADS = 384
N_ACC = BN // 2  # D values per thread of m64n256


@cuda.jit(device=True, forceinline=True)
def tile_origin(tile, M, N):  # noqa: N803
    """(m0, n0) of tile number `tile`: GROUP_M row tiles walk the columns together (their A
    slices and the shared B slice stay in L2)."""
    tiles_m = (M + BM - 1) // BM
    tiles_n = (N + BN - 1) // BN
    width = GROUP_M * tiles_n
    first_m = (tile // width) * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    return (first_m + (tile % width) % rows) * BM, ((tile % width) // rows) * BN


@cuda.jit(launch_bounds=(THREADS, 1))
def gemm(c, da, db, M, N, K):  # noqa: N803
    # one kernel per input dtype: c.dtype is a compile-time constant (float16 or bfloat16)
    smem = cuda.shared.array(0, c.dtype, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    tid = cuda.threadIdx.x
    group = tid // 128
    tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
    ktiles = (K + BK - 1) // BK
    if tid == 0:
        for s in range(STAGES):
            cuda.mbarrier.init(bars, FULL + s, 1)
            cuda.mbarrier.init(bars, EMPTY + s, 2)
    cuda.syncthreads()
    # persistent: each block takes tiles blockIdx.x, + gridDim.x, ...; `it` counts K-slices
    # over all of them, so the ring's stages and phases run on from tile to tile
    if group == 0:
        cuda.setmaxnreg_dec(40)
        if tid == 0:
            it = 0
            for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):
                m0, n0 = tile_origin(tile, M, N)
                for kt in range(ktiles):
                    s = it % STAGES
                    if it >= STAGES:
                        cuda.mbarrier.wait(bars, EMPTY + s, (it // STAGES - 1) % 2)
                    cuda.mbarrier.arrive_expect_tx(bars, FULL + s, STAGE * 2)
                    base = s * STAGE
                    cuda.tma.load(smem[base:base + A_TILE], da, (m0, kt * BK), bars, FULL + s)
                    cuda.tma.load(smem[base + A_TILE:base + STAGE], db, (n0, kt * BK), bars,
                                  FULL + s)
                    it += 1
    else:
        cuda.setmaxnreg_inc(232)
        acc = cuda.local.array(N_ACC, float32)
        # stage 0's descriptors; a stage, and a k16 step (32 bytes), are added in 16-byte units
        a_desc = cuda.wgmma.descriptor(smem[(group - 1) * 64 * BK:], 128)
        b_desc = cuda.wgmma.descriptor(smem[A_TILE:], 128)
        it = 0
        for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):
            m0, n0 = tile_origin(tile, M, N)
            for kt in range(ktiles):
                s = it % STAGES
                cuda.mbarrier.wait(bars, FULL + s, (it // STAGES) % 2)
                stage = s * (STAGE * 2 // 16)
                cuda.wgmma.fence()
                for kk in range(BK // 16):
                    cuda.wgmma.mma_async(acc, a_desc + stage + 2 * kk, b_desc + stage + 2 * kk,
                                         (64, BN, 16), c.dtype, scale_d=kt + kk > 0)
                cuda.wgmma.commit_group()
                # one group stays in flight; the one before it is done: its stage is free
                cuda.wgmma.wait_group(1)
                if kt > 0 and tid % 128 == 0:
                    cuda.mbarrier.arrive(bars, EMPTY + (it - 1) % STAGES)
                it += 1
            cuda.wgmma.wait_group(0)
            if tid % 128 == 0:  # the tile's last slice, freed for the next tile's loads
                cuda.mbarrier.arrive(bars, EMPTY + (it - 1) % STAGES)
            row0 = m0 + (group - 1) * 64
            cuda.wgmma.store(c[row0:, n0:], acc, BN)


def descriptors(a, b) -> tuple:
    """TMA descriptors of A (M, K) and B (N, K) for this kernel's tiles."""
    return (cuda.tma.descriptor(a, (BM, BK), 128), cuda.tma.descriptor(b, (BN, BK), 128))


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T into `c` (M, N); `descs` from descriptors(a, b) skips remaking them.
    `blocks`: the persistent grid (default: one block per multiprocessor on a GPU, one per
    tile on the CPU target)."""
    M, K = a.shape  # noqa: N806
    N = b.shape[0]  # noqa: N806
    da, db = descs or descriptors(a, b)
    tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
    if blocks is None:
        blocks = tiles if isinstance(a, np.ndarray) else min(tiles, _multiprocessors())
    gemm[blocks, THREADS, 0, SMEM_BYTES](c, da, db, M, N, K)


_SMS: list = []


def _multiprocessors() -> int:
    if not _SMS:
        _SMS.append(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    return _SMS[0]


def matmul(a, b):
    """A @ B.T, a new array of the inputs' dtype (on the inputs' side: numpy or device)."""
    if isinstance(a, np.ndarray):
        c = np.zeros((a.shape[0], b.shape[0]), a.dtype)
    else:
        c = cuda.device_array((a.shape[0], b.shape[0]), a.dtype)
    launch(c, a, b)
    return c


__all__ = ["BK", "BM", "BN", "STAGES", "descriptors", "gemm", "launch", "matmul"]
