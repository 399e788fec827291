"""The tile plan of hopper_gemm_wide's kernel: which tile pairs (256 rows of C by 320 or 256
columns) each persistent cluster walks, in order, chosen on the host so that the busiest
cluster has the least work - plus the prediction launch() compares with the 256-wide kernel's.

Why: the persistent kernel's time is its busiest cluster's. Cutting every 256-row band of an
8192-column C into 320-wide tiles leaves 26 tiles, the last 192 wide but computed as 320 (TMA
pads it with zeros), and 832 tile pairs on an H200's 66 clusters take 13 rounds: the busiest
clusters do 13 x 320 = 4160 columns of work, against 4096 for 16 rounds of 256 and 3972 if
the work were spread evenly. Two widths fix both: 24 x 320 + 2 x 256 = 8192 pads nothing, and
four 320-wide tiles cover what five 256-wide ones do, so trading one for the other in some
bands moves work between the rounds' ends; the plan takes the trade after which a greedy
assignment (the 320-wide tiles round-robin, then each 256-wide one to the cluster with the
least work so far) has the least work in the busiest cluster: 4032 columns at 8192^3 on 66
clusters (11 x 320 + 2 x 256 in the busiest), the least that whole 64-column units allow. On
an H200 that ran 2.4-2.8 % faster than the 13 rounds of 320 (RESULTS.md, ninth session).

Work is counted in 64-column units of a tile pair's K loop: a 320-wide tile is 5, a 256-wide
one 4. Within each width the tiles go out in bands of GROUP_M row pairs walking the columns
together, so that the clusters working at once share B slices (and A rows) in L2.
"""

from __future__ import annotations

import heapq
from functools import lru_cache

import numpy as np

WIDE, NARROW = 320, 256  # the two tile widths
PAIR_ROWS = 256  # rows of C in one tile pair (a 2-block cluster's two 128-row tiles)
UNIT = 64  # columns of one unit of work
W_UNITS, N_UNITS = WIDE // UNIT, NARROW // UNIT  # 5 and 4: four wide tiles = five narrow
GROUP_M = 8  # row pairs of one band walk the columns together (their B slices stay in L2)


def column_split(n: int) -> tuple[int, int]:
    """(wide, narrow) tiles covering n columns with the least padding (ties: fewer tiles),
    the wide ones first."""
    best: tuple = ()
    for wide in range(-(-n // WIDE) + 1):
        narrow = max(0, -(-(n - wide * WIDE) // NARROW))
        key = (wide * WIDE + narrow * NARROW, wide + narrow)
        if not best or key < best[0]:
            best = (key, (wide, narrow))
    return best[1]


def _makespan(wide: int, narrow: int, clusters: int) -> int:
    """The busiest cluster's units once `wide` tiles go out round-robin and then `narrow`
    tiles each to the cluster with the least work (for equal tiles that greedy is optimal: the
    least T under which the clusters' room, in whole narrow tiles, holds them all)."""
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


def _bands(m_pairs: int, counts: list, group_m: int) -> tuple[list, list]:
    """The (row pair, first column, wide) tiles of each width in band order: `group_m` row
    pairs walk the columns together. counts[row pair] = (wide, narrow) tiles in it."""
    wides: list = []
    narrows: list = []
    for first in range(0, m_pairs, group_m):
        band = range(first, min(first + group_m, m_pairs))
        for j in range(max(counts[p][0] for p in band)):
            wides += [(p, j * WIDE, 1) for p in band if j < counts[p][0]]
        for j in range(max(counts[p][1] for p in band)):
            narrows += [(p, counts[p][0] * WIDE + j * NARROW, 0) for p in band
                        if j < counts[p][1]]
    return wides, narrows


@lru_cache(maxsize=64)
def plan(m_pairs: int, n: int, clusters: int, group_m: int = GROUP_M) -> np.ndarray:
    """int32 (clusters, slots, 2): per cluster its tiles in order, each (first row of C,
    first column * 2 + 1 if 320 wide else + 0), then (-1, 0) where its list ends. `m_pairs`:
    C's 256-row bands; `n`: its columns; `clusters`: the persistent grid's; `group_m`: row
    pairs per band of the L2 order. Do not modify it (cached)."""
    if m_pairs < 1 or n < 1 or clusters < 1 or group_m < 1:
        raise ValueError(f"a tile plan needs rows, columns, clusters and bands, got {m_pairs} "
                         f"row pairs, {n} columns, {clusters} clusters, bands of {group_m}")
    wide, narrow = column_split(n)
    trades = min(range(m_pairs * (wide // 4) + 1), key=lambda k: (
        _makespan(m_pairs * wide - 4 * k, m_pairs * narrow + 5 * k, clusters), k))
    counts = []
    for p in range(m_pairs):
        mine = trades // m_pairs + (p < trades % m_pairs)
        counts.append((wide - 4 * mine, narrow + 5 * mine))
    wides, narrows = _bands(m_pairs, counts, group_m)
    loads = [(0, c) for c in range(clusters)]
    lists: list = [[] for _ in range(clusters)]
    for tiles, units in ((wides, W_UNITS), (narrows, N_UNITS)):
        for p, n0, is_wide in tiles:  # each to the cluster with the least work so far
            work, c = heapq.heappop(loads)
            lists[c].append((p * PAIR_ROWS, n0 * 2 + is_wide))
            heapq.heappush(loads, (work + units, c))
    table = np.zeros((clusters, max(len(tiles) for tiles in lists) + 1, 2), np.int32)
    table[:, :, 0] = -1
    for c, tiles in enumerate(lists):
        if tiles:
            table[c, :len(tiles)] = tiles
    table.flags.writeable = False
    return table


def busiest(table: np.ndarray) -> int:
    """The columns of work (a tile pair's K loop per column) of the plan's busiest cluster:
    the prediction launch() compares with the 256-wide kernel's rounds x 256."""
    wide = table[:, :, 1] % 2
    used = table[:, :, 0] >= 0
    return int(((W_UNITS * wide + N_UNITS * (1 - wide)) * used).sum(axis=1).max()) * UNIT


def tiles(m: int, n: int) -> int:
    """The tile pairs of C (m, n) before any trade (the CPU target runs one cluster each)."""
    return -(-m // PAIR_ROWS) * sum(column_split(n))


__all__ = ["NARROW", "WIDE", "busiest", "column_split", "plan", "tiles"]
