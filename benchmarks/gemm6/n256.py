"""gpunb.examples.hopper_gemm's 128 x 256 kernel, unchanged, in a --module slot: the control for
`a256` (at 8192^3 launch() runs the 320-wide kernel in the example's slot)."""

from __future__ import annotations

from benchmarks.gemm6.common import launch_kernel
from gpunb.examples import hopper_gemm
from gpunb.examples.hopper_gemm import BN, SMEM_BYTES, gemm


def descriptors(a, b, c) -> tuple:
    """hopper_gemm's descriptors for 256-wide tiles."""
    return hopper_gemm.descriptors(a, b, c, width=BN)


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with the example's 128 x 256 kernel, on hopper_gemm's persistent grid."""
    launch_kernel(gemm, SMEM_BYTES, c, a, b, descs, blocks, width=BN)


__all__ = ["descriptors", "launch"]
