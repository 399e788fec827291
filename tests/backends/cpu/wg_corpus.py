"""Barrier kernels run by test_workgroup.py in both CPU modes (work-group loops and coroutines).

Plain Python functions: each test compiles them twice, `cuda.jit(cpu_mode=...)`, through
`both` (which the other work-group test modules use for their own kernels too).
"""

from gpunb import cuda, float32, int32

_compiled: dict = {}


def both(fn):
    """(default-mode kernel, coroutine kernel) for a kernel function, compiled once."""
    if fn not in _compiled:
        _compiled[fn] = (cuda.jit(fn), cuda.jit(cpu_mode="coroutine")(fn))
    return _compiled[fn]

TPB = 64
TILE = 8


def block_reduce(out, x):
    buf = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if tid < step:
            buf[tid] += buf[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = buf[0]


def tiled_matmul(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = float32(0.0)
    for k in range(cuda.gridDim.x):
        sa[ty, tx] = 0
        sb[ty, tx] = 0
        if y < a.shape[0] and tx + k * TILE < a.shape[1]:
            sa[ty, tx] = a[y, tx + k * TILE]
        if x < b.shape[1] and ty + k * TILE < b.shape[0]:
            sb[ty, tx] = b[ty + k * TILE, x]
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = acc


def inclusive_scan(out, x):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < x.size else 0
    cuda.syncthreads()
    offset = 1
    while offset < cuda.blockDim.x:
        t = s[tid - offset] if tid >= offset else 0  # lives across the next barrier
        cuda.syncthreads()
        s[tid] += t
        cuda.syncthreads()
        offset *= 2
    if i < x.size:
        out[i] = s[tid]


def uniform_for_rounds(out, x, rounds):
    s = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    v = x[cuda.grid(1)]
    for r in range(1, rounds + 1):
        s[tid] = v
        cuda.syncthreads()
        v = v + s[(tid + r) % cuda.blockDim.x] * float32(0.5)
        cuda.syncthreads()
    out[cuda.grid(1)] = v


def uniform_while_arg(out, x, limit):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    acc = 0
    n = 0
    while n < limit:
        s[tid] = x[cuda.grid(1)] + n
        cuda.syncthreads()
        acc += s[cuda.blockDim.x - 1 - tid]
        cuda.syncthreads()
        n += 1
    out[cuda.grid(1)] = acc


def uniform_if_barrier(out, x):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i]
    if cuda.blockIdx.x % 2 == 0:
        cuda.syncthreads()
        out[i] = s[(tid + 1) % TPB]
    else:
        cuda.syncthreads()
        out[i] = -s[(tid + 2) % TPB]


def early_return(out, x):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.size:
        return  # threads that leave early count as arrived at the barrier
    s[tid] = x[i]
    cuda.syncthreads()
    out[i] = s[0] + tid


def sync_predicates(out, x):
    i = cuda.grid(1)
    v = x[i]
    c = cuda.syncthreads_count(v > 0)
    a = cuda.syncthreads_and(v > 0)
    o = cuda.syncthreads_or(v > 5)
    three = cuda.syncthreads_or(v == 3)
    if three != 0:
        c += 1000
    if cuda.threadIdx.x == 0:
        b = cuda.blockIdx.x
        out[b, 0] = c
        out[b, 1] = a
        out[b, 2] = o


def shared_2d_transpose(out, x):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x * TILE
    by = cuda.blockIdx.y * TILE
    if by + ty < x.shape[0] and bx + tx < x.shape[1]:
        tile[ty, tx] = x[by + ty, bx + tx]
    cuda.syncthreads()
    if bx + ty < out.shape[0] and by + tx < out.shape[1]:
        out[bx + ty, by + tx] = tile[tx, ty]


def local_across_barrier(out, x):
    mine = cuda.local.array(4, int32)
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    for k in range(4):
        mine[k] = x[i] * (k + 1)
    s[tid] = mine[3]
    cuda.syncthreads()
    out[i] = mine[0] + mine[1] + mine[2] + s[TPB - 1 - tid]


def warp_shuffle_sum(out, x):
    i = cuda.grid(1)
    v = x[i]
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


def memory_condition(out, x):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    s[tid] = x[cuda.grid(1)]
    if x[0] > 0:  # the same in every thread here, but memory: not provably uniform
        cuda.syncthreads()
    out[cuda.grid(1)] = s[TPB - 1 - tid]


def block_3d(out):
    s = cuda.shared.array(64, int32)
    lin = cuda.threadIdx.x + 4 * (cuda.threadIdx.y + 4 * cuda.threadIdx.z)
    s[lin] = lin * 3 + cuda.blockIdx.x
    cuda.syncthreads()
    out[cuda.blockIdx.x, lin] = s[63 - lin]


def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]
