"""Variant `lanes_a_bal`: benchmarks.gemm6.lanes_a's kernel on grid64's balanced grid (the fewest
clusters that finish the tile pairs in the same rounds): the two changes together."""

from __future__ import annotations

from benchmarks.gemm6.common import launch_kernel
from benchmarks.gemm6.lanes_a import SMEM_BYTES, descriptors, gemm


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with the lanes_a kernel on the balanced grid."""
    launch_kernel(gemm, SMEM_BYTES, c, a, b, descs, blocks, balanced=True)


__all__ = ["descriptors", "launch"]
