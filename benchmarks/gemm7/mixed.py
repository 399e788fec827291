"""The 128 x 320 cluster GEMM (gpunb.examples.hopper_gemm_wide) walking a host-made plan of tile
pairs 320 or 256 columns wide (benchmarks.gemm7.plan says which and why): the same ring, pair
coupling, A-early producer and held-stage epilogue, with each tile's width read from the plan.

What changes against the example:
- a cluster's tiles come from `plan[cluster]` (global memory, two int32 per tile, read by
  every thread: the same lines for the whole cluster) instead of pair = first, first + step..;
- a 256-wide tile loads its B halves through a second descriptor (box 128 x 64; a TMA box is
  fixed per descriptor), expects 48 KiB instead of 56 on the stage's full barrier, and its
  consumers issue m64n128 instead of m64n160 wgmma into the first 64 of their accumulators'
  80 registers; its epilogue stores 4 panels (rounds of 3 and 1) instead of 5;
- the kernel holds both widths' code; the branch is uniform per tile.
The ring's stages keep their 320-wide size (a narrow tile leaves 8 KiB of each unused).
"""

from __future__ import annotations

import numpy as np

from benchmarks.gemm7 import plan as tile_plan
from gpunb import cuda, float32, uint64
from gpunb.examples import hopper_gemm
from gpunb.examples.hopper_gemm_wide import (
    A_TILE,
    BK,
    BM,
    C_BUF,
    CLUSTER,
    DRAINED,
    EMPTY,
    FREE,
    FULL,
    N_ACC,
    PANEL,
    PANELS,
    PEER,
    SMEM_BYTES,
    STAGE,
    STAGES,
    THREADS,
    WRITTEN,
)

WIDE, NARROW = tile_plan.WIDE, tile_plan.NARROW
_PAIRS = (0, 1, 2, 3)  # stmatrix.x4 writes two 8-column chunks: four per panel
_PANEL_RANGE = tuple(range(PANELS))


def _store_for(width: int):
    """The epilogue of a `width`-wide tile: the consumer's 64 x width outputs (acc0: columns
    0 .. width/2, acc1: the rest) to C through its buffer in ring stage `slot`, in rounds of
    up to three 64 x 64 panels (hopper_gemm_wide.store_tile with the width a constant)."""
    half_n = width // 2
    n_panels = width // PANEL
    rounds = tuple(range(-(-n_panels // PANELS)))

    @cuda.jit(device=True, forceinline=True)
    def store(dc, acc0, acc1, smem, bars, row0, n0, rnd, slot):
        tid = cuda.threadIdx.x
        me = tid // 128 - 1
        lead = tid % 128 == 0
        lane = tid % 32
        row = (tid % 128) // 32 * 16 + lane % 8 + 8 * (lane // 8 % 2)
        half = lane // 16
        base = slot * STAGE + me * C_BUF
        buf = smem[base:base + C_BUF].reshape(PANELS * PANEL, PANEL)
        for r in cuda.literal_unroll(rounds):
            if rnd > 0:
                if lead:
                    cuda.tma.wait_group_read(0)
                    cuda.mbarrier.arrive(bars, FREE + me)
                cuda.mbarrier.wait(bars, FREE + me, (rnd - 1) % 2)
            for p in cuda.literal_unroll(_PANEL_RANGE):
                if r * PANELS + p < n_panels:
                    for jj in cuda.literal_unroll(_PAIRS):
                        j = (r * PANELS + p) * 8 + 2 * jj
                        chunk = (2 * jj + half) ^ (row % 8)
                        if j < half_n // 8:
                            cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                                          (acc0[4 * j], acc0[4 * j + 1], acc0[4 * j + 2],
                                           acc0[4 * j + 3], acc0[4 * j + 4], acc0[4 * j + 5],
                                           acc0[4 * j + 6], acc0[4 * j + 7]))
                        else:
                            q = j - half_n // 8
                            cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                                          (acc1[4 * q], acc1[4 * q + 1], acc1[4 * q + 2],
                                           acc1[4 * q + 3], acc1[4 * q + 4], acc1[4 * q + 5],
                                           acc1[4 * q + 6], acc1[4 * q + 7]))
            cuda.fence_proxy_async()  # the TMA (async proxy) reads what these stores wrote
            cuda.mbarrier.arrive(bars, WRITTEN + me)
            if lead:
                cuda.mbarrier.wait(bars, WRITTEN + me, rnd % 2)
                for p in range(min(PANELS, n_panels - r * PANELS)):
                    cuda.tma.store(dc, (row0, n0 + (r * PANELS + p) * PANEL),
                                   buf[p * PANEL:(p + 1) * PANEL, :])
                cuda.tma.commit_group()
            rnd += 1
        return rnd

    return store


def _mainloop_for(width: int):
    """The consumer's K loop over one `width`-wide tile: per stage, wait until it has landed,
    two m64n(width/2)k16 wgmma per 16-deep step, keep one group in flight and free the stage
    of the group before (the first stage of a tile frees the last tile's held stage instead).
    Returns the K-slice count `it`; the tile's last group is waited for."""
    half_n = width // 2
    b1 = half_n * BK * 2 // 16  # the second half's offset in a B slice, in 16-byte units

    @cuda.jit(device=True, forceinline=True)
    def mainloop(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held):
        tid = cuda.threadIdx.x
        for kt in range(ktiles):
            s = it % STAGES
            cuda.mbarrier.wait(bars, FULL + s, (it // STAGES) % 2)
            stage = s * (STAGE * 2 // 16)
            cuda.wgmma.fence()
            for kk in range(BK // 16):
                cuda.wgmma.mma_async(acc0, a_desc + stage + 2 * kk, b_desc + stage + 2 * kk,
                                     (64, half_n, 16), c.dtype, scale_d=kt + kk > 0)
                cuda.wgmma.mma_async(acc1, a_desc + stage + 2 * kk,
                                     b_desc + stage + b1 + 2 * kk,
                                     (64, half_n, 16), c.dtype, scale_d=kt + kk > 0)
            cuda.wgmma.commit_group()
            cuda.wgmma.wait_group(1)
            if tid % 128 == 0:
                if kt > 0:
                    cuda.mbarrier.arrive(bars, EMPTY + (it - 1) % STAGES)
                elif held >= 0:  # the last tile's stores have read the held stage
                    cuda.tma.wait_group_read(0)
                    cuda.mbarrier.arrive(bars, EMPTY + held)
            it += 1
        cuda.wgmma.wait_group(0)
        return it

    return mainloop


_store_wide, _store_narrow = _store_for(WIDE), _store_for(NARROW)
_loop_wide, _loop_narrow = _mainloop_for(WIDE), _mainloop_for(NARROW)


@cuda.jit(device=True, forceinline=True)
def _load_stage(smem, da, db, bars, s, wait_peer, phase, m0, n0, kt, rank, b_rows):
    """One K-slice of a tile into stage `s`: this block's A slice now, then (once the peer's
    consumers are done with the stage) its `b_rows` x BK half of the B slice for both blocks."""
    cuda.mbarrier.arrive_expect_tx(bars, FULL + s, (A_TILE + CLUSTER * b_rows * BK) * 2)
    base = s * STAGE
    cuda.tma.load(smem[base:base + A_TILE], da, (m0 + rank * BM, kt * BK), bars, FULL + s)
    if wait_peer:
        cuda.mbarrier.wait(bars, PEER + s, phase)
    half = base + A_TILE + rank * b_rows * BK
    cuda.tma.load(smem[half:half + b_rows * BK], db, (n0 + rank * b_rows, kt * BK), bars,
                  FULL + s, multicast=(1 << CLUSTER) - 1)


@cuda.jit(launch_bounds=(THREADS, 1), cluster_dims=(CLUSTER, 1, 1))
def gemm(c, da, dbw, dbn, dc, plan, M, N, K):  # noqa: N803
    smem = cuda.shared.array(0, c.dtype, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    cluster = cuda.cg.this_cluster()
    rank = cluster.block_rank()
    tid = cuda.threadIdx.x
    group = tid // 128
    ktiles = (K + BK - 1) // BK
    mine = plan[cuda.blockIdx.x // CLUSTER]  # this cluster's tiles, then (-1, 0)
    if tid == 0:
        for s in range(STAGES):
            cuda.mbarrier.init(bars, FULL + s, 1)
            cuda.mbarrier.init(bars, EMPTY + s, 2)
            cuda.mbarrier.init(bars, PEER + s, 1)
        cuda.mbarrier.init(bars, DRAINED, 2)
        for w in range(2):
            cuda.mbarrier.init(bars, WRITTEN + w, 128)
            cuda.mbarrier.init(bars, FREE + w, 1)
    cluster.sync()
    if group == 0:
        cuda.setmaxnreg_dec(40)
        if tid == 0:
            it = 0
            for t in range(mine.shape[0]):
                m0 = mine[t, 0]
                if m0 < 0:
                    break
                n0 = mine[t, 1] // 2
                wide = mine[t, 1] % 2 == 1
                for kt in range(ktiles):
                    s = it % STAGES
                    phase = (it // STAGES - 1) % 2
                    if it >= STAGES:
                        cuda.mbarrier.wait(bars, EMPTY + s, phase)
                        cuda.mbarrier.arrive(bars, PEER + s, block_rank=rank ^ 1)
                    if wide:
                        _load_stage(smem, da, dbw, bars, s, it >= STAGES, phase, m0, n0, kt,
                                    rank, WIDE // CLUSTER)
                    else:
                        _load_stage(smem, da, dbn, bars, s, it >= STAGES, phase, m0, n0, kt,
                                    rank, NARROW // CLUSTER)
                    it += 1
    else:
        cuda.setmaxnreg_inc(232)
        acc0 = cuda.local.array(N_ACC, float32)
        acc1 = cuda.local.array(N_ACC, float32)
        a_desc = cuda.wgmma.descriptor(smem[(group - 1) * 64 * BK:], 128)
        b_desc = cuda.wgmma.descriptor(smem[A_TILE:], 128)
        it = 0
        rnd = 0
        held = -1
        tiles = 0
        for t in range(mine.shape[0]):
            m0 = mine[t, 0]
            if m0 < 0:
                break
            n0 = mine[t, 1] // 2
            wide = mine[t, 1] % 2 == 1
            if wide:
                it = _loop_wide(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held)
            else:
                it = _loop_narrow(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held)
            held = (it - 1) % STAGES
            if tid % 128 == 0:
                cuda.mbarrier.arrive(bars, DRAINED)
            cuda.mbarrier.wait(bars, DRAINED, tiles % 2)
            tiles += 1
            row0 = m0 + rank * BM + (group - 1) * 64
            if wide:
                rnd = _store_wide(dc, acc0, acc1, smem, bars, row0, n0, rnd, held)
            else:
                rnd = _store_narrow(dc, acc0, acc1, smem, bars, row0, n0, rnd, held)
        if tid % 128 == 0:
            cuda.tma.wait_group(0)
    cluster.sync()


def descriptors(a, b, c) -> tuple:
    """A's and C's descriptors as the example's, B's for both tile widths, and the plan for
    the GPU's resident clusters (one cluster per tile on the CPU target)."""
    wide = hopper_gemm.descriptors(a, b, c, width=WIDE)
    narrow_b = cuda.tma.descriptor(b, (NARROW // CLUSTER, BK), 128)
    m_pairs = -(-a.shape[0] // (CLUSTER * BM))
    wide_n, narrow_n = tile_plan.column_split(b.shape[0])
    tiles = m_pairs * (wide_n + narrow_n)
    resident = hopper_gemm.resident_clusters(a)
    table = tile_plan.plan(m_pairs, b.shape[0], min(tiles, resident or tiles))
    if not isinstance(a, np.ndarray):
        table = cuda.to_device(table)
    return (wide[0], wide[1], narrow_b, wide[2], table)


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with the mixed-width kernel; `blocks` (a multiple of 2) replans for that
    many clusters."""
    M, K = a.shape  # noqa: N806
    N = b.shape[0]  # noqa: N806
    if descs is None:
        descs = descriptors(a, b, c)
    table = descs[4]
    if blocks is not None:
        table = tile_plan.plan(-(-M // (CLUSTER * BM)), N, blocks // CLUSTER)
        if not isinstance(a, np.ndarray):
            table = cuda.to_device(table)
    kernel_args = (c, *descs[:4], table, M, N, K)
    gemm[CLUSTER * table.shape[0], THREADS, 0, SMEM_BYTES](*kernel_args)


__all__ = ["descriptors", "launch"]
