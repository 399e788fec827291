"""The tile plan of benchmarks.gemm7.mixed: which tile pairs (320 or 256 columns wide) each
persistent cluster walks, chosen on the host so that the busiest cluster has the least work.

Why: the 128 x 320 kernel at 8192^3 cuts each 256-row band into 26 column tiles, the last one
192 wide but computed as 320 (TMA pads it with zeros), and 832 tile pairs on 66 clusters take
13 rounds: the busiest clusters do 13 x 320 columns of work, 4160, against the 4096 (16 x 256)
of the 128 x 256 kernel and of Triton's 2048 tiles on 132 SMs, and against 8192 x 32 / 66 =
3972 if the work were spread evenly. Mixing widths cuts both losses: 24 x 320 + 2 x 256 = 8192
leaves no padding, and four 320-wide tiles cover what five 256-wide ones do, so trading some
of the one for the other sets how many tiles there are; the plan takes the trade whose
greedy assignment (each tile to the cluster with the least work so far, wide ones first) has
the smallest maximum: 4032 (12 x 320 + 2 x 256 ... ) at 8192^3 on 66 clusters.

Work is counted in 64-column units of a tile pair's K loop: a wide tile is 5, a narrow one 4.
"""

from __future__ import annotations

import heapq
from functools import lru_cache

import numpy as np

WIDE, NARROW = 320, 256
UNIT = 64
W_UNITS, N_UNITS = WIDE // UNIT, NARROW // UNIT  # 5 and 4: four wide tiles = five narrow
GROUP_M = 8  # row pairs of one band walk the columns together (their B slices stay in L2)


def column_split(n: int) -> tuple[int, int]:
    """(wide, narrow) tiles that cover n columns with the least padding (ties: fewer tiles)."""
    best = None
    for wide in range(-(-n // WIDE) + 1):
        narrow = max(0, -(-(n - wide * WIDE) // NARROW))
        key = (wide * WIDE + narrow * NARROW, wide + narrow)
        if best is None or key < best[0]:
            best = (key, (wide, narrow))
    return best[1]


def _greedy(loads: list, count: int, units: int) -> list:
    """Assign `count` tiles of `units` each, one at a time, to the cluster with the least work
    (ties: the lowest index): returns each tile's cluster; updates `loads` ((work, index))."""
    owners = []
    for _ in range(count):
        work, c = heapq.heappop(loads)
        owners.append(c)
        heapq.heappush(loads, (work + units, c))
    return owners


def _makespan(wide: int, narrow: int, clusters: int) -> int:
    """The busiest cluster's work when `wide` tiles go out round-robin, then `narrow` tiles
    each to the cluster with the least work (for identical tiles that greedy is optimal: the
    least T such that the clusters' room under T, in whole narrow tiles, holds them all)."""
    q, r = divmod(wide, clusters)
    levels = ((W_UNITS * (q + 1), r), (W_UNITS * q, clusters - r))

    def room(top: int) -> int:
        return sum(count * max(0, (top - work) // N_UNITS) for work, count in levels)

    low = max(work for work, count in levels if count)
    high = low + N_UNITS * narrow
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if room(mid) >= narrow else (mid + 1, high)
    return low


@lru_cache(maxsize=64)
def plan(m_pairs: int, n: int, clusters: int) -> np.ndarray:
    """int32 (clusters, slots, 2): per cluster, its tiles in order - (first row of the pair,
    first column * 2 + 1 if 320 wide else + 0) - then (-1, 0) where its list ends.
    `m_pairs`: 256-row bands of C; `n`: its columns; `clusters`: the persistent grid's."""
    wide, narrow = column_split(n)
    trades = wide // 4  # per band: four wide tiles -> five narrow ones, the same columns
    best = min(range(m_pairs * trades + 1), key=lambda k: (
        _makespan(m_pairs * wide - 4 * k, m_pairs * narrow + 5 * k, clusters), k))
    per_band = [best // m_pairs + (band < best % m_pairs) for band in range(m_pairs)]
    wides, narrows = [], []
    for first in range(0, m_pairs, GROUP_M):
        bands = range(first, min(first + GROUP_M, m_pairs))
        counts = {band: (wide - 4 * per_band[band], narrow + 5 * per_band[band]) for band in bands}
        for j in range(max(w for w, _ in counts.values())):
            wides += [(band, j * WIDE, 1) for band in bands if j < counts[band][0]]
        for j in range(max(k for _, k in counts.values())):
            narrows += [(band, counts[band][0] * WIDE + j * NARROW, 0) for band in bands
                        if j < counts[band][1]]
    loads = [(0, c) for c in range(clusters)]
    owners = _greedy(loads, len(wides), W_UNITS) + _greedy(loads, len(narrows), N_UNITS)
    lists: list = [[] for _ in range(clusters)]
    for owner, (band, n0, is_wide) in zip(owners, wides + narrows, strict=True):
        lists[owner].append((band * 256, n0 * 2 + is_wide))
    slots = max(len(tiles) for tiles in lists) + 1
    table = np.zeros((clusters, slots, 2), np.int32)
    table[:, :, 0] = -1
    for c, tiles in enumerate(lists):
        if tiles:
            table[c, :len(tiles)] = tiles
    return table


def busiest(table: np.ndarray) -> int:
    """The busiest cluster's work in 64-column units (for tests and the docstring's figure)."""
    wide = table[:, :, 1] % 2
    used = table[:, :, 0] >= 0
    return int(((W_UNITS * wide + N_UNITS * (1 - wide)) * used).sum(axis=1).max())
