"""The graded exercises that end notebooks 01-05: each starter is a kernel with one mistake the
notebook taught about (fix this kernel), or a correct kernel done the way the notebook says not
to (make it coalesced, one atomic per warp, one pass). Solutions live in the tests.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, upto, values
from gpunb.puzzles.method import FLOW_BETWEEN, Method
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle, cdiv


def _tiles_of_8(rng) -> int:
    return int(rng.choice([8, 16, 24, 32]))


def _matmul_inputs(n, rng):
    return {"C": unwritten((n, n)), "A": values((n, n), rng), "B": values((n, n), rng)}


def _block_sums(a: np.ndarray, width: int) -> np.ndarray:
    padded = np.concatenate([a, np.zeros(-len(a) % width, a.dtype)])
    return padded.reshape(-1, width).sum(axis=1)


def _stencil(a: np.ndarray) -> np.ndarray:
    """out[i] = a[i - 1] + a[i] + a[i + 1], terms outside the array left out."""
    out = a.copy()
    out[1:] += a[:-1]
    out[:-1] += a[1:]
    return out


EXERCISES_01 = [
    Puzzle(
        name="ex01_saxpy_guard", title="Fix the guard", topic="guards", lesson="01",
        kind="exercise",
        statement="""Fix this kernel: `out = a * x + y` over `x.size` elements, launched with
        more threads than elements. It reads past the end.""",
        starter='''def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i <= out.size:
        out[i] = a * x[i] + y[i]
''',
        inputs=lambda n, rng: {"out": unwritten(n), "x": values(n, rng), "y": values(n, rng),
                               "a": np.float32(rng.integers(-4, 5))},
        reference=lambda args: {"out": args["a"] * args["x"] + args["y"]},
        launch=lambda n: (cdiv(n, 32), 32), launch_text="ceil(n / 32) blocks of 32 threads",
        sizes=(100, 32, 7), hidden=upto(200), max_reads=2,
        hints=("Which thread fails? The error names it: its i is exactly out.size.",
               "Valid indices are 0 .. out.size - 1.",
               "`if i < out.size:`")),
    Puzzle(
        name="ex01_block_sum_tail", title="Every slot written", topic="shared memory",
        lesson="01", kind="exercise",
        statement="""Fix this kernel: the block sum of notebook 01, except that threads past
        the end of `values` skip the load, so the tree adds shared-memory slots nobody wrote.
        (On the CPU target shared memory starts zeroed and the sum looks right; on a GPU those
        slots hold whatever was there.) `partial[b]` is the sum of block `b`'s values.""",
        starter='''from gpunb import float32

TPB = 32

def block_sum(partial, values):
    buf = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < values.size:
        buf[tid] = values[i]
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if tid < step:
            buf[tid] += buf[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]
''',
        inputs=lambda n, rng: {"partial": unwritten(cdiv(n, 32)), "values": values(n, rng)},
        reference=lambda args: {"partial": _block_sums(args["values"], 32)},
        launch=lambda n: (cdiv(n, 32), 32), launch_text="ceil(n / 32) blocks of TPB = 32",
        sizes=(64, 70, 5), hidden=upto(150), shared=SHARED_REQUIRED, constants={"TPB": 32},
        outputs=("partial",),
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=3, min_barriers=5,
                      max_barriers=11, max_warp_ops=0),
        hints=("The grader's initcheck names a slot read before any thread wrote it: which "
               "threads should have written it?",
               "A thread past the end has no value, but its slot is still read by the tree: "
               "give it the sum's neutral value.",
               "`buf[tid] = values[i] if i < values.size else 0.0`")),
]


EXERCISES_02 = [
    Puzzle(
        name="ex02_stencil_barrier", title="The missing barrier", topic="barriers",
        lesson="02", kind="exercise",
        statement="""Fix this kernel: `out[i] = a[i - 1] + a[i] + a[i + 1]` (terms outside
        the array left out), each block staging its slice and one element either side (the
        halo) in shared memory. It gives the right answer on the CPU target often enough, and
        wrong ones on a GPU.""",
        starter='''from gpunb import float32

TPB = 16

def stencil(out, a):
    buf = cuda.shared.array(TPB + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t + 1] = a[i] if i < a.size else 0.0
    if t == 0:
        buf[0] = a[i - 1] if i >= 1 else 0.0
    if t == TPB - 1:
        buf[TPB + 1] = a[i + 1] if i + 1 < a.size else 0.0
    if i < a.size:
        out[i] = buf[t] + buf[t + 1] + buf[t + 2]
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng)},
        reference=lambda args: {"out": _stencil(args["a"])},
        launch=lambda n: (cdiv(n, 16), 16), launch_text="ceil(n / 16) blocks of TPB = 16",
        sizes=(32, 40, 3), hidden=upto(80), max_reads=2, shared=SHARED_REQUIRED,
        constants={"TPB": 16},
        method=Method(shared_flow=FLOW_BETWEEN, min_barriers=1, max_step_reads=3,
                      max_warp_ops=0),
        hints=("The race report names two lines: a write of buf and a read of the same "
               "element by another thread.",
               "Every thread must have stored its element (and the halo threads theirs) before "
               "any thread reads its neighbours.",
               "Put `cuda.syncthreads()` after the halo loads, outside every `if`.")),
    Puzzle(
        name="ex02_matmul_coalesced", title="Make the tiled matmul coalesced", topic="coalescing",
        lesson="02", kind="exercise",
        statement="""Make it coalesced: this tiled matmul is right, but it gives `threadIdx.x`
        to the *row*, so the 32 threads of a warp read down a column of `A`, `B` and `C`:
        several sectors per request instead of one per 32 bytes. Give `threadIdx.x` to the
        column (as in notebooks 06 and 09) and keep the tiles free of bank conflicts.
        Sizes are multiples of TILE.""",
        starter='''from gpunb import float32

TILE = 8

def matmul_tiled(C, A, B):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    row = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    col = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = float32(0.0)
    for k in range(0, A.shape[1], TILE):
        sA[tx, ty] = A[row, k + ty]
        sB[tx, ty] = B[k + tx, col]
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[tx, j] * sB[j, ty]
        cuda.syncthreads()
    C[row, col] = acc
''',
        inputs=_matmul_inputs,
        reference=lambda args: {"C": args["A"] @ args["B"]},
        launch=lambda n: ((n // 8, n // 8), (8, 8)),
        launch_text="(n / TILE, n / TILE) blocks of TILE x TILE = 8 x 8 threads",
        sizes=(16, 8, 24), hidden=_tiles_of_8, outputs=("C",),
        max_reads=lambda n: 2 * n // 8, shared=SHARED_REQUIRED, constants={"TILE": 8},
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=16, max_warp_ops=0,
                      min_efficiency=0.75, max_bank_conflicts=0,
                      hints={"bank_conflicts": "with threadIdx.x on the column, a warp stores "
                                               "and reads along rows of the tiles: sA[ty, tx], "
                                               "sA[ty, j] (a broadcast) and sB[j, tx]"}),
        hints=("A warp is 32 consecutive threads: threadIdx.x varies fastest. Which index of "
               "C[row, col] changes between them?",
               "row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x; "
               "load sA[ty, tx] = A[row, k + tx] and sB[ty, tx] = B[k + ty, col].",
               "Multiply acc += sA[ty, j] * sB[j, tx]: a warp then reads one row of sA (a "
               "broadcast) and one row of sB (consecutive banks).")),
    Puzzle(
        name="ex02_divergent_barrier", title="One barrier for everyone", topic="barriers",
        lesson="02", kind="exercise",
        statement="""Fix this kernel: each block rotates its slice of `a` left by one
        (`out[i]` = the next element of the block, the last one wraps to the block's first),
        through shared memory. The two halves of the block wait at different barriers - on a
        GPU that hangs or is undefined. Every thread of a block must reach the same
        barriers.""",
        starter='''from gpunb import float32

TPB = 32

def rotate(out, a):
    buf = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if t % 2 == 0:
        buf[t] = a[i]
        cuda.syncthreads()
    else:
        buf[t] = a[i]
        cuda.syncthreads()
    out[i] = buf[(t + 1) % TPB]
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng)},
        reference=lambda args: {"out": np.roll(args["a"].reshape(-1, 32), -1, axis=1)
                                .reshape(-1)},
        launch=lambda n: (n // 32, 32), launch_text="n / 32 blocks of TPB = 32 threads",
        sizes=(32, 64), hidden=lambda rng: 32 * int(rng.integers(1, 5)),
        shared=SHARED_REQUIRED, constants={"TPB": 32},
        method=Method(shared_flow=FLOW_BETWEEN, min_barriers=1, max_warp_ops=0),
        hints=("The error names two barriers on two lines: which threads wait at which?",
               "Both branches do the same thing: the branch is not needed at all.",
               "`buf[t] = a[i]`, then one `cuda.syncthreads()` for the whole block.")),
]


def _scaled(args: dict) -> dict:
    return {"out": args["a"] * args["factor"]}


def _leaky(args: dict) -> dict:
    a = args["a"]
    return {"out": np.where(a > 0, a, a * np.float32(0.125)).astype(np.float32)}


EXERCISES_03 = [
    Puzzle(
        name="ex03_global_is_frozen", title="A global is part of the code", topic="cache",
        lesson="03", kind="exercise",
        statement="""Fix this kernel: it should scale `a` by `factor`, a float32 argument whose
        value changes at every attempt. Instead it reads the module-level `FACTOR`, which (as
        notebook 03 shows) is frozen into the compiled code: the kernel is right for one value
        only.""",
        starter='''FACTOR = 2.0

def scale(out, a, factor):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * FACTOR
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng),
                               "factor": np.float32(rng.integers(-8, 9) / 4)},
        reference=_scaled, launch=lambda n: (cdiv(n, 32), 32),
        launch_text="ceil(n / 32) blocks of 32 threads", sizes=(32, 50), hidden=upto(100),
        hints=("The grader passes a new `factor` at every attempt; what does the kernel do "
               "with it?",
               "A global read by a kernel is a compile-time constant; an argument is read at "
               "every launch.",
               "`out[i] = a[i] * factor`")),
    Puzzle(
        name="ex03_fix_the_helper", title="Fix the device function", topic="cache",
        lesson="03", kind="exercise",
        statement="""Fix this kernel's helper: `apply` runs the leaky ReLU `leaky(v)` (v for
        v > 0, v / 8 otherwise) on every element, but `leaky` has its branches swapped.
        Redefine `leaky` (only) and check `apply` again: its next compile picks up the new
        helper, as notebook 03 shows.""",
        starter='''def leaky(v):
    return v * 0.125 if v > 0 else v

def apply(out, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = leaky(a[i])
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng)},
        reference=_leaky, launch=lambda n: (cdiv(n, 32), 32),
        launch_text="ceil(n / 32) blocks of 32 threads", sizes=(32, 45), hidden=upto(100),
        rtol=1e-6,
        hints=("Compare the helper with the statement for one positive and one negative "
               "value.",
               "The positive branch must return v unchanged.",
               "`return v if v > 0 else v * 0.125`")),
]


FULL = 0xFFFFFFFF


def _warp_counts(args: dict) -> dict:
    a = args["a"]
    padded = np.concatenate([a, np.zeros(-len(a) % 32, a.dtype)])
    return {"out": np.array([(padded > 0).sum()], np.int32)}


def _minus_first(args: dict) -> dict:
    a = args["a"]
    first = np.repeat(a[::32], 32)[:len(a)]
    return {"out": a - first}


EXERCISES_04 = [
    Puzzle(
        name="ex04_shuffle_all_lanes", title="Every lane in the shuffle", topic="warps",
        lesson="04", kind="exercise",
        statement="""Fix this kernel: `out[w]` is the sum of warp `w`'s elements, folded with
        `shfl_down_sync(FULL, ...)`. Lanes past the end of `a` skip the shuffles, so the mask
        names lanes that never arrive - undefined on a GPU. Do not reach for
        `cuda.activemask()`: it names the lanes that happen to be converged, not the lanes
        that must take part. Keep every lane in the shuffles.""",
        starter='''FULL = 0xFFFFFFFF

def warp_sums(out, a):
    i = cuda.grid(1)
    if i < a.size:
        v = a[i]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL, v, offset)
            offset //= 2
        if cuda.laneid == 0:
            out[i // 32] = v
''',
        inputs=lambda n, rng: {"out": unwritten(cdiv(n, 32)), "a": values(n, rng)},
        reference=lambda args: {"out": _block_sums(args["a"], 32)},
        launch=lambda n: (cdiv(n, 64), 64), launch_text="ceil(n / 64) blocks of 64 threads",
        sizes=(64, 100, 20), hidden=upto(200),
        method=Method(min_warp_ops=5, max_warp_ops=10),
        hints=("The error names the lanes that never arrived: which ones are they?",
               "A lane with no element can still take part: with the value that changes no "
               "sum.",
               "`v = a[i] if i < a.size else float32(0.0)` before the loop, the loop for "
               "every lane, and only the write guarded.")),
    Puzzle(
        name="ex04_ballot_count", title="One atomic per warp", topic="warps", lesson="04",
        kind="exercise",
        statement="""Make it cheaper: `out[0]` (which starts at 0) counts the positive
        elements of `a`. This kernel is right, but every thread does its own atomic add.
        Count each warp's votes with `cuda.ballot_sync` and `cuda.popc`, so one lane per warp
        adds to the counter.""",
        starter='''def count_positive(out, a):
    i = cuda.grid(1)
    if i < a.size and a[i] > 0:
        cuda.atomic.add(out, 0, 1)
''',
        inputs=lambda n, rng: {"out": np.zeros(1, np.int32), "a": values(n, rng)},
        reference=_warp_counts, launch=lambda n: (cdiv(n, 64), 64),
        launch_text="ceil(n / 64) blocks of 64 threads", sizes=(64, 100, 9),
        hidden=upto(300), max_reads=2, initial_outputs=("out",),
        method=Method(max_atomics_per_block=2, min_warp_ops=1),
        hints=("64 threads per block are 2 warps: at most 2 atomics per block.",
               "`votes = cuda.ballot_sync(FULL, i < a.size and a[i] > 0)` in every lane; "
               "`cuda.popc(votes)` is the warp's count.",
               "Only lane 0 (`cuda.laneid == 0`) does `cuda.atomic.add(out, 0, "
               "cuda.popc(votes))`.")),
    Puzzle(
        name="ex04_broadcast", title="Broadcast instead of reading again", topic="warps",
        lesson="04", kind="exercise",
        statement="""Make it read less: `out[i] = a[i] - a[first]`, where `first` is the first
        element of `i`'s warp (`i - i % 32`). This kernel reads `a[first]` from global memory
        in every thread; get it from lane 0 with `cuda.shfl_sync(FULL, v, 0)` instead, so each
        thread reads one element. Lanes past the end still take part.""",
        starter='''FULL = 0xFFFFFFFF

def minus_first(out, a):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] - a[i - i % 32]
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng)},
        reference=_minus_first, launch=lambda n: (cdiv(n, 64), 64),
        launch_text="ceil(n / 64) blocks of 64 threads", sizes=(64, 90, 3), hidden=upto(200),
        method=Method(min_warp_ops=1),
        hints=("Each thread may read one element of a: its own.",
               "`v = a[i] if i < a.size else float32(0.0)`; lane 0's v is a[first].",
               "`first = cuda.shfl_sync(FULL, v, 0)` in every lane, then the guarded write.")),
]


def _relu_scaled(args: dict) -> dict:
    x = args["x"]
    return {"out": np.where(x > 0, x, x * np.float32(0.25)).astype(np.float32)}


def _dot_plus_n(args: dict) -> dict:
    total = (args["x"].astype(np.float64) * args["y"] + 1).sum()
    return {"out": np.array([total], np.float32)}


EXERCISES_05 = [
    Puzzle(
        name="ex05_one_pass", title="Keep it in registers", topic="fusion", lesson="05",
        kind="exercise",
        statement="""Make it one pass: `out = where(x > 0, x, x / 4)`, the leaky ReLU that
        `gpunb.fuse` turns into one kernel. This kernel stores to `out`, reads it back and
        stores again: two trips through global memory where one will do. Each thread may read
        one element and write one.""",
        starter='''def leaky_relu(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i]
        if out[i] < 0:
            out[i] = out[i] * 0.25
''',
        inputs=lambda n, rng: {"out": unwritten(n), "x": values(n, rng)},
        reference=_relu_scaled, launch=lambda n: (cdiv(n, 32), 32),
        launch_text="ceil(n / 32) blocks of 32 threads", sizes=(32, 70), hidden=upto(100),
        rtol=1e-6,
        hints=("Reading `out` back counts as a global read, and the second store as a "
               "second write.",
               "Compute the value in a register first.",
               "`v = x[i]`, then `out[i] = v if v > 0 else v * 0.25`.")),
    Puzzle(
        name="ex05_fused_sum", title="A fused reduction", topic="fusion", lesson="05",
        kind="exercise",
        statement="""Make it cheaper: `out[0]` (which starts at 0) becomes `sum(x * y + 1)`,
        what the fused `dot_plus_n` of notebook 05 computes. This kernel adds every element
        into `out[0]` with its own atomic. Sum each block of 64 in shared memory (a tree) and
        let one thread per block add the block's sum.""",
        starter='''from gpunb import float32

TPB = 64

def dot_plus_n(out, x, y):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i] * y[i] + 1)
''',
        inputs=lambda n, rng: {"out": np.zeros(1, np.float32), "x": values(n, rng),
                               "y": values(n, rng)},
        reference=_dot_plus_n, launch=lambda n: (cdiv(n, 64), 64),
        launch_text="ceil(n / 64) blocks of TPB = 64 threads", sizes=(64, 200, 5),
        hidden=upto(400), max_reads=3, shared=SHARED_ALLOWED, initial_outputs=("out",),
        constants={"TPB": 64},
        method=Method(max_atomics_per_block=1, max_step_reads=3, max_warp_ops=10),
        hints=("One atomic per block: the block's values must be combined first.",
               "Each thread stores x[i] * y[i] + 1 (or 0 past the end) in a shared array of "
               "TPB; a tree halves it with cuda.syncthreads() between steps.",
               "Thread 0 does `cuda.atomic.add(out, 0, buf[0])`.")),
]

PUZZLES = [*EXERCISES_01, *EXERCISES_02, *EXERCISES_03, *EXERCISES_04, *EXERCISES_05]
