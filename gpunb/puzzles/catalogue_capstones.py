"""Puzzles of notebooks 15-16, the capstones: attention forward for one query per block (whole
row of scores in shared memory, then tiled with an online softmax, as FlashAttention does) and a
2-D convolution (direct, then from a shared tile with its halo).
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, values
from gpunb.puzzles.method import FLOW_BETWEEN, Method
from gpunb.puzzles.model import SHARED_REQUIRED, Puzzle, cdiv

KEY_TILE = 8


def _halves(shape, rng) -> np.ndarray:
    """Multiples of 1/2 in [-2, 2]: scores stay moderate, so exp() keeps several keys."""
    return (rng.integers(-4, 5, shape) / 2).astype(np.float32)


def _attention_inputs(size, rng):
    seq, dim = size
    return {"out": unwritten((seq, dim)), "q": _halves((seq, dim), rng),
            "k": _halves((seq, dim), rng), "v": values((seq, dim), rng), "seq": seq,
            "dim": dim}


def _attention(args: dict) -> dict:
    q, k, v = (args[n].astype(np.float64) for n in "qkv")
    scores = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    return {"out": (p / p.sum(axis=1, keepdims=True) @ v).astype(np.float32)}


def _shared_footprint(most: int):
    """A rule: each block touches at most `most` elements of shared memory."""
    def rule(trace, size) -> str:
        tpb = trace.log.threads_per_block()
        mask = trace.shared & (trace.element >= 0)
        block = trace.gid[mask] // tpb
        key = (block * 1_000_003 + trace.array[mask]) * 1_000_003 + trace.element[mask]
        per_block = np.bincount(np.unique(key) // (1_000_003 * 1_000_003))
        if len(per_block) and per_block.max() > most:
            return (f"a block used {int(per_block.max())} elements of shared memory; the "
                    f"method keeps one tile of scores (at most {most} elements in all), "
                    "never the whole row")
        return ""
    return rule


def _conv_inputs(shape, rng):
    rows, cols = shape
    return {"out": unwritten((rows, cols)), "a": values((rows, cols), rng),
            "w": values((3, 3), rng), "rows": rows, "cols": cols}


def _conv2d(args: dict) -> dict:
    a, w = args["a"], args["w"]
    padded = np.pad(a, 1)
    rows, cols = a.shape
    out = np.zeros_like(a)
    for i in range(3):
        for j in range(3):
            out += w[i, j] * padded[i:i + rows, j:j + cols]
    return {"out": out}


def _conv_size(rng) -> tuple:
    # at least 2 x 2: a row or column of one pixel never meets the outer weights (3 x 3 with
    # zero padding), which the grader requires every output to read
    return int(rng.integers(2, 21)), int(rng.integers(2, 21))


_CONV_LAUNCH = dict(launch=lambda s: ((cdiv(s[1], 8), cdiv(s[0], 8)), (8, 8)),
                    launch_text="ceil(cols / 8) x ceil(rows / 8) blocks of 8 x 8 threads",
                    sizes=((8, 8), (13, 10), (5, 20)), hidden=_conv_size)

PUZZLES = [
    Puzzle(
        name="attention_row", title="Attention, one query per block", topic="attention",
        lesson="15",
        statement="""`out = softmax(q k^T / sqrt(dim)) v` for `seq x dim` matrices (`seq`,
        `dim` <= 16): row `r` of `out` is the average of the rows of `v` weighted by the
        softmax of query `r`'s scores against every key. Block `r` (16 threads) computes row
        `r`: thread `j < seq` computes score `j` (a dot product of `q[r]` and `k[j]`) into a
        shared array (`-inf` past `seq`); shared-memory trees give the maximum and then the sum
        of `exp(score - max)`; thread `d < dim` then writes `out[r, d]`. The scores never go to
        global memory.""",
        starter='''import math
from gpunb import float32

TPB = 16

def attention_row_kernel(out, q, k, v, seq, dim):
    scores = cuda.shared.array(TPB, float32)
    cache = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    # FILL ME IN (roughly 35 lines)
''',
        inputs=_attention_inputs, reference=_attention,
        launch=lambda s: (s[0], 16), launch_text="`seq` blocks of TPB = 16 threads",
        sizes=((8, 4), (16, 16), (5, 3)),
        hidden=lambda rng: (int(rng.integers(1, 17)), int(rng.integers(1, 17))),
        rtol=1e-4, atol=1e-5, max_reads=lambda s: 2 * s[1] + s[0],
        shared=SHARED_REQUIRED, constants={"TPB": 16},
        method=Method(shared_flow=FLOW_BETWEEN, min_barriers=8, max_warp_ops=0,
                      text="scores in shared memory; a tree for their maximum, another for "
                           "the sum of exponentials; the weighted sum of v's rows"),
        hints=("Phase 1: `s = sum(q[r, d] * k[t, d] for d) / math.sqrt(dim)` if t < seq, "
               "else -math.inf; `scores[t] = s`; copy it to cache too.",
               "Phase 2: max tree on cache (step 8, 4, 2, 1); m = cache[0]; then "
               "`p = math.exp(scores[t] - m)` into scores[t] and cache[t], and a + tree.",
               "Phase 3: thread d < dim: `sum(scores[j] * v[j, d] for j < seq) / total`.")),
    Puzzle(
        name="flash_attention", title="Attention with an online softmax", topic="attention",
        lesson="15",
        statement="""The same `out = softmax(q k^T / sqrt(dim)) v`, for longer rows (`seq` up to
        40, `dim` <= 8), the FlashAttention way: block `r` (8 threads) walks the keys in tiles
        of 8, and never holds more than one tile of scores. It keeps a running maximum `m`, a
        running sum `l` of `exp(score - m)` and (thread `d`) a running `acc` of the weighted
        rows of `v`; when a tile raises the maximum, `l` and `acc` are rescaled by
        `exp(m_old - m_new)`. At the end `out[r, d] = acc / l`. Each element of `k` and `v` is
        read once per block; shared memory holds `q[r]` and one tile of scores.""",
        starter='''import math
from gpunb import float32

TILE = 8

def flash_attention_kernel(out, q, k, v, seq, dim):
    qs = cuda.shared.array(TILE, float32)
    s = cuda.shared.array(TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    # FILL ME IN (roughly 30 lines)
''',
        inputs=_attention_inputs, reference=_attention,
        launch=lambda s: (s[0], KEY_TILE), launch_text="`seq` blocks of TILE = 8 threads",
        sizes=((20, 4), (8, 8), (33, 3)),
        hidden=lambda rng: (int(rng.integers(9, 41)), int(rng.integers(1, 9))),
        rtol=1e-4, atol=1e-5,
        max_reads=lambda s: 1 + cdiv(s[0], KEY_TILE) * s[1] + s[0],
        shared=SHARED_REQUIRED, constants={"TILE": KEY_TILE},
        method=Method(shared_flow=FLOW_BETWEEN, max_warp_ops=0,
                      min_barriers=lambda s: cdiv(s[0], KEY_TILE),
                      rule=_shared_footprint(2 * KEY_TILE),
                      rule_hint="one shared array of TILE scores, reused for every tile "
                                "(with a barrier before it is overwritten), and one for q",
                      text="keys in tiles of 8; a running maximum, sum and accumulator, "
                           "rescaled when the maximum grows"),
        hints=("Start: qs[t] = q[r, t] (t < dim); cuda.syncthreads(); m = -math.inf, l = 0, "
               "acc = 0 in every thread.",
               "Per tile j0: thread t stores s[t] = score of key j0 + t (-inf past seq); "
               "barrier; every thread reads the 8 scores: tile max, m_new = max(m, tile max), "
               "scale = math.exp(m - m_new).",
               "l = l * scale + sum(exp(s[j] - m_new)); thread d < dim: acc = acc * scale + "
               "sum(exp(s[j] - m_new) * v[j0 + j, d]); m = m_new; barrier before the next "
               "tile.")),
    Puzzle(
        name="conv2d_direct", title="2-D convolution, direct", topic="convolution",
        lesson="16",
        statement="""`out[r, c] = sum(a[r + i - 1, c + j - 1] * w[i, j] for i, j in 0..2)`, a
        3 x 3 convolution with zero padding ("same" size). One thread per output element:
        `cuda.grid(2)` gives `(x, y)`; give `x` to the column, so a warp reads along rows.""",
        starter='''def conv2d_direct_kernel(out, a, w, rows, cols):
    c, r = cuda.grid(2)
    # FILL ME IN (roughly 8 lines)
''',
        inputs=_conv_inputs, reference=_conv2d, max_reads=18, **_CONV_LAUNCH,
        hints=("Guard r < rows and c < cols first.",
               "Loop i, j over range(3); the input element is (r + i - 1, c + j - 1), skipped "
               "when it is outside the matrix.",
               "`acc += a[rr, cc] * w[i, j]`, then `out[r, c] = acc`.")),
    Puzzle(
        name="conv2d_tiled", title="2-D convolution from a shared tile", topic="convolution",
        lesson="16",
        statement="""The same convolution, reading each input element once per block: an
        8 x 8 block stages the 10 x 10 tile of `a` it needs (its 8 x 8 outputs' inputs plus a
        one-element halo all around, zeros outside the matrix) and the 3 x 3 weights in shared
        memory, synchronises, and computes from there. A thread reads at most 2 elements of `a`
        and 1 of `w`.""",
        starter='''from gpunb import float32

def conv2d_tiled_kernel(out, a, w, rows, cols):
    tile = cuda.shared.array((10, 10), float32)
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r0 = cuda.blockIdx.y * 8 - 1      # the tile's first row and column in a
    c0 = cuda.blockIdx.x * 8 - 1
    # FILL ME IN (roughly 16 lines)
''',
        inputs=_conv_inputs, reference=_conv2d, max_reads=3, shared=SHARED_REQUIRED,
        **_CONV_LAUNCH,
        method=Method(shared_flow=FLOW_BETWEEN, min_barriers=1, max_warp_ops=0,
                      text="the tile and its halo loaded once, in a strided loop over the "
                           "block's 64 threads"),
        hints=("Number the block's threads t = ty * 8 + tx; element e of the 100-element tile "
               "(row e // 10, column e % 10) is loaded by thread e % 64: "
               "`for e in range(t, 100, 64)`.",
               "Threads t < 9 load weights[t // 3, t % 3]; then cuda.syncthreads().",
               "Output (r0 + 1 + ty, c0 + 1 + tx) sums tile[ty + i, tx + j] * weights[i, j].")),
]
