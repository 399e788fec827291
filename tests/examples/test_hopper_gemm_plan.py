"""gpunb.examples.hopper_gemm_plan, the tile plan of the 320-wide cluster GEMM: every column of
every 256-row band covered exactly once, widths as the plan encodes them, the busiest cluster's
work against the 320-only and 256-only grids and the even spread, the greedy's closed form
against a simulation, and bad inputs."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from gpunb.examples import hopper_gemm_plan as hp


def _tiles(table: np.ndarray) -> list:
    """[(cluster, row, column, width)] of a plan, in each cluster's order."""
    out = []
    for cluster, row in enumerate(table):
        ended = False
        for m0, code in row.tolist():
            if m0 < 0:
                ended = True
                continue
            assert not ended, "a tile after the end of a cluster's list"
            out.append((cluster, m0, code // 2, hp.WIDE if code % 2 else hp.NARROW))
    return out


@pytest.mark.parametrize("group_m", [1, 8, 16])
@pytest.mark.parametrize("m_pairs, n, clusters", [
    (32, 8192, 66), (16, 4096, 66), (16, 4096, 60), (3, 904, 1), (1, 800, 3), (2, 1280, 3),
    (5, 1000, 7), (8, 2056, 66), (64, 16384, 66), (7, 64, 5), (9, 3000, 13)])
def test_every_column_of_every_band_is_covered_once(m_pairs, n, clusters, group_m):
    table = hp.plan(m_pairs, n, clusters, group_m)
    assert table.shape[0] == clusters and table.dtype == np.int32
    tiles = _tiles(table)
    for band in range(m_pairs):
        cuts = sorted((n0, width) for _, m0, n0, width in tiles if m0 == band * hp.PAIR_ROWS)
        end = 0
        for n0, width in cuts:
            assert n0 == end  # no gap, no overlap
            end = n0 + width
        assert end >= n > end - min(hp.WIDE, hp.NARROW)  # the last tile reaches past n only
    units = sorted(sum(width for c, *_, width in tiles if c == k) for k in range(clusters))
    assert hp.busiest(table) == units[-1]


def test_8192_on_an_h200_pads_nothing_and_beats_both_uniform_grids():
    table = hp.plan(32, 8192, 66)
    tiles = _tiles(table)
    assert sum(width for *_, width in tiles) == 32 * 8192  # no padded columns
    assert {width for *_, width in tiles} == {hp.WIDE, hp.NARROW}
    # 13 rounds of 320 (the last column tile padded): 4160; 16 rounds of 256: 4096; the even
    # spread 32 x 8192 / 66 = 3972, i.e. 63 whole 64-column units: 4032
    assert hp.busiest(table) == 4032 == -(-32 * 8192 // (66 * hp.UNIT)) * hp.UNIT
    # the tiles of each width go out in bands: every cluster's first tile is a 320-wide one
    # of the first band of GROUP_M row pairs (66 tiles: its first 9 columns of tiles)
    first = table[:, 0]
    assert (first[:, 1] % 2 == 1).all() and (first[:, 0] < hp.GROUP_M * hp.PAIR_ROWS).all()
    assert first[:, 1].max() // 2 < 9 * hp.WIDE


def test_the_greedy_closed_form_matches_a_simulation():
    for wide, narrow, clusters in ((744, 94, 66), (8, 246, 66), (0, 5, 3), (13, 0, 4),
                                   (100, 37, 9), (3, 40, 7)):
        loads = [(hp.W_UNITS * (wide // clusters + (c < wide % clusters)), c)
                 for c in range(clusters)]
        heapq.heapify(loads)
        for _ in range(narrow):
            work, c = heapq.heappop(loads)
            heapq.heappush(loads, (work + hp.N_UNITS, c))
        assert hp._makespan(wide, narrow, clusters) == max(work for work, _ in loads)


def test_column_split_pads_least():
    assert hp.column_split(8192) == (24, 2)  # 7680 + 512
    assert hp.column_split(4096) == (12, 1)
    assert hp.column_split(800) == (1, 2)  # 832: 32 columns padded
    assert hp.column_split(712) == (0, 3)  # 768
    assert hp.column_split(1280) == (4, 0)  # as 5 x 256: the fewer tiles


def test_the_plan_is_cached_and_read_only():
    table = hp.plan(4, 1000, 3)
    assert hp.plan(4, 1000, 3) is table
    with pytest.raises(ValueError):
        table[0, 0, 0] = 5


@pytest.mark.parametrize("args", [(0, 8192, 66), (4, 0, 66), (4, 8192, 0), (4, 8192, 66, 0)])
def test_an_empty_problem_or_grid_is_refused(args):
    with pytest.raises(ValueError, match="a tile plan needs rows, columns, clusters and bands"):
        hp.plan(*args)
