"""Variant `aearly_bal`: benchmarks.gemm6.aearly's kernel on grid64's balanced grid (the fewest
clusters that finish the tile pairs in the same rounds): the two changes together."""

from __future__ import annotations

from benchmarks.gemm6.aearly import SMEM_BYTES, descriptors, gemm
from benchmarks.gemm6.common import launch_kernel


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with the aearly kernel on the balanced grid."""
    launch_kernel(gemm, SMEM_BYTES, c, a, b, descs, blocks, balanced=True)


__all__ = ["descriptors", "launch"]
