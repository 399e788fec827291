"""benchmarks/gemm6, the eighth H200 session's variants of the Hopper GEMM (issue 24), and
bench_hopper's balanced-grid rule: each variant's products on the CPU target - partial tiles,
and one cluster walking 3 x 3 tile pairs so that every stage (the held epilogue stage too) is
freed and refilled across tiles. (The variants that lost - lanes_a, split, n64a, a256 - and
their racecheck tests are in the history: git show 9e73fb8:benchmarks/gemm6/NAME.py.)"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gpunb
from benchmarks.gemm6.common import grid_clusters

VARIANTS = ("before", "twin", "grid64", "n256")


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@pytest.mark.slow  # compiles a warp-specialised kernel for the CPU target
@pytest.mark.parametrize("name", VARIANTS)
def test_variant_products_on_the_cpu_target(cpu, name):
    module = importlib.import_module(f"benchmarks.gemm6.{name}")
    for m, n, k, blocks in ((136, 712, 72, None), (640, 712, 320, 2)):
        rng = np.random.default_rng(m)
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((n, k)).astype(np.float16)
        c = np.zeros((m, n), np.float16)
        module.launch(c, a, b, blocks=blocks)
        exact = a.astype(np.float64) @ b.astype(np.float64).T
        assert np.abs(c.astype(np.float64) - exact).max() <= np.abs(exact).max() * 2.0 ** -10


def test_the_balanced_grid_keeps_the_rounds_with_fewer_clusters():
    assert grid_clusters(832, 66, balanced=False) == 66  # 8192^3, 320 wide, an H200
    assert grid_clusters(832, 66, balanced=True) == 64  # 13 rounds either way
    assert grid_clusters(1024, 66, balanced=True) == 64  # 16 rounds of 256 wide
    assert grid_clusters(208, 66, balanced=True) == 52  # 4096^3, 320 wide: 4 rounds
    assert grid_clusters(9, 66, balanced=True) == 9  # fewer pairs than clusters
    assert grid_clusters(132, 66, balanced=True) == 66  # whole rounds already
