"""numba.cuda.cudadrv.devicearray under gpunb: the device-array class and numba's helpers that
make one like a host object (`from_array_like`, `auto_device`)."""

from __future__ import annotations

import numpy as np

from gpunb.runtime import memory
from gpunb.runtime.memory import DeviceNDArray  # noqa: F401 - numba's class (both targets)


def from_array_like(ary, stream=0, gpu_data=None):
    """An uninitialised device array with `ary`'s shape, strides and dtype."""
    if gpu_data is not None:
        raise TypeError("from_array_like(gpu_data=...) is numba's allocator internals; gpunb "
                        "allocates the memory itself")
    return memory.device_array(ary.shape, ary.dtype, strides=tuple(ary.strides), stream=stream)


def is_cuda_ndarray(obj) -> bool:
    """Whether `obj` is a gpunb device array (either target)."""
    return isinstance(obj, DeviceNDArray)


def auto_device(obj, stream=0, copy: bool = True, user_explicit: bool = False) -> tuple:
    """(device array, converted): `obj` itself when it is device memory already, else a new
    device array holding a copy of it (numba-cuda's auto_device). Scalars become 0-d arrays."""
    if isinstance(obj, DeviceNDArray):
        return obj, False
    if getattr(obj, "__cuda_array_interface__", None) is not None:
        return memory.as_cuda_array(obj), False
    host = np.asarray(obj)
    if not (host.flags.c_contiguous or host.flags.f_contiguous):
        raise ValueError("Array contains non-contiguous buffer and cannot be transferred as a "
                         "single memory region. Please ensure contiguous buffer with "
                         "numpy .ascontiguousarray()")
    device = memory.to_device(host, stream=stream, copy=copy)
    return device, True
