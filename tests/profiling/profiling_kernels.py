"""Kernels the profiling tests launch (a file, so their source and lines are stable)."""

from gpunb import cuda, float32

TPB = 16


@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def add_in_place(x, unused):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


@cuda.jit
def matmul(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = float32(0.0)
    for i in range(cuda.gridDim.x):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


@cuda.jit(boundscheck=False)
def read_past_end(out, x):
    i = cuda.grid(1)
    out[i] = x[i + 4096]


@cuda.jit
def shared_race(out):
    s = cuda.shared.array(64, dtype=float32)
    t = cuda.threadIdx.x
    s[t] = t
    out[t] = s[(t + 1) % 64]


@cuda.jit
def scale_when(out, x, flag, recs):
    i = cuda.grid(1)
    if flag and i < x.size:
        out[i] = x[i] * 3 + recs[i].n
