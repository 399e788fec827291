"""numba.cuda.kernels.transpose under gpunb: `transpose(a, b=None)`, a 2-d device transpose
through shared-memory tiles (NVIDIA's "efficient matrix transpose"), on either target.

One kernel per element type and tile shape is built once and kept; tiles are square-ish from
the device's MAX_THREADS_PER_BLOCK, padded by one column against shared-memory bank conflicts.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from gpunb.compiler.kernel_api import blockDim, blockIdx, shared, syncthreads, threadIdx
from gpunb.cuda.devices import get_current_device
from gpunb.foundation.types import from_dtype
from gpunb.jit.decorator import jit
from gpunb.runtime import memory


def transpose(a, b=None):
    """The transpose of the 2-d array `a` (host or device), stored into `b` when given (a device
    array of shape a.shape[::-1]), else into a new C-contiguous device array; returns it. Runs
    on `a`'s stream when `a` is a device array."""
    stream = getattr(a, "stream", 0)
    if len(a.shape) != 2:
        raise ValueError(f"transpose: a 2-d array is needed, got {len(a.shape)} dimensions")
    if b is None:
        cols, rows = a.shape
        itemsize = np.dtype(a.dtype).itemsize
        b = memory.device_array((rows, cols), a.dtype, strides=(itemsize * cols, itemsize),
                                stream=stream)
    if tuple(b.shape) != tuple(a.shape[::-1]):
        raise ValueError(f"transpose: the output's shape {tuple(b.shape)} is not "
                         f"{tuple(a.shape[::-1])}")
    if np.dtype(b.dtype) != np.dtype(a.dtype):
        raise TypeError(f"transpose: the output's dtype {b.dtype} is not {a.dtype}")
    tpb = int(get_current_device().MAX_THREADS_PER_BLOCK)
    tile_width = int(2 ** (math.log2(tpb) // 2))  # 32 for 1024 threads
    tile_height = tpb // tile_width
    kernel = _kernel(np.dtype(a.dtype), tile_height, tile_width)
    blocks = b.shape[0] // tile_height + 1, b.shape[1] // tile_width + 1
    kernel[blocks, (tile_height, tile_width), stream](a, b)
    return b


@functools.cache
def _kernel(dtype: np.dtype, tile_height: int, tile_width: int):
    tile_shape = (tile_height, tile_width + 1)
    element = from_dtype(dtype)

    @jit
    def transpose_tiles(source, dest):
        tile = shared.array(shape=tile_shape, dtype=element)
        tx = threadIdx.x
        ty = threadIdx.y
        bx = blockIdx.x * blockDim.x
        by = blockIdx.y * blockDim.y
        x = by + tx
        y = bx + ty
        if by + ty < source.shape[0] and bx + tx < source.shape[1]:
            tile[ty, tx] = source[by + ty, bx + tx]
        syncthreads()
        if y < dest.shape[0] and x < dest.shape[1]:
            dest[y, x] = tile[tx, ty]

    return transpose_tiles
