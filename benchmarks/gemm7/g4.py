"""The example's 320-wide kernel on a tile plan banded by 4 row pairs (benchmarks.gemm7.bands)."""

from __future__ import annotations

from benchmarks.gemm7.bands import G4

descriptors, launch = G4.descriptors, G4.launch
