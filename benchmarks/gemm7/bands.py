"""The example's 320-wide kernel with its tile plan banded by 4 or 16 row pairs instead of 8
(hopper_gemm_plan.GROUP_M): the L2 order of the tiles the clusters work on at once, timed as
`--module benchmarks.gemm7.g4` / `.g16` (RESULTS.md, ninth session). The trace put a
stage's loads at ~2500 cycles from issue to landing; tighter or wider bands change which of
them hit L2."""

from __future__ import annotations

import numpy as np

from gpunb import cuda
from gpunb.examples import hopper_gemm
from gpunb.examples import hopper_gemm_plan as hp
from gpunb.examples import hopper_gemm_wide as w


class _Banded:
    """descriptors() / launch() of the example's wide kernel with bands of `group_m`."""

    def __init__(self, group_m: int) -> None:
        self.group_m = group_m

    def descriptors(self, a, b, c) -> tuple:
        descs = hopper_gemm.descriptors(a, b, c, width=w.BN)
        clusters = hopper_gemm.resident_clusters(a) or hp.tiles(a.shape[0], b.shape[0])
        table = hp.plan(-(-a.shape[0] // hp.PAIR_ROWS), b.shape[0], clusters, self.group_m)
        return (*descs, table if isinstance(a, np.ndarray) else cuda.to_device(
            np.ascontiguousarray(table)))

    def launch(self, c, a, b, descs=None, blocks: int | None = None) -> None:
        descs = descs or self.descriptors(a, b, c)
        table = descs[-1]
        w.gemm[w.CLUSTER * table.shape[0], w.THREADS, 0, w.SMEM_BYTES](
            c, *descs[:-1], table, a.shape[0], b.shape[0], a.shape[1])


G4, G16 = _Banded(4), _Banded(16)
