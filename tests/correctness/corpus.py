"""A corpus of buggy kernels and their fixed versions, as data any checker can run.

Each Case holds kernel source text (one `def kernel(...)`), a launch (grid, block, arguments as
plain specs), the kind of report the bug must give and, in the source, `# BUG` on each line the
report must name. `fixed` is the same kernel with the bug removed: it must give no report. The
CPU target's checks run these in tests/correctness/test_corpus.py. On a GPU,
tests/correctness/test_corpus_gpu.py runs each under the compute-sanitizer tool its kind maps to
(SANITIZER_TOOLS: race -> racecheck, oob -> memcheck, warp and barrier -> synccheck, init ->
initcheck); a case whose bug that tool cannot see on the GPU says why in `no_gpu` (one of the
reasons below, each checked against what NVIDIA documents or what ptxas makes of the kernel).

Argument specs: ("zeros", shape, dtype), ("arange", n, dtype), ("scalar", value).
Kinds: "race" (gpunb.RaceError), "oob" (KernelIndexError), "warp" (WarpMaskError),
"barrier" (LaunchError: divergent barriers), "value" (ValueError raised in the kernel),
"init" (InitcheckError: a shared element read before any thread wrote it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    source: str
    fixed: str
    grid: int | tuple
    block: int | tuple
    args: tuple
    no_gpu: str = ""  # why compute-sanitizer cannot report this bug on a GPU ("" : it can)

    def bug_lines(self) -> set:
        return {k + 1 for k, line in enumerate(self.source.splitlines()) if "# BUG" in line}

    @property
    def sanitizer(self) -> str | None:
        """The compute-sanitizer tool that checks this case's kind (None: no tool does)."""
        return SANITIZER_TOOLS[self.kind]


# which compute-sanitizer tool checks each kind of bug
SANITIZER_TOOLS = {"race": "racecheck", "oob": "memcheck", "warp": "synccheck",
                   "barrier": "synccheck", "init": "initcheck", "value": None}

# Why a case's bug has no GPU-detectable equivalent: NVIDIA's Compute Sanitizer guide for the
# tools' scopes, the PTX and SASS (ptxas -arch=sm_90, nvdisasm) for what the kernel became.
GLOBAL_RACE = ("racecheck checks shared memory only; a race on global memory is not reported "
               "(the CPU target's racecheck finds it)")
LOCAL_IN_REGISTERS = ("the 4-element local array lives in registers and the store past its end "
                      "is dropped by the optimiser (no st.local in the PTX): there is no memory "
                      "access for memcheck to check")
TUPLE_IN_STACK = ("the tuple is a 24-byte local-memory array; index 5 reads inside the "
                  "thread's stack frame, which memcheck does not flag")
MASK_LANES_MISSING = ("synccheck does not detect lanes named in the mask that never reach the "
                      "collective (NVIDIA's guide says so for __syncwarp; ptxas emits the vote "
                      "or WARPSYNC.ALL with no mask check)")
SHFL_NO_WARPSYNC = ("ptxas compiles a shuffle with a constant mask to a plain SHFL with no "
                    "WARPSYNC, so synccheck has no barrier to check the mask of")
RACE_AFTER_LAST_BARRIER = ("measured on an H100 (2026-11-24): compute-sanitizer 2025.3's "
                           "racecheck reported no hazard, though the SASS has thread 63's STS and "
                           "thread 0's LDS of s[0] after the last BAR.SYNC with no barrier "
                           "between; it appears not to check accesses after a block's last "
                           "barrier (the CPU target's racecheck finds it)")
PYTHON_EXCEPTION = ("a Python exception raised in the kernel is no memory or synchronisation "
                    "error: no compute-sanitizer tool reports it (on a GPU, "
                    "@cuda.jit(debug=True) raises it)")


def make_args(specs: tuple) -> list:
    out = []
    for spec in specs:
        if spec[0] == "zeros":
            out.append(np.zeros(spec[1], spec[2]))
        elif spec[0] == "arange":
            out.append(np.arange(spec[1], dtype=spec[2]))
        else:
            out.append(spec[1])
    return out


F32_64 = ("zeros", 64, "float32")
I32_64 = ("zeros", 64, "int32")
X64 = ("arange", 64, "float32")

CASES = [
    # ---- shared-memory races --------------------------------------------------------------
    Case("shared_neighbour_read_no_barrier", "race", """
def kernel(out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = t  # BUG
    out[t] = s[(t + 1) % 64]  # BUG
""", """
def kernel(out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    out[t] = s[(t + 1) % 64]
""", 1, 64, (F32_64,)),
    Case("shared_write_write", "race", """
def kernel(out):
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    s[0] = t  # BUG
    cuda.syncthreads()
    out[t] = s[0]
""", """
def kernel(out):
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = 7
    cuda.syncthreads()
    out[t] = s[0]
""", 1, 64, (I32_64,)),
    Case("tree_reduction_missing_barrier", "race", """
def kernel(out, x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            s[t] += s[t + step]  # BUG
        step //= 2
    if t == 0:
        out[0] = s[0]
""", """
def kernel(out, x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[0] = s[0]
""", 1, 64, (F32_64, X64)),
    Case("shift_in_place_war", "race", """
def kernel(out):
    s = cuda.shared.array(65, float32)
    t = cuda.threadIdx.x
    s[t] = t
    if t == 0:
        s[64] = 0
    cuda.syncthreads()
    v = s[t + 1]  # BUG
    s[t] = v  # BUG
    cuda.syncthreads()
    out[t] = s[t]
""", """
def kernel(out):
    s = cuda.shared.array(65, float32)
    t = cuda.threadIdx.x
    s[t] = t
    if t == 0:
        s[64] = 0
    cuda.syncthreads()
    v = s[t + 1]
    cuda.syncthreads()
    s[t] = v
    cuda.syncthreads()
    out[t] = s[t]
""", 1, 64, (F32_64,)),
    Case("broadcast_before_barrier", "race", """
def kernel(out, x):
    s = cuda.shared.array(1, float32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = x[0] + 1  # BUG
    out[t] = s[0]  # BUG
""", """
def kernel(out, x):
    s = cuda.shared.array(1, float32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = x[0] + 1
    cuda.syncthreads()
    out[t] = s[0]
""", 1, 64, (F32_64, X64)),
    Case("tile_loop_missing_second_barrier", "race", """
def kernel(out, x):
    tile = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    acc = 0.0
    for k in range(2):
        tile[t] = x[k * 32 + t]  # BUG
        cuda.syncthreads()
        acc += tile[31 - t]  # BUG
    out[t] = acc
""", """
def kernel(out, x):
    tile = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    acc = 0.0
    for k in range(2):
        tile[t] = x[k * 32 + t]
        cuda.syncthreads()
        acc += tile[31 - t]
        cuda.syncthreads()
    out[t] = acc
""", 1, 32, (F32_64, X64)),
    Case("syncwarp_does_not_order_warps", "race", """
def kernel(out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = t  # BUG
    cuda.syncwarp()
    out[t] = s[63 - t]  # BUG
""", """
def kernel(out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    out[t] = s[63 - t]
""", 1, 64, (F32_64,)),
    Case("warp_reduction_without_syncwarp", "race", """
def kernel(out, x):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t < 16:
        s[t] += s[t + 16]  # BUG
        s[t] += s[t + 8]  # BUG
    if t == 0:
        out[0] = s[0]
""", """
def kernel(out, x):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t < 16:
        v = s[t] + s[t + 16]
        cuda.syncwarp(0xFFFF)
        s[t] = v
        cuda.syncwarp(0xFFFF)
        if t < 8:
            v = s[t] + s[t + 8]
        cuda.syncwarp(0xFFFF)
        if t < 8:
            s[t] = v
    cuda.syncthreads()
    if t == 0:
        out[0] = s[0]
""", 1, 32, (F32_64, X64)),
    Case("final_read_without_barrier", "race", """
def kernel(out, x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t == 63:
        s[0] = s[0] + s[63]  # BUG
    if t == 0:
        out[0] = s[0]  # BUG
""", """
def kernel(out, x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t == 63:
        s[0] = s[0] + s[63]
    cuda.syncthreads()
    if t == 0:
        out[0] = s[0]
""", 1, 64, (F32_64, X64), no_gpu=RACE_AFTER_LAST_BARRIER),
    # ---- global-memory races --------------------------------------------------------------
    Case("histogram_not_atomic", "race", """
def kernel(hist, x):
    i = cuda.grid(1)
    if i < x.size:
        hist[int(x[i]) % 4] += 1  # BUG
""", """
def kernel(hist, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(hist, int(x[i]) % 4, 1)
""", 2, 32, (("zeros", 4, "int32"), X64),
         no_gpu=GLOBAL_RACE),
    Case("blocks_write_one_element", "race", """
def kernel(out):
    out[0] = cuda.blockIdx.x  # BUG
""", """
def kernel(out):
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = cuda.blockIdx.x
""", 4, 1, (I32_64,),
         no_gpu=GLOBAL_RACE),
    Case("counter_plain_increment", "race", """
def kernel(count):
    count[0] = count[0] + 1  # BUG
""", """
def kernel(count):
    cuda.atomic.add(count, 0, 1)
""", 2, 32, (("zeros", 1, "int32"),),
         no_gpu=GLOBAL_RACE),
    Case("atomic_and_plain_store_mix", "race", """
def kernel(out):
    t = cuda.threadIdx.x
    if t == 0:
        out[0] = 100  # BUG
    else:
        cuda.atomic.add(out, 0, 1)  # BUG
""", """
def kernel(out):
    t = cuda.threadIdx.x
    if t == 0:
        cuda.atomic.add(out, 0, 100)
    else:
        cuda.atomic.add(out, 0, 1)
""", 1, 32, (("zeros", 1, "int32"),),
         no_gpu=GLOBAL_RACE),
    Case("in_place_stencil", "race", """
def kernel(out, x):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        x[i] = (x[i - 1] + x[i + 1]) / 2  # BUG
""", """
def kernel(out, x):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = (x[i - 1] + x[i + 1]) / 2
""", 2, 32, (F32_64, X64),
         no_gpu=GLOBAL_RACE),
    Case("cross_block_neighbour_read", "race", """
def kernel(out):
    i = cuda.grid(1)
    out[i] = i  # BUG
    if i + 1 < out.size:
        out[i] += out[i + 1] * 0  # BUG
""", """
def kernel(out):
    i = cuda.grid(1)
    out[i] = i
""", 2, 32, (F32_64,),
         no_gpu=GLOBAL_RACE),
    # ---- out-of-bounds ----------------------------------------------------------------------
    Case("read_far_out_of_bounds", "oob", """
def kernel(out, x):
    i = cuda.grid(1)
    out[i] = x[i + 500000000]  # BUG
""", """
def kernel(out, x):
    i = cuda.grid(1)
    if i + 500000000 < x.size:
        out[i] = x[i + 500000000]
""", 2, 32, (F32_64, X64)),
    Case("write_off_by_one", "oob", """
def kernel(out):
    i = cuda.grid(1)
    out[i + 1] = i  # BUG
""", """
def kernel(out):
    i = cuda.grid(1)
    if i + 1 < out.size:
        out[i + 1] = i
""", 2, 32, (F32_64,)),
    Case("negative_index_past_start", "oob", """
def kernel(out, x):
    i = cuda.grid(1)
    out[i] = x[i - 100]  # BUG
""", """
def kernel(out, x):
    i = cuda.grid(1)
    out[i] = x[i - 1]
""", 2, 32, (F32_64, X64)),
    Case("guard_less_equal", "oob", """
def kernel(out, n):
    i = cuda.grid(1)
    if i <= n:
        out[i] = 1  # BUG
""", """
def kernel(out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = 1
""", 3, 32, (F32_64, ("scalar", 64))),
    Case("column_out_of_bounds_2d", "oob", """
def kernel(a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j + 1] = 1  # BUG
""", """
def kernel(a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j + 1 < a.shape[1]:
        a[i, j + 1] = 1
""", 1, (8, 8), (("zeros", (8, 8), "float32"),)),
    Case("shared_array_overrun", "oob", """
def kernel(out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t + 1] = t  # BUG
    cuda.syncthreads()
    out[t] = s[t]
""", """
def kernel(out):
    s = cuda.shared.array(33, float32)
    t = cuda.threadIdx.x
    s[t + 1] = t
    if t == 0:
        s[0] = 0
    cuda.syncthreads()
    out[t] = s[t]
""", 1, 32, (F32_64,)),
    Case("local_array_overrun", "oob", """
def kernel(out):
    t = cuda.threadIdx.x
    tmp = cuda.local.array(4, float32)
    for k in range(5):
        tmp[k] = k  # BUG
    out[t] = tmp[0]
""", """
def kernel(out):
    t = cuda.threadIdx.x
    tmp = cuda.local.array(4, float32)
    for k in range(4):
        tmp[k] = k
    out[t] = tmp[0]
""", 1, 32, (F32_64,),
         no_gpu=LOCAL_IN_REGISTERS),
    Case("atomic_out_of_bounds", "oob", """
def kernel(hist, x):
    i = cuda.grid(1)
    cuda.atomic.add(hist, int(x[i]), 1)  # BUG
""", """
def kernel(hist, x):
    i = cuda.grid(1)
    cuda.atomic.add(hist, int(x[i]) % 4, 1)
""", 2, 32, (("zeros", 4, "int32"), X64)),
    Case("tuple_index_out_of_range", "oob", """
def kernel(out, j):
    weights = (1.0, 2.0, 3.0)
    out[0] = weights[j]  # BUG
""", """
def kernel(out, j):
    weights = (1.0, 2.0, 3.0)
    out[0] = weights[j % 3]
""", 1, 1, (F32_64, ("scalar", 5)),
         no_gpu=TUPLE_IN_STACK),
    Case("grid_stride_one_too_far", "oob", """
def kernel(out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for k in range(start, out.size + 1, stride):
        out[k] = k  # BUG
""", """
def kernel(out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for k in range(start, out.size, stride):
        out[k] = k
""", 1, 16, (F32_64,)),
    # ---- warp collectives -------------------------------------------------------------------
    Case("ballot_full_mask_in_half_warp", "warp", """
def kernel(out):
    lane = cuda.laneid
    if lane < 16:
        out[lane] = cuda.ballot_sync(0xFFFFFFFF, True)  # BUG
""", """
def kernel(out):
    lane = cuda.laneid
    if lane < 16:
        out[lane] = cuda.ballot_sync(0x0000FFFF, True)
""", 1, 32, (I32_64,),
         no_gpu=MASK_LANES_MISSING),
    Case("shfl_mask_without_caller", "warp", """
def kernel(out):
    lane = cuda.laneid
    out[lane] = cuda.shfl_sync(0x0000FFFF, lane, 0)  # BUG
""", """
def kernel(out):
    lane = cuda.laneid
    out[lane] = cuda.shfl_sync(0xFFFFFFFF, lane, 0)
""", 1, 32, (I32_64,),
         no_gpu=SHFL_NO_WARPSYNC),
    Case("shfl_down_in_branch_then_barrier", "warp", """
def kernel(out):
    lane = cuda.laneid
    v = lane
    if lane < 16:
        v = cuda.shfl_down_sync(0xFFFFFFFF, lane, 1)  # BUG
    cuda.syncthreads()
    out[lane] = v
""", """
def kernel(out):
    lane = cuda.laneid
    v = cuda.shfl_down_sync(0xFFFFFFFF, lane, 1)
    cuda.syncthreads()
    out[lane] = v
""", 1, 32, (I32_64,),
         no_gpu=MASK_LANES_MISSING),
    Case("syncwarp_full_mask_in_branch", "warp", """
def kernel(out):
    lane = cuda.laneid
    if lane < 8:
        out[lane] = 1
        cuda.syncwarp(0xFFFFFFFF)  # BUG
    cuda.syncthreads()
""", """
def kernel(out):
    lane = cuda.laneid
    if lane < 8:
        out[lane] = 1
        cuda.syncwarp(0x000000FF)
    cuda.syncthreads()
""", 1, 32, (I32_64,),
         no_gpu=MASK_LANES_MISSING),
    # ---- barriers -----------------------------------------------------------------------------
    Case("barrier_in_divergent_branch", "barrier", """
def kernel(out):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()  # BUG
    out[t] = t
    cuda.syncthreads()  # BUG
""", """
def kernel(out):
    t = cuda.threadIdx.x
    cuda.syncthreads()
    out[t] = t
    cuda.syncthreads()
""", 1, 64, (F32_64,)),
    Case("barriers_in_both_branches", "barrier", """
def kernel(out):
    t = cuda.threadIdx.x
    if t % 2 == 0:
        out[t] = 1
        cuda.syncthreads()  # BUG
    else:
        out[t] = 2
        cuda.syncthreads()  # BUG
""", """
def kernel(out):
    t = cuda.threadIdx.x
    if t % 2 == 0:
        out[t] = 1
    else:
        out[t] = 2
    cuda.syncthreads()
""", 1, 64, (F32_64,)),
    # ---- uninitialised shared memory ----------------------------------------------------------
    Case("shared_read_before_any_write", "init", """
def kernel(out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t < 32:
        s[t] = t
    cuda.syncthreads()
    out[t] = s[t]  # BUG
""", """
def kernel(out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = 0
    if t < 32:
        s[t] = t
    cuda.syncthreads()
    out[t] = s[t]
""", 1, 64, (F32_64,)),
    Case("shared_accumulate_without_zeroing", "init", """
def kernel(out, x):
    s = cuda.shared.array(4, int32)
    t = cuda.threadIdx.x
    cuda.atomic.add(s, t % 4, 1)  # BUG
    cuda.syncthreads()
    if t < 4:
        out[t] = s[t]
""", """
def kernel(out, x):
    s = cuda.shared.array(4, int32)
    t = cuda.threadIdx.x
    if t < 4:
        s[t] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, t % 4, 1)
    cuda.syncthreads()
    if t < 4:
        out[t] = s[t]
""", 1, 64, (I32_64, X64)),
    # ---- run-time values --------------------------------------------------------------------
    Case("range_step_zero", "value", """
def kernel(out, step):
    acc = 0
    for k in range(0, 10, step):  # BUG
        acc += k
    out[0] = acc
""", """
def kernel(out, step):
    acc = 0
    for k in range(0, 10, max(step, 1)):
        acc += k
    out[0] = acc
""", 1, 1, (I32_64, ("scalar", 0)),
         no_gpu=PYTHON_EXCEPTION),
]
