"""Puzzles on tensor cores and the memory pipeline that feeds them: a WMMA tile GEMM, a transpose
through ldmatrix, and a cp.async double buffer. Graded on the CPU target, which runs the
instructions lane by lane as a GPU does and lands a cp.async at the latest moment its wait allows
(so reading a buffer too early, or refilling it while others still read it, is caught)."""

from __future__ import annotations

import numpy as np

from gpunb.backends.cpu.abi import ROLE_COPY_SOURCE, ROLE_TMA_SOURCE
from gpunb.puzzles.catalogue_basics import unwritten, values
from gpunb.puzzles.method import FLOW_OWN, Method
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle
from gpunb.puzzles.trace import WRITE


def _gemm_inputs(sizes, rng):
    m, n, k = sizes
    return {"out": unwritten((m, n)), "a": values((m, k), rng).astype(np.float16),
            "b": values((k, n), rng).astype(np.float16)}


def _transpose_inputs(count, rng):
    return {"out": unwritten((16, 16 * count)), "a": values((16 * count, 16), rng)
            .astype(np.float16)}


DB_TILE = 8  # the double buffer's tiles: 8 x 8, one element per thread of an 8 x 8 block


def _matmul_size(rng) -> tuple:
    """A hidden size: M, N multiples of 8 up to 24, K up to 32."""
    m, n, k = (int(v) for v in rng.integers(1, (4, 4, 5)))
    return 8 * m, 8 * n, 8 * k


def _matmul_inputs(sizes, rng):
    m, n, k = sizes
    return {"out": unwritten((m, n)), "a": values((m, k), rng), "b": values((k, n), rng)}


DOUBLE_BUFFER_HINT = ("stage every tile with cuda.cp_async.copy, and issue (and commit) the "
                      "copy of tile k + 1 into the other buffer before computing on tile k, "
                      "then cuda.cp_async.wait_group(1)")


COPY_SOURCES = (ROLE_COPY_SOURCE, ROLE_TMA_SOURCE)  # the access roles of copies' global reads


def _copy_sources(trace) -> np.ndarray:
    """Per record: whether it is a cp.async's or a TMA load's read of its global source (not a
    direct load)."""
    roles = np.array([len(s) > 6 and s[6] in COPY_SOURCES for s in trace.log.sites] or [False])
    return roles[trace.log.records["site"]] if len(trace.log.records) else np.zeros(0, bool)


def double_buffered(tile: int):
    """The rule of a cp.async double buffer walking K in tiles of `tile`: every global read
    through cuda.cp_async.copy, and all but the last tile computed while the next one was being
    copied. A rule(trace, sizes) -> '' when kept, else what broke it."""
    def rule(trace, sizes) -> str:
        loads = trace.per_thread(~trace.shared & (trace.kind != WRITE) & (trace.array >= 0)
                                 & ~_copy_sources(trace))
        direct = np.flatnonzero(loads)
        if len(direct):
            return (f"{len(direct)} threads read global memory directly (thread "
                    f"{int(direct[0])}: {int(loads[direct[0]])} reads); here the tiles reach "
                    "shared memory through cuda.cp_async.copy only")
        overlap = trace.access.async_overlap
        if overlap is None:
            return "the kernel made no cuda.cp_async.copy: stage the tiles of a and b with it"
        tiles = sizes[2] // tile
        needed = (tiles - 1) / tiles
        for blk, (reads, early) in enumerate(zip(overlap.shared_reads, overlap.overlapped,
                                                 strict=True)):
            if reads and early < needed * reads:
                gx = trace.access.grid[0]
                return (f"block {(blk % gx, blk // gx, 0)} made {int(early)} of its {int(reads)} "
                        f"reads of shared memory while a copy was in flight; with {tiles} "
                        f"tiles, {tiles - 1} of them must be computed while the next one is "
                        "copied")
        return ""
    return rule


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
    Puzzle(
        name="cp_async_double_buffer", title="A cp.async double buffer", topic="async copies",
        statement="""`out = a @ b` (float32, M x K times K x N), one 8 x 8 block per 8 x 8 tile
        of `out`, thread (x, y) computing `out[8 * blockIdx.y + y, 8 * blockIdx.x + x]`. Walk
        along K in tiles of 8, staging each 8 x 8 tile of `a` and of `b` in shared memory with
        `cuda.cp_async.copy(dst, src, 4)` (each thread copies one element of each: `dst` and
        `src` are views starting at that element, e.g. `sa[buf, y, x:]`), and keep two buffers
        of each: before computing on tile k, issue and commit the copies of tile k + 1 into the
        other buffer, so that they travel while you compute. `cuda.cp_async.wait_group(1)`
        waits for all but the newest group of this thread's copies; a copy made by another
        thread is yours to read only after a `cuda.syncthreads()`, and a buffer may be refilled
        only when every thread has finished reading it. Sizes are multiples of 8.""",
        starter=f'''from gpunb import float32

T = {DB_TILE}

def cp_async_double_buffer_kernel(out, a, b):
    sa = cuda.shared.array((2, T, T), float32)
    sb = cuda.shared.array((2, T, T), float32)
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    row = cuda.blockIdx.y * T + y
    col = cuda.blockIdx.x * T + x
    tiles = a.shape[1] // T
    # FILL ME IN (roughly 16 lines)
''',
        inputs=_matmul_inputs,
        reference=lambda args: {"out": args["a"] @ args["b"]},
        launch=lambda s: ((s[1] // DB_TILE, s[0] // DB_TILE), (DB_TILE, DB_TILE)),
        launch_text="(N / 8, M / 8) blocks of 8 x 8 threads",
        sizes=((8, 8, 24), (16, 8, 16), (8, 16, 8)), hidden=_matmul_size,
        max_reads=None, max_writes=1,
        shared=SHARED_REQUIRED, constants={"T": DB_TILE},
        method=Method(shared_flow=FLOW_OWN, rule=double_buffered(DB_TILE),
                      rule_hint=DOUBLE_BUFFER_HINT,
                      text="every global read through cuda.cp_async.copy; all but the last K "
                           "tile computed while the next tile's copies are in flight")),
]
