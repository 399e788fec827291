"""A clock64() trace of one block of gpunb.examples.hopper_gemm_wide's kernel (with its tile
plan) at 8192^3 on the GPU: where the consumers' time goes, slice by slice and at each tile
boundary (the brief's idea (a), RESULTS.md, ninth session). The traced kernel is the
example's with stamps of the SM's cycle counter (`mov.u64 %0, %clock64;` via cuda.inline_ptx)
written by one thread per warpgroup of block `traced` only:
- producer (thread 0), per K-slice: before its "empty" wait, after it (the A load goes out),
  after the peer's word (the B half goes out);
- each consumer's lead thread, per K-slice: before its "full" wait, after it, after
  wgmma.wait_group(1) (the group before this one is done); per tile: after its last group,
  after the DRAINED wait, after the epilogue.
The same SM counts all of them. Printed: per-slice periods against the tensor cores' ideal
(1280 cycles for a 320-wide slice, 1024 for 256), the full-stage waits, and the tile
boundaries' cost, steady state and tile starts apart.

    python3 -m benchmarks.gemm7.trace [--dtype bfloat16] [--block 0] [--out trace.npz]
"""

from __future__ import annotations

import argparse

import numpy as np

from gpunb import cuda, float32, uint64
from gpunb.examples import hopper_gemm
from gpunb.examples import hopper_gemm_wide as w
from gpunb.examples.hopper_gemm_plan import NARROW

SLOTS = 4096  # K-slices recorded per role (14 tiles x 128 at 8192^3)
TILE_SLOTS = 64
_WIDE_IDEAL, _NARROW_IDEAL = 1280, 1024  # tensor-core cycles of one K-slice per SM


@cuda.jit(device=True, forceinline=True)
def _now():
    return cuda.inline_ptx("mov.u64 %0, %%clock64;", "=l")


def _mainloop_for(n_first: int, n_second: int):
    """hopper_gemm_wide's consumer K loop with stamps (trace row `g`, when `on`)."""
    b1 = n_first * w.BK * 2 // 16

    @cuda.jit(device=True, forceinline=True)
    def mainloop(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held, trace, g, on):
        lead = cuda.threadIdx.x % 128 == 0
        for kt in range(ktiles):
            s = it % w.STAGES
            if on:
                trace[g, it, 0] = _now()
            cuda.mbarrier.wait(bars, w.FULL + s, (it // w.STAGES) % 2)
            if on:
                trace[g, it, 1] = _now()
            stage = s * (w.STAGE * 2 // 16)
            cuda.wgmma.fence()
            for kk in range(w.BK // 16):
                cuda.wgmma.mma_async(acc0, a_desc + stage + 2 * kk, b_desc + stage + 2 * kk,
                                     (64, n_first, 16), c.dtype, scale_d=kt + kk > 0)
                cuda.wgmma.mma_async(acc1, a_desc + stage + 2 * kk,
                                     b_desc + stage + b1 + 2 * kk,
                                     (64, n_second, 16), c.dtype, scale_d=kt + kk > 0)
            cuda.wgmma.commit_group()
            cuda.wgmma.wait_group(1)
            if on:
                trace[g, it, 2] = _now()
            if lead:
                if kt > 0:
                    cuda.mbarrier.arrive(bars, w.EMPTY + (it - 1) % w.STAGES)
                elif held >= 0:
                    cuda.tma.wait_group_read(0)
                    cuda.mbarrier.arrive(bars, w.EMPTY + held)
            it += 1
        cuda.wgmma.wait_group(0)
        return it

    return mainloop


_loop_wide = _mainloop_for(w.HALF_N, w.HALF_N)
_loop_narrow = _mainloop_for(w.HALF_N, NARROW - w.HALF_N)


@cuda.jit(launch_bounds=(w.THREADS, 1), cluster_dims=(w.CLUSTER, 1, 1))
def gemm_traced(c, da, dbw, dbn, dc, plan, M, N, K, trace, tiles, traced):  # noqa: N803
    smem = cuda.shared.array(0, c.dtype, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    cluster = cuda.cg.this_cluster()
    rank = cluster.block_rank()
    tid = cuda.threadIdx.x
    group = tid // 128
    ktiles = (K + w.BK - 1) // w.BK
    mine = plan[cuda.blockIdx.x // w.CLUSTER]
    on = cuda.blockIdx.x == traced and tid % 128 == 0
    if tid == 0:
        for s in range(w.STAGES):
            cuda.mbarrier.init(bars, w.FULL + s, 1)
            cuda.mbarrier.init(bars, w.EMPTY + s, 2)
            cuda.mbarrier.init(bars, w.PEER + s, 1)
        cuda.mbarrier.init(bars, w.DRAINED, 2)
        for i in range(2):
            cuda.mbarrier.init(bars, w.WRITTEN + i, 128)
            cuda.mbarrier.init(bars, w.FREE + i, 1)
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
                    s = it % w.STAGES
                    phase = (it // w.STAGES - 1) % 2
                    if on:
                        trace[0, it, 0] = _now()
                    if it >= w.STAGES:
                        cuda.mbarrier.wait(bars, w.EMPTY + s, phase)
                        cuda.mbarrier.arrive(bars, w.PEER + s, block_rank=rank ^ 1)
                    if on:
                        trace[0, it, 1] = _now()
                    if wide:
                        w._load_stage(smem, da, dbw, bars, s, it >= w.STAGES, phase, m0, n0,
                                      kt, rank, w.BN // w.CLUSTER)
                    else:
                        w._load_stage(smem, da, dbn, bars, s, it >= w.STAGES, phase, m0, n0,
                                      kt, rank, NARROW // w.CLUSTER)
                    if on:
                        trace[0, it, 2] = _now()
                    it += 1
    else:
        cuda.setmaxnreg_inc(232)
        acc0 = cuda.local.array(w.N_ACC, float32)
        acc1 = cuda.local.array(w.N_ACC, float32)
        a_desc = cuda.wgmma.descriptor(smem[(group - 1) * 64 * w.BK:], 128)
        b_desc = cuda.wgmma.descriptor(smem[w.A_TILE:], 128)
        it = 0
        rnd = 0
        held = -1
        for t in range(mine.shape[0]):
            m0 = mine[t, 0]
            if m0 < 0:
                break
            n0 = mine[t, 1] // 2
            wide = mine[t, 1] % 2 == 1
            if wide:
                it = _loop_wide(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held, trace,
                                group, on)
            else:
                it = _loop_narrow(c, acc0, acc1, a_desc, b_desc, bars, it, ktiles, held, trace,
                                  group, on)
            if on:
                tiles[group, t, 0] = _now()
            held = (it - 1) % w.STAGES
            if tid % 128 == 0:
                cuda.mbarrier.arrive(bars, w.DRAINED)
            cuda.mbarrier.wait(bars, w.DRAINED, t % 2)
            if on:
                tiles[group, t, 1] = _now()
            row0 = m0 + rank * w.BM + (group - 1) * 64
            rnd = w._store(dc, acc0, acc1, smem, bars, row0, n0, rnd, held, wide)
            if on:
                tiles[group, t, 2] = _now()
                tiles[group, t, 3] = wide
        if tid % 128 == 0:
            cuda.tma.wait_group(0)
    cluster.sync()


def _summary(trace: np.ndarray, tiles: np.ndarray, plan_row: np.ndarray, ktiles: int) -> str:
    """Where the traced block's first consumer's cycles went, as text."""
    count = int((plan_row[:, 0] >= 0).sum())
    slices = count * ktiles
    wide = np.repeat(plan_row[:count, 1] % 2 == 1, ktiles)
    ideal = np.where(wide, _WIDE_IDEAL, _NARROW_IDEAL)
    kt = np.tile(np.arange(ktiles), count)
    lines = []
    for g in (1, 2):
        t0, t1, t2 = (trace[g, :slices, i].astype(np.int64) for i in range(3))
        start, end = int(t0[0]), int(tiles[g, count - 1, 2])
        period = np.diff(np.append(t0, end))
        wait = t1 - t0
        steady = (kt >= 2) & (kt < ktiles - 1)
        first = kt < 2
        last = kt == ktiles - 1
        lines.append(f"consumer {g}: {count} tiles, {slices} slices, {end - start} cycles from "
                     f"its first wait to its last epilogue; ideal {int(ideal.sum())} "
                     f"({(end - start) / ideal.sum():.4f} x)")
        for name, sel in (("steady (kt 2 .. K-2)", steady), ("first two of a tile", first),
                          ("last of a tile (+ epilogue)", last)):
            excess = period[sel] - ideal[sel]
            lines.append(f"  {name}: {int(sel.sum())} slices, period median "
                         f"{int(np.median(period[sel]))} (ideal {int(np.median(ideal[sel]))}), "
                         f"excess total {int(excess.sum())} cycles, full-wait median "
                         f"{int(np.median(wait[sel]))} mean {wait[sel].mean():.0f}, "
                         f"issue-to-wait_group(1) median {int(np.median((t2 - t1)[sel]))}")
        drain = tiles[g, :count, 1] - tiles[g, :count, 0]
        store = tiles[g, :count, 2] - tiles[g, :count, 1]
        lines.append(f"  per tile: DRAINED wait median {int(np.median(drain))}, epilogue median "
                     f"{int(np.median(store))} cycles")
        hist = np.percentile(period[steady] - ideal[steady], [10, 50, 90, 99])
        lines.append(f"  steady excess per slice p10/p50/p90/p99: {hist.astype(int).tolist()}")
    p0, p1, p2 = (trace[0, :slices, i].astype(np.int64) for i in range(3))
    lines.append(f"producer: empty-wait median {int(np.median(p1 - p0))} mean "
                 f"{(p1 - p0).mean():.0f}; A-issue to B-issue (peer's word) median "
                 f"{int(np.median(p2 - p1))} mean {(p2 - p1).mean():.0f}; lead over the "
                 f"consumers' wait (consumer 1 wait start - B issued) median "
                 f"{int(np.median(trace[1, :slices, 0].astype(np.int64) - p2))}")
    return "\n".join(lines)


def main(argv=None) -> int:
    import torch

    import gpunb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--block", type=int, default=0)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    gpunb.set_target("cuda")
    n = args.n
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    bt = torch.randn(n, n, device="cuda", dtype=dtype)
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    descs = hopper_gemm.descriptors(a, bt, c, width=w.BN)
    clusters = hopper_gemm.resident_clusters(a)
    plan = hopper_gemm._device_plan(a, n, n, clusters)
    trace = cuda.to_device(np.zeros((3, SLOTS, 3), np.int64))
    tiles = cuda.to_device(np.zeros((3, TILE_SLOTS, 4), np.int64))
    grid = w.CLUSTER * clusters
    for _ in range(30):  # the clocks settle at the power cap as in a benchmark
        gemm_traced[grid, w.THREADS, 0, w.SMEM_BYTES](c, *descs, plan, n, n, n, trace, tiles,
                                                        args.block)
    torch.cuda.synchronize()
    assert float((c.float() - torch.matmul(a, bt.t()).float()).abs().max()) == 0.0
    host_plan = plan.copy_to_host()[args.block // w.CLUSTER]
    text = _summary(trace.copy_to_host(), tiles.copy_to_host(), host_plan, -(-n // w.BK))
    print(f"GEMM {n}^3 {args.dtype}, block {args.block} of {w.CLUSTER * clusters}")
    print(text)
    if args.out:
        np.savez(args.out, trace=trace.copy_to_host(), tiles=tiles.copy_to_host(),
                 plan=host_plan)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
