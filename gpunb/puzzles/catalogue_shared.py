"""Puzzles 11-22: threads that cooperate - shared memory, reductions, scans, warps, atomics,
convolution, transpose and matmul. Each says how many global reads a thread may make, which is
what forces shared memory (a value read once, used by several threads).
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, values
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle, cdiv


def _pool(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    out[1:] += a[:-1]
    out[2:] += a[:-2]
    return out


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    padded = np.concatenate([a, np.zeros(len(b), a.dtype)])
    return np.array([padded[i:i + len(b)] @ b for i in range(len(a))], dtype=np.float32)


def _block_sums(a: np.ndarray, width: int) -> np.ndarray:
    padded = np.concatenate([a, np.zeros(-len(a) % width, a.dtype)])
    return padded.reshape(-1, width).sum(axis=1)


def _conv_inputs(sizes, rng):
    n, k = sizes
    return {"out": unwritten(n), "a": values(n, rng), "b": values(k, rng), "a_size": n,
            "b_size": k}


def _matrix_inputs(shape, rng):
    rows, cols = shape
    return {"out": unwritten((cols, rows)), "a": values((rows, cols), rng), "rows": rows,
            "cols": cols}


def _axis_inputs(shape, rng):
    batch, n = shape
    return {"out": unwritten((batch, 1)), "a": values((batch, n), rng), "size": n}


PUZZLES = [
    Puzzle(
        name="shared", title="Shared memory", topic="shared memory",
        statement="""Add 10 to each element of `a` into `out`, going through shared memory: each
        thread copies its element into a `TPB`-element shared array, the block waits at
        `cuda.syncthreads()`, then each thread reads its element back from shared memory. (Here
        it is only a detour; the puzzles after this one need it.)""",
        starter='''from gpunb import float32

TPB = 4

def shared_kernel(out, a, size):
    shared = cuda.shared.array(TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": args["a"] + 10},
        launch=lambda n: (cdiv(n, 4), 4), launch_text="ceil(size / 4) blocks of TPB = 4 threads",
        sizes=(8, 10, 3), shared=SHARED_REQUIRED, constants={"TPB": 4}),
    Puzzle(
        name="pooling", title="Pooling", topic="shared memory",
        statement="""`out[i] = a[i - 2] + a[i - 1] + a[i]`, leaving out terms before the start.
        Each thread may read only one element of `a` from global memory: load it into shared
        memory, synchronise, then sum from there.""",
        starter='''from gpunb import float32

TPB = 8

def pooling_kernel(out, a, size):
    shared = cuda.shared.array(TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    # FILL ME IN (roughly 8 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": _pool(args["a"])},
        launch=lambda n: (1, 8), launch_text="1 block of TPB = 8 threads", sizes=(8, 6, 2),
        shared=SHARED_REQUIRED, constants={"TPB": 8}),
    Puzzle(
        name="dot", title="Dot product", topic="reductions",
        statement="""`out[0] = sum(a * b)`. Each thread reads one element of `a` and one of `b`
        and stores their product in shared memory; after a barrier, one thread adds them up and
        writes the only result.""",
        starter='''from gpunb import float32

TPB = 8

def dot_kernel(out, a, b, size):
    shared = cuda.shared.array(TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    # FILL ME IN (roughly 9 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(1), "a": values(n, rng), "b": values(n, rng),
                               "size": n},
        reference=lambda args: {"out": np.array([args["a"] @ args["b"]], np.float32)},
        launch=lambda n: (1, 8), launch_text="1 block of TPB = 8 threads", sizes=(8, 5, 1),
        max_reads=2, shared=SHARED_REQUIRED, constants={"TPB": 8}),
    Puzzle(
        name="conv1d", title="1-D convolution", topic="shared memory",
        statement="""`out[i] = sum(a[i + j] * b[j] for j in range(b_size))`, terms past the end
        of `a` left out; `b_size <= MAX_CONV`. Blocks of `TPB` threads each load their slice of
        `a` *and the `MAX_CONV - 1` elements after it* (the halo) into shared memory, so no
        element is read from global memory by more than one thread of a block; each thread reads
        at most 2 elements of `a` and 1 of `b`.""",
        starter='''from gpunb import float32

TPB = 8
MAX_CONV = 4
TPB_MAX_CONV = TPB + MAX_CONV

def conv1d_kernel(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(TPB_MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    # FILL ME IN (roughly 17 lines)
''',
        inputs=_conv_inputs,
        reference=lambda args: {"out": _conv(args["a"], args["b"])},
        launch=lambda s: (cdiv(s[0], 8), 8), launch_text="ceil(a_size / 8) blocks of TPB = 8",
        sizes=((6, 3), (15, 4), (8, 1)), max_reads=3, shared=SHARED_REQUIRED,
        constants={"TPB": 8, "MAX_CONV": 4}),
    Puzzle(
        name="block_sum", title="Block sums", topic="reductions",
        statement="""`out[b]` is the sum of block `b`'s slice `a[b * TPB:(b + 1) * TPB]`
        (elements past the end count as 0). Load into shared memory and reduce as a tree: at
        step `s = 1, 2, 4, ...` thread `t` (a multiple of `2s`) adds element `t + s` to its own
        after a barrier. Thread 0 of each block writes the block's sum.""",
        starter='''from gpunb import float32

TPB = 8

def block_sum_kernel(out, a, size):
    cache = cuda.shared.array(TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    # FILL ME IN (roughly 12 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(cdiv(n, 8)), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": _block_sums(args["a"], 8)},
        launch=lambda n: (cdiv(n, 8), 8), launch_text="ceil(size / 8) blocks of TPB = 8",
        sizes=(8, 15, 20), shared=SHARED_REQUIRED, constants={"TPB": 8}),
    Puzzle(
        name="prefix_sum", title="Prefix sum (scan)", topic="scans",
        statement="""The inclusive scan `out[i] = a[0] + ... + a[i]` in one block of 16 threads
        (Hillis-Steele: at step `s = 1, 2, 4, 8` every thread `t >= s` adds the value of thread
        `t - s`, with barriers between reading and writing). Shared memory or warp shuffles
        (`cuda.shfl_up_sync`) both work.""",
        starter='''from gpunb import float32

TPB = 16

def prefix_sum_kernel(out, a, size):
    cache = cuda.shared.array(TPB, float32)
    i = cuda.threadIdx.x
    # FILL ME IN (roughly 12 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": np.cumsum(args["a"]).astype(np.float32)},
        launch=lambda n: (1, 16), launch_text="1 block of TPB = 16 threads", sizes=(16, 11, 1),
        shared=SHARED_ALLOWED, constants={"TPB": 16}),
    Puzzle(
        name="axis_sum", title="Axis sum", topic="reductions",
        statement="""`a` has shape `(batch, size)`; `out[r, 0]` is the sum of row `r`. Block
        `r` (`cuda.blockIdx.x`) sums row `r` with a shared-memory tree reduction.""",
        starter='''from gpunb import float32

TPB = 8

def axis_sum_kernel(out, a, size):
    cache = cuda.shared.array(TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    # FILL ME IN (roughly 12 lines)
''',
        inputs=_axis_inputs,
        reference=lambda args: {"out": args["a"].sum(axis=1, keepdims=True)},
        launch=lambda s: (s[0], 8), launch_text="`batch` blocks of TPB = 8 threads",
        sizes=((4, 6), (3, 8), (2, 1)), shared=SHARED_REQUIRED, constants={"TPB": 8}),
    Puzzle(
        name="warp_sum", title="Warp sum", topic="warps",
        statement="""`out[w]` is the sum of warp `w`'s 32 elements `a[32 * w:32 * w + 32]`
        (elements past the end count as 0), without shared memory: fold the warp's values with
        `cuda.shfl_down_sync(0xFFFFFFFF, v, offset)` for offsets 16, 8, 4, 2, 1; lane 0 then
        holds the sum. Every lane must take part in every shuffle, including lanes past the
        end.""",
        starter='''FULL = 0xFFFFFFFF

def warp_sum_kernel(out, a, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 8 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(cdiv(n, 32)), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": _block_sums(args["a"], 32)},
        launch=lambda n: (cdiv(n, 64), 64), launch_text="ceil(size / 64) blocks of 64 threads",
        sizes=(64, 100, 32)),
    Puzzle(
        name="count_positive", title="Count with atomics", topic="atomics",
        statement="""`out[0]` (which starts at 0) becomes the number of elements of `a` that are
        greater than 0. Many threads add to one counter: use `cuda.atomic.add`; a plain
        `out[0] += 1` loses updates on a GPU (the grader's race detector finds it). An atomic
        counts as one global read and one write.""",
        starter='''def count_positive_kernel(out, a, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": np.zeros(1, np.int32), "a": values(n, rng), "size": n},
        reference=lambda args: {"out": np.array([(args["a"] > 0).sum()], np.int32)},
        launch=lambda n: (cdiv(n, 32), 32), launch_text="ceil(size / 32) blocks of 32 threads",
        sizes=(32, 100, 7), max_reads=2, shared=SHARED_ALLOWED),
    Puzzle(
        name="histogram", title="Histogram", topic="atomics",
        statement="""`a` holds integers in `[0, BINS)`; `out[k]` (which starts at 0) becomes
        how many elements equal `k`. Several threads hit the same bin: use
        `cuda.atomic.add` (an atomic counts as one global read and one write). Faster: a
        per-block histogram in shared memory, merged at the end.""",
        starter='''BINS = 8

def histogram_kernel(out, a, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=lambda n, rng: {"out": np.zeros(8, np.int32),
                               "a": rng.integers(0, 8, n).astype(np.int32), "size": n},
        reference=lambda args: {"out": np.bincount(args["a"], minlength=8).astype(np.int32)},
        launch=lambda n: (cdiv(n, 32), 32), launch_text="ceil(size / 32) blocks of 32 threads",
        sizes=(64, 100, 5), max_reads=2, shared=SHARED_ALLOWED, constants={"BINS": 8}),
    Puzzle(
        name="transpose", title="Transpose", topic="2-D indexing",
        statement="""`out` (shape `cols x rows`) is the transpose of `a` (shape `rows x cols`).
        Thread `(x, y)` of the grid (`cuda.grid(2)`) reads `a[y, x]`. The straightforward
        version works; the fast one stages a `TILE x TILE` tile in shared memory so that both
        the reads and the writes of a warp touch consecutive addresses.""",
        starter='''TILE = 4

def transpose_kernel(out, a, rows, cols):
    x, y = cuda.grid(2)
    # FILL ME IN (roughly 2 lines, or 10 with a shared tile)
''',
        inputs=_matrix_inputs,
        reference=lambda args: {"out": np.ascontiguousarray(args["a"].T)},
        launch=lambda s: ((cdiv(s[1], 4), cdiv(s[0], 4)), (4, 4)),
        launch_text="ceil(cols / 4) x ceil(rows / 4) blocks of TILE x TILE = 4 x 4 threads",
        sizes=((4, 4), (5, 7), (9, 3)), shared=SHARED_ALLOWED, constants={"TILE": 4}),
    Puzzle(
        name="matmul", title="Tiled matmul", topic="shared memory",
        statement="""`out = a @ b` for `size x size` matrices. Thread `(i, j)` of the grid
        computes `out[i, j]`. Walk the `k` dimension in `TPB`-wide tiles: each thread loads one
        element of `a` and one of `b` per tile into shared memory, the block synchronises, every
        thread accumulates `TPB` products from shared memory, and synchronises again before the
        next tile. A thread reads at most `2 * ceil(size / TPB)` global elements.""",
        starter='''from gpunb import float32

TPB = 4

def matmul_kernel(out, a, b, size):
    a_shared = cuda.shared.array((TPB, TPB), float32)
    b_shared = cuda.shared.array((TPB, TPB), float32)
    i = cuda.blockIdx.x * TPB + cuda.threadIdx.x
    j = cuda.blockIdx.y * TPB + cuda.threadIdx.y
    local_i = cuda.threadIdx.x
    local_j = cuda.threadIdx.y
    # FILL ME IN (roughly 14 lines)
''',
        inputs=lambda n, rng: {"out": unwritten((n, n)), "a": values((n, n), rng),
                               "b": values((n, n), rng), "size": n},
        reference=lambda args: {"out": args["a"] @ args["b"]},
        launch=lambda n: ((cdiv(n, 4), cdiv(n, 4)), (4, 4)),
        launch_text="ceil(size / 4) x ceil(size / 4) blocks of TPB x TPB = 4 x 4 threads",
        sizes=(2, 4, 7), max_reads=lambda n: 2 * cdiv(n, 4), shared=SHARED_REQUIRED,
        constants={"TPB": 4}),
]
