"""The CPU-target figures, written once against the numba.cuda API so both tools run them.

gpunb's CPU target runs each figure in this process; numba's simulator runs it in a fresh process
(NUMBA_ENABLE_CUDASIM must be set before numba is imported). The simulator runs blocks one after
another, so its time is linear in the number of blocks: under a time budget it times the first
blocks of the grid (the whole grid with --sim-full) and the table says how many it timed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

# figure name -> problem size: saxpy/reduction elements, matmul edge
SIZES = {"saxpy": 1 << 20, "matmul64": 64, "matmul256": 256, "reduction": 1 << 20}
QUICK_SIZES = {"saxpy": 1 << 16, "matmul64": 64, "matmul256": 64, "reduction": 1 << 16}
TITLES = {
    "saxpy": "saxpy {size}",
    "matmul64": "tiled matmul {size}^3",
    "matmul256": "tiled matmul {size}^3",
    "reduction": "smem reduction {size}",
}


def size_text(figure: str, n: int) -> str:
    """1M, 64K or 256: the size as the figure's title shows it."""
    if figure.startswith("matmul"):
        return str(n)
    return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n >> 10}K"


@dataclasses.dataclass
class Problem:
    """A figure ready to launch: `launch(units)` runs the first `units` of `total` grid slices."""

    launch: Callable[[int], None]
    total: int
    blocks_per_unit: int
    check: Callable[[], bool]


def prepare(figure: str, cuda, kernels, n: int) -> Problem:
    rng = np.random.default_rng(7)
    if figure == "saxpy":
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        d_x, d_y, d_out = cuda.to_device(x), cuda.to_device(y), cuda.device_array(n, np.float32)
        blocks = (n + 255) // 256

        def check() -> bool:
            return np.allclose(d_out.copy_to_host(), np.float32(2.0) * x + y)

        return Problem(lambda units: kernels.saxpy[units, 256](d_out, d_x, d_y, np.float32(2.0)),
                       blocks, 1, check)
    if figure.startswith("matmul"):
        a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
        d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.device_array((n, n), np.float32)
        tiles = (n + kernels.TPB - 1) // kernels.TPB

        def check() -> bool:
            return np.allclose(d_c.copy_to_host(), a @ b, rtol=1e-4, atol=1e-4)

        block = (kernels.TPB, kernels.TPB)

        def launch(units: int) -> None:
            # a slice is one row of blocks: gridDim.x (the doc kernel's loop count) stays put
            kernels.fast_matmul[(tiles, units), block](d_a, d_b, d_c)

        return Problem(launch, tiles, tiles, check)
    if figure == "reduction":
        values = rng.random(n, dtype=np.float32)
        d_values, d_total = cuda.to_device(values), cuda.to_device(np.zeros(1, np.float32))
        blocks = (n + kernels.RTPB - 1) // kernels.RTPB

        def launch(units: int) -> None:
            d_total.copy_to_device(np.zeros(1, np.float32))
            kernels.block_sum[units, kernels.RTPB](d_values, d_total)

        def check() -> bool:
            return bool(np.isclose(d_total.copy_to_host()[0], values.sum(dtype=np.float64),
                                   rtol=1e-4))

        return Problem(launch, blocks, 1, check)
    raise ValueError(f"unknown figure {figure!r}")


def timed(launch: Callable[[], None], sync: Callable[[], None]) -> float:
    started = time.perf_counter()
    launch()
    sync()
    return time.perf_counter() - started


def simulate(workdir: Path, args: dict) -> dict:
    """Run one figure under numba's simulator (called in a fresh process with CUDASIM set)."""
    from numba import cuda

    from benchmarks.kernelsrc import load_kernels

    if "simulator" not in cuda.to_device.__module__:
        raise RuntimeError("numba's simulator is not active (NUMBA_ENABLE_CUDASIM=1 is needed)")
    kernels = load_kernels("numba", workdir)
    problem = prepare(args["figure"], cuda, kernels, args["n"])
    one = timed(lambda: problem.launch(1), cuda.synchronize)  # calibration, and warm-up
    units = problem.total if args.get("full") else max(1, min(problem.total,
                                                               int(args["budget_s"] / one)))
    seconds = timed(lambda: problem.launch(units), cuda.synchronize)
    ok = problem.check() if units == problem.total else None
    return {"seconds": seconds, "units": units, "total": problem.total,
            "blocks_timed": units * problem.blocks_per_unit,
            "blocks_total": problem.total * problem.blocks_per_unit,
            "estimate": seconds * problem.total / units, "ok": ok}
