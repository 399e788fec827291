"""Thread indexing: threadIdx/blockIdx/blockDim/gridDim in x/y/z, cuda.grid(1|2|3),
cuda.gridsize, laneid and warpsize, for 1-3 dimensional launches; kernel.forall."""

import numpy as np
import pytest

from gpunb import cuda

# ---- kernels --------------------------------------------------------------------------------


@cuda.jit
def ids3(out):
    tx, ty, tz = cuda.threadIdx.x, cuda.threadIdx.y, cuda.threadIdx.z
    bx, by, bz = cuda.blockIdx.x, cuda.blockIdx.y, cuda.blockIdx.z
    x, y, z = cuda.grid(3)
    out[z, y, x, 0] = tx
    out[z, y, x, 1] = ty
    out[z, y, x, 2] = tz
    out[z, y, x, 3] = bx
    out[z, y, x, 4] = by
    out[z, y, x, 5] = bz
    out[z, y, x, 6] = cuda.blockDim.x * 100 + cuda.blockDim.y * 10 + cuda.blockDim.z
    out[z, y, x, 7] = cuda.gridDim.x * 100 + cuda.gridDim.y * 10 + cuda.gridDim.z
    sx, sy, sz = cuda.gridsize(3)
    out[z, y, x, 8] = sx * 10000 + sy * 100 + sz


@cuda.jit
def ids2(out):
    i, j = cuda.grid(2)
    w, h = cuda.gridsize(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j, 0] = i * 1000 + j
        out[i, j, 1] = w * 1000 + h


@cuda.jit
def ids1(out):
    i = cuda.grid(1)
    n = cuda.gridsize(1)
    if i < out.shape[0]:
        out[i, 0] = i
        out[i, 1] = n
        out[i, 2] = cuda.laneid
        out[i, 3] = cuda.warpsize
        out[i, 4] = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x


@cuda.jit
def grid_stride(out, x):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.size, stride):
        out[i] = x[i] * 3


# ---- tests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("grid,block", [((2, 3, 2), (4, 2, 3)), ((1, 1, 1), (8, 4, 2)),
                                        ((3, 1, 2), (1, 5, 1))])
def test_3d_indices(target, grid, block):
    shape = tuple(g * b for g, b in zip(grid, block, strict=True))
    out = np.full((shape[2], shape[1], shape[0], 9), -1, np.int64)
    ids3[grid, block](out)
    z, y, x = np.meshgrid(np.arange(shape[2]), np.arange(shape[1]), np.arange(shape[0]),
                          indexing="ij")
    np.testing.assert_array_equal(out[..., 0], x % block[0])
    np.testing.assert_array_equal(out[..., 1], y % block[1])
    np.testing.assert_array_equal(out[..., 2], z % block[2])
    np.testing.assert_array_equal(out[..., 3], x // block[0])
    np.testing.assert_array_equal(out[..., 4], y // block[1])
    np.testing.assert_array_equal(out[..., 5], z // block[2])
    assert set(out[..., 6].ravel()) == {block[0] * 100 + block[1] * 10 + block[2]}
    assert set(out[..., 7].ravel()) == {grid[0] * 100 + grid[1] * 10 + grid[2]}
    assert set(out[..., 8].ravel()) == {shape[0] * 10000 + shape[1] * 100 + shape[2]}


def test_2d_grid(target):
    out = np.zeros((13, 7, 2), np.int64)
    ids2[(4, 2), (4, 4)](out)  # more threads than elements: guarded
    i, j = np.meshgrid(np.arange(13), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], i * 1000 + j)
    assert set(out[..., 1].ravel()) == {16 * 1000 + 8}


@pytest.mark.parametrize("grid,block", [(1, 64), (3, 100), (5, 32), ((2,), (48,))])
def test_1d_grid_lanes(target, grid, block):
    g = grid[0] if isinstance(grid, tuple) else grid
    b = block[0] if isinstance(block, tuple) else block
    n = g * b
    out = np.zeros((n, 5), np.int64)
    ids1[grid, block](out)
    i = np.arange(n)
    np.testing.assert_array_equal(out[:, 0], i)
    assert set(out[:, 1]) == {n}
    np.testing.assert_array_equal(out[:, 2], (i % b) % 32)  # lane within the thread's warp
    assert set(out[:, 3]) == {32}
    np.testing.assert_array_equal(out[:, 4], i)


def test_grid_stride_loop_and_forall(target):
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    grid_stride[3, 64](out, x)
    np.testing.assert_array_equal(out, x * 3)
    out[:] = 0
    grid_stride.forall(x.size)(out, x)
    np.testing.assert_array_equal(out, x * 3)
    out[:] = 0
    grid_stride.forall(x.size, tpb=128)(out, x)
    np.testing.assert_array_equal(out, x * 3)


def test_launch_with_stream_and_dynamic_shared_slots(target):
    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    grid_stride[1, 32, 0, 0](out, x)  # [grid, block, stream, dynamic shared bytes]
    np.testing.assert_array_equal(out, x * 3)
    stream = cuda.stream()
    out2 = np.zeros_like(x)
    grid_stride[1, 32, stream](out2, x)
    grid_stride[2, 16, stream, 64](out, x * 2)
    stream.synchronize()
    np.testing.assert_array_equal(out2, x * 3)
    np.testing.assert_array_equal(out, x * 6)


PTX_CASES = [
    (ids3, "void(int64[:, :, :, ::1])"),
    (ids2, "void(int64[:, :, ::1])"),
    (ids1, "void(int64[:, ::1])"),
    (grid_stride, "void(float32[::1], float32[::1])"),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[k.__name__ for k, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    ptx = check_ptx(kernel, sig)
    assert "%tid.x" in ptx and "%ctaid.x" in ptx
    if kernel is ids3:
        for reg in ("%tid.y", "%tid.z", "%ctaid.z", "%ntid.z", "%nctaid.z"):
            assert reg in ptx
