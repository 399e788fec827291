"""Puzzles on tensor cores: a WMMA tile GEMM and a transpose through ldmatrix. Graded on the
CPU target, which runs both instructions lane by lane as a GPU does."""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, values
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle


def _gemm_inputs(sizes, rng):
    m, n, k = sizes
    return {"out": unwritten((m, n)), "a": values((m, k), rng).astype(np.float16),
            "b": values((k, n), rng).astype(np.float16)}


def _transpose_inputs(count, rng):
    return {"out": unwritten((16, 16 * count)), "a": values((16 * count, 16), rng)
            .astype(np.float16)}


PUZZLES = [
    Puzzle(
        name="wmma_gemm", title="A WMMA tile GEMM", topic="tensor cores",
        statement="""`out = a @ b` for float16 `a` (M x K) and `b` (K x N), float32 `out`, on
        the tensor cores: each block is one warp, and it computes the 16 x 16 tile of `out` at
        row `16 * blockIdx.y`, column `16 * blockIdx.x`. Walk along K in steps of 16: load a
        tile of `a` and one of `b` into the fragments (`wmma.load_matrix_sync(frag, a[r:r + 16,
        k:k + 16])`), multiply-accumulate them with `wmma.mma_sync`, and finally store the
        accumulator with `wmma.store_matrix_sync(..., wmma.mem_row_major)`. Sizes are
        multiples of 16.""",
        starter='''import numpy as np
from gpunb.cuda import wmma

def wmma_gemm_kernel(out, a, b):
    r = cuda.blockIdx.y * 16
    c = cuda.blockIdx.x * 16
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    # FILL ME IN (roughly 6 lines)
''',
        inputs=_gemm_inputs,
        reference=lambda args: {"out": (args["a"].astype(np.float32) @
                                        args["b"].astype(np.float32))},
        launch=lambda s: ((s[1] // 16, s[0] // 16), 32),
        launch_text="(N / 16, M / 16) blocks of one warp (32 threads)",
        sizes=((16, 16, 16), (32, 16, 48), (16, 48, 32)), max_reads=None, max_writes=None,
        shared=SHARED_ALLOWED),
    Puzzle(
        name="ldmatrix_transpose", title="Transpose with ldmatrix", topic="tensor cores",
        statement="""`out = a.T` for `a` made of 16 x 16 float16 blocks stacked vertically
        (16 * count rows), one warp per block. Copy the block into a 16 x 16 shared array (8
        elements per lane), then let `cuda.ldmatrix(tile, (row, col), 4, True)` do the transpose:
        with `.trans`, lane `l` receives, for each of the four 8 x 8 matrices `i`, elements
        (`2 (l % 4) + j`, `l // 4`) of matrix `i` as values `2 i + j`. Lane `8 i + r` passes the
        address of row `r` of matrix `i`; take matrices 0-3 as the top-left, bottom-left,
        top-right and bottom-right 8 x 8 quarters. Write each value where it belongs in `out`.
        Each lane reads 8 elements of `a` and writes 8 of `out`.""",
        starter='''import numpy as np

def ldmatrix_transpose_kernel(out, a):
    lane = cuda.laneid
    block = cuda.blockIdx.x
    tile = cuda.shared.array((16, 16), np.float16)
    # FILL ME IN (roughly 12 lines)
''',
        inputs=_transpose_inputs,
        reference=lambda args: {"out": args["a"].astype(np.float32).T.copy()},
        launch=lambda count: (count, 32), launch_text="count blocks of one warp (32 threads)",
        sizes=(1, 2, 3), max_reads=8, max_writes=8, shared=SHARED_REQUIRED),
]
