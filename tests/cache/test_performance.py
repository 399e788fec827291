"""The cache's figures: key computation for a kernel with 10 dependencies, the fast-path check.

Each figure is the best of many runs (robust to a busy machine) and printed (pytest -s shows it).
"""

from __future__ import annotations

import time

from cache_support import SIGNATURE, TOOLCHAIN

from gpunb.cache import KernelCache, collect, invalidate, still_valid

BENCH = """
import math
import numpy as np

A = 1.5
B = 3
C = (1, 2, 3)
D = np.float32(2)
E = np.arange(16, dtype=np.float32)

def h0(x):
    return x * A + B

def h1(x):
    return x * A - B

def h2(x):
    return x + C[1]

def h3(x):
    return x * D

def h4(x):
    return x - E[2]

def kern(out, x):
    i = 0
    if i < out.size:
        out[i] = h0(x[i]) + h1(x[i]) + h2(x[i]) + h3(x[i]) + h4(x[i]) + math.sqrt(A) + C[0] \\
            + D + E[0] + B
"""


def _best_us(fn, repeat: int = 200) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def test_key_for_ten_dependencies_figures(cells, cache_dir):
    from cache_support import jit

    cells.run(BENCH)
    for name in ("h0", "h1", "h2", "h3", "h4"):
        cells.ns[name] = jit(cells.ns[name])
    kern = jit(cells.ns["kern"])
    fp = collect(kern)
    assert sum(1 for d in fp.dependencies if not d.via) >= 10
    kc = KernelCache(str(cache_dir))

    def new_epoch_key():  # what a launch does after a cell ran: re-fingerprint, re-key
        invalidate()
        kc.key_for(collect(kern), SIGNATURE, {}, "cpu", "arch", TOOLCHAIN)

    key_us = _best_us(new_epoch_key)
    memo_us = _best_us(lambda: collect(kern), 2000)
    fp = collect(kern)
    check_ns = _best_us(lambda: still_valid(fp.watch), 20000) * 1000
    print(f"\nkey after a new epoch (10 deps, 5 device functions): {key_us:.0f} us; "
          f"memoised collect: {memo_us:.2f} us; still_valid ({len(fp.watch)} entries): "
          f"{check_ns:.0f} ns")
    # figures, not limits: speed targets are reported by benchmarks/, never asserted in tests
