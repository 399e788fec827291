"""The launch that every benchmarks.gemm6 variant shares: hopper_gemm.launch's persistent grid
(one cluster per tile pair on the CPU target, else as many clusters as the GPU holds at once,
asked of the driver for the variant's own kernel) for a 320-wide variant kernel, or, with
`balanced`, the fewest clusters that still finish the tile pairs in the same number of rounds."""

from __future__ import annotations

import numpy as np

from gpunb import cuda
from gpunb.examples import hopper_gemm
from gpunb.examples.hopper_gemm import BK, BM, CLUSTER, THREADS


def uniform_descriptors(a, b, c, width: int = 320) -> tuple:
    """A's tiles, B's (width / 2) x BK halves and C's 64 x 64 panels: the descriptors of a
    kernel whose tiles are all `width` wide (hopper_gemm.descriptors gives the 320-wide
    example, whose plan has 256-wide tiles too, a second B descriptor since the ninth
    session)."""
    return (cuda.tma.descriptor(a, (BM, BK), 128), cuda.tma.descriptor(b, (width // CLUSTER, BK),
                                                                        128),
            cuda.tma.descriptor(c, (64, 64), 128))


def grid_clusters(pairs: int, resident: int, balanced: bool) -> int:
    """Clusters of the persistent grid for `pairs` tile pairs with `resident` clusters held at
    once: all of them, or (balanced) the fewest that take the same ceil(pairs / resident)
    rounds, so that every cluster walks as many pairs (832 pairs on 66: 64 clusters x 13)."""
    clusters = min(pairs, resident)
    if balanced:
        rounds = -(-pairs // clusters)
        clusters = -(-pairs // rounds)
    return clusters


def launch_kernel(kernel, smem: int, c, a, b, descs=None, blocks: int | None = None,
                  balanced: bool = False, width: int = 320) -> None:
    """C = A @ B.T into `c` with `kernel` (hopper_gemm's arguments, tiles `width` wide)."""
    M, K = a.shape  # noqa: N806
    N = b.shape[0]  # noqa: N806
    if descs is None:
        descs = uniform_descriptors(a, b, c, width)
    args = (c, *descs, M, N, K)
    pairs = -(-M // (CLUSTER * hopper_gemm.BM)) * -(-N // width)
    if blocks is None:
        resident = pairs if isinstance(a, np.ndarray) else hopper_gemm._kernel_clusters(
            kernel, smem, args)
        blocks = CLUSTER * grid_clusters(pairs, resident, balanced)
    kernel[blocks, THREADS, 0, smem](*args)
