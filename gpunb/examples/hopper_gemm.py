"""A Hopper GEMM in gpunb's kernel language: TMA loads, mbarrier pipeline, wgmma, warp
specialisation - C = A @ B.T for A (M, K) and B (N, K), float16 or bfloat16, float32
accumulation, C in the inputs' type.

A persistent block computes BM x BN tiles one after another with three warpgroups: warpgroup 0
is the producer (one thread issues the TMA loads of a STAGES-deep ring of K-slices, each
completing on its "full" mbarrier, after waiting for the consumers to free the slot on its
"empty" mbarrier; it gives its registers away with setmaxnreg_dec and runs ahead into the next
tile while the consumers store the last), warpgroups 1 and 2 each own 64 rows of the tile and
multiply with wgmma m64n256k16 straight from the 128-byte-swizzled shared tiles.

The epilogue goes through shared memory: each consumer writes its 64 x 256 outputs with
stmatrix into a 128-byte-swizzled buffer of two 64 x 64 panels (bank-conflict free), and one of
its threads stores each panel with a TMA store that is left in flight while the warpgroup goes
on to its next tile (two rounds of two panels: 4 stages and the buffers fit in 227 KiB). In a
profiled launch on an H200 this took 6 % off the time of each thread storing its fragment to
global memory (benchmarks/RESULTS.md): the TMA writes whole lines where the fragment's 4-byte
pieces half-filled L2 sectors.
The same kernels run on the CPU target (slowly, exactly) and compile for sm_90a on an H100.

    from gpunb.examples import hopper_gemm
    c = hopper_gemm.matmul(a, b)            # a (M, K), b (N, K): device or numpy arrays
"""

from __future__ import annotations

import numpy as np

from gpunb import cuda, float32, uint32, uint64

BM, BN, BK, STAGES = 128, 256, 64, 4
A_TILE, B_TILE = BM * BK, BN * BK  # elements of one stage's tiles
STAGE = A_TILE + B_TILE
PANEL = 64  # the epilogue's TMA stores: 64 x 64 panels (128-byte rows: the swizzle's span)
PANELS = 2  # panels in one consumer's buffer: the 4 of its 64 x 256 go out in two rounds
C_BUF = PANELS * PANEL * PANEL  # elements of one consumer's buffer, after the ring
C_TILES = STAGES * STAGE  # where the two buffers start
FULL = (C_TILES + 2 * C_BUF) * 2 // 8  # the mbarriers, as uint64 indices after the buffers
EMPTY = FULL + STAGES
WRITTEN = EMPTY + STAGES  # per consumer: its 128 threads wrote the buffer (count 128)
FREE = WRITTEN + 2  # per consumer: the buffer's last TMA stores have read it (count 1)
SMEM_BYTES = (FREE + 2) * 8
GROUP_M = 16  # row tiles of one band share B slices in L2
THREADS = 384
N_ACC = BN // 2  # D values per thread of m64n256
_ROUNDS = tuple(range(BN // PANEL // PANELS))  # literal_unroll: acc indices stay constants
_PANEL_RANGE = tuple(range(PANELS))
_PAIRS = (0, 1, 2, 3)  # stmatrix.x4 writes two 8-column chunks: four per panel


@cuda.jit(device=True, forceinline=True)
def tile_origin(tile, M, N):  # noqa: N803
    """(m0, n0) of tile number `tile`: GROUP_M row tiles walk the columns together (their A
    slices and the shared B slice stay in L2).

    The divisions are of 32-bit unsigned values (each operand wrapped in uint32): a 64-bit
    division is a subroutine call in SASS, and the driver's JIT serialises every wgmma of a
    kernel that calls one (each waited for before the next is issued: 7 % slower here)."""
    t = uint32(tile)
    tiles_m = uint32((M + BM - 1) // BM)
    width = uint32(GROUP_M * uint32((N + BN - 1) // BN))
    first_m = uint32(uint32(t // width) * GROUP_M)
    rows = uint32(min(tiles_m - first_m, GROUP_M))
    within = uint32(t % width)
    return (first_m + within % rows) * BM, (within // rows) * BN


@cuda.jit(device=True, forceinline=True)
def store_tile(dc, acc, smem, bars, row0, n0, rnd):
    """The consumer's 64 x 256 outputs (acc) to C at (row0, n0) through its shared buffer:
    per round, wait until the buffer's last TMA stores have read it, stmatrix two panels into it
    (chunk c of row r at c ^ (r % 8): the TMA's 128-byte swizzle), then one thread stores them
    with TMA once all 128 have written. Returns the round count `rnd` for the barriers' phases."""
    tid = cuda.threadIdx.x
    me = tid // 128 - 1
    lead = tid % 128 == 0
    lane = tid % 32
    row = (tid % 128) // 32 * 16 + lane % 8 + 8 * (lane // 8 % 2)  # this lane's stmatrix row
    half = lane // 16  # ... and which of the two 8-column chunks
    base = C_TILES + me * C_BUF
    buf = smem[base:base + C_BUF].reshape(PANELS * PANEL, PANEL)
    for r in cuda.literal_unroll(_ROUNDS):
        if rnd > 0:
            if lead:
                cuda.tma.wait_group_read(0)
                cuda.mbarrier.arrive(bars, FREE + me)
            cuda.mbarrier.wait(bars, FREE + me, (rnd - 1) % 2)
        for p in cuda.literal_unroll(_PANEL_RANGE):
            for jj in cuda.literal_unroll(_PAIRS):
                j = (r * PANELS + p) * 8 + 2 * jj  # the first 8-column chunk of the tile
                chunk = (2 * jj + half) ^ (row % 8)
                cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                              (acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3],
                               acc[4 * j + 4], acc[4 * j + 5], acc[4 * j + 6], acc[4 * j + 7]))
        cuda.fence_proxy_async()  # the TMA (async proxy) reads what these stores wrote
        cuda.mbarrier.arrive(bars, WRITTEN + me)
        if lead:
            cuda.mbarrier.wait(bars, WRITTEN + me, rnd % 2)
            for p in range(PANELS):
                cuda.tma.store(dc, (row0, n0 + (r * PANELS + p) * PANEL),
                               buf[p * PANEL:(p + 1) * PANEL, :])
            cuda.tma.commit_group()
        rnd += 1
    return rnd


@cuda.jit(launch_bounds=(THREADS, 1))
def gemm(c, da, db, dc, M, N, K):  # noqa: N803
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
        for w in range(2):
            cuda.mbarrier.init(bars, WRITTEN + w, 128)
            cuda.mbarrier.init(bars, FREE + w, 1)
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
        rnd = 0  # epilogue rounds so far
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
            rnd = store_tile(dc, acc, smem, bars, m0 + (group - 1) * 64, n0, rnd)
        if tid % 128 == 0:  # the last TMA stores are complete before the block exits
            cuda.tma.wait_group(0)


def descriptors(a, b, c) -> tuple:
    """TMA descriptors of A (M, K) and B (N, K) for this kernel's tiles, and of C (M, N) for
    its epilogue's panels (TMA skips what falls outside C: partial tiles need no guards)."""
    return (cuda.tma.descriptor(a, (BM, BK), 128), cuda.tma.descriptor(b, (BN, BK), 128),
            cuda.tma.descriptor(c, (PANEL, PANEL), 128))


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T into `c` (M, N); `descs` from descriptors(a, b, c) skips remaking them.
    `blocks`: the persistent grid (default: one block per multiprocessor on a GPU, one per
    tile on the CPU target)."""
    M, K = a.shape  # noqa: N806
    N = b.shape[0]  # noqa: N806
    da, db, dc = descs or descriptors(a, b, c)
    tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
    if blocks is None:
        blocks = tiles if isinstance(a, np.ndarray) else min(tiles, _multiprocessors())
    gemm[blocks, THREADS, 0, SMEM_BYTES](c, da, db, dc, M, N, K)


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
