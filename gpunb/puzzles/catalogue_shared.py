"""Puzzles 11-22: threads that cooperate - shared memory, reductions, scans, warps, atomics,
convolution, transpose and matmul. Each says how many global reads a thread may make, which is
what forces shared memory (a value read once, used by several threads), and its Method says how
the work must be done: values passed between threads through shared memory, a tree of log2(n)
steps rather than one thread's loop, shuffles only where the puzzle is about them.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, upto, values
from gpunb.puzzles.method import FLOW_BETWEEN, FLOW_OWN, Method
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle, cdiv

# a shared-memory tree over 8 values: log2(8) = 3 steps of at most 2 reads (3 with the result's)
TREE_8 = Method(shared_flow=FLOW_BETWEEN, max_step_reads=3, min_barriers=3, max_barriers=7,
                max_warp_ops=0, text="a tree: at step s = 1, 2, 4 threads add pairs of values "
                                     "s apart in shared memory, with a barrier between steps",
                hints={"step_work": "one thread adding up the whole block is the sequential "
                                    "sum: at each step of the tree every active thread adds "
                                    "one pair, then the block waits at cuda.syncthreads()"})


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
        sizes=(8, 10, 3), shared=SHARED_REQUIRED, constants={"TPB": 4}, hidden=upto(20),
        method=Method(
            shared_flow=FLOW_OWN, min_barriers=1, max_warp_ops=0,
            text="write to shared memory, cuda.syncthreads(), read back",
            hints={"barriers": "here each thread reads back its own element, so no race shows "
                               "yet, but the method has the block wait at "
                               "cuda.syncthreads() between writing shared memory and reading "
                               "it: in every later puzzle threads read each other's values"}),
        hints=("Each thread's value is already in `shared[local_i]` after the barrier.",
               "`if i < size: out[i] = shared[local_i] + 10`.")),
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
        shared=SHARED_REQUIRED, constants={"TPB": 8}, hidden=upto(8),
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=3, min_barriers=1,
                      max_warp_ops=0, text="one global read per thread into shared memory; "
                                           "the neighbours come from shared memory"),
        hints=("Each thread stores a[i] in shared[local_i]; after cuda.syncthreads() it can "
               "read shared[local_i - 1] and shared[local_i - 2].",
               "Leave out the terms before the start (local_i >= 1, local_i >= 2) and guard "
               "i < size around both the store and the sum.")),
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
        max_reads=2, shared=SHARED_REQUIRED, constants={"TPB": 8}, hidden=upto(8),
        method=Method(shared_flow=FLOW_BETWEEN, min_barriers=1, max_warp_ops=0,
                      text="products in shared memory, a barrier, one thread sums them"),
        hints=("Every thread stores one product, threads past the end store 0: thread 0 then "
               "reads all TPB slots, so all must be written.",
               "`shared[local_i] = a[i] * b[i] if i < size else 0.0`, cuda.syncthreads(), then "
               "thread 0 loops over the TPB slots and writes out[0].")),
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
        constants={"TPB": 8, "MAX_CONV": 4},
        hidden=lambda rng: (int(rng.integers(1, 25)), int(rng.integers(1, 5))),
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=8, min_barriers=1,
                      max_warp_ops=0, text="the block's slice of `a`, its halo and `b` in "
                                           "shared memory; the sums read from there"),
        hints=("Threads 0 .. MAX_CONV - 1 of a block also load the halo element "
               "a[i + TPB] (and b[local_i]); elements past the end are stored as 0.",
               "After cuda.syncthreads(), thread i sums shared_a[local_i + j] * shared_b[j] "
               "for j < b_size.")),
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
        sizes=(8, 15, 20), shared=SHARED_REQUIRED, constants={"TPB": 8}, hidden=upto(40),
        method=TREE_8,
        hints=("Store a[i] (or 0 past the end) in cache[local_i], then cuda.syncthreads().",
               "step = 1, 2, 4: threads with local_i % (2 * step) == 0 add "
               "cache[local_i + step]; cuda.syncthreads() after every step, outside the if.",
               "Thread 0 writes cache[0] to out[cuda.blockIdx.x].")),
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
        shared=SHARED_ALLOWED, constants={"TPB": 16}, hidden=upto(16),
        method=Method(max_step_reads=3, max_barriers=10, max_warp_ops=8,
                      text="Hillis-Steele: log2(16) = 4 steps, each thread adding one value",
                      hints={"step_work": "each thread summing all the values before it is an "
                                          "O(n²) scan: Hillis-Steele adds one value per step, "
                                          "from s places back, s = 1, 2, 4, 8",
                             "warp_ops": "one shuffle per earlier element is an O(n²) scan: "
                                         "shfl_up_sync by s = 1, 2, 4, 8, four shuffles"}),
        hints=("Load a[i] (0 past the end) into cache[i]. At step s a thread reads "
               "cache[i - s] (if i >= s), waits at cuda.syncthreads(), then adds it.",
               "Two barriers per step: one between the reads and the writes, one after the "
               "writes. s doubles: 1, 2, 4, 8.")),
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
        sizes=((4, 6), (3, 8), (2, 1)), shared=SHARED_REQUIRED, constants={"TPB": 8},
        hidden=lambda rng: (int(rng.integers(1, 5)), int(rng.integers(1, 9))),
        method=TREE_8,
        hints=("Block `batch` loads a[batch, local_i] (0 past the row's end) into cache.",
               "Halve: step = 4, 2, 1, threads local_i < step add cache[local_i + step], "
               "cuda.syncthreads() after each step; thread 0 writes out[batch, 0].")),
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
        sizes=(64, 100, 32), hidden=upto(130),
        method=Method(min_warp_ops=5, max_warp_ops=10,
                      text="five shuffles fold the warp's 32 values into lane 0"),
        hints=("Every lane starts with v = a[i], or 0 past the end - and still takes part in "
               "every shuffle.",
               "`v += cuda.shfl_down_sync(FULL, v, offset)` for offset = 16, 8, 4, 2, 1; "
               "then lane 0 (cuda.laneid == 0) writes out[i // 32] if i < size.")),
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
        sizes=(32, 100, 7), max_reads=2, shared=SHARED_ALLOWED, hidden=upto(100),
        initial_outputs=("out",),
        hints=("Each thread looks at one element; only those > 0 add 1.",
               "`if i < size and a[i] > 0: cuda.atomic.add(out, 0, 1)`.")),
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
        sizes=(64, 100, 5), max_reads=2, shared=SHARED_ALLOWED, constants={"BINS": 8},
        hidden=upto(100), initial_outputs=("out",),
        hints=("The bin is the value itself: a[i] is the index into out.",
               "`if i < size: cuda.atomic.add(out, a[i], 1)`.")),
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
        sizes=((4, 4), (5, 7), (9, 3)), shared=SHARED_ALLOWED, constants={"TILE": 4},
        hidden=lambda rng: (int(rng.integers(1, 10)), int(rng.integers(1, 10))),
        hints=("Thread (x, y) reads a[y, x]; where does that element go in out?",
               "`if x < cols and y < rows: out[x, y] = a[y, x]`.")),
    Puzzle(
        name="matmul", title="Tiled matmul", topic="shared memory",
        statement="""`out = a @ b` for `size x size` matrices. The thread at row `i`, column `j`
        of the grid computes `out[i, j]`; `threadIdx.x` runs along a row (`j`), so a warp's
        threads touch neighbouring elements (coalesced, as notebook 06 shows). Walk the `k`
        dimension in `TPB`-wide tiles: each thread loads one
        element of `a` and one of `b` per tile into shared memory, the block synchronises, every
        thread accumulates `TPB` products from shared memory, and synchronises again before the
        next tile. A thread reads at most `2 * ceil(size / TPB)` global elements.""",
        starter='''from gpunb import float32

TPB = 4

def matmul_kernel(out, a, b, size):
    a_shared = cuda.shared.array((TPB, TPB), float32)
    b_shared = cuda.shared.array((TPB, TPB), float32)
    i = cuda.blockIdx.y * TPB + cuda.threadIdx.y      # row
    j = cuda.blockIdx.x * TPB + cuda.threadIdx.x      # column: x varies fastest in a warp
    local_i = cuda.threadIdx.y
    local_j = cuda.threadIdx.x
    # FILL ME IN (roughly 14 lines)
''',
        inputs=lambda n, rng: {"out": unwritten((n, n)), "a": values((n, n), rng),
                               "b": values((n, n), rng), "size": n},
        reference=lambda args: {"out": args["a"] @ args["b"]},
        launch=lambda n: ((cdiv(n, 4), cdiv(n, 4)), (4, 4)),
        launch_text="ceil(size / 4) x ceil(size / 4) blocks of TPB x TPB = 4 x 4 threads",
        sizes=(2, 4, 7), max_reads=lambda n: 2 * cdiv(n, 4), shared=SHARED_REQUIRED,
        constants={"TPB": 4}, hidden=upto(9),
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=8,
                      min_barriers=lambda n: cdiv(n, 4), max_warp_ops=0,
                      text="per tile: load, cuda.syncthreads(), TPB products from shared "
                           "memory, cuda.syncthreads()"),
        hints=("For tile k0 = 0, TPB, 2 TPB, ...: a_shared[local_i, local_j] = a[i, k0 + "
               "local_j] and b_shared[local_i, local_j] = b[k0 + local_i, j] (0 outside).",
               "Barrier after the loads; acc += a_shared[local_i, k] * b_shared[k, local_j] "
               "for k < TPB; barrier again before the next tile; write out[i, j] at the "
               "end.")),
]
