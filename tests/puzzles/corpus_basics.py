"""Wrong submissions for puzzles 1-10 (one thread, one element): see wrong_submissions.py."""

from __future__ import annotations

from wrong_submissions import HARD_CODED_HINT, Case, collector

from gpunb import cuda, float32

CASES: list[Case] = []
wrong = collector(CASES)


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
