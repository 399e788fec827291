"""gpunb.examples.hopper_gemm with its 128 x 320 kernel forced (the seventh session's variant,
now gpunb.examples.hopper_gemm_wide, which launch() picks by the problem): for
`bench_hopper --module benchmarks.hopper_gemm_wide`, to time it beside the example's own choice
(e.g. at 4096^3, where launch() picks 256)."""

from __future__ import annotations

from gpunb.examples import hopper_gemm
from gpunb.examples.hopper_gemm_wide import BN, gemm


def descriptors(a, b, c) -> tuple:
    """hopper_gemm.descriptors for the 320-wide kernel."""
    return hopper_gemm.descriptors(a, b, c, width=BN)


def launch(c, a, b, descs=None, blocks: int | None = None) -> None:
    """hopper_gemm.launch with the 320-wide kernel."""
    hopper_gemm.launch(c, a, b, descs, blocks, width=BN)


__all__ = ["BN", "descriptors", "gemm", "launch"]
