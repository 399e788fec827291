"""Where a profile's time goes on a GPU: CUPTI's own costs and a profiled launch's, step by step.

    python -m benchmarks.profile_cupti        # on a GPU machine with cupti-python

Figures (best of several loops, microseconds): a short launch with CUPTI's kernel activity off
and on (what keeping it enabled between profiles would cost every launch), enabling plus
disabling it, the first launch after enabling it (what a block pays when CUPTI was idle), a
flush of its buffers, reading its clock, a launch inside `gpunb.profile()` (the native
launcher appending one entry to a list), an empty profile block, and the first read of a
100-launch profile's records (synchronise, flush, match, build).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.kernelsrc import load_kernels


def best_us(fn, calls: int = 200, loops: int = 15, sync=None) -> float:
    best = float("inf")
    for _ in range(loops):
        if sync is not None:
            sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main(argv: list[str]) -> int:
    import gpunb
    from gpunb import cuda
    from gpunb.profiling import timers

    gpunb.set_target("cuda")
    # bench_launch's kernel, from a module of its own: one defined in this function would read
    # `cuda` from a closure cell, which keeps its launches off the native launchers
    scale3 = load_kernels("gpunb", Path(tempfile.mkdtemp(prefix="gpunb-bench-"))).scale3

    x, out = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32)
    a = np.float32(2.0)

    def launch():
        scale3[1, 32](out, x, a)

    deadline = time.monotonic() + 10.0  # a cache hit loads llvmlite in the background first
    launch()
    while scale3[1, 32].launcher is None and time.monotonic() < deadline:
        launch()
        time.sleep(0.001)
    print("plain launches through the", "native launcher" if scale3[1, 32].launcher is not None
          else "Python path")
    cuda.synchronize()
    timer = timers.cuda_timer()  # loads CUPTI (and starts one profile's recording)
    timer.stop()
    timer.close()
    state = timers._cupti_state
    if state is None:
        print("CUPTI not loaded:", timers._cupti_error)
        return 1
    cupti, kind = state.cupti, state.cupti.ActivityKind.CONCURRENT_KERNEL
    rows = []
    rows.append(("launch, CUPTI kernel activity off", best_us(launch, sync=cuda.synchronize)))
    cupti.activity_enable(kind)
    rows.append(("launch, CUPTI kernel activity on", best_us(launch, sync=cuda.synchronize)))
    cupti.activity_disable(kind)
    cuda.synchronize()

    def toggle():
        cupti.activity_enable(kind)
        cupti.activity_disable(kind)

    rows.append(("activity_enable + activity_disable", best_us(toggle, calls=20)))
    firsts = []
    for _ in range(10):  # the first launch after enabling: CUPTI sets itself up
        cuda.synchronize()
        cupti.activity_enable(kind)
        started = time.perf_counter()
        launch()
        firsts.append((time.perf_counter() - started) * 1e6)
        cuda.synchronize()
        cupti.activity_disable(kind)
    rows.append(("first launch after activity_enable (median)", sorted(firsts)[5]))
    rows.append(("activity_flush_all(1), nothing pending",
                 best_us(lambda: cupti.activity_flush_all(1), calls=20)))
    rows.append(("get_timestamp", best_us(cupti.get_timestamp, calls=2000)))
    with gpunb.profile():
        rows.append(("launch inside gpunb.profile()", best_us(launch, sync=cuda.synchronize)))

    def empty():
        with gpunb.profile():
            pass

    rows.append(("empty gpunb.profile() block", best_us(empty, calls=20)))
    reads = []
    for _ in range(5):
        with gpunb.profile() as prof:
            for _ in range(100):
                launch()
        started = time.perf_counter()
        records = prof.launches
        reads.append((time.perf_counter() - started) * 1e6)
        assert len(records) == 100 and all(r.time_ms for r in records), prof.notes
    rows.append(("first read of a 100-launch profile", min(reads)))
    for name, us in rows:
        print(f"{name:45s} {us:10.2f} us")
    print(f"peaks: {prof.peak_gbps:.0f} GB/s, {prof.peak_gflops:.0f} GFLOP/s, {prof.peak_source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
