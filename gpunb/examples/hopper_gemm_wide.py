"""The 128 x 320 kernel of gpunb.examples.hopper_gemm: the same scheme (2-block clusters sharing
each B slice by multicast, one producer and two consumer warpgroups, persistent) with wider tiles,
a 4-stage ring whose last stage of each tile holds that tile's epilogue, and a host-made plan of
tiles 320 or 256 columns wide (hopper_gemm_plan). hopper_gemm.launch runs it where its plan's
busiest cluster has about as little work as the 128 x 256 kernel's (8192^3 and 4096^3 on an
H200); `hopper_gemm.launch(c, a, b, width=320)` forces it.

Why: Nsight Compute on an H200 (benchmarks/RESULTS.md, seventh session) put the 128 x 256
kernel's consumer warpgroups on their full-stage waits in a quarter of their samples, with the
producer waiting mostly for the peer block's consumers (a multicast stage is refilled only when
both blocks are done with it): the ring is too shallow for the jitter between the pair. cuBLAS
runs the same scheme with 320 x 128 tiles. Here:
- tiles are 128 x 320 (the pair still shares each B slice; each block multicasts a 160 x 64
  half): a stage is 56 KiB and keeps the tensor cores busy for 1280 clocks instead of 1024, for
  7 % fewer bytes per flop;
- each consumer multiplies its 64 rows by the slice's two 160-column halves
  (two m64n160k16 wgmma per 16-deep step, two accumulators of 80 floats: 160 registers);
- the ring has 4 stages (224 KiB) and no epilogue buffers of its own: the consumers keep the
  tile's last stage instead of freeing it, wait until both are done reading it (the `DRAINED`
  mbarrier: the two consumers' buffers overlap the other's A rows and the B slice), write their
  outputs into it (three 64 x 64 panels each, in two rounds) and free it after their first
  wgmma of the next tile, once its TMA stores have read it. The producer meanwhile fills the
  other three stages with the next tile's slices;
- the producer loads a stage's A slice as soon as its own consumers have freed the stage, and
  only the B half it multicasts waits for the peer's consumers too (hopper_gemm's rule for
  refills concerns the bytes written into both blocks): about 1 % (RESULTS.md, eighth session);
- each cluster walks its own list of tiles, `plan[cluster]` (hopper_gemm_plan: global memory,
  two int32 per tile read by every thread), some 320 and some 256 wide: a 256-wide tile loads
  its B halves through a second descriptor (a TMA box is fixed per descriptor: 128 x 64),
  expects 48 KiB on the stage's full barrier, its consumers issue an m64n160 and an m64n96
  wgmma per step (columns 0-159 into the first accumulator, as a 320-wide tile does, 160-255
  into the second's first 48 registers) and store 4 panels instead of 5 through the same
  epilogue code; the stages keep their 320-wide size. The branch on the width is uniform per
  tile; the kernel holds both widths' K loops and one epilogue. At 8192^3 the plan pads
  nothing (24 x 320 + 2 x 256 columns per band) and its busiest cluster does 4032 columns of
  work against the 4160 of 13 rounds of 320-wide tiles: on an
  H200 (RESULTS.md, ninth session; FP16 / BF16, 21 shuffled rounds) 643 / 660 and 631 / 646
  TFLOP/s against 628 / 645 and 617 / 632 for the 320-only plan in two calls (2.4-2.8 % round
  by round), Triton's tutorial matmul 633 / 661 and 636 / 652, cuBLAS 645 / 671 and 641 / 657.

What it needs: 160 accumulator registers per consumer thread, which only a ptxas that
allocates the consumer's code with setmaxnreg's 232 registers builds without spilling: one that
compiles the whole program, as gpunb does for every kernel that uses setmaxnreg (README). A
relocatable build (the driver's linker, nvJitLink) caps the whole kernel at the 168 registers
of 384 threads x 1 block, spills and serialises the wgmma ("C7512 ... serialized due to
insufficient register resources"): 48 TFLOP/s against 643 / 678 (FP16 / BF16, 8192^3).
"""

from __future__ import annotations

from gpunb import cuda, float32, uint64
from gpunb.examples.hopper_gemm_plan import NARROW

BM, BN, BK, STAGES = 128, 320, 64, 4
HALF_N = BN // 2  # each consumer multiplies its 64 rows by two m64n160 halves of the slice
CLUSTER = 2  # blocks per cluster, along M: they share each B slice
A_TILE, B_TILE = BM * BK, BN * BK  # elements of one stage's tiles
STAGE = A_TILE + B_TILE  # a stage holds a 320-wide tile's slices; a 256-wide one uses less
PANEL = 64  # the epilogue's TMA stores: 64 x 64 panels (128-byte rows: the swizzle's span)
PANELS = 3  # panels in one consumer's buffer: its 5 (or 4) go out in two rounds
C_BUF = PANELS * PANEL * PANEL  # elements of one consumer's buffer, in the held stage
RING = STAGES * STAGE
FULL = RING * 2 // 8  # the mbarriers, as uint64 indices after the ring
EMPTY = FULL + STAGES
WRITTEN = EMPTY + STAGES  # per consumer: its 128 threads wrote the buffer (count 128)
FREE = WRITTEN + 2  # per consumer: the buffer's last TMA stores have read it (count 1)
PEER = FREE + 2  # per stage: the other block's consumers are done with it (count 1)
DRAINED = PEER + STAGES  # both consumers' last wgmma of a tile are done (count 2)
SMEM_BYTES = (DRAINED + 1) * 8
THREADS = 384
N_ACC = HALF_N // 2  # D values per thread of one m64n160 accumulator
_PANEL_RANGE = tuple(range(PANELS))
_PAIRS = (0, 1, 2, 3)  # stmatrix.x4 writes two 8-column chunks: four per panel


def _store_for(width: int):
    """The epilogue of tiles up to `width` wide (the accumulators' indices are compile-time
    constants): store(dc, acc0, acc1, smem, bars, row0, n0, rnd, slot, wide) writes the
    consumer's 64 x width outputs (acc0: the first width / 2 columns, acc1: the rest) to C at
    (row0, n0) through its buffer in ring stage `slot` - or, for a 256-wide tile (`wide`
    False: its K loop leaves columns 0-159 in acc0 and 160-255 in acc1, as a 320-wide one
    does), its first 256 columns: the panels past them are skipped at run time. Per round,
    wait until the buffer's last TMA stores have read it, stmatrix up to three panels into it
    (chunk c of row r at c ^ (r % 8): the TMA's 128-byte swizzle), then one thread stores them
    with TMA once all 128 have written. Returns the round count `rnd` for the barriers'
    phases. (One epilogue for both widths: a second one, for the 256-wide tiles, made the
    kernel's cold compile a third longer.)"""
    half_n = width // 2
    n_panels = width // PANEL
    narrow_panels = NARROW // PANEL
    rounds = tuple(range(-(-n_panels // PANELS)))

    @cuda.jit(device=True, forceinline=True)
    def store(dc, acc0, acc1, smem, bars, row0, n0, rnd, slot, wide):
        tid = cuda.threadIdx.x
        me = tid // 128 - 1
        lead = tid % 128 == 0
        lane = tid % 32
        row = (tid % 128) // 32 * 16 + lane % 8 + 8 * (lane // 8 % 2)  # this lane's stmatrix row
        half = lane // 16  # ... and which of the two 8-column chunks
        base = slot * STAGE + me * C_BUF
        buf = smem[base:base + C_BUF].reshape(PANELS * PANEL, PANEL)
        panels = n_panels if wide else narrow_panels
        for r in cuda.literal_unroll(rounds):
            if rnd > 0:
                if lead:
                    cuda.tma.wait_group_read(0)
                    cuda.mbarrier.arrive(bars, FREE + me)
                cuda.mbarrier.wait(bars, FREE + me, (rnd - 1) % 2)
            for p in cuda.literal_unroll(_PANEL_RANGE):
                if r * PANELS + p < n_panels:
                    if r * PANELS + p < narrow_panels or wide:
                        for jj in cuda.literal_unroll(_PAIRS):
                            j = (r * PANELS + p) * 8 + 2 * jj  # the tile's 8-column chunk
                            chunk = (2 * jj + half) ^ (row % 8)
                            if j < half_n // 8:
                                cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                                              (acc0[4 * j], acc0[4 * j + 1], acc0[4 * j + 2],
                                               acc0[4 * j + 3], acc0[4 * j + 4],
                                               acc0[4 * j + 5], acc0[4 * j + 6],
                                               acc0[4 * j + 7]))
                            else:
                                q = j - half_n // 8
                                cuda.stmatrix(buf, (p * PANEL + row, chunk * 8),
                                              (acc1[4 * q], acc1[4 * q + 1], acc1[4 * q + 2],
                                               acc1[4 * q + 3], acc1[4 * q + 4],
                                               acc1[4 * q + 5], acc1[4 * q + 6],
                                               acc1[4 * q + 7]))
            cuda.fence_proxy_async()  # the TMA (async proxy) reads what these stores wrote
            cuda.mbarrier.arrive(bars, WRITTEN + me)
            if lead:
                cuda.mbarrier.wait(bars, WRITTEN + me, rnd % 2)
                for p in range(max(0, min(PANELS, panels - r * PANELS))):
                    cuda.tma.store(dc, (row0, n0 + (r * PANELS + p) * PANEL),
                                   buf[p * PANEL:(p + 1) * PANEL, :])
                cuda.tma.commit_group()
            rnd += 1
        return rnd

    return store


def _mainloop_for(n_first: int, n_second: int):
    """The consumer's K loop over one tile (the wgmma shapes are compile-time constants):
    mainloop(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held) waits for each stage to
    land, issues an m64n(n_first)k16 wgmma into acc0 and an m64n(n_second)k16 into acc1 (the
    B slice's next n_second rows) per 16-deep step, keeps one group in flight and frees the
    stage of the group before (the tile's first stage frees the last tile's held stage
    instead, once its TMA stores have read it); the tile's last group is waited for. Returns
    `it`, the K-slices so far (the ring's stages and phases run on across tiles). A 320-wide
    tile is 160 + 160 columns; a 256-wide one 160 + 96, so that its accumulators hold the
    columns where a 320-wide tile's do (acc0 0-159, acc1 from 160) and one epilogue stores
    both."""
    b1 = n_first * BK * 2 // 16  # the second wgmma's rows in a B slice, in 16-byte units

    @cuda.jit(device=True, forceinline=True)
    def mainloop(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held):
        lead = cuda.threadIdx.x % 128 == 0
        for kt in range(ktiles):
            s = it % STAGES
            cuda.mbarrier.wait(bars, FULL + s, (it // STAGES) % 2)
            stage = s * (STAGE * 2 // 16)
            cuda.wgmma.fence()
            for kk in range(BK // 16):
                cuda.wgmma.mma_async(acc0, a_desc + stage + 2 * kk, b_desc + stage + 2 * kk,
                                     (64, n_first, 16), c.dtype, scale_d=kt + kk > 0)
                cuda.wgmma.mma_async(acc1, a_desc + stage + 2 * kk,
                                     b_desc + stage + b1 + 2 * kk,
                                     (64, n_second, 16), c.dtype, scale_d=kt + kk > 0)
            cuda.wgmma.commit_group()
            # one group stays in flight; the one before it is done: its stage is free
            cuda.wgmma.wait_group(1)
            if lead:
                if kt > 0:
                    cuda.mbarrier.arrive(bars, EMPTY + (it - 1) % STAGES)
                elif held >= 0:
                    cuda.tma.wait_group_read(0)
                    cuda.mbarrier.arrive(bars, EMPTY + held)
            it += 1
        cuda.wgmma.wait_group(0)
        return it

    return mainloop


_store = _store_for(BN)
_loop_wide = _mainloop_for(HALF_N, HALF_N)  # 320 = 160 + 160 columns
_loop_narrow = _mainloop_for(HALF_N, NARROW - HALF_N)  # 256 = 160 + 96


@cuda.jit(device=True, forceinline=True)
def _load_stage(smem, da, db, bars, s, wait_peer, phase, m0, n0, kt, rank, b_rows):
    """One K-slice of a tile into stage `s`. The full barrier expects the whole stage: this
    block's A slice, its `b_rows` x BK half of the B slice and the peer's half. A goes now
    (only this block reads or writes it); the B half, written into both blocks, once the
    peer's consumers are done with the stage (`wait_peer`)."""
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
    # one kernel per input dtype: c.dtype is a compile-time constant (float16 or bfloat16).
    # dbw / dbn: B's descriptors for the 320- and 256-wide tiles' halves (160 / 128 x 64)
    smem = cuda.shared.array(0, c.dtype, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    cluster = cuda.cg.this_cluster()
    rank = cluster.block_rank()  # which tile of the pair: rows m0 + rank * BM
    tid = cuda.threadIdx.x
    group = tid // 128
    ktiles = (K + BK - 1) // BK
    mine = plan[cuda.blockIdx.x // CLUSTER]  # this cluster's tiles, then (-1, 0)
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
    # persistent: both blocks of the cluster walk its plan; `it` counts K-slices over all of
    # its tiles, so the ring's stages and phases run on from tile to tile
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
                    if it >= STAGES:  # this block's consumers are done with the stage
                        cuda.mbarrier.wait(bars, EMPTY + s, phase)
                        cuda.mbarrier.arrive(bars, PEER + s, block_rank=rank ^ 1)
                    if wide:
                        _load_stage(smem, da, dbw, bars, s, it >= STAGES, phase, m0, n0, kt,
                                    rank, BN // CLUSTER)
                    else:
                        _load_stage(smem, da, dbn, bars, s, it >= STAGES, phase, m0, n0, kt,
                                    rank, NARROW // CLUSTER)
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
            cuda.mbarrier.wait(bars, DRAINED, t % 2)  # both consumers are done reading it
            row0 = m0 + rank * BM + (group - 1) * 64
            rnd = _store(dc, acc0, acc1, smem, bars, row0, n0, rnd, held, wide)
        if tid % 128 == 0:  # the last TMA stores are complete before the block exits
            cuda.tma.wait_group(0)
    cluster.sync()  # the peer no longer writes into this block or arrives on its barriers


__all__ = ["BK", "BM", "BN", "CLUSTER", "SMEM_BYTES", "STAGES", "THREADS", "gemm"]
