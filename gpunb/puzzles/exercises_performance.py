"""The graded exercises that end notebooks 06-10: make it coalesced, remove the bank conflict,
privatise the atomics, coarsen the threads - and fix the kernels whose bugs notebook 10's tools
find. The grader enforces the performance property from the access log (sectors per request,
bank conflicts, atomics per block, shared-memory reads per thread) at every size.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, upto, values
from gpunb.puzzles.method import FLOW_BETWEEN, Method
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle, cdiv


def _multiple_of(step: int, most: int):
    return lambda rng: step * int(rng.integers(1, most // step + 1))


def _square(n, rng):
    return {"out": unwritten((n, n)), "a": values((n, n), rng)}


def _block_sums(a: np.ndarray, width: int) -> np.ndarray:
    padded = np.concatenate([a, np.zeros(-len(a) % width, a.dtype)])
    return padded.reshape(-1, width).sum(axis=1)


EXERCISES_06 = [
    Puzzle(
        name="ex06_coalesced_scale", title="Rows to the warp", topic="coalescing", lesson="06",
        kind="exercise",
        statement="""Make it coalesced: `out = 2 * a` for an `n x n` matrix, one thread per
        element, blocks of 16 x 16. The kernel gives `cuda.grid(2)`'s `x` (the index that
        varies fastest in a warp) to the row, so a warp's reads and writes go down columns.""",
        starter='''def scale2d(out, a):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = 2 * a[r, c]
''',
        inputs=_square, reference=lambda args: {"out": 2 * args["a"]},
        launch=lambda n: ((n // 16, n // 16), (16, 16)),
        launch_text="(n / 16, n / 16) blocks of 16 x 16 threads", sizes=(16, 32),
        hidden=_multiple_of(16, 64), method=Method(min_efficiency=0.75),
        hints=("cuda.grid(2) returns (x, y); x is threadIdx.x plus its block's offset.",
               "Give x to the last index, the one whose neighbours are neighbours in memory.",
               "`c, r = cuda.grid(2)`")),
    Puzzle(
        name="ex06_transpose_tiled", title="A coalesced transpose", topic="coalescing",
        lesson="06", kind="exercise",
        statement="""Make it coalesced: `out = a.T` for `n x n` matrices, blocks of TILE x TILE
        = 32 x 32. The naive kernel reads rows but writes columns. Stage a tile in shared
        memory so that both the reads of `a` and the writes of `out` are coalesced, as
        notebook 06 does.""",
        starter='''from gpunb import float32

TILE = 32

def transpose(out, a):
    x, y = cuda.grid(2)
    if y < a.shape[0] and x < a.shape[1]:
        out[x, y] = a[y, x]
''',
        inputs=_square, reference=lambda args: {"out": np.ascontiguousarray(args["a"].T)},
        launch=lambda n: ((n // 32, n // 32), (32, 32)),
        launch_text="(n / TILE, n / TILE) blocks of 32 x 32 threads", sizes=(32, 64),
        hidden=_multiple_of(32, 64), shared=SHARED_ALLOWED, constants={"TILE": 32},
        method=Method(min_efficiency=0.75),
        hints=("Both global accesses must have threadIdx.x on the last index.",
               "tile[ty, tx] = a[y, x]; cuda.syncthreads(); the block's output tile starts "
               "at row blockIdx.x * TILE, column blockIdx.y * TILE.",
               "out[blockIdx.x * TILE + ty, blockIdx.y * TILE + tx] = tile[tx, ty]")),
    Puzzle(
        name="ex06_bank_conflicts", title="Remove the bank conflict", topic="bank conflicts",
        lesson="06", kind="exercise",
        statement="""Remove the bank conflict: this tiled transpose is coalesced, but its tile
        is read by column: the 32 threads of a warp read 32 words in one bank, one after
        another. Keep both global sides coalesced and make the tile's reads conflict-free.""",
        starter='''from gpunb import float32

TILE = 32

def transpose(out, a):
    tile = cuda.shared.array((TILE, TILE), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    out[cuda.blockIdx.x * TILE + ty, cuda.blockIdx.y * TILE + tx] = tile[tx, ty]
''',
        inputs=_square, reference=lambda args: {"out": np.ascontiguousarray(args["a"].T)},
        launch=lambda n: ((n // 32, n // 32), (32, 32)),
        launch_text="(n / TILE, n / TILE) blocks of 32 x 32 threads", sizes=(32, 64),
        hidden=_multiple_of(32, 64), shared=SHARED_REQUIRED, constants={"TILE": 32},
        method=Method(shared_flow=FLOW_BETWEEN, min_efficiency=0.75, max_bank_conflicts=0),
        hints=("Word w of shared memory is in bank w % 32; tile[tx, ty] for tx = 0..31 is "
               "words 32 * tx + ty.",
               "Make a row 33 words long: the same column then spans 32 different banks.",
               "`tile = cuda.shared.array((TILE, TILE + 1), float32)`")),
]

BINS = 8


EXERCISES_07 = [
    Puzzle(
        name="ex07_histogram_race", title="Lost updates", topic="atomics", lesson="07",
        kind="exercise",
        statement="""Fix this kernel: `out[k]` (which starts at 0) counts the elements of `a`
        equal to `k`. Threads that see the same value update the same bin with a plain
        `+=`: a read, an add and a write that interleave.""",
        starter='''def histogram(out, a):
    i = cuda.grid(1)
    if i < a.size:
        out[a[i]] += 1
''',
        inputs=lambda n, rng: {"out": np.zeros(BINS, np.int32),
                               "a": rng.integers(0, BINS, n).astype(np.int32)},
        reference=lambda args: {"out": np.bincount(args["a"], minlength=BINS)
                                .astype(np.int32)},
        launch=lambda n: (cdiv(n, 64), 64), launch_text="ceil(n / 64) blocks of 64 threads",
        sizes=(64, 100), hidden=upto(300), max_reads=2, initial_outputs=("out",),
        hints=("The race report names one line: two threads' read-add-writes of one bin.",
               "An atomic does the read, add and write as one operation.",
               "`cuda.atomic.add(out, a[i], 1)`")),
    Puzzle(
        name="ex07_private_histogram", title="A histogram per block", topic="atomics",
        lesson="07", kind="exercise",
        statement="""Make it faster: the atomic histogram is right, but every element is an
        atomic on global memory, and all of them hit 8 addresses. Count into a per-block
        histogram in shared memory (zeroed first), then add each of its bins to `out` once:
        at most BINS = 8 global atomics per block.""",
        starter='''from gpunb import int32

BINS = 8

def histogram(out, a):
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(out, a[i], 1)
''',
        inputs=lambda n, rng: {"out": np.zeros(BINS, np.int32),
                               "a": rng.integers(0, BINS, n).astype(np.int32)},
        reference=lambda args: {"out": np.bincount(args["a"], minlength=BINS)
                                .astype(np.int32)},
        launch=lambda n: (cdiv(n, 64), 64), launch_text="ceil(n / 64) blocks of 64 threads",
        sizes=(64, 150), hidden=upto(400), max_reads=2, initial_outputs=("out",),
        shared=SHARED_REQUIRED, constants={"BINS": BINS},
        method=Method(max_atomics_per_block=BINS, min_barriers=2),
        hints=("Shared memory starts undefined: threads 0..BINS-1 zero the private bins, "
               "then cuda.syncthreads().",
               "Each thread does cuda.atomic.add(local, a[i], 1) on the shared array; "
               "cuda.syncthreads() again.",
               "Threads t < BINS do cuda.atomic.add(out, t, local[t]).")),
]


def _chunked_sum(args: dict) -> dict:
    return {"out": np.array([args["a"].sum()], np.float32)}


def _warp_scans(args: dict) -> dict:
    a = args["a"]
    padded = np.concatenate([a, np.zeros(-len(a) % 32, a.dtype)]).reshape(-1, 32)
    return {"out": np.cumsum(padded, axis=1).reshape(-1)[:len(a)].astype(np.float32)}


EXERCISES_08 = [
    Puzzle(
        name="ex08_grid_stride_sum", title="Coalesced partial sums", topic="reductions",
        lesson="08", kind="exercise",
        statement="""Make it coalesced: `out[0]` (which starts at 0) becomes `sum(a)`. The grid
        is fixed, 2 blocks of 64 threads, so each thread first sums many elements. This kernel
        gives each thread a contiguous chunk: the 32 threads of a warp read 32 elements a
        chunk apart. Use a grid-stride loop, as notebook 08 does, so a warp reads 32
        neighbours.""",
        starter='''from gpunb import float32

def total(out, a):
    t = cuda.grid(1)
    threads = cuda.gridsize(1)
    chunk = (a.size + threads - 1) // threads
    acc = float32(0.0)
    for k in range(t * chunk, min((t + 1) * chunk, a.size)):
        acc += a[k]
    cuda.atomic.add(out, 0, acc)
''',
        inputs=lambda n, rng: {"out": np.zeros(1, np.float32), "a": values(n, rng)},
        reference=_chunked_sum, launch=lambda n: (2, 64), launch_text="2 blocks of 64 threads",
        sizes=(1024, 640), hidden=_multiple_of(128, 2048), initial_outputs=("out",),
        max_reads=lambda n: cdiv(n, 128) + 1, method=Method(min_efficiency=0.75),
        hints=("Which addresses do threads t and t + 1 read in the first iteration?",
               "Start at t and step by the number of threads in the grid.",
               "`for k in range(t, a.size, threads): acc += a[k]`")),
    Puzzle(
        name="ex08_warp_scan", title="Fix the warp scan", topic="scans", lesson="08",
        kind="exercise",
        statement="""Fix this kernel: `out` is the inclusive scan of `a` within each warp of
        32 (warp `w` scans `a[32 w:32 w + 32]`), Hillis-Steele with `shfl_up_sync`. The result
        is too large in the first lanes.""",
        starter='''from gpunb import float32

FULL = 0xFFFFFFFF

def warp_scan(out, a):
    i = cuda.grid(1)
    lane = cuda.laneid
    v = a[i] if i < a.size else float32(0.0)
    d = 1
    while d < 32:
        other = cuda.shfl_up_sync(FULL, v, d)
        v += other
        d *= 2
    if i < a.size:
        out[i] = v
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng)},
        reference=_warp_scans, launch=lambda n: (cdiv(n, 64), 64),
        launch_text="ceil(n / 64) blocks of 64 threads", sizes=(64, 50), hidden=upto(200),
        method=Method(min_warp_ops=5, max_warp_ops=10),
        hints=("What does shfl_up_sync give lane 0 when d = 1? (A lane below 0 does not "
               "exist.)",
               "shfl_up_sync returns the caller's own value when lane - d < 0: those lanes "
               "must not add it.",
               "`if lane >= d: v += other`")),
    Puzzle(
        name="ex08_block_sum_shuffles", title="Shuffles, then shared", topic="reductions",
        lesson="08", kind="exercise",
        statement="""Make it faster: `out[b]` is the sum of block `b`'s 64 elements (0 past
        the end). This kernel runs a shared-memory tree with six barriers. Fold each warp with
        five `shfl_down_sync`s instead, store the two warp sums in shared memory, one barrier,
        and let thread 0 add them.""",
        starter='''from gpunb import float32

TPB = 64

def block_sum(out, a):
    buf = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = a[i] if i < a.size else float32(0.0)
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = buf[0]
''',
        inputs=lambda n, rng: {"out": unwritten(cdiv(n, 64)), "a": values(n, rng)},
        reference=lambda args: {"out": _block_sums(args["a"], 64)},
        launch=lambda n: (cdiv(n, 64), 64), launch_text="ceil(n / 64) blocks of TPB = 64",
        sizes=(64, 150), hidden=upto(300), shared=SHARED_ALLOWED, constants={"TPB": 64},
        method=Method(min_warp_ops=5, max_warp_ops=12, max_barriers=2),
        hints=("Five shuffles (offsets 16, 8, 4, 2, 1) leave each warp's sum in its lane 0.",
               "Lane 0 of warp w stores it in warp_sums[w] (a shared array of 2); "
               "cuda.syncthreads().",
               "Thread 0 writes warp_sums[0] + warp_sums[1].")),
]

TILE = 8


def _matmul_inputs(n, rng):
    return {"C": unwritten((n, n)), "A": values((n, n), rng), "B": values((n, n), rng)}


_COALESCED_MATMUL = '''from gpunb import float32

TILE = 8

def matmul_tiled(C, A, B):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for k0 in range(0, A.shape[1], TILE):
        sA[ty, tx] = A[row, k0 + tx]
        sB[ty, tx] = B[k0 + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
    C[row, col] = acc
'''

_COARSE_MATMUL = '''from gpunb import float32

TILE = 8

def matmul_coarse(C, A, B):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, 2 * TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * 2 * TILE + tx
    acc0 = float32(0.0)
    acc1 = float32(0.0)
    for k0 in range(0, A.shape[1], TILE):
        sA[ty, tx] = A[row, k0 + tx]
        sB[ty, tx] = B[k0 + ty, col]
        sB[ty, tx + TILE] = B[k0 + ty, col + TILE]
        cuda.syncthreads()
        for k in range(TILE):
            acc0 += sA[ty, k] * sB[k, tx]
            acc1 += sA[ty, k] * sB[k, tx + TILE]
        cuda.syncthreads()
    C[row, col] = acc0
    C[row, col + TILE] = acc1
'''

EXERCISES_09 = [
    Puzzle(
        name="ex09_second_barrier", title="The tile still in use", topic="tiling",
        lesson="09", kind="exercise",
        statement="""Fix this kernel: the shared-tile matmul of notebook 09 (sizes multiples
        of TILE = 8) with one barrier per tile. A fast thread starts loading the next tile
        while a slow one still multiplies the current one.""",
        starter=_COALESCED_MATMUL, inputs=_matmul_inputs,
        reference=lambda args: {"C": args["A"] @ args["B"]},
        launch=lambda n: ((n // 8, n // 8), (8, 8)),
        launch_text="(n / TILE, n / TILE) blocks of 8 x 8 threads", sizes=(16, 24),
        hidden=_multiple_of(8, 32), outputs=("C",), max_reads=lambda n: 2 * n // 8,
        shared=SHARED_REQUIRED, constants={"TILE": 8},
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=16, max_warp_ops=0),
        hints=("The race is between a read of sA or sB in the k loop and a store of the "
               "next tile.",
               "Nobody may store the next tile before everybody is done with this one.",
               "A second `cuda.syncthreads()` after the k loop, inside the tile loop.")),
    Puzzle(
        name="ex09_coarsen", title="Two outputs per thread", topic="tiling", lesson="09",
        kind="exercise",
        statement="""Make it read less: each thread computes two elements of `C`, at columns
        `col` and `col + TILE` (the block covers an 8 x 16 tile of C). The kernel reads
        `sA[ty, k]` twice per `k`; keep it in a register, so each `k` costs three
        shared-memory reads for two multiply-adds - the first step of the register tiling of
        notebook 09. Sizes are multiples of 16.""",
        starter=_COARSE_MATMUL, inputs=_matmul_inputs,
        reference=lambda args: {"C": args["A"] @ args["B"]},
        launch=lambda n: ((n // 16, n // 8), (8, 8)),
        launch_text="(n / 16, n / 8) blocks of 8 x 8 threads", sizes=(16, 32),
        hidden=_multiple_of(16, 32), outputs=("C",), max_reads=lambda n: 3 * n // 8,
        max_writes=2, shared=SHARED_REQUIRED, constants={"TILE": 8},
        method=Method(shared_flow=FLOW_BETWEEN, max_warp_ops=0,
                      max_shared_reads=lambda n: 3 * n),
        hints=("Count the shared reads per k: sA[ty, k] twice, sB twice.",
               "Read `a = sA[ty, k]` once into a register at the top of the k loop.",
               "`acc0 += a * sB[k, tx]` and `acc1 += a * sB[k, tx + TILE]`.")),
]


def _block_max(args: dict) -> dict:
    a = args["x"]
    padded = np.concatenate([a, np.full(-len(a) % 32, -np.inf, a.dtype)])
    return {"out": padded.reshape(-1, 32).max(axis=1)}


EXERCISES_10 = [
    Puzzle(
        name="ex10_shift_left", title="One past the end", topic="debugging", lesson="10",
        kind="exercise",
        statement="""Fix this kernel: `out` is `x` rotated left by one: `out[i] = x[i + 1]`,
        and the last element wraps around to `x[0]`. The last thread reads one past the end
        (notebook 10's first bug).""",
        starter='''def shift_left(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i + 1]
''',
        inputs=lambda n, rng: {"out": unwritten(n), "x": values(n, rng)},
        reference=lambda args: {"out": np.roll(args["x"], -1)},
        launch=lambda n: (cdiv(n, 32), 32),
        launch_text="ceil(n / 32) blocks of 32 threads", sizes=(64, 40), hidden=upto(100),
        hints=("The error names the thread: i = out.size - 1.",
               "That thread has no x[i + 1]: the statement says what it reads instead.",
               "`out[i] = x[(i + 1) % x.size]`")),
    Puzzle(
        name="ex10_block_sum_race", title="The racy block sum", topic="debugging",
        lesson="10", kind="exercise",
        statement="""Fix this kernel: `out[b]` is the sum of block `b`'s 32 elements (0 past
        the end); thread 0 adds the slots up - before the others stored theirs (notebook
        10's race).""",
        starter='''from gpunb import float32

TPB = 32

def block_sum(out, x):
    buf = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.size else float32(0.0)
    if t == 0:
        s = float32(0.0)
        for k in range(TPB):
            s += buf[k]
        out[cuda.blockIdx.x] = s
''',
        inputs=lambda n, rng: {"out": unwritten(cdiv(n, 32)), "x": values(n, rng)},
        reference=lambda args: {"out": _block_sums(args["x"], 32)},
        launch=lambda n: (cdiv(n, 32), 32), launch_text="ceil(n / 32) blocks of TPB = 32",
        sizes=(64, 50), hidden=upto(150), shared=SHARED_REQUIRED, constants={"TPB": 32},
        method=Method(shared_flow=FLOW_BETWEEN, min_barriers=1, max_warp_ops=0),
        hints=("The race names a store to buf and thread 0's read of it.",
               "Thread 0 may read the slots only when every thread has stored its own.",
               "`cuda.syncthreads()` between the store and `if t == 0:`.")),
    Puzzle(
        name="ex10_block_max", title="The uninitialised maximum", topic="debugging",
        lesson="10", kind="exercise",
        statement="""Fix this kernel: `out[b]` is the maximum of block `b`'s elements. Threads
        past the end skip the store, and the tree reads their slots anyway: initcheck's
        finding. Which value makes a missing element harmless for a maximum?""",
        starter='''from gpunb import float32

TPB = 32

def block_max(out, x):
    buf = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.size:
        buf[t] = x[i]
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            buf[t] = max(buf[t], buf[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = buf[0]
''',
        inputs=lambda n, rng: {"out": unwritten(cdiv(n, 32)), "x": values(n, rng)},
        reference=_block_max, launch=lambda n: (cdiv(n, 32), 32),
        launch_text="ceil(n / 32) blocks of TPB = 32", sizes=(64, 45), hidden=upto(150),
        shared=SHARED_REQUIRED, constants={"TPB": 32},
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=3, min_barriers=5,
                      max_barriers=11, max_warp_ops=0),
        hints=("initcheck names a slot no thread wrote: a thread past the end owns it.",
               "0 is no neutral value for a maximum of negative numbers.",
               "`buf[t] = x[i] if i < x.size else -math.inf` (import math; or "
               "float32(-3.4e38)).")),
]

PUZZLES = [*EXERCISES_06, *EXERCISES_07, *EXERCISES_08, *EXERCISES_09, *EXERCISES_10]
