"""The example's 320-wide kernel on a tile plan banded by 16 row pairs (benchmarks.gemm7.bands)."""

from __future__ import annotations

from benchmarks.gemm7.bands import G16

descriptors, launch = G16.descriptors, G16.launch
