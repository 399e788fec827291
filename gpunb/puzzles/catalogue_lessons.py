"""Puzzles of notebooks 12-14: the kernel of a streamed pipeline (one chunk at a time, with its
halo), warps that do not diverge, warp votes, and the block reductions of a row softmax.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, upto, values
from gpunb.puzzles.method import FLOW_BETWEEN, Method
from gpunb.puzzles.model import SHARED_NONE, SHARED_REQUIRED, Puzzle, cdiv


def _chunk(rng) -> tuple:
    """(n, offset, count): a chunk of 1 to 40 elements somewhere in an array of up to 100."""
    n = int(rng.integers(8, 101))
    offset = int(rng.integers(0, n))
    return n, offset, int(rng.integers(1, min(n - offset, 40) + 1))


def _chunk_inputs(size, rng):
    n, offset, count = size
    return {"out": unwritten(n), "x": values(n, rng), "y": values(n, rng),
            "a": np.float32(rng.integers(-4, 5)), "offset": offset, "count": count}


def _stencil_inputs(size, rng):
    n, offset, count = size
    return {"out": unwritten(n), "x": values(n, rng), "offset": offset, "count": count}


def _chunk_saxpy(args: dict) -> dict:
    out = args["out"].copy()
    part = slice(args["offset"], args["offset"] + args["count"])
    out[part] = args["a"] * args["x"][part] + args["y"][part]
    return {"out": out}


def _chunk_stencil(args: dict) -> dict:
    x, out = args["x"], args["out"].copy()
    padded = np.r_[np.float32(0), x, np.float32(0)]
    total = padded[:-2] + padded[1:-1] + padded[2:]
    part = slice(args["offset"], args["offset"] + args["count"])
    out[part] = total[part]
    return {"out": out}


def _inside_chunk(halo: int):
    """A rule: every global access of x and y lies in [offset - halo, offset + count + halo)."""
    def rule(trace, size) -> str:
        n, offset, count = size
        for name in ("x", "y"):
            k = trace.array_id(name)
            if k < 0:
                continue
            touched = trace.element[(trace.array == k) & (trace.element >= 0)]
            outside = touched[(touched < offset - halo) | (touched >= offset + count + halo)]
            if len(outside):
                return (f"the launch for chunk [{offset}, {offset + count}) read {name}"
                        f"[{int(outside[0])}]: a chunk's kernel may only touch its chunk"
                        + (" and one element either side" if halo else "") + " (in a "
                        "pipeline the rest is not on the device yet)")
        return ""
    return rule


def _parity_per_warp(trace, size) -> str:
    """A rule: each warp writes only even or only odd elements of out."""
    k = trace.array_id("out")
    written = (trace.array == k) & (trace.kind != 0) & ~trace.shared
    warp = trace.gid[written] // 32
    parity = trace.element[written] % 2
    for w in np.unique(warp):
        kinds = np.unique(parity[warp == w])
        if len(kinds) > 1:
            return (f"warp {int(w)} wrote both even and odd elements: its lanes took both "
                    "branches, which a warp runs one after the other")
    return ""


def _branches(args: dict) -> dict:
    a = args["a"]
    out = np.where(np.arange(len(a)) % 2 == 0, 2 * a + 1, a * a).astype(np.float32)
    return {"out": out}


def _warp_positive(args: dict) -> dict:
    a = args["a"]
    padded = np.concatenate([a, np.zeros(-len(a) % 32, a.dtype)])
    return {"out": (padded.reshape(-1, 32) > 0).sum(axis=1).astype(np.int32)}


def _spread(shape, rng: np.random.Generator) -> np.ndarray:
    """Random integers from a range wide enough that a row's maximum is rarely the same in two
    draws (with -9..9 most rows of 20 hold a 9, and a hard-coded answer's values would pass)."""
    return rng.integers(-999, 1000, shape).astype(np.float32)


def _rows(rng) -> tuple:
    return int(rng.integers(1, 5)), int(rng.integers(1, 33))


def _row_inputs(shape, rng):
    rows, n = shape
    return {"out": unwritten((rows, n)), "a": values((rows, n), rng), "n": n}


def _softmax(args: dict) -> dict:
    a = args["a"].astype(np.float64)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


TREE_HINTS = {"step_work": "thread 0 combining the 8 partial results alone is the sequential "
                           "reduction: halve the active threads at each step, with "
                           "cuda.syncthreads() between steps"}
# two shared-memory trees over TPB = 8 values (max, then sum): 3 steps each
SOFTMAX = Method(shared_flow=FLOW_BETWEEN, max_step_reads=3, min_barriers=6, max_warp_ops=0,
                 text="each thread reduces its strided elements, then a shared-memory tree "
                      "for the row's maximum and another for the sum of exponentials",
                 hints=TREE_HINTS)

PUZZLES = [
    Puzzle(
        name="chunk_saxpy", title="One chunk of a pipeline", topic="streams", lesson="12",
        statement="""A streamed pipeline copies `x` and `y` to the GPU in chunks and launches
        one kernel per chunk, each on its own stream, so that copies and kernels overlap. Write
        that kernel: `out[i] = a * x[i] + y[i]` for the chunk's elements `offset <= i < offset +
        count` only; the grid covers `count` threads. Leave every other element of `out`
        alone, and read nothing outside the chunk (in a pipeline it is not there yet).""",
        starter='''def chunk_saxpy_kernel(out, x, y, a, offset, count):
    i = offset + cuda.grid(1)
    # FILL ME IN (roughly 2 lines)
''',
        inputs=_chunk_inputs, reference=_chunk_saxpy,
        launch=lambda s: (cdiv(s[2], 16), 16), launch_text="ceil(count / 16) blocks of 16",
        sizes=((40, 8, 10), (40, 30, 10), (9, 0, 9)), hidden=_chunk, max_reads=2,
        method=Method(must_read=(), rule=_inside_chunk(0),
                      rule_hint="guard with i < offset + count: the last block reaches past "
                                "the chunk"),
        hints=("The starter's i already includes the offset.",
               "The grid has ceil(count / 16) blocks of 16: some threads are past the chunk.",
               "`if i < offset + count: out[i] = a * x[i] + y[i]`")),
    Puzzle(
        name="chunk_stencil", title="A chunk with its halo", topic="streams", lesson="12",
        statement="""The chunked kernel of a 3-point stencil: `out[i] = x[i - 1] + x[i] +
        x[i + 1]` (terms outside `x` left out) for `offset <= i < offset + count`. Each element
        needs its neighbours, so a pipeline must copy one element either side of the chunk
        (its halo) too: the kernel may read `x` from `offset - 1` to `offset + count`, no
        further, and writes only the chunk.""",
        starter='''def chunk_stencil_kernel(out, x, offset, count):
    i = offset + cuda.grid(1)
    # FILL ME IN (roughly 7 lines)
''',
        inputs=_stencil_inputs, reference=_chunk_stencil,
        launch=lambda s: (cdiv(s[2], 16), 16), launch_text="ceil(count / 16) blocks of 16",
        sizes=((40, 8, 16), (40, 0, 10), (12, 5, 7)), hidden=_chunk, max_reads=3,
        method=Method(must_read=(), rule=_inside_chunk(1),
                      rule_hint="read x[i - 1] only when i >= 1 and x[i + 1] only when "
                                "i + 1 < x.size, and only for i in the chunk"),
        hints=("Guard the chunk first: i < offset + count.",
               "Then add x[i - 1] if i >= 1 and x[i + 1] if i + 1 < x.size.",
               "`total = x[i]`, two guarded additions, `out[i] = total`.")),
    Puzzle(
        name="warp_uniform", title="Branches by warp, not by lane", topic="divergence",
        lesson="13",
        statement="""`out[e] = 2 * a[e] + 1` for even `e` and `a[e] * a[e]` for odd `e`. With
        one thread per element, every warp has both even and odd lanes and runs both branches
        one after the other. Map threads to elements so that each warp takes one branch: block
        `b` (64 threads) handles elements `64 b ... 64 b + 63`; its warp 0 the 32 even ones,
        its warp 1 the 32 odd ones. Each thread reads its element once.""",
        starter='''def warp_uniform_kernel(out, a, size):
    t = cuda.threadIdx.x
    # FILL ME IN (roughly 7 lines)
''',
        inputs=lambda n, rng: {"out": unwritten(n), "a": values(n, rng), "size": n},
        reference=_branches, launch=lambda n: (cdiv(n, 64), 64),
        launch_text="ceil(size / 64) blocks of 64 threads", sizes=(64, 128, 70),
        hidden=upto(200),
        method=Method(rule=_parity_per_warp,
                      rule_hint="element = 64 * blockIdx.x + 2 * (t % 32) + t // 32: warp 0 "
                                "of the block gets the even elements, warp 1 the odd ones"),
        hints=("Within the block, lane t % 32 of warp t // 32 handles element "
               "2 * (t % 32) + t // 32.",
               "Add the block's first element, 64 * cuda.blockIdx.x, and guard e < size.",
               "The branch is then `if e % 2 == 0` - uniform in every warp.")),
    Puzzle(
        name="warp_count", title="Count with a vote", topic="divergence", lesson="13",
        statement="""`out[w]` is how many of warp `w`'s 32 elements `a[32 w:32 w + 32]` are
        positive (elements past the end count as not positive). Each lane reads one element;
        `cuda.ballot_sync(FULL, predicate)` gathers the warp's 32 answers as bits, and
        `cuda.popc` counts them. Every lane votes, past the end too; lane 0 writes (when its
        warp has elements).""",
        starter='''FULL = 0xFFFFFFFF

def warp_count_kernel(out, a, size):
    i = cuda.grid(1)
    # FILL ME IN (roughly 4 lines)
''',
        inputs=lambda n, rng: {"out": np.full(cdiv(n, 32), -1, np.int32),
                               "a": values(n, rng), "size": n},
        reference=_warp_positive, launch=lambda n: (cdiv(n, 64), 64),
        launch_text="ceil(size / 64) blocks of 64 threads", sizes=(64, 100, 10),
        hidden=upto(200), shared=SHARED_NONE, method=Method(min_warp_ops=1),
        hints=("The predicate is `i < size and a[i] > 0`, computed in every lane.",
               "`votes = cuda.ballot_sync(FULL, predicate)`.",
               "`if cuda.laneid == 0 and i < size: out[i // 32] = cuda.popc(votes)` (a "
               "warp wholly past the end has no element of out)")),
    Puzzle(
        name="row_max", title="The maximum of a row", topic="softmax", lesson="14",
        statement="""`out[r, 0]` is the maximum of row `r` of `a` (`n` columns, up to 32).
        Block `r` has TPB = 8 threads: thread `t` first takes the maximum of its elements
        `t, t + 8, t + 16, ...` (`-inf` if it has none), stores it in shared memory, then a
        tree (as in block sums, with `max`) combines the 8.""",
        starter='''import math
from gpunb import float32

TPB = 8

def row_max_kernel(out, a, n):
    cache = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    # FILL ME IN (roughly 14 lines)
''',
        inputs=lambda s, rng: {"out": unwritten((s[0], 1)), "a": _spread(s, rng), "n": s[1]},
        reference=lambda args: {"out": args["a"].max(axis=1, keepdims=True)},
        launch=lambda s: (s[0], 8), launch_text="`rows` blocks of TPB = 8 threads",
        sizes=((2, 20), (3, 8), (1, 3)), hidden=_rows, max_reads=lambda s: cdiv(s[1], 8),
        shared=SHARED_REQUIRED, constants={"TPB": 8},
        method=Method(shared_flow=FLOW_BETWEEN, max_step_reads=3, min_barriers=3,
                      max_barriers=7, max_warp_ops=0, hints=TREE_HINTS),
        hints=("`m = -math.inf`, then `for j in range(t, n, TPB): m = max(m, a[r, j])`.",
               "`cache[t] = m`, then the tree: step = 4, 2, 1, `cache[t] = max(cache[t], "
               "cache[t + step])` for t < step, cuda.syncthreads() after each step.",
               "Thread 0 writes `out[r, 0] = cache[0]`.")),
    Puzzle(
        name="softmax", title="Row softmax", topic="softmax", lesson="14",
        statement="""`out[r, :] = exp(a[r, :] - m) / sum(exp(a[r, :] - m))` with `m` the
        row's maximum (subtracting it keeps `exp` from overflowing; the result is the same).
        Block `r`, TPB = 8 threads: a shared-memory tree for the maximum (as in `row_max`),
        then each thread sums `exp(a - m)` over its elements and a second tree adds the 8
        partial sums; finally each thread writes its elements. A thread may read each of its
        elements up to three times.""",
        starter='''import math
from gpunb import float32

TPB = 8

def softmax_kernel(out, a, n):
    cache = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    # FILL ME IN (roughly 30 lines)
''',
        inputs=_row_inputs, reference=_softmax,
        launch=lambda s: (s[0], 8), launch_text="`rows` blocks of TPB = 8 threads",
        sizes=((2, 20), (3, 8), (1, 3)), hidden=_rows, rtol=1e-5,
        max_reads=lambda s: 3 * cdiv(s[1], 8), max_writes=lambda s: cdiv(s[1], 8),
        shared=SHARED_REQUIRED, constants={"TPB": 8}, method=SOFTMAX,
        hints=("Three phases: m = the row's maximum (row_max's tree); s = the sum of "
               "exp(a - m) (a second tree, with +); out = exp(a - m) / s.",
               "Read cache[0] into a register after a barrier before reusing cache for the "
               "second tree - and put a barrier between that read and the next writes.",
               "`m = cache[0]; cuda.syncthreads(); cache[t] = partial_sum; "
               "cuda.syncthreads()`, then the same tree with +.")),
]
