"""The example's own 128 x 320 kernel (gpunb.examples.hopper_gemm_wide, unchanged) launched as a
--module: a control for bench_hopper's slots - the same kernel in the example's slot and in a
module's slot should time the same, and what differs between them is the benchmark's noise or
a bias of the slot (in a rotated order the example always follows cuBLAS)."""

from __future__ import annotations

from benchmarks.gemm6.common import launch_kernel
from gpunb.examples import hopper_gemm
from gpunb.examples.hopper_gemm_wide import BN, SMEM_BYTES, gemm


def descriptors(a, b, c) -> tuple:
    """hopper_gemm's descriptors for 320-wide tiles."""
    return hopper_gemm.descriptors(a, b, c, width=BN)


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with the example's wide kernel, on hopper_gemm's persistent grid."""
    launch_kernel(gemm, SMEM_BYTES, c, a, b, descs, blocks)


__all__ = ["descriptors", "launch"]
