"""Puzzles 1-10: one thread, one element - indexing, guards, 2-D launches, blocks, grid strides.

Inputs are small random integers stored as float32, drawn again at every attempt, so every
expected value is exact and no answer can be hard-coded; outputs start as NaN, so an element no
thread wrote shows as "never written" in the feedback. `hidden` draws sizes a learner does not
see in advance.
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


def upto(high: int, low: int = 1):
    """A hidden-size generator: an integer drawn in [low, high]."""
    return lambda rng: int(rng.integers(low, high + 1))


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
        launch=lambda n: (1, n), launch_text="1 block of `size` threads", sizes=(4, 7, 1),
        hidden=upto(32),
        hints=("Thread i reads a[i] and writes out[i].",
               "`out[i] = a[i] + 10`: one line, no loop.")),
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
        max_reads=2, hidden=upto(32),
        hints=("Like map, with two inputs: thread i reads a[i] and b[i].",
               "`out[i] = a[i] + b[i]`.")),
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
        launch=lambda n: (1, 8), launch_text="1 block of 8 threads", sizes=(4, 7, 1),
        hidden=upto(8),
        hints=("Threads with i >= size have no element: they must not read or write.",
               "Put the map line under `if i < size:`.")),
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
        launch=lambda n: (1, (4, 4)), launch_text="1 block of 4 x 4 threads", sizes=(2, 3, 4),
        hidden=upto(4),
        hints=("Both indices need a guard: the block is 4 x 4 whatever the size.",
               "`if x < size and y < size: out[x, y] = a[x, y] + 10`.")),
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
        max_reads=2, hidden=upto(4),
        hints=("`a` has one column and `b` one row: index their missing axis with 0.",
               "`out[x, y] = a[x, 0] + b[0, y]`, guarded like map_2d.")),
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
        sizes=(9, 4, 13), hidden=upto(40),
        hints=("The starter's `i` already includes the block's offset; the last block is "
               "partial.",
               "Guard with `if i < size:` and map as before.")),
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
        launch_text="ceil(size / 4) x ceil(size / 4) blocks of 4 x 4 threads", sizes=(5, 8, 3),
        hidden=upto(12),
        hints=("`cuda.grid(2)` already adds the block offsets in both dimensions.",
               "Guard x and y against size, then `out[x, y] = a[x, y] + 10`.")),
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
        sizes=(20, 8, 5, 33), max_reads=lambda n: cdiv(n, 8), max_writes=lambda n: cdiv(n, 8),
        hidden=upto(40),
        hints=("A thread handles start, start + stride, start + 2 * stride, ... while they "
               "are below size.",
               "`for i in range(start, size, stride): out[i] = a[i] * 2`.")),
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
        sizes=(8, 13, 1), hidden=upto(40),
        hints=("The last element is a[size - 1], not a[size].",
               "`if i < size: out[i] = a[size - 1 - i]`.")),
    Puzzle(
        name="saxpy", title="SAXPY", topic="indexing",
        statement="""`out = alpha * x + y` for a float32 scalar `alpha` passed as an
        argument (its value changes from attempt to attempt).""",
        starter='''def saxpy_kernel(out, x, y, alpha, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "x": values(n, rng), "y": values(n, rng),
                               "alpha": np.float32(rng.integers(-6, 7) / 2), "size": n},
        reference=lambda args: {"out": args["alpha"] * args["x"] + args["y"]},
        launch=lambda n: (cdiv(n, 8), 8), launch_text="ceil(size / 8) blocks of 8 threads",
        sizes=(8, 21, 3), max_reads=2, rtol=1e-6, hidden=upto(40),
        hints=("`alpha` is a scalar argument: every thread uses the same value.",
               "`if i < size: out[i] = alpha * x[i] + y[i]`.")),
]
