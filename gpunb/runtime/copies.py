"""Memory copies between host and GPU: contiguous blocks, and strided views row by row.

A strided view (a column, every other row, a transposed slice) is copied as rows of its
innermost contiguous run with cuMemcpy2D - one driver call per 2-d slab - so only the view's own
elements are read or written, never the gaps between them.
"""

from __future__ import annotations

import numpy as np

from gpunb.backends.cuda import driver
from gpunb.runtime.streams import stream_handle


def _driver():
    """The driver, with this thread's context made current first: a copy may run in a thread
    that never used the GPU (a process pool's task thread pickling a device array, a stream
    callback), where the driver would refuse it (CUDA_ERROR_INVALID_CONTEXT). Cheap once the
    thread has its context."""
    driver.ensure_context()
    return driver.cuda_driver()


def copy_htod(dst: int, host: np.ndarray, nbytes: int, stream=0) -> None:
    cu = _driver()
    handle = stream_handle(stream)
    if handle:
        driver.check(cu.cuMemcpyHtoDAsync(dst, host.ctypes.data, nbytes, handle),
                     "cuMemcpyHtoDAsync")
    else:
        driver.check(cu.cuMemcpyHtoD(dst, host.ctypes.data, nbytes), "cuMemcpyHtoD")


def copy_dtoh(host: np.ndarray, src: int, nbytes: int, stream=0) -> None:
    cu = _driver()
    handle = stream_handle(stream)
    if handle:
        driver.check(cu.cuMemcpyDtoHAsync(host.ctypes.data, src, nbytes, handle),
                     "cuMemcpyDtoHAsync")
    else:
        _wait_for_kernels("a copy to the host")
        driver.check(cu.cuMemcpyDtoH(host.ctypes.data, src, nbytes), "cuMemcpyDtoH")


def _wait_for_kernels(what: str) -> None:
    """A synchronous copy first waits for the default stream's kernels: wait here instead,
    where Ctrl-C and the watchdog can end it (backends/cuda/waits.py); one query when idle."""
    from gpunb.backends.cuda import waits

    cu = driver.cuda_driver()
    waits.wait_until(waits.stream_done(cu, driver.check, 0), what, driver.last_launch.kernel, cu)


def copy_dtod(dst: int, src: int, nbytes: int, stream=0) -> None:
    cu = _driver()
    handle = stream_handle(stream)
    if handle:
        driver.check(cu.cuMemcpyDtoDAsync(dst, src, nbytes, handle), "cuMemcpyDtoDAsync")
    else:
        driver.check(cu.cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")


def copy_peer(dst: int, dst_token, src: int, src_token, nbytes: int, stream=0) -> None:
    """Copy between the memory of two contexts (two GPUs): cuMemcpyPeer, which goes over
    NVLink or PCIe peer access when the GPUs have it and through the host otherwise."""
    cu = _driver()
    handle = stream_handle(stream)
    if handle:
        driver.check(cu.cuMemcpyPeerAsync(dst, dst_token.handle, src, src_token.handle, nbytes,
                                          handle), "cuMemcpyPeerAsync")
    else:
        driver.check(cu.cuMemcpyPeer(dst, dst_token.handle, src, src_token.handle, nbytes),
                     "cuMemcpyPeer")


def copy_strided(view, host: np.ndarray, *, to_device: bool, stream=0) -> None:
    """Copy between a strided device view and a C-contiguous host array of the same shape."""
    shape, strides, itemsize = view.shape, view.strides, view.itemsize
    # the innermost dimensions that are contiguous on the device form one run of bytes
    k, run = len(shape), itemsize
    while k > 0 and (shape[k - 1] == 1 or strides[k - 1] == run):
        run *= shape[k - 1]
        k -= 1
    if k == 0:  # contiguous after all
        (copy_htod(view._ptr, host, run, stream) if to_device else
         copy_dtoh(host, view._ptr, run, stream))
        return
    rows, pitch = shape[k - 1], strides[k - 1]
    slab = rows * run  # bytes of one 2-d slab in the (contiguous) host array
    base = host.ctypes.data
    for number, index in enumerate(np.ndindex(*shape[:k - 1])):
        device = view._ptr + sum(i * s for i, s in zip(index, strides[:k - 1], strict=True))
        _copy_rows(device, base + number * slab, rows, run, pitch, to_device, stream)


def _copy_rows(device: int, host: int, rows: int, width: int, pitch: int, to_device: bool,
               stream) -> None:
    cu = _driver()
    handle = stream_handle(stream)
    if pitch >= width:  # cuMemcpy2D takes non-negative pitches of at least the row width
        copy = cu.CUDA_MEMCPY2D()
        copy.WidthInBytes, copy.Height = width, rows
        host_type, device_type = cu.CUmemorytype.CU_MEMORYTYPE_HOST, \
            cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        if to_device:
            copy.srcMemoryType, copy.srcHost, copy.srcPitch = host_type, host, width
            copy.dstMemoryType, copy.dstDevice, copy.dstPitch = device_type, device, pitch
        else:
            copy.srcMemoryType, copy.srcDevice, copy.srcPitch = device_type, device, pitch
            copy.dstMemoryType, copy.dstHost, copy.dstPitch = host_type, host, width
        if not handle and not to_device:
            _wait_for_kernels("a copy to the host")
        result = cu.cuMemcpy2DAsync(copy, handle) if handle else cu.cuMemcpy2D(copy)
        driver.check(result, "cuMemcpy2DAsync" if handle else "cuMemcpy2D")
        return
    for row in range(rows):  # negative or overlapping pitches: one copy per row
        d, h = device + row * pitch, host + row * width
        if to_device:
            driver.check(cu.cuMemcpyHtoDAsync(d, h, width, handle) if handle else
                         cu.cuMemcpyHtoD(d, h, width), "cuMemcpyHtoD")
        else:
            if not handle and row == 0:
                _wait_for_kernels("a copy to the host")
            driver.check(cu.cuMemcpyDtoHAsync(h, d, width, handle) if handle else
                         cu.cuMemcpyDtoH(h, d, width), "cuMemcpyDtoH")
