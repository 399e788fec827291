"""Puzzles 1-10: one thread, one element - indexing, guards, 2-D launches, blocks, grid strides.

Inputs are small integers stored as float32, so every expected value is exact; outputs start as
NaN, so an element no thread wrote shows as "never written" in the feedback.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.model import Puzzle, cdiv


def values(shape, rng: np.random.Generator) -> np.ndarray:
    """Small random integers as float32: sums of them are exact."""
    return rng.integers(-9, 10, shape).astype(np.float32)


def unwritten(shape) -> np.ndarray:
    """An output array whose every element says "no thread wrote me" (NaN)."""
    return np.full(shape, np.nan, dtype=np.float32)


PUZZLES = [
    Puzzle(
        name="map", title="Map", topic="indexing",
        statement="""Add 10 to each element of `a` and store it in `out`. There is exactly one
        thread per element: thread `i` (`cuda.threadIdx.x`) handles element `i`.""",
        starter='''def map_kernel(out, a):
    i = cuda.threadIdx.x
    # FILL ME IN (roughly 1 line)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng)},
        reference=lambda args: {"out": args["a"] + 10},
        launch=lambda n: (1, n), launch_text="1 block of `size` threads", sizes=(4, 7, 1)),
    Puzzle(
        name="zip", title="Zip", topic="indexing",
        statement="""Add `a` and `b` element by element into `out`, one thread per element.""",
        starter='''def zip_kernel(out, a, b):
    i = cuda.threadIdx.x
    # FILL ME IN (roughly 1 line)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "b": values(n, rng)},
        reference=lambda args: {"out": args["a"] + args["b"]},
        launch=lambda n: (1, n), launch_text="1 block of `size` threads", sizes=(4, 6, 1),
        max_reads=2),
    Puzzle(
        name="guards", title="Guards", topic="indexing",
        statement="""Add 10 to each element of `a` into `out`. The block has 8 threads, more
        than there are elements: threads past the end must not touch memory (that is an
        out-of-bounds access).""",
        starter='''def guards_kernel(out, a, size):
    i = cuda.threadIdx.x
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": args["a"] + 10},
        launch=lambda n: (1, 8), launch_text="1 block of 8 threads", sizes=(4, 7, 1)),
    Puzzle(
        name="map_2d", title="Map 2-D", topic="2-D indexing",
        statement="""`a` is a `size x size` matrix. Add 10 to each element into `out`. The
        block is 4 x 4 threads: thread `(x, y)` handles element `[x, y]` when it is inside.""",
        starter='''def map_2d_kernel(out, a, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten((n, n)), "a": values((n, n), rng), "size": n},
        reference=lambda args: {"out": args["a"] + 10},
        launch=lambda n: (1, (4, 4)), launch_text="1 block of 4 x 4 threads", sizes=(2, 3, 4)),
    Puzzle(
        name="broadcast", title="Broadcast", topic="2-D indexing",
        statement="""`a` is a column (`size x 1`), `b` a row (`1 x size`). Store
        `out[x, y] = a[x, 0] + b[0, y]`, as numpy's broadcasting `a + b` would.""",
        starter='''def broadcast_kernel(out, a, b, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten((n, n)), "a": values((n, 1), rng),
                               "b": values((1, n), rng), "size": n},
        reference=lambda args: {"out": args["a"] + args["b"]},
        launch=lambda n: (1, (4, 4)), launch_text="1 block of 4 x 4 threads", sizes=(2, 3, 4),
        max_reads=2),
    Puzzle(
        name="blocks", title="Blocks", topic="blocks",
        statement="""Add 10 to each element of `a` into `out`. A block has only 4 threads, so
        there are several blocks: a thread's element is
        `cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x`. The last block may reach past
        the end.""",
        starter='''def blocks_kernel(out, a, size):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": args["a"] + 10},
        launch=lambda n: (cdiv(n, 4), 4), launch_text="ceil(size / 4) blocks of 4 threads",
        sizes=(9, 4, 13)),
    Puzzle(
        name="blocks_2d", title="Blocks 2-D", topic="blocks",
        statement="""Add 10 to each element of the `size x size` matrix `a` into `out`, with a
        2-D grid of 4 x 4-thread blocks (`cuda.grid(2)` gives a thread's `(x, y)` in the whole
        grid).""",
        starter='''def blocks_2d_kernel(out, a, size):
    x, y = cuda.grid(2)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten((n, n)), "a": values((n, n), rng), "size": n},
        reference=lambda args: {"out": args["a"] + 10},
        launch=lambda n: ((cdiv(n, 4), cdiv(n, 4)), (4, 4)),
        launch_text="ceil(size / 4) x ceil(size / 4) blocks of 4 x 4 threads", sizes=(5, 8, 3)),
    Puzzle(
        name="grid_stride", title="Grid-stride loop", topic="blocks",
        statement="""Double every element of `a` into `out`. The grid is fixed at 2 blocks of 4
        threads whatever the size, so each thread handles elements `i, i + 8, i + 16, ...`
        (`cuda.gridsize(1)` is the number of threads in the grid).""",
        starter='''def grid_stride_kernel(out, a, size):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": args["a"] * 2},
        launch=lambda n: (2, 4), launch_text="2 blocks of 4 threads (fixed)",
        sizes=(20, 8, 5, 33), max_reads=lambda n: cdiv(n, 8), max_writes=lambda n: cdiv(n, 8)),
    Puzzle(
        name="reverse", title="Reverse", topic="indexing",
        statement="""Store `a` reversed in `out`: `out[i] = a[size - 1 - i]`.""",
        starter='''def reverse_kernel(out, a, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": args["a"][::-1].copy()},
        launch=lambda n: (cdiv(n, 8), 8), launch_text="ceil(size / 8) blocks of 8 threads",
        sizes=(8, 13, 1)),
    Puzzle(
        name="saxpy", title="SAXPY", topic="indexing",
        statement="""`out = alpha * x + y` for a float32 scalar `alpha` passed as an
        argument.""",
        starter='''def saxpy_kernel(out, x, y, alpha, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "x": values(n, rng), "y": values(n, rng),
                               "alpha": np.float32(1.5), "size": n},
        reference=lambda args: {"out": args["alpha"] * args["x"] + args["y"]},
        launch=lambda n: (cdiv(n, 8), 8), launch_text="ceil(size / 8) blocks of 8 threads",
        sizes=(8, 21, 3), max_reads=2, rtol=1e-6),
]
