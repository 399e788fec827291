"""gpunb.examples.hopper_gemm_wide's kernel as main had it before the ninth session: every tile
320 wide, tile pair `first + k * step` for cluster `first` (13 rounds at 8192^3 on an H200's 66
clusters, the last column tile 192 wide but computed as 320). The control for the tile plan
that replaced it (RESULTS.md, ninth session): `--module benchmarks.gemm7.uniform`."""

from __future__ import annotations

from gpunb import cuda, float32, uint32, uint64

BM, BN, BK, STAGES = 128, 320, 64, 4
HALF_N = BN // 2  # each consumer multiplies its 64 rows by two m64n160 halves of the slice
CLUSTER = 2  # blocks per cluster, along M: they share each B slice
A_TILE, B_TILE = BM * BK, BN * BK  # elements of one stage's tiles
B_HALF = B_TILE // CLUSTER  # the part of a B slice each block of the pair loads for both
STAGE = A_TILE + B_TILE
PANEL = 64  # the epilogue's TMA stores: 64 x 64 panels (128-byte rows: the swizzle's span)
PANELS = 3  # panels in one consumer's buffer: its 5 go out in two rounds (3, 2)
C_BUF = PANELS * PANEL * PANEL  # elements of one consumer's buffer, in the held stage
RING = STAGES * STAGE
FULL = RING * 2 // 8  # the mbarriers, as uint64 indices after the ring
EMPTY = FULL + STAGES
WRITTEN = EMPTY + STAGES  # per consumer: its 128 threads wrote the buffer (count 128)
FREE = WRITTEN + 2  # per consumer: the buffer's last TMA stores have read it (count 1)
PEER = FREE + 2  # per stage: the other block's consumers are done with it (count 1)
DRAINED = PEER + STAGES  # both consumers' last wgmma of a tile are done (count 2)
SMEM_BYTES = (DRAINED + 1) * 8
GROUP_M = 8  # tile pairs (16 row tiles) of one band share B slices in L2
THREADS = 384
N_ACC = HALF_N // 2  # D values per thread of one m64n160 accumulator
B1 = HALF_N * BK * 2 // 16  # the second half's offset in a B slice, in 16-byte units
_ROUNDS = tuple(range((BN // PANEL + PANELS - 1) // PANELS))
N_PANELS = BN // PANEL  # literal_unroll below: acc indices stay constants
_PANEL_RANGE = tuple(range(PANELS))
_PAIRS = (0, 1, 2, 3)  # stmatrix.x4 writes two 8-column chunks: four per panel


@cuda.jit(device=True, forceinline=True)
def pair_origin(pair, M, N):  # noqa: N803
    """(m0, n0) of tile pair number `pair` (rows m0 .. m0 + 2 BM): GROUP_M pairs walk the
    columns together (their A slices and the shared B slice stay in L2).

    The divisions are of 32-bit unsigned values (each operand wrapped in uint32): a 64-bit
    division is a subroutine call in SASS, and the driver's JIT serialises every wgmma of a
    kernel that calls one (each waited for before the next is issued: 7 % slower here)."""
    t = uint32(pair)
    pairs_m = uint32((M + CLUSTER * BM - 1) // (CLUSTER * BM))
    width = uint32(GROUP_M * uint32((N + BN - 1) // BN))
    first_m = uint32(uint32(t // width) * GROUP_M)
    rows = uint32(min(pairs_m - first_m, GROUP_M))
    within = uint32(t % width)
    return (first_m + within % rows) * (CLUSTER * BM), (within // rows) * BN


@cuda.jit(device=True, forceinline=True)
def store_tile(dc, acc0, acc1, smem, bars, row0, n0, rnd, slot):
    """The consumer's 64 x 320 outputs (acc0: columns 0-159, acc1: 160-319) to C at (row0, n0)
    through its buffer in ring stage `slot`: per round, wait until the buffer's last TMA stores
    have read it, stmatrix up to three panels into it (chunk c of row r at c ^ (r % 8): the
    TMA's 128-byte swizzle), then one thread stores them with TMA once all 128 have written.
    Returns the round count `rnd` for the barriers' phases."""
    tid = cuda.threadIdx.x
    me = tid // 128 - 1
    lead = tid % 128 == 0
    lane = tid % 32
    row = (tid % 128) // 32 * 16 + lane % 8 + 8 * (lane // 8 % 2)  # this lane's stmatrix row
    half = lane // 16  # ... and which of the two 8-column chunks
    base = slot * STAGE + me * C_BUF
    buf = smem[base:base + C_BUF].reshape(PANELS * PANEL, PANEL)
    for r in cuda.literal_unroll(_ROUNDS):
        if rnd > 0:
            if lead:
                cuda.tma.wait_group_read(0)
                cuda.mbarrier.arrive(bars, FREE + me)
            cuda.mbarrier.wait(bars, FREE + me, (rnd - 1) % 2)
        for p in cuda.literal_unroll(_PANEL_RANGE):
            if r * PANELS + p < N_PANELS:
                for jj in cuda.literal_unroll(_PAIRS):
                    j = (r * PANELS + p) * 8 + 2 * jj  # the first 8-column chunk of the tile
                    chunk = (2 * jj + half) ^ (row % 8)
                    if j < HALF_N // 8:
                        cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                                      (acc0[4 * j], acc0[4 * j + 1], acc0[4 * j + 2],
                                       acc0[4 * j + 3], acc0[4 * j + 4], acc0[4 * j + 5],
                                       acc0[4 * j + 6], acc0[4 * j + 7]))
                    else:
                        q = j - HALF_N // 8
                        cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                                      (acc1[4 * q], acc1[4 * q + 1], acc1[4 * q + 2],
                                       acc1[4 * q + 3], acc1[4 * q + 4], acc1[4 * q + 5],
                                       acc1[4 * q + 6], acc1[4 * q + 7]))
        cuda.fence_proxy_async()  # the TMA (async proxy) reads what these stores wrote
        cuda.mbarrier.arrive(bars, WRITTEN + me)
        if lead:
            cuda.mbarrier.wait(bars, WRITTEN + me, rnd % 2)
            for p in range(min(PANELS, N_PANELS - r * PANELS)):
                cuda.tma.store(dc, (row0, n0 + (r * PANELS + p) * PANEL),
                               buf[p * PANEL:(p + 1) * PANEL, :])
            cuda.tma.commit_group()
        rnd += 1
    return rnd


@cuda.jit(launch_bounds=(THREADS, 1), cluster_dims=(CLUSTER, 1, 1))
def gemm(c, da, db, dc, M, N, K):  # noqa: N803
    # one kernel per input dtype: c.dtype is a compile-time constant (float16 or bfloat16)
    smem = cuda.shared.array(0, c.dtype, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    cluster = cuda.cg.this_cluster()
    rank = cluster.block_rank()  # which tile of the pair: rows m0 + rank * BM
    tid = cuda.threadIdx.x
    group = tid // 128
    pairs = ((M + CLUSTER * BM - 1) // (CLUSTER * BM)) * ((N + BN - 1) // BN)
    ktiles = (K + BK - 1) // BK
    first, step = cuda.blockIdx.x // CLUSTER, cuda.gridDim.x // CLUSTER  # this cluster's pairs
    if tid == 0:
        for s in range(STAGES):
            cuda.mbarrier.init(bars, FULL + s, 1)
            cuda.mbarrier.init(bars, EMPTY + s, 2)  # this block's two consumers
            cuda.mbarrier.init(bars, PEER + s, 1)  # the other block's producer, for its two
        cuda.mbarrier.init(bars, DRAINED, 2)
        for w in range(2):
            cuda.mbarrier.init(bars, WRITTEN + w, 128)
            cuda.mbarrier.init(bars, FREE + w, 1)
    cluster.sync()  # the peer's barriers are initialised before anything reaches them
    # persistent: each cluster takes pairs first, first + step, ...; `it` counts K-slices
    # over all of them, so the ring's stages and phases run on from tile to tile
    if group == 0:
        cuda.setmaxnreg_dec(40)
        if tid == 0:
            it = 0
            for pair in range(first, pairs, step):
                m0, n0 = pair_origin(pair, M, N)
                for kt in range(ktiles):
                    s = it % STAGES
                    phase = (it // STAGES - 1) % 2
                    if it >= STAGES:  # this block's consumers are done with the stage
                        cuda.mbarrier.wait(bars, EMPTY + s, phase)
                        cuda.mbarrier.arrive(bars, PEER + s, block_rank=rank ^ 1)
                    # the full barrier expects the whole stage: this block's A, its half of B
                    # and the peer's half. A goes now (only this block reads or writes it);
                    # the B half, written into both blocks, once the peer's consumers are done
                    cuda.mbarrier.arrive_expect_tx(bars, FULL + s, STAGE * 2)
                    base = s * STAGE
                    cuda.tma.load(smem[base:base + A_TILE], da, (m0 + rank * BM, kt * BK),
                                  bars, FULL + s)
                    if it >= STAGES:
                        cuda.mbarrier.wait(bars, PEER + s, phase)
                    half = base + A_TILE + rank * B_HALF
                    cuda.tma.load(smem[half:half + B_HALF], db,
                                  (n0 + rank * (BN // CLUSTER), kt * BK), bars, FULL + s,
                                  multicast=(1 << CLUSTER) - 1)
                    it += 1
    else:
        cuda.setmaxnreg_inc(232)
        acc0 = cuda.local.array(N_ACC, float32)
        acc1 = cuda.local.array(N_ACC, float32)
        # stage 0's descriptors; a stage, and a k16 step (32 bytes), are added in 16-byte units
        a_desc = cuda.wgmma.descriptor(smem[(group - 1) * 64 * BK:], 128)
        b_desc = cuda.wgmma.descriptor(smem[A_TILE:], 128)
        it = 0
        rnd = 0  # epilogue rounds so far
        held = -1  # the stage that holds the last tile's epilogue buffers
        tiles = 0
        for pair in range(first, pairs, step):
            m0, n0 = pair_origin(pair, M, N)
            for kt in range(ktiles):
                s = it % STAGES
                cuda.mbarrier.wait(bars, FULL + s, (it // STAGES) % 2)
                stage = s * (STAGE * 2 // 16)
                cuda.wgmma.fence()
                for kk in range(BK // 16):
                    cuda.wgmma.mma_async(acc0, a_desc + stage + 2 * kk, b_desc + stage + 2 * kk,
                                         (64, HALF_N, 16), c.dtype, scale_d=kt + kk > 0)
                    cuda.wgmma.mma_async(acc1, a_desc + stage + 2 * kk,
                                         b_desc + stage + B1 + 2 * kk,
                                         (64, HALF_N, 16), c.dtype, scale_d=kt + kk > 0)
                cuda.wgmma.commit_group()
                # one group stays in flight; the one before it is done: its stage is free
                cuda.wgmma.wait_group(1)
                if tid % 128 == 0:
                    if kt > 0:
                        cuda.mbarrier.arrive(bars, EMPTY + (it - 1) % STAGES)
                    elif held >= 0:  # the last tile's stores have read the held stage
                        cuda.tma.wait_group_read(0)
                        cuda.mbarrier.arrive(bars, EMPTY + held)
                it += 1
            cuda.wgmma.wait_group(0)
            held = (it - 1) % STAGES
            if tid % 128 == 0:
                cuda.mbarrier.arrive(bars, DRAINED)
            cuda.mbarrier.wait(bars, DRAINED, tiles % 2)  # both consumers are done reading it
            tiles += 1
            rnd = store_tile(dc, acc0, acc1, smem, bars, m0 + rank * BM + (group - 1) * 64, n0,
                             rnd, held)
        if tid % 128 == 0:  # the last TMA stores are complete before the block exits
            cuda.tma.wait_group(0)
    cluster.sync()  # the peer no longer writes into this block or arrives on its barriers


def descriptors(a, b, c) -> tuple:
    """A's, B's (160 x 64 boxes) and C's descriptors, as hopper_gemm made them for 320."""
    from benchmarks.gemm6.common import uniform_descriptors

    return uniform_descriptors(a, b, c, BN)


def launch(c, a, b, descs=None, blocks: int | None = None, balanced: bool = False) -> None:
    """C = A @ B.T with this kernel on the persistent grid (benchmarks.gemm6.common's)."""
    from benchmarks.gemm6.common import launch_kernel

    launch_kernel(gemm, SMEM_BYTES, c, a, b, descs or descriptors(a, b, c), blocks, balanced)


__all__ = ["BN", "SMEM_BYTES", "descriptors", "gemm", "launch"]
