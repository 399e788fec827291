"""numba.cuda.cudadrv.devicearray under gpunb: the device-array class and numba's helpers that
make one like a host object (`from_array_like`, `auto_device`) or check one (`is_contiguous`,
`sentry_contiguous`, `verify_cuda_ndarray_interface`), which libraries written for numba-cuda
import from this module."""

from __future__ import annotations

import numpy as np

from gpunb.runtime import memory
from gpunb.runtime.memory import DeviceNDArray  # noqa: F401 - numba's class (both targets)

errmsg_contiguous_buffer = (
    "Array contains non-contiguous buffer and cannot be transferred as a single memory region. "
    "Please ensure contiguous buffer with numpy .ascontiguousarray()")


def array_core(ary):
    """The repeated core of a broadcast array: index 0 in every stride-0 dimension (a view)."""
    if not ary.strides or not ary.size:
        return ary
    return ary[tuple(0 if stride == 0 else slice(None) for stride in ary.strides)]


def is_contiguous(ary) -> bool:
    """Whether `ary` (any array with shape, strides, dtype) is C-contiguous, ignoring extent-1
    and broadcast (stride 0) dimensions, as numba-cuda's helper."""
    expected = ary.dtype.itemsize
    for extent, stride in zip(reversed(ary.shape), reversed(ary.strides), strict=True):
        if extent > 1 and stride != 0:
            if stride != expected:
                return False
            expected *= extent
    return True


def sentry_contiguous(ary) -> None:
    """ValueError(errmsg_contiguous_buffer) unless `ary`'s core (broadcast dimensions dropped)
    is C- or F-contiguous."""
    flags = array_core(ary).flags
    if not flags["C_CONTIGUOUS"] and not flags["F_CONTIGUOUS"]:
        raise ValueError(errmsg_contiguous_buffer)


def require_cuda_ndarray(obj) -> None:
    """ValueError unless `obj` is a gpunb device array."""
    if not is_cuda_ndarray(obj):
        raise ValueError("require an cuda ndarray object")


def verify_cuda_ndarray_interface(obj) -> None:
    """numba-cuda's check that `obj` is a device array with tuple shape and strides, a numpy
    dtype and an int size (AttributeError naming the attribute otherwise)."""
    require_cuda_ndarray(obj)
    for attr, kind in (("shape", tuple), ("strides", tuple), ("dtype", np.dtype), ("size", int)):
        if not hasattr(obj, attr):
            raise AttributeError(attr)
        if not isinstance(getattr(obj, attr), kind):
            raise AttributeError(f"{attr} must be of type {kind}")


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
    sentry_contiguous(host)
    device = memory.to_device(host, stream=stream, copy=copy)
    return device, True
