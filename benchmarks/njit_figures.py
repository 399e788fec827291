"""The CPU-target figures' work written for numba `@njit(parallel=True)`: the native anchor.

Each function does what the GPU kernel of the same figure does (cpu_figures.py), the way a numba
user would write it for a multicore CPU: blocks of the grid become `prange` iterations.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

# OpenMP's layer spins while it waits: on a loaded 2-core machine a parallel loop then takes tens
# of ms instead of one; the workqueue layer gives numba its best figures there. Set before numba
# is imported; NUMBA_THREADING_LAYER in the environment still wins.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

RTPB = 256  # the reduction kernel's block size (kernelsrc.RTPB)


def _kernels():
    from numba import njit, prange

    @njit(parallel=True)
    def saxpy(out, x, y, a):
        for i in prange(out.size):
            out[i] = a * x[i] + y[i]

    @njit
    def total_of(partial):
        s = np.float32(0.0)
        for k in range(partial.size):
            s += partial[k]
        return s

    @njit(parallel=True)
    def block_sum(values, total):
        """Per-block partial sums in parallel (the shared-memory tree), then their total (the
        one atomic add per block). The total is a plain loop in its own function: numba 0.68.0
        fails on `partial.sum()` after this prange ("unexpected cycle in lookup()")."""
        blocks = (values.size + RTPB - 1) // RTPB
        partial = np.zeros(blocks, np.float32)
        for b in prange(blocks):
            s = np.float32(0.0)
            for t in range(RTPB):
                i = b * RTPB + t
                if i < values.size:
                    s += values[i]
            partial[b] = s
        total[0] = total_of(partial)

    @njit(parallel=True)
    def matmul(a, b, c):
        n, m = a.shape[0], b.shape[1]
        for i in prange(n):
            for j in range(m):
                c[i, j] = 0.0
            for k in range(a.shape[1]):
                aik = a[i, k]
                for j in range(m):
                    c[i, j] += aik * b[k, j]

    return saxpy, block_sum, matmul


def prepare(figure: str, n: int) -> tuple[Callable[[], None], Callable[[], bool]]:
    """(run once, check the result) for one figure at size n, compiled by a first run."""
    saxpy, block_sum, matmul = _kernels()
    rng = np.random.default_rng(7)
    if figure == "saxpy":
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        out = np.empty(n, np.float32)
        a = np.float32(2.0)

        def run() -> None:
            saxpy(out, x, y, a)

        check = lambda: np.allclose(out, a * x + y)  # noqa: E731
    elif figure == "reduction":
        values = rng.random(n, dtype=np.float32)
        total = np.zeros(1, np.float32)

        def run() -> None:
            block_sum(values, total)

        check = lambda: bool(np.isclose(total[0], values.sum(dtype=np.float64),  # noqa: E731
                                        rtol=1e-4))
    elif figure.startswith("matmul"):
        a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
        c = np.empty((n, n), np.float32)

        def run() -> None:
            matmul(a, b, c)

        check = lambda: np.allclose(c, a @ b, rtol=1e-4, atol=1e-4)  # noqa: E731
    else:
        raise ValueError(f"unknown figure {figure!r}")
    run()
    return run, check
