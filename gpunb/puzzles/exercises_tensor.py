"""The graded exercises that end notebook 11 (tensor cores): fix a WMMA GEMM whose accumulator
is refilled in the K loop, make a block's warps share their operand tiles through shared memory,
and fix a cp.async double buffer that reads a buffer whose copies have not landed. Graded on the
CPU target, which runs WMMA and cp.async as the PTX ISA defines them; the method (fragment
operations per K step, each operand read once per block, copies in flight while the warp
computes) is read from the access log at every size.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.catalogue_basics import unwritten, values
from gpunb.puzzles.catalogue_tensor import double_buffered
from gpunb.puzzles.method import Method
from gpunb.puzzles.model import SHARED_ALLOWED, SHARED_REQUIRED, Puzzle
from gpunb.puzzles.trace import READ, WRITE

TILE = 16  # one WMMA tile: m16n16k16
STEP_OPS = 3  # a K step on the tensor cores: two fragment loads and one mma_sync


def _inputs(sizes, rng):
    m, n, k = sizes
    return {"out": unwritten((m, n)), "a": values((m, k), rng).astype(np.float16),
            "b": values((k, n), rng).astype(np.float16)}


def _reference(args: dict) -> dict:
    return {"out": args["a"].astype(np.float32) @ args["b"].astype(np.float32)}


def _size(step_mn: int, least_k: int):
    """Hidden sizes: M, N multiples of `step_mn` up to 3 of them, K from `least_k` to 64."""
    def draw(rng) -> tuple:
        m, n = (step_mn * int(v) for v in rng.integers(1, 4, 2))
        return m, n, TILE * int(rng.integers(least_k // TILE, 5))
    return draw


def on_tensor_cores(trace, sizes) -> str:
    """'' when every thread that wrote an output had passed at least STEP_OPS warp-collective
    operations per K step (fragment loads and mma_sync are warp-wide): the tensor cores did the
    multiply-adds, not each lane on its own."""
    out = trace.array_id("out")
    writers = trace.per_thread((trace.array == out) & ~trace.shared & (trace.kind != READ)) > 0
    needed = STEP_OPS * (sizes[2] // TILE)
    short = np.flatnonzero(writers & (trace.warp_ops() < needed))
    if not len(short):
        return ""
    gid = int(short[0])
    return (f"{trace.thread_name(gid)} wrote its output after {int(trace.warp_ops()[gid])} "
            f"warp-wide operations; with K = {sizes[2]}, the tensor cores take at least "
            f"{needed} ({sizes[2] // TILE} steps of 16, each two wmma.load_matrix_sync and a "
            "wmma.mma_sync)")


TENSOR_HINT = ("multiply with the tensor cores: per step of 16 along K, load a fragment of a "
               "and one of b (wmma.load_matrix_sync) and wmma.mma_sync(acc, fa, fb, acc)")


def read_once_per_block(trace, sizes) -> str:
    """'' when no block read an element of `a` or `b` from global memory more than once (the
    tile its warps share went through shared memory), else the first element read again."""
    tpb = trace.log.threads_per_block()
    for name in ("a", "b"):
        k = trace.array_id(name)
        mask = (trace.array == k) & ~trace.shared & (trace.kind != WRITE) & (trace.element >= 0)
        if not mask.any():
            continue
        size = int(np.prod(trace.array_shapes[k]))
        keys = (trace.gid[mask] // tpb) * size + trace.element[mask]
        unique, counts = np.unique(keys, return_counts=True)
        if counts.max() <= 1:
            continue
        block, element = divmod(int(unique[np.argmax(counts)]), size)
        index = ", ".join(str(int(i)) for i in np.unravel_index(element,
                                                                trace.array_shapes[k]))
        gx, gy = trace.access.grid[0], trace.access.grid[1]
        where = (block % gx, block // gx % gy, block // (gx * gy))
        return (f"block {where} read {name}[{index}] from global memory {int(counts.max())} "
                "times: each of its warps loaded its own copy of a tile the block shares "
                "(a fragment loaded from global memory reads each element once per lane "
                "holding it)")
    return ""


def _both(*rules):
    """One Method rule made of several: the first that is broken speaks."""
    def rule(trace, sizes) -> str:
        return next((m for m in (r(trace, sizes) for r in rules) if m), "")
    return rule


_ACCUMULATE = '''import numpy as np
from gpunb.cuda import wmma

def wmma_tile_gemm(out, a, b):
    r = cuda.blockIdx.y * 16
    c = cuda.blockIdx.x * 16
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    for k in range(0, a.shape[1], 16):
        wmma.fill_fragment(acc, 0.0)
        wmma.load_matrix_sync(fa, a[r:r + 16, k:k + 16])
        wmma.load_matrix_sync(fb, b[k:k + 16, c:c + 16])
        wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)
'''

_BLOCK = '''import numpy as np
from gpunb.cuda import wmma

def wmma_block_gemm(out, a, b):
    warp = cuda.threadIdx.x // 32
    wy = warp // 2
    wx = warp % 2
    r = cuda.blockIdx.y * 32 + 16 * wy
    c = cuda.blockIdx.x * 32 + 16 * wx
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    for k in range(0, a.shape[1], 16):
        wmma.load_matrix_sync(fa, a[r:r + 16, k:k + 16])
        wmma.load_matrix_sync(fb, b[k:k + 16, c:c + 16])
        wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)
'''

_PIPELINE = '''import numpy as np
from gpunb.cuda import wmma

T = 16

def wmma_pipelined(out, a, b):
    sa = cuda.shared.array((2, T, T), np.float16)
    sb = cuda.shared.array((2, T, T), np.float16)
    lane = cuda.threadIdx.x
    row = lane // 2          # each lane copies 16 bytes (8 halves) of each tile
    col = (lane % 2) * 8
    r = cuda.blockIdx.y * T
    c = cuda.blockIdx.x * T
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    tiles = a.shape[1] // T
    cuda.cp_async.copy(sa[0, row, col:], a[r + row, col:], 16)
    cuda.cp_async.copy(sb[0, row, col:], b[row, c + col:], 16)
    cuda.cp_async.commit_group()
    for k in range(tiles):
        if k + 1 < tiles:    # tile k + 1 travels while tile k is multiplied
            nxt = (k + 1) % 2
            cuda.cp_async.copy(sa[nxt, row, col:], a[r + row, (k + 1) * T + col:], 16)
            cuda.cp_async.copy(sb[nxt, row, col:], b[(k + 1) * T + row, c + col:], 16)
        cuda.cp_async.commit_group()
        cuda.syncthreads()
        wmma.load_matrix_sync(fa, sa[k % 2, :, :])
        wmma.load_matrix_sync(fb, sb[k % 2, :, :])
        wmma.mma_sync(acc, fa, fb, acc)
        cuda.syncthreads()
    wmma.store_matrix_sync(out[r:r + T, c:c + T], acc, wmma.mem_row_major)
'''

EXERCISES_11 = [
    Puzzle(
        name="ex11_wmma_accumulate", title="The accumulator refilled", topic="tensor cores",
        lesson="11", kind="exercise",
        statement="""Fix this kernel: `out = a @ b` for float16 `a` (M x K) and `b` (K x N),
        float32 `out`, on the tensor cores. Each block is one warp; it computes the 16 x 16
        tile of `out` at row `16 * blockIdx.y`, column `16 * blockIdx.x`, walking along K in
        steps of 16 (two fragment loads and a `wmma.mma_sync` per step). The result would be
        right if K were 16, and it is wrong for every longer K.""",
        starter=_ACCUMULATE, inputs=_inputs, reference=_reference,
        launch=lambda s: ((s[1] // TILE, s[0] // TILE), 32),
        launch_text="(N / 16, M / 16) blocks of one warp (32 threads)",
        sizes=((16, 16, 32), (32, 16, 48), (16, 32, 64)), hidden=_size(16, 32),
        max_reads=None, max_writes=8, shared=SHARED_ALLOWED,
        method=Method(rule=on_tensor_cores, rule_hint=TENSOR_HINT,
                      text="the multiply-adds on the tensor cores: per step of 16 along K, two "
                           "fragment loads and a wmma.mma_sync"),
        hints=("mma_sync(acc, fa, fb, acc) computes acc = fa x fb + acc: what is acc when the "
               "second step begins?",
               "wmma.fill_fragment(acc, 0.0) sets the whole accumulator: every step throws "
               "away the sums of the steps before it.",
               "Move `wmma.fill_fragment(acc, 0.0)` above the `for k` loop.")),
    Puzzle(
        name="ex11_wmma_shared", title="Share the tiles in the block", topic="tensor cores",
        lesson="11", kind="exercise",
        statement="""Make it read less: `out = a @ b` (float16 in, float32 out) with blocks of
        four warps, 2 x 2, each computing one 16 x 16 tile of the block's 32 x 32 tile of
        `out`. Every warp loads its fragments straight from global memory, so the two warps of
        a row of the block both read the same tile of `a`, and the two warps of a column the
        same tile of `b`. Stage each step's 32 x 16 slice of `a` and 16 x 32 slice of `b` in
        shared memory once per block (the 128 threads copy 4 elements of each), and let the
        warps load their fragments from there, e.g. `wmma.load_matrix_sync(fa, sa[16 * wy:16
        * wy + 16, :])`, with a barrier between the copies and the loads, and one before the
        next step's copies. M and N are multiples of 32, K of 16.""",
        starter=_BLOCK, inputs=_inputs, reference=_reference,
        launch=lambda s: ((s[1] // 32, s[0] // 32), 128),
        launch_text="(N / 32, M / 32) blocks of 4 warps (128 threads)",
        sizes=((32, 32, 32), (64, 32, 16), (32, 64, 48)), hidden=_size(32, 16),
        max_reads=None, max_writes=8, shared=SHARED_ALLOWED,
        method=Method(rule=_both(read_once_per_block, on_tensor_cores),
                      rule_hint="stage the block's slices of a and b in shared memory (each "
                                "element read from global memory by one thread), "
                                "cuda.syncthreads(), then load the fragments from shared "
                                "memory; each warp still multiplies on the tensor cores",
                      text="each element of a and b read from global memory once per block; "
                           "each warp multiplies its own tile on the tensor cores (two "
                           "fragment loads and a wmma.mma_sync per step of 16)"),
        hints=("Count the reads: the access map says how often each element of a was read, "
               "and two warps of a block need the same 16 rows of a.",
               "sa = cuda.shared.array((32, 16), np.float16), sb = cuda.shared.array((16, 32), "
               "np.float16); thread t copies 4 elements of each: row t // 4 of sa from "
               "column 4 (t % 4) on, row t // 8 of sb from column 4 (t % 8) on.",
               "In the k loop: copy, cuda.syncthreads(), wmma.load_matrix_sync(fa, "
               "sa[16 * wy:16 * wy + 16, :]) and fb from sb[:, 16 * wx:16 * wx + 16], "
               "mma_sync, cuda.syncthreads().")),
    Puzzle(
        name="ex11_cp_async_wait", title="The copy not yet landed", topic="async copies",
        lesson="11", kind="exercise",
        statement="""Fix this kernel: the one-warp WMMA GEMM, with its tiles fed through shared
        memory by `cuda.cp_async.copy` in two buffers: while the warp multiplies tile k, the
        copies of tile k + 1 travel (each lane copies 16 bytes, 8 halves, of each tile). A
        `cuda.syncthreads()` orders the threads, but it does not wait for a cp.async: the
        kernel reads buffers whose copies may still be in flight. On a GPU it reads old bytes,
        new bytes or a mix, depending on timing; the CPU target lands each copy at the latest
        moment the kernel's waits allow, so the mistake shows every time. Keep the copies of
        the next tile in flight while the warp computes. M, N and K are multiples of 16.""",
        starter=_PIPELINE, inputs=_inputs, reference=_reference,
        launch=lambda s: ((s[1] // TILE, s[0] // TILE), 32),
        launch_text="(N / 16, M / 16) blocks of one warp (32 threads)",
        sizes=((16, 16, 48), (32, 16, 32), (16, 32, 64)), hidden=_size(16, 16),
        max_reads=None, max_writes=8, shared=SHARED_REQUIRED,
        constants={"T": TILE},
        method=Method(rule=_both(double_buffered(TILE), on_tensor_cores),
                      rule_hint="commit the copies of tile k + 1 before multiplying tile k, "
                                "then cuda.cp_async.wait_group(1): it waits for every group "
                                "but the newest",
                      text="every global read through cuda.cp_async.copy; all but the last K "
                           "tile multiplied on the tensor cores while the next tile's copies "
                           "are in flight"),
        hints=("The report names the read of sa and the copy that was still filling it: what "
               "makes a thread wait for its own cp.async copies?",
               "cuda.cp_async.wait_group(n) waits until at most n of this thread's committed "
               "groups are still in flight; the barrier after it then covers the other "
               "lanes' copies. wait_group(0) would also wait for tile k + 1.",
               "`cuda.cp_async.wait_group(1)` right after `cuda.cp_async.commit_group()` in the "
               "loop, before `cuda.syncthreads()`.")),
]

PUZZLES = EXERCISES_11
