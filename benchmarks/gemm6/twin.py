"""The example's own 320-wide kernel (gpunb.examples.hopper_gemm_wide, through hopper_gemm's
launch with width=320, i.e. with its tile plan since the ninth session) launched as a --module:
a control for bench_hopper's slots - the same kernel in the example's slot and in a module's
slot should time the same, and what differs between them is the benchmark's noise or a bias of
the slot (in a rotated order the example always follows cuBLAS)."""

from __future__ import annotations

from gpunb.examples import hopper_gemm
from gpunb.examples.hopper_gemm_wide import BN


def descriptors(a, b, c) -> tuple:
    """hopper_gemm's descriptors for the 320-wide kernel."""
    return hopper_gemm.descriptors(a, b, c, width=BN)


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """C = A @ B.T with the example's wide kernel, on hopper_gemm's persistent grid."""
    hopper_gemm.launch(c, a, b, descs, blocks, width=BN)


__all__ = ["descriptors", "launch"]
