"""Memory spaces: static and dynamic shared arrays (one copy per block), local arrays (one per
thread, surviving barriers), cuda.const.array_like; their PTX address spaces."""

import numpy as np
import pytest

from gpunb import CompileError, cuda, float32, int32

CONST_TABLE = np.arange(16, dtype=np.float64).reshape(4, 4) ** 2
TPB = 64


# ---- kernels --------------------------------------------------------------------------------


@cuda.jit
def shared_per_block(out):
    # every block fills its own shared copy: blocks run concurrently and must not share it
    s = cuda.shared.array(TPB, int32)
    t = cuda.shared.array((4, 16), float32)  # a second static array, 2-d, not aliasing s
    tid = cuda.threadIdx.x
    s[tid] = cuda.blockIdx.x * 1000 + tid
    t[tid // 16, tid % 16] = 0.5
    cuda.syncthreads()
    total = 0
    for k in range(TPB):
        total += s[k]
    acc = 0.0
    for r in range(4):
        for c in range(16):
            acc += t[r, c]
    out[cuda.blockIdx.x, tid] = total + acc


@cuda.jit
def shared_reverse(out, x):
    s = cuda.shared.array(shape=TPB, dtype=np.float64)  # keyword shape/dtype, numpy dtype
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i]
    cuda.syncthreads()
    out[i] = s[TPB - 1 - tid]


@cuda.jit
def dynamic_shared(out, x):
    s = cuda.shared.array(0, float32)
    alias = cuda.shared.array(0, float32)  # numba: dynamic arrays alias one allocation
    tid = cuda.threadIdx.x
    n = cuda.blockDim.x
    s[tid] = x[cuda.grid(1)]
    cuda.syncthreads()
    out[cuda.grid(1), 0] = alias[n - 1 - tid]
    out[cuda.grid(1), 1] = s.size


@cuda.jit
def local_across_barrier(out, x):
    buf = cuda.local.array(8, float32)
    pair = cuda.local.array((2, 3), np.int64)
    tid = cuda.threadIdx.x
    for k in range(8):
        buf[k] = x[cuda.grid(1)] + k
    for r in range(2):
        for c in range(3):
            pair[r, c] = tid * 10 + r * 3 + c
    cuda.syncthreads()  # on the CPU target every thread is suspended here: locals must survive
    s = 0.0
    for k in range(8):
        s += buf[k]
    out[cuda.grid(1), 0] = s
    out[cuda.grid(1), 1] = pair[1, 2]
    out[cuda.grid(1), 2] = buf.size


@cuda.jit
def const_memory(out):
    table = cuda.const.array_like(CONST_TABLE)
    i = cuda.threadIdx.x
    out[i] = table[i // 4, i % 4] + table.shape[0] * 100


# ---- tests ----------------------------------------------------------------------------------

def test_static_shared_is_per_block(target):
    blocks = 8
    out = np.zeros((blocks, TPB), np.float64)
    shared_per_block[blocks, TPB](out)
    for b in range(blocks):
        expected = sum(b * 1000 + k for k in range(TPB)) + 32.0
        assert set(out[b]) == {expected}


def test_shared_reverse(target):
    x = np.arange(4 * TPB, dtype=np.float64)
    out = np.zeros_like(x)
    shared_reverse[4, TPB](out, x)
    np.testing.assert_array_equal(out, x.reshape(4, TPB)[:, ::-1].ravel())


@pytest.mark.parametrize("block", [32, 100])
def test_dynamic_shared(target, block):
    x = np.arange(3 * block, dtype=np.float32)
    out = np.zeros((3 * block, 2), np.float32)
    dynamic_shared[3, block, 0, block * 4](out, x)
    np.testing.assert_array_equal(out[:, 0], x.reshape(3, block)[:, ::-1].ravel())
    assert set(out[:, 1]) == {block}


def test_local_arrays_survive_barriers(target):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros((128, 3), np.float64)
    local_across_barrier[2, 64](out, x)
    np.testing.assert_array_equal(out[:, 0], 8 * x + 28)
    np.testing.assert_array_equal(out[:, 1], (np.arange(128) % 64) * 10 + 5)
    assert set(out[:, 2]) == {8}


def test_const_array_like(target):
    out = np.zeros(16, np.float64)
    const_memory[1, 16](out)
    np.testing.assert_array_equal(out, CONST_TABLE.ravel() + 400)


PTX_CASES = [
    (shared_per_block, "void(float64[:, ::1])", ".shared"),
    (shared_reverse, "void(float64[::1], float64[::1])", ".shared"),
    (dynamic_shared, "void(float32[:, ::1], float32[::1])", ".extern .shared"),
    (local_across_barrier, "void(float64[:, ::1], float32[::1])", ""),
    (const_memory, "void(float64[::1])", ".const"),
]


@pytest.mark.parametrize("kernel,sig,space", PTX_CASES, ids=[k.__name__ for k, _, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig, space):
    ptx = check_ptx(kernel, sig)
    assert space in ptx
    if space == ".shared":
        assert "ld.shared" in ptx and "st.shared" in ptx and "bar.sync" in ptx


def test_const_arrays_are_read_only(target):
    """As numba-cuda types them (the global array they copy is read-only): a store, an
    in-place operator or an atomic on constant memory is a CompileError, not a silent no-op
    on the CPU target and a fault on a GPU."""
    def store(out):
        table = cuda.const.array_like(CONST_TABLE)
        table[0] = 1.0
        out[0] = table[0]

    def inplace(out):
        table = cuda.const.array_like(CONST_TABLE)
        table += 1.0
        out[0] = table[0]

    for fn in (store, inplace):
        with pytest.raises(CompileError, match="read-only") as info:
            cuda.jit(fn)[1, 1](np.zeros(1))
        assert "^" in str(info.value)
