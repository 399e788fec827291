"""Arguments of a ufunc call on either target: which are device arrays, moving host arrays onto
the target and results back, zero-stride broadcast views, and output allocation.

On the CPU target the "device" is host memory: numpy arrays are used in place and device arrays
are HostDeviceArrays. On a GPU, host arrays are copied in (on the call's stream) and results
copied back, as numba-cuda's ufuncs do; device arrays (gpunb's, or anything exporting
__cuda_array_interface__) stay where they are.
"""

from __future__ import annotations

import numpy as np

from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

DEVICE_KINDS = (DeviceArray, HostDeviceArray)


def is_device_array(obj) -> bool:
    return isinstance(obj, DEVICE_KINDS) or hasattr(obj, "__cuda_array_interface__")


def as_device_array(obj, target: str):
    """A gpunb device array for `obj` (no copy)."""
    if isinstance(obj, DEVICE_KINDS):
        return obj
    if target != "cuda":
        raise TypeError(f"a CUDA array ({type(obj).__name__}) cannot be used on the CPU target; "
                        "copy it to the host first, or run on a GPU (gpunb.set_target('cuda'))")
    from gpunb.runtime import memory

    return memory.as_cuda_array(obj)


def on_target(value, target: str, stream):
    """`value` (a numpy or device array) in the memory the target's kernels read."""
    if isinstance(value, DEVICE_KINDS):
        return value
    if target == "cpu":
        return value
    from gpunb.runtime import memory

    return memory.to_device(value, stream=stream, target="cuda")


def empty(shape: tuple, dtype, target: str, stream):
    """An uninitialised C-ordered array on the target (a device array, or numpy on the CPU)."""
    if target == "cpu":
        return np.empty(shape, dtype)
    from gpunb.runtime import memory

    return memory.device_array(shape, dtype, stream=stream, target="cuda")


def as_device_result(array, target: str):
    """What a caller with device-array inputs gets back: a device array of the target."""
    if isinstance(array, np.ndarray):
        return HostDeviceArray(array)
    return array


def to_host(array, stream, out: np.ndarray | None = None) -> np.ndarray:
    """A target array's values in host memory (into `out` when given)."""
    if isinstance(array, np.ndarray):
        if out is not None and out is not array:
            out[...] = array
            return out
        return array
    host = array.copy_to_host(out, stream=stream) if out is not None else \
        array.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    return host


def strided_view(array, shape: tuple, strides: tuple, writeable: bool = False):
    """A view of `array`'s memory with this shape and these byte strides (zeros broadcast);
    numpy views are read-only unless `writeable` (outputs)."""
    shape, strides = tuple(int(n) for n in shape), tuple(int(s) for s in strides)
    if isinstance(array, np.ndarray):
        return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=writeable)
    if isinstance(array, HostDeviceArray):
        return HostDeviceArray(np.lib.stride_tricks.as_strided(array._array, shape, strides))
    return DeviceArray(shape, strides, array.dtype, array.stream, array.gpu_data,
                       array._ptr - array.gpu_data.ptr)


def broadcast_to(array, shape: tuple, writeable: bool = False):
    """numpy's broadcasting of `array` to `shape` as a zero-stride view (no copy)."""
    if tuple(array.shape) == tuple(shape):
        return array
    missing = len(shape) - array.ndim
    strides = [0] * missing + list(array.strides)
    for axis, extent in enumerate(shape):
        if axis >= missing and array.shape[axis - missing] != extent:
            strides[axis] = 0
    return strided_view(array, shape, tuple(strides), writeable)


def broadcast_shapes(shapes: list) -> tuple:
    """numpy's broadcast of these shapes; ValueError naming the arguments that disagree."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        described = ", ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {described}") \
            from None


def scalar_dtype(value) -> np.dtype:
    """The dtype numpy gives a scalar argument (Python int -> int64, float -> float64)."""
    return np.asarray(value).dtype


def is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


__all__ = ["as_device_array", "as_device_result", "broadcast_shapes", "broadcast_to", "empty",
           "is_device_array", "is_scalar", "on_target", "scalar_dtype", "strided_view",
           "to_host"]


def cast_inputs(values: list, loop: tuple, name: str, scalars: dict | None = None) -> list:
    """The inputs of a ufunc or gufunc call in the dtypes of the loop chosen for them: scalars
    (by position in `scalars`) become that dtype's numpy scalar, host arrays are cast, and a
    device array of another dtype is refused (device arrays have no .astype())."""
    out = []
    for k, (value, dtype) in enumerate(zip(values, loop, strict=True)):
        if scalars and k in scalars:
            out.append(dtype.type(value))
        elif value.dtype == dtype:
            out.append(value)
        elif isinstance(value, np.ndarray):
            out.append(value.astype(dtype))
        else:
            raise TypeError(f"argument {k + 1} of '{name}' is a device array of {value.dtype}; "
                            f"the loop chosen takes {dtype}: a compatible signature is possible "
                            "by casting but a device array does not support .astype() - convert "
                            "it first, or declare a loop for its dtype")
    return out
