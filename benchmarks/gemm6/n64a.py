"""Variant `n64a` of gpunb.examples.hopper_gemm_wide: each consumer multiplies its 64 rows by the
slice's five 64-column chunks (five m64n64k16 wgmma per 16-deep step into five accumulators of
32 floats, 20 per stage) instead of two m64n160 halves - the instruction shape of cuBLAS's
kernel for this GEMM (nvjet_sm90_hsh_320x128_64x3_1x2, RESULTS.md seventh session), whose
tensor pipe is busy 96.9 % of its cycles. Each epilogue panel is one accumulator. Measured on
an H200 (RESULTS.md, eighth session): 1-2 % slower than the example, with the old producer
and with the A-early one - the A rows are read from shared memory five times per step instead
of twice, and the shape is not what keeps cuBLAS's tensor pipe busy."""

from __future__ import annotations

from benchmarks.gemm6.common import launch_kernel
from gpunb import cuda, float32, uint32, uint64
from gpunb.examples import hopper_gemm

BM, BN, BK, STAGES = 128, 320, 64, 4
CHUNK = 64  # each consumer multiplies its 64 rows by five m64n64 chunks of the slice
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
N_ACC = CHUNK // 2  # D values per thread of one m64n64 accumulator
BC = CHUNK * BK * 2 // 16  # a chunk's offset in a B slice, in 16-byte units
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
def store_panel(buf, p, acc, row, half):
    """stmatrix one accumulator's 64 x 64 outputs into panel `p` of the buffer (chunk c of row
    r at c ^ (r % 8): the TMA's 128-byte swizzle)."""
    for jj in cuda.literal_unroll(_PAIRS):
        j = 2 * jj  # the first 8-column chunk of the pair
        chunk = (j + half) ^ (row % 8)
        cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                      (acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3],
                       acc[4 * j + 4], acc[4 * j + 5], acc[4 * j + 6], acc[4 * j + 7]))


@cuda.jit(device=True, forceinline=True)
def store_round(dc, buf, bars, row0, n0, rnd, first, count):
    """Publish a round's panels (first .. first + count) and let one thread TMA-store them."""
    tid = cuda.threadIdx.x
    me = tid // 128 - 1
    cuda.fence_proxy_async()  # the TMA (async proxy) reads what these stores wrote
    cuda.mbarrier.arrive(bars, WRITTEN + me)
    if tid % 128 == 0:
        cuda.mbarrier.wait(bars, WRITTEN + me, rnd % 2)
        for p in range(count):
            cuda.tma.store(dc, (row0, n0 + (first + p) * PANEL), buf[p * PANEL:(p + 1) * PANEL, :])
        cuda.tma.commit_group()
    return rnd + 1


@cuda.jit(device=True, forceinline=True)
def buffer_free(bars, rnd):
    """Wait until the buffer's last TMA stores have read it (none before the first round)."""
    tid = cuda.threadIdx.x
    me = tid // 128 - 1
    if rnd > 0:
        if tid % 128 == 0:
            cuda.tma.wait_group_read(0)
            cuda.mbarrier.arrive(bars, FREE + me)
        cuda.mbarrier.wait(bars, FREE + me, (rnd - 1) % 2)


@cuda.jit(device=True, forceinline=True)
def store_tile(dc, acc0, acc1, acc2, acc3, acc4, smem, bars, row0, n0, rnd, slot):
    """The consumer's 64 x 320 outputs (acc k: columns 64 k ..) to C at (row0, n0) through its
    buffer in ring stage `slot`, in two rounds (panels 0-2, then 3-4). Returns the round count
    `rnd` for the barriers' phases."""
    tid = cuda.threadIdx.x
    me = tid // 128 - 1
    lane = tid % 32
    row = (tid % 128) // 32 * 16 + lane % 8 + 8 * (lane // 8 % 2)  # this lane's stmatrix row
    half = lane // 16  # ... and which of the two 8-column chunks
    base = slot * STAGE + me * C_BUF
    buf = smem[base:base + C_BUF].reshape(PANELS * PANEL, PANEL)
    buffer_free(bars, rnd)
    store_panel(buf, 0, acc0, row, half)
    store_panel(buf, 1, acc1, row, half)
    store_panel(buf, 2, acc2, row, half)
    rnd = store_round(dc, buf, bars, row0, n0, rnd, 0, 3)
    buffer_free(bars, rnd)
    store_panel(buf, 0, acc3, row, half)
    store_panel(buf, 1, acc4, row, half)
    return store_round(dc, buf, bars, row0, n0, rnd, 3, 2)


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
                    # the whole stage; A now, the B half once the peer's consumers are done
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
        acc2 = cuda.local.array(N_ACC, float32)
        acc3 = cuda.local.array(N_ACC, float32)
        acc4 = cuda.local.array(N_ACC, float32)
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
                    a_k = a_desc + stage + 2 * kk
                    b_k = b_desc + stage + 2 * kk
                    first = kt + kk > 0
                    cuda.wgmma.mma_async(acc0, a_k, b_k, (64, CHUNK, 16), c.dtype, scale_d=first)
                    cuda.wgmma.mma_async(acc1, a_k, b_k + BC, (64, CHUNK, 16), c.dtype,
                                         scale_d=first)
                    cuda.wgmma.mma_async(acc2, a_k, b_k + 2 * BC, (64, CHUNK, 16), c.dtype,
                                         scale_d=first)
                    cuda.wgmma.mma_async(acc3, a_k, b_k + 3 * BC, (64, CHUNK, 16), c.dtype,
                                         scale_d=first)
                    cuda.wgmma.mma_async(acc4, a_k, b_k + 4 * BC, (64, CHUNK, 16), c.dtype,
                                         scale_d=first)
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
            rnd = store_tile(dc, acc0, acc1, acc2, acc3, acc4, smem, bars,
                             m0 + rank * BM + (group - 1) * 64, n0, rnd, held)
        if tid % 128 == 0:  # the last TMA stores are complete before the block exits
            cuda.tma.wait_group(0)
    cluster.sync()  # the peer no longer writes into this block or arrives on its barriers


def descriptors(a, b, c) -> tuple:
    """hopper_gemm's descriptors for 320-wide tiles."""
    return hopper_gemm.descriptors(a, b, c, width=BN)


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with this kernel, on hopper_gemm's persistent grid."""
    launch_kernel(gemm, SMEM_BYTES, c, a, b, descs, blocks)


__all__ = ["BN", "descriptors", "gemm", "launch"]
