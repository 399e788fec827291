"""Variants of gpunb.examples.hopper_gemm (TMA + wgmma, warp specialised, persistent) for
bench_hopper --variant: each knob of `Config` is one idea for closing the gap to Triton's
tutorial matmul, so that one device run times them side by side.

- `stages`: depth of the TMA ring (4 x 48 KiB, or 3 to leave room for a C staging buffer).
- `group_m`: row tiles that walk the columns together in the persistent tile order (L2 reuse).
- `in_flight`: wgmma groups kept in flight (1: the stage of the previous K step is released
  after wait_group(1); 0: every K step waits for its own group).
- `epilogue`: "direct" (each thread stores its D fragment to global memory, 32-bit pairs),
  "tma" (stmatrix into a 128-byte-swizzled shared buffer, one TMA store per 64 x 64 panel,
  left in flight while the consumer goes on to its next tile), "none" (no store; its C is
  wrong. Nothing then reads the accumulator, so the compiler drops the wgmma too: it times
  the feed alone, as the nomma probe does, not the epilogue's cost).
- `c_panels`: 64 x 64 panels of the TMA epilogue's buffer per consumer (4: the whole 64 x 256;
  2: two rounds through half of it, which lets 4 stages fit beside it).
- `l2`: the descriptors' L2 promotion in bytes.
- `probe` (diagnostics, their C is wrong): "nofeed" loads the ring once and then multiplies
  what it holds (the main loop without the TMA feed: what the feed costs), "nomma" streams
  every slice through the ring without multiplying (what the feed alone takes).
- `u32`: the tile order's divisions in 32 bits (64-bit ones call a subroutine in the consumers'
  code); `nosmr`: no setmaxnreg (every warp keeps the 168 registers of launch_bounds). Each
  may change how ptxas schedules the wgmma chain.
- `prefetch`: the producer also asks L2 for the slices this many K steps after the one it
  loads (cuda.tma.prefetch; into the block's next tile at the end of one), so that the ring's
  loads find them in L2 (0: none).
- `persistent` (spec part `np` turns it off): one block per SM walking the tiles (the
  example's way), or one block per tile in Triton's launch order (`np`: the tile order is the
  same formula, so `g8,np` fetches the tiles in the order of Triton's tutorial; each block's
  epilogue then runs alone, not beside its next tile's loads).
- `cp` (feed "cp"): the producer warpgroup's 128 threads fill the ring with 16-byte
  cp.async copies into the same 128-byte-swizzled layout (chunk c of row r at c ^ (r % 8)),
  each thread arriving on the stage's full mbarrier once its copies have landed, instead of one
  thread's TMA loads: Triton's tutorial feeds its wgmma with cp.async, and the L2 request
  coalescer merges those requests from different SMs for the same sectors, which TMA loads
  (without multicast) mostly miss (benchmarks/RESULTS.md, fifth session). BK 64 only.
- `ba`: the producer issues each stage's B box (32 KiB) before its A box (16 KiB).
- `bk`: the K slice of one stage (64, 128-byte swizzle; or 32, 64-byte swizzle, where twice the
  stages of half the size release the ring in finer steps: the producer runs further ahead).

The kernel computes C = A @ B.T like the example; the launch takes the same arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpunb import cuda, float32, uint32, uint64

BM, BN = 128, 256
THREADS = 384
N_ACC = BN // 2
SMEM_LIMIT = 232448  # dynamic shared memory of one block on sm_90


@dataclass(frozen=True)
class Config:
    stages: int = 4
    group_m: int = 8
    in_flight: int = 1
    epilogue: str = "direct"
    c_panels: int = 4
    l2: int = 128
    bk: int = 64
    probe: str = ""
    u32: bool = False
    nosmr: bool = False
    prefetch: int = 0
    persistent: bool = True
    feed: str = "tma"
    b_first: bool = False

    @property
    def label(self) -> str:
        epi = self.epilogue + (f"/{self.c_panels}p" if self.epilogue == "tma" else "")
        probe = f", probe {self.probe} (C is wrong)" if self.probe else ""
        flags = "".join(f", {f}" for f in ("u32", "nosmr") if getattr(self, f))
        flags += f", L2 prefetch {self.prefetch} ahead" if self.prefetch else ""
        flags += "" if self.persistent else ", one block per tile"
        flags += ", cp.async feed" if self.feed == "cp" else ""
        flags += ", B box first" if self.b_first else ""
        return (f"BK {self.bk}, {self.stages} stages, group {self.group_m}, {self.in_flight} in "
                f"flight, epilogue {epi}, L2 {self.l2}{flags}{probe}")

    def layout(self) -> dict:
        a_tile, b_tile = BM * self.bk, BN * self.bk
        stage = a_tile + b_tile
        ring = self.stages * stage
        c_buf = 64 * 64 * self.c_panels if self.epilogue == "tma" else 0
        bar0 = (ring + 2 * c_buf) * 2 // 8
        return {"A_TILE": a_tile, "STAGE": stage, "RING": ring, "C_BUF": c_buf,
                "FULL": bar0, "EMPTY": bar0 + self.stages, "WRITTEN": bar0 + 2 * self.stages,
                "FREE": bar0 + 2 * self.stages + 2,
                "SMEM": (bar0 + 2 * self.stages + 4) * 8}


def parse(spec: str) -> Config:
    """'s4,g8,f1,direct,l128' (any subset, any order): stages, group, in flight, epilogue
    (direct, tma, tma2: two rounds of 2 panels, none), L2 promotion; np: one block per tile."""
    kw: dict = {}
    for part in filter(None, spec.split(",")):
        if part in ("direct", "none", "tma"):
            kw["epilogue"] = part
        elif part in ("nofeed", "nomma"):
            kw["probe"] = part
        elif part in ("u32", "nosmr"):
            kw[part] = True
        elif part == "np":
            kw["persistent"] = False
        elif part == "cp":
            kw["feed"] = "cp"
        elif part == "ba":
            kw["b_first"] = True
        elif part == "tma2":
            kw["epilogue"], kw["c_panels"] = "tma", 2
        elif part[0] in "sgflkp" and part[1:].isdigit():
            kw[{"s": "stages", "g": "group_m", "f": "in_flight", "l": "l2",
                "k": "bk", "p": "prefetch"}[part[0]]] = int(part[1:])
        else:
            raise ValueError(f"unknown part {part!r} of variant {spec!r}")
    config = Config(**kw)
    if config.bk not in (32, 64):
        raise ValueError(f"variant {spec!r}: BK is 32 or 64")
    if config.feed == "cp" and (config.bk != 64 or config.probe or config.prefetch):
        raise ValueError(f"variant {spec!r}: the cp.async feed takes BK 64, no probe, no "
                         "prefetch")
    if config.layout()["SMEM"] > SMEM_LIMIT:
        raise ValueError(f"{config.label}: {config.layout()['SMEM']} bytes of shared memory "
                         f"(at most {SMEM_LIMIT})")
    return config


def make_gemm(config: Config = Config()):  # noqa: C901 - one kernel, its knobs inline
    lay = config.layout()
    stages, group_m, in_flight = config.stages, config.group_m, config.in_flight
    a_tile, stage_n, ring, c_buf = lay["A_TILE"], lay["STAGE"], lay["RING"], lay["C_BUF"]
    full, empty, written, free = lay["FULL"], lay["EMPTY"], lay["WRITTEN"], lay["FREE"]
    epilogue, panels = config.epilogue, config.c_panels
    rounds = tuple(range(4 // panels))
    panel_range = tuple(range(panels))
    pairs = (0, 1, 2, 3)  # 16-column pairs of 8-column chunks in a 64-column panel
    bk = config.bk
    feed_all, multiply = config.probe != "nofeed", config.probe != "nomma"
    swizzle = 2 * bk  # a stage's rows are bk elements of 2 bytes: the swizzle's span

    u32, nosmr, ahead = config.u32, config.nosmr, config.prefetch
    cp_feed = config.feed == "cp"
    b_first = config.b_first
    full_count = 128 if cp_feed else 1  # cp.async: every producer thread arrives
    # the cp.async producer's addresses need more than 40 registers (it spilled); 48 and the
    # consumers' 232 fill the 64 K registers exactly
    producer_regs = 48 if cp_feed else 40

    @cuda.jit(device=True, forceinline=True)
    def tile_origin64(tile, M, N):  # noqa: N803
        tiles_m = (M + BM - 1) // BM
        tiles_n = (N + BN - 1) // BN
        width = group_m * tiles_n
        first_m = (tile // width) * group_m
        rows = min(tiles_m - first_m, group_m)
        return (first_m + (tile % width) % rows) * BM, ((tile % width) // rows) * BN

    @cuda.jit(device=True, forceinline=True)
    def tile_origin32(tile, M, N):  # noqa: N803
        # every quotient's operands are zero-extended 32-bit values: LLVM divides in 32 bits
        t = uint32(tile)
        tiles_m = uint32((M + BM - 1) // BM)
        width = uint32(group_m * uint32((N + BN - 1) // BN))
        first_m = uint32(uint32(t // width) * group_m)
        rows = uint32(min(tiles_m - first_m, group_m))
        within = uint32(t % width)
        return (first_m + within % rows) * BM, (within // rows) * BN

    tile_origin = tile_origin32 if u32 else tile_origin64

    @cuda.jit(device=True, forceinline=True)
    def cp_producer(smem, bars, a, b, M, N, K, tiles, ktiles):  # noqa: N803
        # thread t copies the 16-byte chunk t % 8 of rows t // 8 + 16 i: eight threads read
        # one row's 128 bytes; rows r and r + 16 share r % 8, so the swizzle is per thread.
        # Unsigned 32-bit indices: no negative-index wrapping to compute. Whole tiles only
        # (launch checks that M, N and K are multiples of the tile).
        t = uint32(cuda.threadIdx.x)
        col = (t % 8) * 8
        r0 = t // 8
        at = r0 * bk + ((t % 8) ^ (r0 % 8)) * 8  # its first chunk's place in a tile
        it = 0
        for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):
            m0, n0 = tile_origin(tile, M, N)
            ra = uint32(m0) + r0
            rb = uint32(n0) + r0
            for kt in range(ktiles):
                s = it % stages
                if it >= stages:
                    cuda.mbarrier.wait(bars, empty + s, (it // stages - 1) % 2)
                k = uint32(kt * bk) + col
                base = uint32(s * stage_n) + at
                for i in range(BM // 16):
                    cuda.cp_async.copy(smem[base + uint32(i * 16 * bk):],
                                       a[ra + uint32(16 * i), k:], 16, cache="cg")
                base += uint32(a_tile)
                for i in range(BN // 16):
                    cuda.cp_async.copy(smem[base + uint32(i * 16 * bk):],
                                       b[rb + uint32(16 * i), k:], 16, cache="cg")
                cuda.cp_async.commit_group()
                if it > 0:  # the previous stage's copies have landed: that stage is full
                    cuda.cp_async.wait_group(1)
                    cuda.fence_proxy_async()  # wgmma reads through the async proxy
                    cuda.mbarrier.arrive(bars, full + (it - 1) % stages)
                it += 1
        if it > 0:
            cuda.cp_async.wait_group(0)
            cuda.fence_proxy_async()
            cuda.mbarrier.arrive(bars, full + (it - 1) % stages)

    @cuda.jit(launch_bounds=(THREADS, 1))
    def gemm(c, da, db, dc, M, N, K, a, b):  # noqa: N803
        smem = cuda.shared.array(0, c.dtype, alignment=1024)
        bars = cuda.shared.array(0, uint64)
        tid = cuda.threadIdx.x
        group = tid // 128
        tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
        ktiles = (K + bk - 1) // bk
        if tid == 0:
            for s in range(stages):
                cuda.mbarrier.init(bars, full + s, full_count)
                cuda.mbarrier.init(bars, empty + s, 2)
            for w in range(2):
                cuda.mbarrier.init(bars, written + w, 128)
                cuda.mbarrier.init(bars, free + w, 1)
        cuda.syncthreads()
        if group == 0:
            if not nosmr:
                cuda.setmaxnreg_dec(producer_regs)
            if cp_feed:
                cp_producer(smem, bars, a, b, M, N, K, tiles, ktiles)
            elif tid == 0:
                it = 0
                for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):
                    m0, n0 = tile_origin(tile, M, N)
                    for kt in range(ktiles):
                        s = it % stages
                        if ahead:  # the slice `ahead` steps on, in this tile or the next
                            if kt + ahead < ktiles:
                                cuda.tma.prefetch(da, (m0, (kt + ahead) * bk))
                                cuda.tma.prefetch(db, (n0, (kt + ahead) * bk))
                            elif tile + cuda.gridDim.x < tiles:
                                m1, n1 = tile_origin(tile + cuda.gridDim.x, M, N)
                                cuda.tma.prefetch(da, (m1, (kt + ahead - ktiles) * bk))
                                cuda.tma.prefetch(db, (n1, (kt + ahead - ktiles) * bk))
                        if feed_all or it < stages:
                            if it >= stages:
                                cuda.mbarrier.wait(bars, empty + s, (it // stages - 1) % 2)
                            cuda.mbarrier.arrive_expect_tx(bars, full + s, stage_n * 2)
                            base = s * stage_n
                            if b_first:
                                cuda.tma.load(smem[base + a_tile:base + stage_n], db,
                                              (n0, kt * bk), bars, full + s)
                            cuda.tma.load(smem[base:base + a_tile], da, (m0, kt * bk), bars,
                                          full + s)
                            if not b_first:
                                cuda.tma.load(smem[base + a_tile:base + stage_n], db,
                                              (n0, kt * bk), bars, full + s)
                        it += 1
        else:
            if not nosmr:
                cuda.setmaxnreg_inc(232)
            acc = cuda.local.array(N_ACC, float32)
            a_desc = cuda.wgmma.descriptor(smem[(group - 1) * 64 * bk:], swizzle)
            b_desc = cuda.wgmma.descriptor(smem[a_tile:], swizzle)
            lead = tid % 128 == 0
            lane = tid % 32
            # this lane's stmatrix row in the consumer's 64 rows, and its 8-column chunk's half
            srow = (tid % 128) // 32 * 16 + lane % 8 + 8 * (lane // 8 % 2)
            shalf = lane // 16
            # the TMA epilogue's buffer (without one, any in-bounds view: it is not used; a
            # view past the shared memory's end ended the consumers, and the block hung)
            cbase = ring + (group - 1) * c_buf if c_buf else 0
            cview = smem[cbase:cbase + max(c_buf, 4096)].reshape(max(c_buf, 4096) // 64, 64)
            rnd = 0
            it = 0
            for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):
                m0, n0 = tile_origin(tile, M, N)
                for kt in range(ktiles):
                    s = it % stages
                    if feed_all or it < stages:
                        cuda.mbarrier.wait(bars, full + s, (it // stages) % 2)
                    stage = s * (stage_n * 2 // 16)
                    cuda.wgmma.fence()
                    if multiply:
                        for kk in range(bk // 16):
                            cuda.wgmma.mma_async(acc, a_desc + stage + 2 * kk,
                                                 b_desc + stage + 2 * kk, (64, BN, 16),
                                                 c.dtype, scale_d=kt + kk > 0)
                    cuda.wgmma.commit_group()
                    if in_flight == 1:
                        cuda.wgmma.wait_group(1)
                        if kt > 0 and lead:
                            cuda.mbarrier.arrive(bars, empty + (it - 1) % stages)
                    else:
                        cuda.wgmma.wait_group(0)
                        if lead:
                            cuda.mbarrier.arrive(bars, empty + s)
                    it += 1
                cuda.wgmma.wait_group(0)
                if in_flight == 1 and lead:
                    cuda.mbarrier.arrive(bars, empty + (it - 1) % stages)
                row0 = m0 + (group - 1) * 64
                if epilogue == "direct":
                    cuda.wgmma.store(c[row0:, n0:], acc, BN)
                elif epilogue == "tma":
                    for r in cuda.literal_unroll(rounds):
                        if rnd > 0:  # the buffer's last TMA stores have read it
                            if lead:
                                cuda.tma.wait_group_read(0)
                                cuda.mbarrier.arrive(bars, free + group - 1)
                            cuda.mbarrier.wait(bars, free + group - 1, (rnd - 1) % 2)
                        for p in cuda.literal_unroll(panel_range):
                            for jj in cuda.literal_unroll(pairs):
                                j = (r * panels + p) * 8 + 2 * jj  # first 8-column chunk
                                chunk = (2 * jj + shalf) ^ (srow % 8)  # 128-byte swizzle
                                cuda.stmatrix(cview, (p * 64 + srow, chunk * 8),
                                              (acc[4 * j], acc[4 * j + 1], acc[4 * j + 2],
                                               acc[4 * j + 3], acc[4 * j + 4], acc[4 * j + 5],
                                               acc[4 * j + 6], acc[4 * j + 7]))
                        cuda.fence_proxy_async()
                        cuda.mbarrier.arrive(bars, written + group - 1)
                        if lead:
                            cuda.mbarrier.wait(bars, written + group - 1, rnd % 2)
                            for p in range(panels):
                                cuda.tma.store(dc, (row0, n0 + (r * panels + p) * 64),
                                               cview[p * 64:p * 64 + 64, :])
                            cuda.tma.commit_group()
                        rnd += 1
            if epilogue == "tma" and lead:
                cuda.tma.wait_group(0)

    gemm.config = config
    return gemm


def descriptors(a, b, c, config: Config) -> tuple:
    """TMA descriptors of A (M, K), B (N, K) and C (M, N) for a make_gemm kernel."""
    bk = config.bk
    return (cuda.tma.descriptor(a, (BM, bk), 2 * bk, l2_promotion=config.l2),
            cuda.tma.descriptor(b, (BN, bk), 2 * bk, l2_promotion=config.l2),
            cuda.tma.descriptor(c, (64, 64), 128))


def launch(kernel, c, a, b, descs, blocks: int | None = None) -> None:
    M, K = a.shape  # noqa: N806
    N = b.shape[0]  # noqa: N806
    tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
    if blocks is None:
        blocks = tiles if isinstance(a, np.ndarray) or not kernel.config.persistent else \
            min(tiles, cuda.get_current_device().MULTIPROCESSOR_COUNT)
    if kernel.config.feed == "cp" and (M % BM or N % BN or K % kernel.config.bk):
        raise ValueError(f"the cp.async feed takes whole tiles: {M} x {N} x {K} is not a "
                         f"multiple of {BM} x {BN} x {kernel.config.bk}")
    kernel[blocks, THREADS, 0, kernel.config.layout()["SMEM"]](c, *descs, M, N, K, a, b)
