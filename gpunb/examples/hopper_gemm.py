"""A Hopper GEMM in gpunb's kernel language: thread-block clusters, multicast TMA loads,
mbarrier pipeline, wgmma, warp specialisation - C = A @ B.T for A (M, K) and B (N, K), float16
or bfloat16, float32 accumulation, C in the inputs' type.

Blocks run in clusters of two (`cluster_dims=(2, 1, 1)`) that compute vertically adjacent
BM x BN tiles - the same columns of C, so the same BN x BK slices of B - one after another
(persistent: each cluster walks its own sequence of tile pairs, both blocks in step). Each block
has three warpgroups: warpgroup 0 is the producer (one thread issues the TMA loads of a
STAGES-deep ring of K-slices, after waiting for the consumers to free the slot on its "empty"
mbarrier; it gives its registers away with setmaxnreg_dec and runs ahead into the next tile
while the consumers store the last), warpgroups 1 and 2 each own 64 rows of the tile and
multiply with wgmma m64n256k16 straight from the 128-byte-swizzled shared tiles.

Why clusters: the B slice the two blocks share is read from L2 once, not twice. Each block loads
its own A slice and one half of the B slice (a BN/2 x BK box) with `multicast=0b11`, which
writes that half into both blocks' shared memory and completes its bytes on both blocks' "full"
mbarrier of the stage: each block's full barrier expects the whole stage (its A, both B
halves). Without clusters the two blocks ask L2 for the same B lines at different moments and
Hopper's L2 request coalescer merged only 15 % of the requests (benchmarks/RESULTS.md, fifth
session). On an H200, which runs every 8192^3 GEMM at its 700 W cap, the saving holds a 2-3 %
higher clock than the kernel without clusters, and the pair's waits for each other lose about
as much in flops per clock: 96 % of Triton either way (RESULTS.md, sixth session). The rules
this imposes:
- a stage may be refilled only when the consumers of BOTH blocks are done with it (the refill
  writes into the peer too): once its own consumers have freed a stage, the producer tells the
  peer's producer (`cuda.mbarrier.arrive(bars, PEER + s, block_rank=peer)`), and waits for the
  peer's word before it refills (CUTLASS's consumers arrive on both blocks' barriers
  themselves: 1 % slower here in interleaved rounds on an H200, 7 % in single runs; the
  producer's thread has nothing else to do while it waits). The rule is for the multicast B
  halves: hopper_gemm_wide loads a stage's A slice, which only its own block reads, before the
  peer's word (about 1 % faster there; even for this kernel: RESULTS.md, eighth session);
- the barriers are initialised before any block can reach them from the other:
  `cluster.sync()` after the init (it orders mbarrier.init cluster-wide);
- no block exits while its peer may still write into it or arrive on its barriers:
  `cluster.sync()` before the end;
- both blocks walk the same tiles and K-slices in the same order (the rows of a pair differ by
  BM; a second tile past M loads zeros and stores nothing: TMA clips it).

The epilogue goes through shared memory: each consumer writes its 64 x 256 outputs with
stmatrix into a 128-byte-swizzled buffer of two 64 x 64 panels (bank-conflict free), and one of
its threads stores each panel with a TMA store that is left in flight while the warpgroup goes
on to its next tile (two rounds of two panels: 4 stages and the buffers fit in 227 KiB).

Two kernels, chosen by the problem. This module's kernel (`gemm`) has 128 x 256 tiles;
hopper_gemm_wide's has 128 x 320 tiles, a fourth ring stage that holds the tile's epilogue,
and walks a host-made plan (hopper_gemm_plan) that mixes 320- and 256-wide tiles so that its
busiest cluster has the least work (its docstring says how). On an H200 (66 clusters
resident; RESULTS.md, ninth session, 21 shuffled rounds) the wide kernel with its plan ran at
632 / 653 TFLOP/s at 8192^3 (FP16 / BF16) against Triton's tutorial matmul's 626 / 655 and
cuBLAS's 638 / 666 - round by round 100.7 % / 100.0 % of Triton - where with 320-wide tiles
only it ran at 616 / 634; at 4096^3 at 579 / 609 against this kernel's 579 / 597. The rule
(choose_width): with P clusters resident, this kernel needs pairs = ceil(M / 256) *
ceil(N / 256) tile pairs in ceil(pairs / P) rounds of 256 columns' work; the wide kernel's
busiest cluster does hopper_gemm_plan.busiest columns' work. launch() runs the wide kernel
unless its work exceeds the narrow one's by more than WIDE_SLACK (4 %; ties go to the wide
kernel, the deeper ring):
- 8192^3: 4032 columns (11 x 320 + 2 x 256) against 16 rounds of 256, 4096: 320;
- 4096^3: 1024 (8 tiles of 320, 246 of 256) against 4 rounds of 256: a tie, 320 (measured
  level in FP16, 2-3 % faster in BF16 in two calls; 320-wide tiles only: 1280, 19 % slower);
- where every tile pair of the 256-wide kernel runs at once (one round; the CPU target runs
  all of them at once): 256 - no plan finishes sooner, and this kernel compiles faster (27 k
  characters of PTX against the two-width kernel's 47 k).
The wide kernel's 160 accumulator registers per consumer thread need setmaxnreg's 232, which
ptxas grants only when it builds the whole program (README); this kernel's 128 fit in the 168
that a 384-thread kernel has anyway.

The same kernels run on the CPU target (slowly, exactly; its clusters too) and compile for
sm_90a on an H100.

    from gpunb.examples import hopper_gemm
    c = hopper_gemm.matmul(a, b)            # a (M, K), b (N, K): device or numpy arrays
    hopper_gemm.launch(c, a, b, width=256)  # into c (M, N), the 128 x 256 kernel forced
"""

from __future__ import annotations

import numpy as np

from gpunb import cuda, float32, int32, uint32, uint64
from gpunb.examples import hopper_gemm_plan as hopper_plan
from gpunb.examples import hopper_gemm_wide

BM, BN, BK, STAGES = 128, 256, 64, 4
CLUSTER = 2  # blocks per cluster, along M: they share each B slice
A_TILE, B_TILE = BM * BK, BN * BK  # elements of one stage's tiles
B_HALF = B_TILE // CLUSTER  # the part of a B slice each block of the pair loads for both
STAGE = A_TILE + B_TILE
PANEL = 64  # the epilogue's TMA stores: 64 x 64 panels (128-byte rows: the swizzle's span)
PANELS = 2  # panels in one consumer's buffer: the 4 of its 64 x 256 go out in two rounds
C_BUF = PANELS * PANEL * PANEL  # elements of one consumer's buffer, after the ring
C_TILES = STAGES * STAGE  # where the two buffers start
FULL = (C_TILES + 2 * C_BUF) * 2 // 8  # the mbarriers, as uint64 indices after the buffers
EMPTY = FULL + STAGES
WRITTEN = EMPTY + STAGES  # per consumer: its 128 threads wrote the buffer (count 128)
FREE = WRITTEN + 2  # per consumer: the buffer's last TMA stores have read it (count 1)
PEER = FREE + 2  # per stage: the other block's consumers are done with it (count 1)
SMEM_BYTES = (PEER + STAGES) * 8
GROUP_M = 8  # tile pairs (16 row tiles) of one band share B slices in L2
THREADS = 384
N_ACC = BN // 2  # D values per thread of m64n256
_ROUNDS = tuple(range(BN // PANEL // PANELS))  # literal_unroll: acc indices stay constants
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
                    if it >= STAGES:  # both blocks' consumers are done with the stage
                        phase = (it // STAGES - 1) % 2
                        cuda.mbarrier.wait(bars, EMPTY + s, phase)
                        cuda.mbarrier.arrive(bars, PEER + s, block_rank=rank ^ 1)
                        cuda.mbarrier.wait(bars, PEER + s, phase)
                    # this block's A, its half of B and the peer's half of B
                    cuda.mbarrier.arrive_expect_tx(bars, FULL + s, STAGE * 2)
                    base = s * STAGE
                    cuda.tma.load(smem[base:base + A_TILE], da, (m0 + rank * BM, kt * BK),
                                  bars, FULL + s)
                    half = base + A_TILE + rank * B_HALF
                    cuda.tma.load(smem[half:half + B_HALF], db,
                                  (n0 + rank * (BN // CLUSTER), kt * BK), bars, FULL + s,
                                  multicast=(1 << CLUSTER) - 1)
                    it += 1
    else:
        cuda.setmaxnreg_inc(232)
        acc = cuda.local.array(N_ACC, float32)
        # stage 0's descriptors; a stage, and a k16 step (32 bytes), are added in 16-byte units
        a_desc = cuda.wgmma.descriptor(smem[(group - 1) * 64 * BK:], 128)
        b_desc = cuda.wgmma.descriptor(smem[A_TILE:], 128)
        it = 0
        rnd = 0  # epilogue rounds so far
        for pair in range(first, pairs, step):
            m0, n0 = pair_origin(pair, M, N)
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
            rnd = store_tile(dc, acc, smem, bars, m0 + rank * BM + (group - 1) * 64, n0, rnd)
        if tid % 128 == 0:  # the last TMA stores are complete before the block exits
            cuda.tma.wait_group(0)
    cluster.sync()  # the peer no longer writes into this block or arrives on its barriers


WIDTHS = (BN, hopper_gemm_wide.BN)  # the tile widths launch() chooses between
WIDE_SLACK = 1.04  # the wide kernel's predicted time may exceed the narrow one's by this much
_KERNELS = {BN: (gemm, SMEM_BYTES), hopper_gemm_wide.BN: (hopper_gemm_wide.gemm,
                                                        hopper_gemm_wide.SMEM_BYTES)}


def choose_width(M: int, N: int, clusters: int | None) -> int:  # noqa: N803
    """The tile width for C (M, N) on a GPU holding `clusters` clusters at once (None: all of
    them, as on the CPU target): 256 where its tile pairs all run at once (no plan does
    better than one 256-wide round, and this kernel compiles faster); else 320 (the wide
    kernel and its plan of 320- and 256-wide tiles) unless its busiest cluster's work exceeds
    WIDE_SLACK times the 256-wide kernel's rounds (the module docstring says why)."""
    pairs = -(-M // (CLUSTER * BM)) * -(-N // BN)
    if clusters is None or pairs <= clusters:
        return WIDTHS[0]
    narrow = -(-pairs // clusters) * BN
    wide = hopper_plan.busiest(hopper_plan.plan(-(-M // (CLUSTER * BM)), N, clusters))
    return WIDTHS[1] if wide <= WIDE_SLACK * narrow else WIDTHS[0]


def descriptors(a, b, c, width: int | None = None) -> tuple:
    """TMA descriptors of A (M, K) and B (N, K) for the boxes of the kernel of tile `width`
    (default: choose_width's for these shapes and this GPU) - A's tiles, half of B's: each
    block of a pair loads one half for both; the 320-wide kernel's plan has 256-wide tiles
    too, so for it B's second descriptor has their half - and of C (M, N) for the epilogue's
    panels (TMA skips what falls outside C: partial tiles need no guards). B's first box,
    (width / 2, BK), tells launch() the width they were made for."""
    if width is None:
        width = choose_width(a.shape[0], b.shape[0], resident_clusters(a))
    if width not in WIDTHS:
        raise ValueError(f"hopper_gemm has tiles {WIDTHS[0]} or {WIDTHS[1]} wide, not {width!r}")
    bs = tuple(cuda.tma.descriptor(b, (w // CLUSTER, BK), 128) for w in WIDTHS[::-1]
               if w <= width)
    return (cuda.tma.descriptor(a, (BM, BK), 128), *bs,
            cuda.tma.descriptor(c, (PANEL, PANEL), 128))


def launch(c, a, b, descs=None, blocks: int | None = None, width: int | None = None) -> None:
    """C = A @ B.T into `c` (M, N) with the kernel of tile `width` (256 or 320; default: that
    of `descs`, else choose_width's); `descs` from descriptors(a, b, c) skips remaking them.
    `blocks`: the persistent grid, a multiple of the cluster's 2 blocks (default: as many
    clusters as the GPU holds at once, or one per tile pair on the CPU target)."""
    M, K = a.shape  # noqa: N806
    N = b.shape[0]  # noqa: N806
    if descs is None:
        descs = descriptors(a, b, c, width)
    elif width is not None and descs[1].box[0] * CLUSTER != width:
        raise ValueError(f"these descriptors are for {descs[1].box[0] * CLUSTER}-wide tiles, "
                         f"not {width}: make them with descriptors(a, b, c, width={width})")
    width = descs[1].box[0] * CLUSTER
    if width not in _KERNELS or len(descs) != 3 + (width == WIDTHS[1]):
        raise ValueError(f"B's descriptor has a box of {descs[1].box}, no tile width of this "
                         "GEMM's: make the descriptors with hopper_gemm.descriptors(a, b, c)")
    kernel, smem = _KERNELS[width]
    if width == WIDTHS[0]:
        pairs = -(-M // (CLUSTER * BM)) * -(-N // width)
        args = (c, *descs, M, N, K)
        if blocks is None:
            clusters = pairs if isinstance(a, np.ndarray) else min(
                pairs, _kernel_clusters(kernel, smem, args))
            blocks = CLUSTER * clusters
    else:
        if blocks is None:
            blocks = CLUSTER * (hopper_plan.tiles(M, N) if isinstance(a, np.ndarray)
                                else resident_clusters(a))
        args = (c, *descs[:-1], descs[-1], _device_plan(a, M, N, blocks // CLUSTER), M, N, K)
    kernel[blocks, THREADS, 0, smem](*args)


_PLANS: dict = {}  # (row pairs, N, clusters, device) -> the plan as a device array


def _device_plan(a, M: int, N: int, clusters: int):  # noqa: N803
    """hopper_gemm_plan's plan for C (M, N) on `clusters` clusters, on `a`'s side (numpy for
    the CPU target, else a device array made once per shape and device)."""
    m_pairs = -(-M // (CLUSTER * BM))
    if isinstance(a, np.ndarray):
        return hopper_plan.plan(m_pairs, N, clusters)
    key = (m_pairs, N, clusters, cuda.get_current_device().id)
    found = _PLANS.get(key)
    if found is None:
        found = _PLANS[key] = cuda.to_device(np.ascontiguousarray(
            hopper_plan.plan(m_pairs, N, clusters)))
    return found


_RESIDENT: dict = {}  # (kernel, device, argument types) -> clusters resident at once


def _kernel_clusters(kernel, smem: int, args: tuple) -> int:
    """The clusters of `kernel` the GPU holds at once (cuOccupancyMaxActiveClusters): 2-block
    clusters sit within a GPC, so on an H100 not all 132 SMs take one at one block per SM."""
    spec = kernel.specialization_for_launch(args)[0]
    key = (kernel, cuda.get_current_device().id, spec.argtypes)
    found = _RESIDENT.get(key)
    if found is None:
        found = _RESIDENT[key] = kernel.max_active_clusters(THREADS, smem,
                                                            signature=spec.argtypes)
    return found


@cuda.jit(launch_bounds=(THREADS, 1), cluster_dims=(CLUSTER, 1, 1))
def _occupant(flag):
    """Never launched: asked how many clusters of 384-thread blocks with the GEMMs' shared
    memory fit at once before either GEMM is compiled. Both take over half an SM's shared
    memory, so one block per SM: the shared memory decides, not the code."""
    flag[0] = 0


def resident_clusters(a) -> int | None:
    """Clusters of the GEMMs the current GPU holds at once (None for numpy inputs: the CPU
    target runs one cluster per tile pair)."""
    if isinstance(a, np.ndarray):
        return None
    key = (_occupant, cuda.get_current_device().id)
    found = _RESIDENT.get(key)
    if found is None:
        smem = max(smem for _, smem in _KERNELS.values())
        found = _RESIDENT[key] = _occupant.max_active_clusters(THREADS, smem,
                                                               signature=(int32[::1],))
    return found


def matmul(a, b, width: int | None = None):
    """A @ B.T, a new array of the inputs' dtype (on the inputs' side: numpy or device), with
    the kernel of tile `width` (default: choose_width's)."""
    if isinstance(a, np.ndarray):
        c = np.zeros((a.shape[0], b.shape[0]), a.dtype)
    else:
        c = cuda.device_array((a.shape[0], b.shape[0]), a.dtype)
    launch(c, a, b, width=width)
    return c


__all__ = ["BK", "BM", "BN", "CLUSTER", "STAGES", "WIDTHS", "choose_width", "descriptors", "gemm",
           "launch", "matmul", "resident_clusters"]
