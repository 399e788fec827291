"""Launch configurations checked against a program's limits before anything reaches a device.

`kernel[grid, block, stream, shared]` may say grid and block as ints or 1-3 tuples of integers;
`validate_config` turns them into 3-tuples within the limits every backend publishes (as a dict:
max_threads_per_block, max_block_dim, max_grid_dim, max_shared_memory_per_block), or raises a
LaunchError that names the kernel and says what to change. The common `kernel[int, int]` case is
a few comparisons: it runs on every launch.
"""

from __future__ import annotations

import numpy as np

from gpunb.foundation.errors import LaunchConfigError, LaunchError


def validate_config(griddim, blockdim, device_limits: dict, shared_bytes: int,
                    kernel_name: str | None) -> tuple:
    """(grid, block) as 3-tuples of positive ints within the device's limits; LaunchError (before
    any driver call) naming the kernel and what to change otherwise."""
    # the common launch, kernel[int, int], checked in a few comparisons
    if griddim.__class__ is int and blockdim.__class__ is int and shared_bytes.__class__ is int \
            and 0 < blockdim <= device_limits["max_threads_per_block"]:
        if 0 < griddim <= device_limits["max_grid_dim"][0] and \
                blockdim <= device_limits["max_block_dim"][0] and 0 <= shared_bytes <= \
                device_limits.get("max_shared_memory_per_block", shared_bytes):
            cluster = device_limits.get("cluster_dims")
            if cluster is None or (griddim % cluster[0] == 0 and cluster[1] == cluster[2] == 1):
                return (griddim, 1, 1), (blockdim, 1, 1)
    grid, block = _validate_slowly(griddim, blockdim, device_limits, shared_bytes, kernel_name)
    cluster = device_limits.get("cluster_dims")
    if cluster is not None:
        check_cluster_grid(grid, cluster, kernel_name)
    return grid, block


def check_cluster_grid(grid: tuple, cluster: tuple, kernel_name: str | None) -> None:
    """A kernel compiled with cluster_dims launches whole clusters: each grid dimension a
    multiple of the cluster's (as CUDA requires; the driver would refuse the launch)."""
    if all(g % c == 0 for g, c in zip(grid, cluster, strict=True)):
        return
    fitted = tuple(-(-g // c) * c for g, c in zip(grid, cluster, strict=True))
    raise LaunchError(f"a grid of {grid} blocks is not a whole number of clusters of "
                      f"{tuple(cluster)} (the kernel's cluster_dims): each grid dimension must "
                      "be a multiple of the cluster's", function=kernel_name,
                      hint=f"launch a grid of e.g. {fitted} blocks (the kernel can skip the "
                           "blocks past its data)")


def _validate_slowly(griddim, blockdim, device_limits: dict, shared_bytes: int,
                     kernel_name: str | None) -> tuple:
    grid = _dim3(griddim, "grid", kernel_name)
    block = _dim3(blockdim, "block", kernel_name)
    threads = block[0] * block[1] * block[2]
    max_threads = device_limits["max_threads_per_block"]
    if threads > max_threads:
        kernel_max = device_limits.get("kernel_max_threads_per_block")
        why = f"this kernel allows at most {max_threads}" if kernel_max == max_threads else \
            f"the device allows at most {max_threads}"
        raise LaunchError(f"a block of {block} has {threads} threads; {why}",
                          function=kernel_name,
                          hint=f"use a block of at most {max_threads} threads (e.g. 256) and more "
                               "blocks; kernels with many registers allow fewer threads")
    for axis, (n, limit) in enumerate(zip(block, device_limits["max_block_dim"], strict=False)):
        if n > limit:
            raise LaunchError(f"block dimension {'xyz'[axis]} is {n}; the device allows at most "
                              f"{limit}", function=kernel_name,
                              hint=f"the block limits are {tuple(device_limits['max_block_dim'])}")
    for axis, (n, limit) in enumerate(zip(grid, device_limits["max_grid_dim"], strict=False)):
        if n > limit:
            raise LaunchError(f"grid dimension {'xyz'[axis]} is {n}; the device allows at most "
                              f"{limit}", function=kernel_name,
                              hint="use a larger block, a grid-stride loop, or move work to the x "
                                   "dimension (up to 2**31 - 1 blocks)")
    if isinstance(shared_bytes, (bool, np.bool_)) or \
            not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
        raise LaunchError(f"dynamic shared memory must be a non-negative number of bytes, got "
                          f"{shared_bytes!r}", function=kernel_name)
    limit = device_limits.get("max_shared_memory_per_block")
    if limit is not None and shared_bytes > limit:
        raise LaunchError(f"a block needs {shared_bytes} bytes of shared memory (static + "
                          f"dynamic); the device allows at most {limit} per block",
                          function=kernel_name,
                          hint="use smaller shared arrays or a smaller dynamic size "
                               "(the 4th launch parameter), or tile the work")
    return grid, block


def check_stream_and_shared(stream, shared_bytes, kernel_name) -> None:
    """The 3rd and 4th items of `kernel[grid, block, stream, shared]`: a stream (check_stream)
    and a non-negative integer byte count; LaunchConfigError otherwise, at `kernel[...]` as
    numba checks, before a backend does arithmetic on them."""
    check_stream(stream, kernel_name)
    if isinstance(shared_bytes, (bool, np.bool_)) or \
            not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
        raise LaunchConfigError(f"dynamic shared memory must be a non-negative number of bytes, "
                                f"got {type(shared_bytes).__name__} {shared_bytes!r}",
                                function=kernel_name,
                                hint="the 4th launch parameter counts bytes, e.g. "
                                     "threads * np.dtype(np.float32).itemsize")


def check_dims(dim, what: str, kernel_name) -> tuple:
    """The sizes of a grid or block (1 to 3 integers), or LaunchConfigError in numba's words."""
    items = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not 1 <= len(items) <= 3:
        raise LaunchConfigError(f"{what}dim must be a sequence of 1, 2 or 3 integers, got "
                                f"{list(items)}", function=kernel_name,
                                hint="e.g. kernel[blocks, threads] or kernel[(bx, by), (tx, ty)]")
    for n in items:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise LaunchConfigError(f"{what}dim must be a sequence of integers, got "
                                    f"{list(items)}", function=kernel_name,
                                    hint="compute sizes with integer division, e.g. "
                                         "(n + 255) // 256")
    return items


def check_stream(stream, kernel_name) -> None:
    """The stream of kernel[grid, block, stream]: 0/None, a CUstream number, or a stream object
    (gpunb's, numba's, CuPy's `.ptr`, PyTorch's `.cuda_stream`); refused on every target, so a
    launch that runs on the CPU target does not fail on a GPU."""
    if stream is None or isinstance(stream, (int, np.integer)) and not isinstance(
            stream, (bool, np.bool_)):
        return
    if any(getattr(stream, attr, None) is not None for attr in ("handle", "ptr", "cuda_stream")):
        return
    raise LaunchConfigError(f"cannot use {type(stream).__name__} {stream!r} as the launch's "
                            "stream", function=kernel_name,
                            hint="kernel[grid, block, stream] takes a stream made by "
                                 "cuda.stream() (or 0 for the default stream); dynamic shared "
                                 "memory comes fourth: kernel[grid, block, 0, nbytes]")


def _dim3(dim, what: str, kernel_name) -> tuple:
    if dim.__class__ is int and dim > 0:
        return (dim, 1, 1)
    items = check_dims(dim, what, kernel_name)
    out = []
    for n in items:
        if n <= 0:
            raise LaunchError(f"{what} dimensions must be positive, got {dim!r}",
                              function=kernel_name,
                              hint="a launch of 0 blocks or threads does nothing: skip the launch "
                                   "when there is no work" if n == 0 else
                                   "grid and block sizes count blocks and threads: at least 1 "
                                   "each, e.g. kernel[(n + 255) // 256, 256]")
        out.append(int(n))
    while len(out) < 3:
        out.append(1)
    return tuple(out)


def occupancy_cluster_shape(compiled: tuple, asked: tuple | None, kernel_name: str) -> tuple:
    """The cluster shape an occupancy question is about: the kernel's own cluster_dims, or for
    a kernel compiled without, `asked` (default 1 x 1 x 1); LaunchError when both are given and
    differ."""
    compiled = tuple(compiled)
    dims = tuple(asked) if asked is not None else compiled or (1, 1, 1)
    if compiled and dims != compiled:
        raise LaunchError(f"'{kernel_name}' was compiled with cluster_dims={compiled}; asked "
                          f"about clusters of {dims}", function=kernel_name,
                          hint="leave cluster_dims out: the kernel's own shape is used")
    return dims
