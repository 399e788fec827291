"""A corpus of wrong submissions, the kinds an instructor tried against the grader: reads of
shared memory no thread wrote, hard-coded answers, another algorithm than the statement's (one
thread doing a block's work, an O(n²) scan, shuffles where shared memory is required, a register
copy instead of shared memory), missing barriers, off-by-ones, races, missing guards.

Each case names its puzzle, the finding kind the grader must report and words its hint must
contain. `hard_coded(name)` builds, for any puzzle, its reference solution with the inputs
replaced by the arrays of one fixed attempt: right for that attempt, blind to the real inputs.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import math
import textwrap
from dataclasses import dataclass

import exercise_solutions
import numpy as np
import solutions
from solutions import (
    ATT_TPB,
    AXIS_TPB,
    CONV_TPB,
    DOT_TPB,
    FLASH_TILE,
    FULL,
    MAX_CONV,
    MM_TPB,
    POOL_TPB,
    ROW_TPB,
    SCAN_TPB,
    SHARED_TPB,
    SUM_TPB,
)

from gpunb import cuda, float32, int32
from gpunb.cuda import wmma


@dataclass(frozen=True)
class Case:
    puzzle: str
    kind: str  # a finding kind the grade must list ('race', 'uninitialised', ...)
    hint: str  # words the hint of that finding must contain
    kernel: object
    what: str  # which mistake, for test ids


CASES: list[Case] = []


def wrong(puzzle: str, kind: str, hint: str, what: str):
    def register(kernel):
        CASES.append(Case(puzzle, kind, hint, kernel, what))
        return kernel
    return register


def hard_coded(name: str, reference=None):
    """The reference solution of `name` reading fixed arrays (one earlier attempt's inputs,
    frozen into the code as constants) instead of its input arguments."""
    from gpunb import puzzles

    puzzle = puzzles.get(name)
    module = solutions if name in solutions.SOLUTIONS else exercise_solutions
    reference = reference or module.SOLUTIONS[name]
    args = puzzle.inputs(puzzle.sizes[0], np.random.default_rng(12345))
    inputs = [p for p in puzzle.params
              if p not in puzzle.outputs and isinstance(args[p], np.ndarray)]
    tree = ast.parse(textwrap.dedent(inspect.getsource(reference)))
    function = tree.body[0]
    function.decorator_list = []
    for arg in function.args.args:
        if arg.arg in inputs:
            arg.arg += "_given"
    source = ast.unparse(tree)
    filename = f"<hard-coded {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(vars(module))
    namespace.update({p: args[p] for p in inputs})
    exec(compile(source, filename, "exec"), namespace)
    return namespace[function.name]


HARD_CODED_HINT = "computed from them"
BARRIER_HINT = "cuda.syncthreads()"
UNSET_HINT = "still store their slot"

# ---- one thread, one element ------------------------------------------------------------------


@wrong("map", "values", "one place off", "off by one, reading a[i - 1]")
def map_shifted(out, a):
    i = cuda.threadIdx.x
    out[i] = a[i - 1] + 10


@wrong("map", "out_of_bounds", "check the index", "off by one past the end")
def map_past_end(out, a):
    i = cuda.threadIdx.x
    out[i] = a[i + 1] + 10


@wrong("map", "shared_forbidden", "registers", "shared memory where the puzzle forbids it")
def map_through_shared(out, a):
    buf = cuda.shared.array(32, float32)
    i = cuda.threadIdx.x
    buf[i] = a[i]
    out[i] = buf[i] + 10


@wrong("zip", "unread_input", HARD_CODED_HINT, "one input ignored")
def zip_one_input(out, a, b):
    i = cuda.threadIdx.x
    out[i] = a[i] + a[i]


@wrong("zip", "signature", "starter", "wrong parameters")
def zip_two_params(out, a):
    out[cuda.threadIdx.x] = a[cuda.threadIdx.x]


@wrong("guards", "out_of_bounds", "check the index", "no guard")
def guards_missing(out, a, size):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10


@wrong("guards", "out_of_bounds", "check the index", "guard off by one (<=)")
def guards_inclusive(out, a, size):
    i = cuda.threadIdx.x
    if i <= size:
        out[i] = a[i] + 10


@wrong("guards", "values", "never written", "guard one too strict")
def guards_too_strict(out, a, size):
    i = cuda.threadIdx.x
    if i < size - 1:
        out[i] = a[i] + 10


@wrong("map_2d", "out_of_bounds", "check the index", "only one index guarded")
def map_2d_half_guard(out, a, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    if x < size:
        out[x, y] = a[x, y] + 10


@wrong("map_2d", "values", "redo its arithmetic", "indices swapped on one side")
def map_2d_swapped(out, a, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    if x < size and y < size:
        out[x, y] = a[y, x] + 10


@wrong("broadcast", "values", "redo its arithmetic", "row and column swapped")
def broadcast_swapped(out, a, b, size):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    if x < size and y < size:
        out[x, y] = a[y, 0] + b[0, x]


@wrong("blocks", "race", "blockIdx", "block offset forgotten")
def blocks_no_offset(out, a, size):
    i = cuda.threadIdx.x
    if i < size:
        out[i] = a[i] + 10


@wrong("blocks", "out_of_bounds", "check the index", "last block unguarded")
def blocks_unguarded(out, a, size):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    out[i] = a[i] + 10


@wrong("blocks_2d", "race", "blockIdx", "only the x offset")
def blocks_2d_half_offset(out, a, size):
    x = cuda.blockIdx.x * 4 + cuda.threadIdx.x
    y = cuda.threadIdx.y
    if x < size and y < size:
        out[x, y] = a[x, y] + 10


@wrong("grid_stride", "values", "never written", "no loop: one element per thread")
def grid_stride_no_loop(out, a, size):
    i = cuda.grid(1)
    if i < size:
        out[i] = a[i] * 2


@wrong("grid_stride", "global_reads", "one thread doing several", "thread 0 does everything")
def grid_stride_one_thread(out, a, size):
    if cuda.grid(1) == 0:
        for i in range(size):
            out[i] = a[i] * 2


@wrong("reverse", "out_of_bounds", "check the index", "a[size - i]: off by one")
def reverse_off_by_one(out, a, size):
    i = cuda.grid(1)
    if i < size:
        out[i] = a[size - i]


@wrong("saxpy", "values", "redo its arithmetic", "alpha hard-coded")
def saxpy_fixed_alpha(out, x, y, alpha, size):
    i = cuda.grid(1)
    if i < size:
        out[i] = 1.5 * x[i] + y[i]


# ---- shared memory ----------------------------------------------------------------------------


@wrong("shared", "barriers", BARRIER_HINT, "missing barrier (no race: own element)")
def shared_no_barrier(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
        out[i] = shared[local_i] + 10


@wrong("shared", "shared_flow", "not from a register copy", "register copy, shared unused")
def shared_register_copy(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        v = a[i]
        shared[local_i] = v
        cuda.syncthreads()
        out[i] = v + 10
    else:
        cuda.syncthreads()


@wrong("shared", "uninitialised", UNSET_HINT, "reads its unwritten slot past the end")
def shared_unset_slot(out, a, size):
    shared = cuda.shared.array(SHARED_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    total = shared[local_i] + 10
    if i < size:
        out[i] = total


@wrong("pooling", "race", BARRIER_HINT, "missing barrier")
def pooling_no_barrier(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
        total = shared[local_i]
        if local_i >= 1:
            total += shared[local_i - 1]
        if local_i >= 2:
            total += shared[local_i - 2]
        out[i] = total


@wrong("pooling", "warp_ops", "shared array instead of shuffles", "shuffles for the neighbours")
def pooling_shuffles(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    v = a[i] if i < size else float32(0.0)
    shared[local_i] = v
    cuda.syncthreads()
    mine = shared[local_i]
    one = cuda.shfl_up_sync(0xFF, mine, 1)
    two = cuda.shfl_up_sync(0xFF, mine, 2)
    if i < size:
        total = mine
        if local_i >= 1:
            total += one
        if local_i >= 2:
            total += two
        out[i] = total


@wrong("pooling", "uninitialised", UNSET_HINT, "reads unwritten slots past the end")
def pooling_unset(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    total = shared[local_i]
    if local_i >= 1:
        total += shared[local_i - 1]
    if local_i >= 2:
        total += shared[local_i - 2]
    if i < size:
        out[i] = total


@wrong("pooling", "values", "redo its arithmetic", "off by one in the window")
def pooling_off_by_one(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    if i < size:
        total = shared[local_i]
        if local_i >= 1:
            total += shared[local_i - 1]
        if local_i >= 3:
            total += shared[local_i - 2]
        out[i] = total


@wrong("pooling", "global_reads", "shared memory", "neighbours read from global memory")
def pooling_global(out, a, size):
    shared = cuda.shared.array(POOL_TPB, float32)
    i = cuda.grid(1)
    if i < size:
        shared[i] = a[i]
        total = a[i]
        if i >= 1:
            total += a[i - 1]
        if i >= 2:
            total += a[i - 2]
        out[i] = total


@wrong("dot", "uninitialised", UNSET_HINT, "threads past the end leave their slot unwritten")
def dot_unset(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i] * b[i]
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(DOT_TPB):
            total += shared[k]
        out[0] = total


@wrong("dot", "race", BARRIER_HINT, "missing barrier")
def dot_no_barrier(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared[local_i] = a[i] * b[i] if i < size else 0.0
    if local_i == 0:
        total = float32(0.0)
        for k in range(DOT_TPB):
            total += shared[k]
        out[0] = total


@wrong("dot", "global_reads", "shared memory", "one thread reads everything")
def dot_one_thread(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    if cuda.threadIdx.x == 0:
        total = float32(0.0)
        for k in range(size):
            total += a[k] * b[k]
        shared[0] = total
        out[0] = shared[0]


@wrong("dot", "warp_ops", "shared array instead of shuffles", "warp shuffles instead")
def dot_shuffles(out, a, b, size):
    shared = cuda.shared.array(DOT_TPB, float32)
    i = cuda.grid(1)
    v = a[i] * b[i] if i < size else float32(0.0)
    shared[i] = v
    cuda.syncthreads()
    v = shared[i]
    offset = 4
    while offset > 0:
        v += cuda.shfl_down_sync(0xFF, v, offset)
        offset //= 2
    if i == 0:
        out[0] = v


@wrong("conv1d", "uninitialised", UNSET_HINT, "halo never loaded")
def conv1d_no_halo(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(CONV_TPB + MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    shared_a[local_i] = a[i] if i < a_size else 0.0
    if local_i < b_size:
        shared_b[local_i] = b[local_i]
    cuda.syncthreads()
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


@wrong("conv1d", "race", BARRIER_HINT, "missing barrier")
def conv1d_no_barrier(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(CONV_TPB + MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    shared_a[local_i] = a[i] if i < a_size else 0.0
    if local_i < MAX_CONV:
        halo = i + CONV_TPB
        shared_a[local_i + CONV_TPB] = a[halo] if halo < a_size else 0.0
        shared_b[local_i] = b[local_i] if local_i < b_size else 0.0
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


@wrong("conv1d", "values", "", "one tap of b left out")
def conv1d_short(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(CONV_TPB + MAX_CONV, float32)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    shared_a[local_i] = a[i] if i < a_size else 0.0
    if local_i < MAX_CONV:
        halo = i + CONV_TPB
        shared_a[local_i + CONV_TPB] = a[halo] if halo < a_size else 0.0
        shared_b[local_i] = b[local_i] if local_i < b_size else 0.0
    cuda.syncthreads()
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size - 1):
            total += shared_a[local_i + j] * shared_b[j]
        out[i] = total


@wrong("conv1d", "global_reads", "shared memory", "reads a from global memory for every tap")
def conv1d_global(out, a, b, a_size, b_size):
    i = cuda.grid(1)
    shared_b = cuda.shared.array(MAX_CONV, float32)
    if cuda.threadIdx.x < b_size:
        shared_b[cuda.threadIdx.x] = b[cuda.threadIdx.x]
    cuda.syncthreads()
    if i < a_size:
        total = float32(0.0)
        for j in range(b_size):
            if i + j < a_size:
                total += a[i + j] * shared_b[j]
        out[i] = total


@wrong("block_sum", "step_work", "sequential sum", "thread 0 sums the block")
def block_sum_one_thread(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(SUM_TPB):
            total += cache[k]
        out[cuda.blockIdx.x] = total


@wrong("block_sum", "race", BARRIER_HINT, "no barrier between the tree's steps")
def block_sum_no_step_barrier(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < SUM_TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
        step *= 2
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@wrong("block_sum", "uninitialised", UNSET_HINT, "the last block's missing elements unwritten")
def block_sum_unset(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    if i < size:
        cache[local_i] = a[i]
    cuda.syncthreads()
    step = 1
    while step < SUM_TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
        step *= 2
        cuda.syncthreads()
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@wrong("block_sum", "warp_ops", "shared array instead of shuffles", "warp shuffles instead")
def block_sum_shuffles(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    v = cache[local_i]
    offset = 4
    while offset > 0:
        v += cuda.shfl_down_sync(0xFF, v, offset)
        offset //= 2
    if local_i == 0:
        out[cuda.blockIdx.x] = v


@wrong("block_sum", "barriers", "log2(n)", "one element per step: n steps")
def block_sum_linear_steps(out, a, size):
    cache = cuda.shared.array(SUM_TPB, float32)
    i = cuda.grid(1)
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    for k in range(1, SUM_TPB):
        if local_i == 0:
            cache[0] += cache[k]
        cuda.syncthreads()
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@wrong("prefix_sum", "step_work", "O(n²) scan", "each thread sums everything before it")
def prefix_sum_quadratic(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    total = float32(0.0)
    for k in range(i + 1):
        total += cache[k]
    if i < size:
        out[i] = total


@wrong("prefix_sum", "warp_ops", "O(n²) scan", "one shuffle per earlier element")
def prefix_sum_quadratic_shuffles(out, a, size):
    i = cuda.threadIdx.x
    v = a[i] if i < size else float32(0.0)
    total = float32(0.0)
    for k in range(SCAN_TPB):
        other = cuda.shfl_sync(0xFFFF, v, k)
        if k <= i:
            total += other
    if i < size:
        out[i] = total


@wrong("prefix_sum", "race", BARRIER_HINT, "no barrier between a step's reads and writes")
def prefix_sum_no_middle_barrier(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < SCAN_TPB:
        if i >= step:
            cache[i] += cache[i - step]
        cuda.syncthreads()
        step *= 2
    if i < size:
        out[i] = cache[i]


@wrong("prefix_sum", "uninitialised", UNSET_HINT, "slots past the end unwritten")
def prefix_sum_unset(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    if i < size:
        cache[i] = a[i]
    cuda.syncthreads()
    step = 1
    while step < SCAN_TPB:
        value = cache[i - step] if i >= step else 0.0
        cuda.syncthreads()
        cache[i] += value
        cuda.syncthreads()
        step *= 2
    if i < size:
        out[i] = cache[i]


@wrong("prefix_sum", "barriers", "log2(n)", "a chain: one element per step")
def prefix_sum_chain(out, a, size):
    cache = cuda.shared.array(SCAN_TPB, float32)
    i = cuda.threadIdx.x
    cache[i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    for k in range(1, SCAN_TPB):
        if i == k:
            cache[i] += cache[i - 1]
        cuda.syncthreads()
    if i < size:
        out[i] = cache[i]


@wrong("axis_sum", "step_work", "sequential sum", "thread 0 sums the row")
def axis_sum_one_thread(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    cache[local_i] = a[batch, local_i] if local_i < size else 0.0
    cuda.syncthreads()
    if local_i == 0:
        total = float32(0.0)
        for k in range(AXIS_TPB):
            total += cache[k]
        out[batch, 0] = total


@wrong("axis_sum", "race", BARRIER_HINT, "barrier inside the if: skipped by idle threads")
def axis_sum_no_barrier(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    cache[local_i] = a[batch, local_i] if local_i < size else 0.0
    cuda.syncthreads()
    step = AXIS_TPB // 2
    while step > 0:
        if local_i < step:
            cache[local_i] += cache[local_i + step]
        step //= 2
    if local_i == 0:
        out[batch, 0] = cache[0]


@wrong("axis_sum", "uninitialised", UNSET_HINT, "slots past the row's end unwritten")
def axis_sum_unset(out, a, size):
    cache = cuda.shared.array(AXIS_TPB, float32)
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.x
    if local_i < size:
        cache[local_i] = a[batch, local_i]
    cuda.syncthreads()
    step = AXIS_TPB // 2
    while step > 0:
        if local_i < step:
            cache[local_i] += cache[local_i + step]
        cuda.syncthreads()
        step //= 2
    if local_i == 0:
        out[batch, 0] = cache[0]


@wrong("warp_sum", "warp_mask", "", "lanes past the end skip the shuffles")
def warp_sum_divergent(out, a, size):
    i = cuda.grid(1)
    if i < size:
        v = a[i]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL, v, offset)
            offset //= 2
        if cuda.laneid == 0:
            out[i // 32] = v


@wrong("warp_sum", "global_reads", "one thread doing several", "lane 0 reads the warp's values")
def warp_sum_lane_zero(out, a, size):
    i = cuda.grid(1)
    if cuda.laneid == 0 and i < size:
        total = float32(0.0)
        for k in range(i, min(i + 32, size)):
            total += a[k]
        out[i // 32] = total


@wrong("warp_sum", "values", "", "offsets start at 8: half the warp")
def warp_sum_half(out, a, size):
    i = cuda.grid(1)
    v = a[i] if i < size else float32(0.0)
    offset = 8
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0 and i < size:
        out[i // 32] = v


@wrong("count_positive", "race", "cuda.atomic.add", "plain += on the counter")
def count_positive_racy(out, a, size):
    i = cuda.grid(1)
    if i < size and a[i] > 0:
        out[0] += 1


@wrong("histogram", "race", "cuda.atomic", "plain += on the bins")
def histogram_racy(out, a, size):
    i = cuda.grid(1)
    if i < size:
        out[a[i]] += 1


@wrong("transpose", "out_of_bounds", "check the index", "no guard")
def transpose_unguarded(out, a, rows, cols):
    x, y = cuda.grid(2)
    out[x, y] = a[y, x]


@wrong("transpose", "values", "", "copies instead of transposing (square sizes only)")
def transpose_copy(out, a, rows, cols):
    x, y = cuda.grid(2)
    if x < cols and y < rows and x < rows and y < cols:
        out[y, x] = a[y, x]


@wrong("matmul", "race", BARRIER_HINT, "no barrier before the next tile's loads")
def matmul_one_barrier(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    li, lj = cuda.threadIdx.y, cuda.threadIdx.x
    acc = float32(0.0)
    for k0 in range(0, size, MM_TPB):
        a_shared[li, lj] = a[i, k0 + lj] if i < size and k0 + lj < size else 0.0
        b_shared[li, lj] = b[k0 + li, j] if j < size and k0 + li < size else 0.0
        cuda.syncthreads()
        for k in range(MM_TPB):
            acc += a_shared[li, k] * b_shared[k, lj]
    if i < size and j < size:
        out[i, j] = acc


@wrong("matmul", "uninitialised", UNSET_HINT, "outside the matrix, nothing stored")
def matmul_unset(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    li, lj = cuda.threadIdx.y, cuda.threadIdx.x
    acc = float32(0.0)
    for k0 in range(0, size, MM_TPB):
        if i < size and k0 + lj < size:
            a_shared[li, lj] = a[i, k0 + lj]
        if j < size and k0 + li < size:
            b_shared[li, lj] = b[k0 + li, j]
        cuda.syncthreads()
        for k in range(MM_TPB):
            acc += a_shared[li, k] * b_shared[k, lj]
        cuda.syncthreads()
    if i < size and j < size:
        out[i, j] = acc


@wrong("matmul", "global_reads", "shared memory", "every product read from global memory")
def matmul_global(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), float32)
    i = cuda.blockIdx.y * MM_TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * MM_TPB + cuda.threadIdx.x
    a_shared[cuda.threadIdx.y, cuda.threadIdx.x] = 0.0
    if i < size and j < size:
        acc = float32(0.0)
        for k in range(size):
            acc += a[i, k] * b[k, j]
        out[i, j] = acc


# ---- tensor cores (the puzzles of notebook 11) ------------------------------------------------


@wrong("wmma_gemm", "values", "", "the k loop stops one tile early")
def wmma_gemm_short(out, a, b):
    r = cuda.blockIdx.y * 16
    c = cuda.blockIdx.x * 16
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0.0)
    for k in range(0, a.shape[1] - 16, 16):
        wmma.load_matrix_sync(fa, a[r:r + 16, k:k + 16])
        wmma.load_matrix_sync(fb, b[k:k + 16, c:c + 16])
        wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[r:r + 16, c:c + 16], acc, wmma.mem_row_major)


@wrong("ldmatrix_transpose", "values", "", "ldmatrix without .trans: a copy, not a transpose")
def ldmatrix_transpose_untransposed(out, a):
    lane = cuda.laneid
    block = cuda.blockIdx.x
    tile = cuda.shared.array((16, 16), np.float16)
    for j in range(8):
        tile[lane // 2, (lane % 2) * 8 + j] = a[16 * block + lane // 2, (lane % 2) * 8 + j]
    cuda.syncwarp()
    i = lane // 8
    v = cuda.ldmatrix(tile, (lane % 8 + 8 * (i % 2), 8 * (i // 2)), 4, False)
    g, q = lane // 4, lane % 4
    for m in range(4):
        row0, col0 = 8 * (m % 2), 8 * (m // 2)
        for j in range(2):
            out[col0 + g, 16 * block + row0 + 2 * q + j] = v[2 * m + j]


# ---- notebooks 12-16 ---------------------------------------------------------------------------


@wrong("chunk_saxpy", "method", "offset + count", "guarded by the array's end, not the chunk's")
def chunk_saxpy_whole_array_guard(out, x, y, a, offset, count):
    i = offset + cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@wrong("chunk_saxpy", "values", "", "offset forgotten")
def chunk_saxpy_no_offset(out, x, y, a, offset, count):
    i = cuda.grid(1)
    if i < count:
        out[i] = a * x[i] + y[i]


@wrong("chunk_stencil", "method", "i >= 1", "x[i - 1] at i = 0 wraps to the last element")
def chunk_stencil_wraps(out, x, offset, count):
    i = offset + cuda.grid(1)
    if i < offset + count:
        total = x[i - 1] + x[i]
        if i + 1 < x.size:
            total += x[i + 1]
        out[i] = total


@wrong("warp_uniform", "method", "warp 0 of the block gets the even elements",
       "one thread per element: every warp diverges")
def warp_uniform_divergent(out, a, size):
    e = cuda.grid(1)
    if e < size:
        v = a[e]
        if e % 2 == 0:
            out[e] = 2 * v + 1
        else:
            out[e] = v * v


@wrong("warp_count", "warp_mask", "", "lanes past the end skip the vote")
def warp_count_divergent(out, a, size):
    i = cuda.grid(1)
    if i < size:
        votes = cuda.ballot_sync(FULL, a[i] > 0)
        if cuda.laneid == 0:
            out[i // 32] = cuda.popc(votes)


@wrong("warp_count", "global_reads", "one thread doing several", "lane 0 reads the warp's 32")
def warp_count_lane_zero(out, a, size):
    i = cuda.grid(1)
    if cuda.laneid == 0 and i < size:
        count = 0
        for k in range(i, min(i + 32, size)):
            if a[k] > 0:
                count += 1
        out[i // 32] = count


@wrong("row_max", "step_work", "sequential reduction", "thread 0 combines the 8 alone")
def row_max_serial(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    cuda.syncthreads()
    if t == 0:
        best = cache[0]
        for j in range(1, ROW_TPB):
            best = max(best, cache[j])
        out[r, 0] = best


@wrong("row_max", "uninitialised", UNSET_HINT, "threads without elements store nothing")
def row_max_unset(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < n:
        m = a[r, t]
        for j in range(t + ROW_TPB, n, ROW_TPB):
            m = max(m, a[r, j])
        cache[t] = m
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[r, 0] = cache[0]


@wrong("row_max", "race", BARRIER_HINT, "no barrier after the stores")
def row_max_no_barrier(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[r, 0] = cache[0]


@wrong("flash_attention", "race", BARRIER_HINT, "the next tile's scores stored too early")
def flash_attention_no_second_barrier(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < dim:
        qs[t] = q[r, t]
    cuda.syncthreads()
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score /= math.sqrt(dim)
        s[t] = score
        cuda.syncthreads()
        tile_max = -math.inf
        for j in range(FLASH_TILE):
            tile_max = max(tile_max, s[j])
        m_new = max(m, tile_max)
        rescale = math.exp(m - m_new)
        total *= rescale
        acc *= rescale
        for j in range(FLASH_TILE):
            if j0 + j < seq:
                p = math.exp(s[j] - m_new)
                total += p
                if t < dim:
                    acc += p * v[j0 + j, t]
        m = m_new
    if t < dim:
        out[r, t] = acc / total


@wrong("softmax", "race", BARRIER_HINT, "cache reused for the sum before every thread read m")
def softmax_reuse_race(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    m = -math.inf
    for j in range(t, n, ROW_TPB):
        m = max(m, a[r, j])
    cache[t] = m
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    m = cache[0]
    total = float32(0.0)
    for j in range(t, n, ROW_TPB):
        total += math.exp(a[r, j] - m)
    cache[t] = total
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    total = cache[0]
    for j in range(t, n, ROW_TPB):
        out[r, j] = math.exp(a[r, j] - m) / total


@wrong("softmax", "global_reads", "shared memory", "every thread reads the whole row")
def softmax_whole_row(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    cache[t] = 0.0
    m = -math.inf
    for j in range(n):
        m = max(m, a[r, j])
    total = float32(0.0)
    for j in range(n):
        total += math.exp(a[r, j] - m)
    for j in range(t, n, ROW_TPB):
        out[r, j] = math.exp(a[r, j] - m) / total


@wrong("attention_row", "race", BARRIER_HINT, "no barrier after the scores are stored")
def attention_no_barrier(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = -math.inf
    if t < seq:
        s = float32(0.0)
        for d in range(dim):
            s += q[r, d] * k[t, d]
        s /= math.sqrt(dim)
    scores[t] = s
    if t < dim:
        m = -math.inf
        for j in range(seq):
            m = max(m, scores[j])
        total = float32(0.0)
        acc = float32(0.0)
        for j in range(seq):
            p = math.exp(scores[j] - m)
            total += p
            acc += p * v[j, t]
        out[r, t] = acc / total


@wrong("attention_row", "barriers", "one per step of the tree", "no trees: every thread scans")
def attention_no_trees(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = -math.inf
    if t < seq:
        s = float32(0.0)
        for d in range(dim):
            s += q[r, d] * k[t, d]
        s /= math.sqrt(dim)
    scores[t] = s
    cuda.syncthreads()
    if t < dim:
        m = -math.inf
        for j in range(seq):
            m = max(m, scores[j])
        total = float32(0.0)
        acc = float32(0.0)
        for j in range(seq):
            p = math.exp(scores[j] - m)
            total += p
            acc += p * v[j, t]
        out[r, t] = acc / total


@wrong("flash_attention", "method", "one shared array of TILE scores",
       "all the scores in shared memory")
def flash_attention_whole_row(out, q, k, v, seq, dim):
    s = cuda.shared.array(40, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    for j in range(t, seq, 8):
        score = float32(0.0)
        for d in range(dim):
            score += q[r, d] * k[j, d]
        s[j] = score / math.sqrt(dim)
    cuda.syncthreads()
    if t < dim:
        m = -math.inf
        for j in range(seq):
            m = max(m, s[j])
        total = float32(0.0)
        acc = float32(0.0)
        for j in range(seq):
            p = math.exp(s[j] - m)
            total += p
            acc += p * v[j, t]
        out[r, t] = acc / total


@wrong("flash_attention", "values", "", "running sums not rescaled when the maximum grows")
def flash_attention_no_rescale(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < dim:
        qs[t] = q[r, t]
    cuda.syncthreads()
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score /= math.sqrt(dim)
        s[t] = score
        cuda.syncthreads()
        for j in range(FLASH_TILE):
            m = max(m, s[j])
        for j in range(FLASH_TILE):
            if j0 + j < seq:
                p = math.exp(s[j] - m)
                total += p
                if t < dim:
                    acc += p * v[j0 + j, t]
        cuda.syncthreads()
    if t < dim:
        out[r, t] = acc / total


@wrong("softmax", "uninitialised", UNSET_HINT, "threads without elements store nothing")
def softmax_unset(out, a, n):
    cache = cuda.shared.array(ROW_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < n:
        m = a[r, t]
        for j in range(t + ROW_TPB, n, ROW_TPB):
            m = max(m, a[r, j])
        cache[t] = m
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    m = cache[0]
    cuda.syncthreads()
    total = float32(0.0)
    for j in range(t, n, ROW_TPB):
        total += math.exp(a[r, j] - m)
    cache[t] = total
    cuda.syncthreads()
    step = ROW_TPB // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    total = cache[0]
    for j in range(t, n, ROW_TPB):
        out[r, j] = math.exp(a[r, j] - m) / total


@wrong("attention_row", "uninitialised", UNSET_HINT, "no -inf score past seq")
def attention_unset(out, q, k, v, seq, dim):
    scores = cuda.shared.array(ATT_TPB, float32)
    cache = cuda.shared.array(ATT_TPB, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t < seq:
        s = float32(0.0)
        for d in range(dim):
            s += q[r, d] * k[t, d]
        s /= math.sqrt(dim)
        scores[t] = s
        cache[t] = s
    cuda.syncthreads()
    step = ATT_TPB // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    m = cache[0]
    cuda.syncthreads()
    p = math.exp(scores[t] - m)
    scores[t] = p
    cache[t] = p
    cuda.syncthreads()
    step = ATT_TPB // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    if t < dim:
        acc = float32(0.0)
        for j in range(seq):
            acc += scores[j] * v[j, t]
        out[r, t] = acc / cache[0]


@wrong("flash_attention", "uninitialised", UNSET_HINT, "q staged only by thread 0, for d = 0")
def flash_attention_unset(out, q, k, v, seq, dim):
    qs = cuda.shared.array(FLASH_TILE, float32)
    s = cuda.shared.array(FLASH_TILE, float32)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    if t == 0:
        qs[0] = q[r, 0]
    cuda.syncthreads()
    m = -math.inf
    total = float32(0.0)
    acc = float32(0.0)
    for j0 in range(0, seq, FLASH_TILE):
        score = -math.inf
        if j0 + t < seq:
            score = float32(0.0)
            for d in range(dim):
                score += qs[d] * k[j0 + t, d]
            score /= math.sqrt(dim)
        s[t] = score
        cuda.syncthreads()
        tile_max = -math.inf
        for j in range(FLASH_TILE):
            tile_max = max(tile_max, s[j])
        m_new = max(m, tile_max)
        rescale = math.exp(m - m_new)
        total *= rescale
        acc *= rescale
        for j in range(FLASH_TILE):
            if j0 + j < seq:
                p = math.exp(s[j] - m_new)
                total += p
                if t < dim:
                    acc += p * v[j0 + j, t]
        m = m_new
        cuda.syncthreads()
    if t < dim:
        out[r, t] = acc / total


@wrong("conv2d_direct", "out_of_bounds", "check the index", "window not clipped at the edges")
def conv2d_unclipped(out, a, w, rows, cols):
    c, r = cuda.grid(2)
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += a[r + i - 1, c + j - 1] * w[i, j]
        out[r, c] = acc


@wrong("conv2d_tiled", "uninitialised", UNSET_HINT, "the tile without its halo")
def conv2d_no_halo(out, a, w, rows, cols):
    tile = cuda.shared.array((10, 10), float32)
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r, c = cuda.blockIdx.y * 8 + ty, cuda.blockIdx.x * 8 + tx
    tile[ty + 1, tx + 1] = a[r, c] if r < rows and c < cols else 0.0
    t = ty * 8 + tx
    if t < 9:
        weights[t // 3, t % 3] = w[t // 3, t % 3]
    cuda.syncthreads()
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += tile[ty + i, tx + j] * weights[i, j]
        out[r, c] = acc


@wrong("conv2d_tiled", "global_reads", "shared memory", "the window read from global memory")
def conv2d_tiled_global(out, a, w, rows, cols):
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    t = ty * 8 + tx
    if t < 9:
        weights[t // 3, t % 3] = w[t // 3, t % 3]
    cuda.syncthreads()
    r, c = cuda.blockIdx.y * 8 + ty, cuda.blockIdx.x * 8 + tx
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                rr, cc = r + i - 1, c + j - 1
                if 0 <= rr < rows and 0 <= cc < cols:
                    acc += a[rr, cc] * weights[i, j]
        out[r, c] = acc


@wrong("conv2d_tiled", "race", BARRIER_HINT, "no barrier after the tile is loaded")
def conv2d_tiled_no_barrier(out, a, w, rows, cols):
    tile = cuda.shared.array((10, 10), float32)
    weights = cuda.shared.array((3, 3), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r0 = cuda.blockIdx.y * 8 - 1
    c0 = cuda.blockIdx.x * 8 - 1
    t = ty * 8 + tx
    for e in range(t, 100, 64):
        rr, cc = r0 + e // 10, c0 + e % 10
        tile[e // 10, e % 10] = a[rr, cc] if 0 <= rr < rows and 0 <= cc < cols else 0.0
    if t < 9:
        weights[t // 3, t % 3] = w[t // 3, t % 3]
    r, c = r0 + 1 + ty, c0 + 1 + tx
    if r < rows and c < cols:
        acc = float32(0.0)
        for i in range(3):
            for j in range(3):
                acc += tile[ty + i, tx + j] * weights[i, j]
        out[r, c] = acc


# ---- exercises: mistakes beyond each starter's own ---------------------------------------------


@wrong("ex07_private_histogram", "uninitialised", "still store their slot",
       "private bins never zeroed")
def private_histogram_unzeroed(out, a):
    local = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(local, a[i], 1)
    cuda.syncthreads()
    if t < 8:
        cuda.atomic.add(out, t, local[t])


@wrong("ex07_private_histogram", "race", "cuda.syncthreads()", "no barrier before the merge")
def private_histogram_no_barrier(out, a):
    local = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if t < 8:
        local[t] = 0
    cuda.syncthreads()
    if i < a.size:
        cuda.atomic.add(local, a[i], 1)
    if t < 8:
        cuda.atomic.add(out, t, local[t])


@wrong("ex04_shuffle_all_lanes", "values", "", "offsets from 8: half a warp")
def shuffle_half_warp(out, a):
    i = cuda.grid(1)
    v = a[i] if i < a.size else float32(0.0)
    offset = 8
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0 and i < a.size:
        out[i // 32] = v


@wrong("ex06_bank_conflicts", "coalescing", "threadIdx.x", "padded, but the write goes down "
       "a column again")
def transpose_padded_strided(out, a):
    tile = cuda.shared.array((32, 33), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    out[x, y] = tile[ty, tx]


@wrong("ex09_coarsen", "race", "cuda.syncthreads()", "coarsened, second barrier dropped")
def coarsen_one_barrier(C, A, B):
    sA = cuda.shared.array((8, 8), float32)
    sB = cuda.shared.array((8, 16), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * 8 + ty
    col = cuda.blockIdx.x * 16 + tx
    acc0 = float32(0.0)
    acc1 = float32(0.0)
    for k0 in range(0, A.shape[1], 8):
        sA[ty, tx] = A[row, k0 + tx]
        sB[ty, tx] = B[k0 + ty, col]
        sB[ty, tx + 8] = B[k0 + ty, col + 8]
        cuda.syncthreads()
        for k in range(8):
            v = sA[ty, k]
            acc0 += v * sB[k, tx]
            acc1 += v * sB[k, tx + 8]
    C[row, col] = acc0
    C[row, col + 8] = acc1


HARD_CODED = [*solutions.SOLUTIONS, *exercise_solutions.SOLUTIONS]
