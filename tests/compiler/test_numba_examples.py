"""numba-cuda's documented examples, with `from numba import cuda` replaced by
`from gpunb import cuda` (and `numba.cuda.random` by `gpunb.random`) and nothing else changed in
the kernels: vector add, matrix multiply (naive, shared memory, and the older docs' fast_matmul
with its early return before syncthreads), shared-memory reduction, atomic max, Monte Carlo pi
and integration, Laplace with grid sync and without it (one launch per time step).

Sources: numba-cuda docs/source/user/{examples,random,intrinsics}.rst and
numba_cuda/numba/cuda/tests/doc_examples/test_{vecadd,matmul,reduction,montecarlo,laplace}.py;
numba 0.49's docs/source/cuda/examples.rst for the early-return fast_matmul.
"""

import math

import numpy as np
import pytest


@pytest.fixture
def device_api(target):
    """The examples move data with cuda.to_device & co.: skip visibly until the runtime has them."""
    from gpunb import cuda

    try:
        _ = cuda.to_device
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"device-array API not available yet: {exc}")
    return target


def test_vecadd(device_api):
    # ex_vecadd.import.begin
    import numpy as np

    from gpunb import cuda
    # ex_vecadd.import.end

    @cuda.jit
    def f(a, b, c):
        # like threadIdx.x + (blockIdx.x * blockDim.x)
        tid = cuda.grid(1)
        size = len(c)

        if tid < size:
            c[tid] = a[tid] + b[tid]

    np.random.seed(1)
    N = 100000
    a = cuda.to_device(np.random.random(N))
    b = cuda.to_device(np.random.random(N))
    c = cuda.device_array_like(a)

    f.forall(len(a))(a, b, c)
    np.testing.assert_equal(c.copy_to_host(), a.copy_to_host() + b.copy_to_host())

    nthreads = 256
    nblocks = (len(a) // nthreads) + 1
    c2 = cuda.device_array_like(a)
    f[nblocks, nthreads](a, b, c2)
    np.testing.assert_equal(c2.copy_to_host(), a.copy_to_host() + b.copy_to_host())


def test_matmul(device_api):
    from gpunb import cuda
    from gpunb.cuda import float32  # numba: from numba.cuda import float32

    @cuda.jit
    def matmul(A, B, C):
        """Perform square matrix multiplication of C = A * B."""
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            tmp = 0.0
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp

    x_h = np.arange(16).reshape([4, 4])
    y_h = np.ones([4, 4])
    z_h = np.zeros([4, 4])
    x_d = cuda.to_device(x_h)
    y_d = cuda.to_device(y_h)
    z_d = cuda.to_device(z_h)
    threadsperblock = (16, 16)
    blockspergrid_x = math.ceil(z_h.shape[0] / threadsperblock[0])
    blockspergrid_y = math.ceil(z_h.shape[1] / threadsperblock[1])
    blockspergrid = (blockspergrid_x, blockspergrid_y)
    matmul[blockspergrid, threadsperblock](x_d, y_d, z_d)
    z_h = z_d.copy_to_host()
    assert np.all(z_h == x_h @ y_h)

    TPB = 16

    @cuda.jit
    def fast_matmul(A, B, C):
        """
        Perform matrix multiplication of C = A * B using CUDA shared memory.

        Reference: https://stackoverflow.com/a/64198479/13697228 by @RobertCrovella
        """
        # Define an array in the shared memory
        # The size and type of the arrays must be known at compile time
        sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
        sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)

        x, y = cuda.grid(2)

        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        bpg = cuda.gridDim.x  # blocks per grid

        # Each thread computes one element in the result matrix.
        # The dot product is chunked into dot products of TPB-long vectors.
        tmp = float32(0.0)
        for i in range(bpg):
            # Preload data into shared memory
            sA[ty, tx] = 0
            sB[ty, tx] = 0
            if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
                sA[ty, tx] = A[y, tx + i * TPB]
            if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
                sB[ty, tx] = B[ty + i * TPB, x]

            # Wait until all threads finish preloading
            cuda.syncthreads()

            # Computes partial product on the shared memory
            for j in range(TPB):
                tmp += sA[ty, j] * sB[j, tx]

            # Wait until all threads finish computing
            cuda.syncthreads()
        if y < C.shape[0] and x < C.shape[1]:
            C[y, x] = tmp

    x_h = np.arange(16).reshape([4, 4])
    y_h = np.ones([4, 4])
    z_h = np.zeros([4, 4])
    x_d = cuda.to_device(x_h)
    y_d = cuda.to_device(y_h)
    z_d = cuda.to_device(z_h)
    threadsperblock = (TPB, TPB)
    blockspergrid_x = math.ceil(z_h.shape[0] / threadsperblock[0])
    blockspergrid_y = math.ceil(z_h.shape[1] / threadsperblock[1])
    blockspergrid = (blockspergrid_x, blockspergrid_y)
    fast_matmul[blockspergrid, threadsperblock](x_d, y_d, z_d)
    z_h = z_d.copy_to_host()
    assert np.all(z_h == x_h @ y_h), "fast_matmul incorrect for shared memory, square case."

    x_h = np.arange(115).reshape([5, 23])
    y_h = np.ones([23, 7])
    z_h = np.zeros([5, 7])
    x_d = cuda.to_device(x_h)
    y_d = cuda.to_device(y_h)
    z_d = cuda.to_device(z_h)
    threadsperblock = (TPB, TPB)
    grid_y_max = max(x_h.shape[0], y_h.shape[0])
    grid_x_max = max(x_h.shape[1], y_h.shape[1])
    blockspergrid_x = math.ceil(grid_x_max / threadsperblock[0])
    blockspergrid_y = math.ceil(grid_y_max / threadsperblock[1])
    blockspergrid = (blockspergrid_x, blockspergrid_y)
    fast_matmul[blockspergrid, threadsperblock](x_d, y_d, z_d)
    z_h = z_d.copy_to_host()
    assert np.all(z_h == x_h @ y_h), "fast_matmul incorrect for shared memory, non-square case."


# numba 0.49 docs: the shared-memory matmul with an early return before syncthreads
from gpunb import cuda, float32  # noqa: E402 - numba: from numba import cuda, float32

# Controls threads per block and shared memory usage.
# The computation will be done on blocks of TPBxTPB elements.
TPB = 16


@cuda.jit
def fast_matmul(A, B, C):
    # Define an array in the shared memory
    # The size and type of the arrays must be known at compile time
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)

    x, y = cuda.grid(2)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x    # blocks per grid

    if x >= C.shape[0] and y >= C.shape[1]:
        # Quit if (x, y) is outside of valid C boundary
        return

    # Each thread computes one element in the result matrix.
    # The dot product is chunked into dot products of TPB-long vectors.
    tmp = 0.
    for i in range(bpg):
        # Preload data into shared memory
        sA[tx, ty] = A[x, ty + i * TPB]
        sB[tx, ty] = B[tx + i * TPB, y]

        # Wait until all threads finish preloading
        cuda.syncthreads()

        # Computes partial product on the shared memory
        for j in range(TPB):
            tmp += sA[tx, j] * sB[j, ty]

        # Wait until all threads finish computing
        cuda.syncthreads()

    C[x, y] = tmp


@pytest.mark.parametrize("n", [16, 48, 64])
def test_fast_matmul_early_return(target, n):
    rng = np.random.default_rng(n)
    A = rng.integers(-8, 8, (n, n)).astype(np.float32)
    B = rng.integers(-8, 8, (n, n)).astype(np.float32)
    C = np.zeros((n, n), np.float32)
    blocks = (n + TPB - 1) // TPB
    fast_matmul[(blocks, blocks), (TPB, TPB)](A, B, C)
    np.testing.assert_array_equal(C, A @ B)  # small integers: exact in float32


def test_fast_matmul_ptx(check_ptx):
    ptx = check_ptx(fast_matmul, "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])")
    assert "bar.sync" in ptx or "barrier.sync" in ptx


def test_reduction(device_api):
    # ex_reduction.import.begin
    import numpy as np

    from gpunb import cuda, int32  # numba: ... import cuda; from numba.cuda.types import int32
    # ex_reduction.import.end

    # generate data
    a = cuda.to_device(np.arange(1024))
    nelem = len(a)

    @cuda.jit
    def array_sum(data):
        tid = cuda.threadIdx.x
        size = len(data)
        if tid < size:
            i = cuda.grid(1)

            # Declare an array in shared memory
            shr = cuda.shared.array(nelem, int32)
            shr[tid] = data[i]

            # Ensure writes to shared memory are visible
            # to all threads before reducing
            cuda.syncthreads()

            s = 1
            while s < cuda.blockDim.x:
                if tid % (2 * s) == 0:
                    # Stride by `s` and add
                    shr[tid] += shr[tid + s]
                s *= 2
                cuda.syncthreads()

            # After the loop, the zeroth  element contains the sum
            if tid == 0:
                data[tid] = shr[tid]

    array_sum[1, nelem](a)
    np.testing.assert_equal(a[0], sum(np.arange(1024)))


def test_atomic_max_example(target):
    from gpunb import cuda

    @cuda.jit
    def max_example(result, values):
        """Find the maximum value in values and store in result[0]"""
        tid = cuda.threadIdx.x
        bid = cuda.blockIdx.x
        bdim = cuda.blockDim.x
        i = (bid * bdim) + tid
        cuda.atomic.max(result, 0, values[i])

    arr = np.random.rand(16384)
    result = np.zeros(1, dtype=np.float64)

    max_example[256, 64](result, arr)
    assert result[0] == max(arr)


def test_monte_carlo_pi(device_api):
    from gpunb import cuda
    from gpunb.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    @cuda.jit
    def compute_pi(rng_states, iterations, out):
        """Find the maximum value in values and store in result[0]"""
        thread_id = cuda.grid(1)

        # Compute pi by drawing random (x, y) points and finding what
        # fraction lie inside a unit circle
        inside = 0
        for i in range(iterations):  # noqa: B007 - the doc's code, unchanged
            x = xoroshiro128p_uniform_float32(rng_states, thread_id)
            y = xoroshiro128p_uniform_float32(rng_states, thread_id)
            if x**2 + y**2 <= 1.0:
                inside += 1

        out[thread_id] = 4.0 * inside / iterations

    threads_per_block = 64
    blocks = 24
    rng_states = create_xoroshiro128p_states(threads_per_block * blocks, seed=1)
    out = np.zeros(threads_per_block * blocks, dtype=np.float32)

    compute_pi[blocks, threads_per_block](rng_states, 10000, out)
    assert abs(out.mean() - math.pi) < 0.01


def test_monte_carlo_integration(device_api):
    # the doc's integrand is a CPU @numba.jit function and the sum uses @cuda.reduce; here the
    # integrand is a GPU device function and the sum is numpy's - the kernel is unchanged
    from gpunb import cuda
    from gpunb.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    nsamps = 1000000

    @cuda.jit
    def mc_integrator_kernel(out, rng_states, lower_lim, upper_lim):
        """
        kernel to draw random samples and evaluate the function to
        be integrated at those sample values
        """
        size = len(out)

        gid = cuda.grid(1)
        if gid < size:
            # draw a sample between 0 and 1 on this thread
            samp = xoroshiro128p_uniform_float32(rng_states, gid)

            # normalize this sample to the limit range
            samp = samp * (upper_lim - lower_lim) + lower_lim

            # evaluate the function to be
            # integrated at the normalized
            # value of the sample
            y = func(samp)
            out[gid] = y

    def mc_integrate(lower_lim, upper_lim, nsamps):
        out = cuda.to_device(np.zeros(nsamps, dtype="float32"))
        rng_states = create_xoroshiro128p_states(nsamps, seed=42)
        mc_integrator_kernel.forall(nsamps)(out, rng_states, lower_lim, upper_lim)
        factor = (upper_lim - lower_lim) / (nsamps - 1)
        return out.copy_to_host().sum(dtype=np.float64) * factor

    @cuda.jit(device=True)
    def func(x):
        return 1.0 / x

    np.testing.assert_allclose(mc_integrate(1, 2, nsamps), 0.69315, atol=0.001)
    np.testing.assert_allclose(mc_integrate(2, 3, nsamps), 0.4055, atol=0.001)

    @cuda.jit(device=True)
    def func(x):  # noqa: F811 - a math-function integrand: the integral of sin on [0, pi] is 2
        return math.sin(x) * math.exp(0.0 * x)

    np.testing.assert_allclose(mc_integrate(0, math.pi, nsamps), 2.0, atol=0.01)


def test_laplace_grid_sync(device_api):
    from gpunb import cuda

    size = 1001
    data = np.zeros(size)
    data[500] = 10000
    buf_0 = cuda.to_device(data)
    buf_1 = cuda.device_array_like(buf_0)
    niter = 10000

    @cuda.jit
    def solve_heat_equation(buf_0, buf_1, timesteps, k):
        i = cuda.grid(1)

        # Don't continue if our index is outside the domain
        if i >= len(buf_0):
            return

        # Prepare to do a grid-wide synchronization later
        grid = cuda.cg.this_grid()

        for step in range(timesteps):
            # Select the buffer from the previous timestep
            if (step % 2) == 0:
                data = buf_0
                next_data = buf_1
            else:
                data = buf_1
                next_data = buf_0

            # Get the current temperature associated with this point
            curr_temp = data[i]

            # Apply formula from finite difference equation
            if i == 0:
                # Left wall is held at T = 0
                next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
            elif i == len(data) - 1:
                # Right wall is held at T = 0
                next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
            else:
                # Interior points are a weighted average of their neighbors
                next_temp = curr_temp + k * (
                    data[i - 1] - (2 * curr_temp) + data[i + 1]
                )

            # Write new value to the next buffer
            next_data[i] = next_temp

            # Wait for every thread to write before moving on
            grid.sync()

    solve_heat_equation.forall(len(data))(buf_0, buf_1, niter, 0.25)
    results = buf_1.copy_to_host()
    np.testing.assert_allclose(results.sum(), 10000)
    np.testing.assert_allclose(results, _laplace_reference(data, niter, 0.25), rtol=1e-9,
                               atol=1e-9)


def _laplace_reference(data, niter, k):
    a = data.copy()
    b = np.empty_like(a)
    for step in range(niter):
        src, dst = (a, b) if step % 2 == 0 else (b, a)
        dst[1:-1] = src[1:-1] + k * (src[:-2] - 2 * src[1:-1] + src[2:])
        dst[0] = src[0] + k * (src[1] - 2 * src[0])
        dst[-1] = src[-1] + k * (src[-2] - 2 * src[-1])
    return b


@cuda.jit
def heat_step(data, next_data, k):
    # the doc kernel's loop body, one launch per time step instead of a grid-wide sync
    i = cuda.grid(1)
    if i >= len(data):
        return
    curr_temp = data[i]
    if i == 0:
        next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
    elif i == len(data) - 1:
        next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
    else:
        next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp) + data[i + 1])
    next_data[i] = next_temp


def test_laplace_without_grid_sync(target):
    size = 1001
    data = np.zeros(size)
    data[500] = 10000
    buf_0 = data.copy()
    buf_1 = np.zeros_like(data)
    niter = 2000
    for step in range(niter):
        src, dst = (buf_0, buf_1) if step % 2 == 0 else (buf_1, buf_0)
        heat_step.forall(size)(src, dst, 0.25)
    np.testing.assert_allclose(buf_1.sum(), 10000)
    np.testing.assert_allclose(buf_1, _laplace_reference(data, niter, 0.25), rtol=1e-12,
                               atol=1e-12)


def test_laplace_step_ptx(check_ptx):
    check_ptx(heat_step, "void(float64[::1], float64[::1], float64)")
