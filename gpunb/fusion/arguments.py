"""Arguments of a fused call: what each one is (scalar or array, and whose array), the form the
tracer and the launcher take it in, and the key of its signature.

numpy arrays and gpunb device arrays are used as they are; CuPy, PyTorch and numba arrays become
gpunb device views of the same memory (__cuda_array_interface__, else DLPack); lists and
anything with __array__ become numpy arrays, as numpy's ufuncs take them.
"""

from __future__ import annotations

import numpy as np

PYTHON_SCALARS = (bool, int, float)
# what kind of result a caller gets back: "numpy", "device" (gpunb), "cupy" or "torch"
FOREIGN_KINDS = ("cupy", "torch")


def prepare(value, target: str) -> tuple:
    """(value as the tracer and launcher take it, its kind: "scalar" or a result kind)."""
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    if isinstance(value, (*PYTHON_SCALARS, np.generic)) and not isinstance(value, complex):
        _refuse_complex(getattr(value, "dtype", None))
        return value, "scalar"
    if isinstance(value, np.ndarray):
        _refuse_complex(value.dtype)
        return value, ("scalar" if value.ndim == 0 else "numpy")
    from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

    if isinstance(value, (DeviceArray, HostDeviceArray)):
        _refuse_complex(value.dtype)
        return value, ("scalar" if value.ndim == 0 else "device")
    if isinstance(value, complex):
        _refuse_complex(np.dtype(complex))
    array, kind = _foreign(value, target)
    _refuse_complex(array.dtype)
    return array, ("scalar" if array.ndim == 0 else kind)


def _foreign(value, target: str) -> tuple:
    from gpunb.runtime import memory, torch_tensors

    try:
        geo = torch_tensors.geometry(value)
    except TypeError as exc:  # a tensor without reachable memory (meta, torch.func wrappers)
        raise TypeError(f"gpunb.fuse: {exc}") from None
    if geo is not None and not geo.on_cuda:  # a CPU tensor's memory as numpy, any dtype (numpy's
        return torch_tensors.host_view(value, geo), "numpy"  # from_dlpack refuses bfloat16, fp8)
    module = type(value).__module__.split(".")[0]
    kind = module if module in FOREIGN_KINDS else "device"
    if hasattr(value, "__cuda_array_interface__"):
        if target != "cuda":
            raise TypeError(f"gpunb.fuse: a CUDA array ({type(value).__name__}) cannot be used on "
                            "the CPU target; copy it to the host first, or run on the GPU "
                            "(gpunb.set_target('cuda'))")
        return memory.as_cuda_array(value), kind
    if hasattr(value, "__dlpack__"):
        array = memory.from_dlpack(value) if target == "cuda" else np.from_dlpack(value)
        return array, ("numpy" if isinstance(array, np.ndarray) else kind)
    if hasattr(value, "__array__"):
        return np.asarray(value), "numpy"
    raise TypeError(f"gpunb.fuse: an argument of type {type(value).__name__} is neither an "
                    "array nor a scalar")


def _refuse_complex(dtype) -> None:
    if dtype is not None and np.dtype(dtype).kind == "c":
        raise TypeError("gpunb.fuse: complex arguments are not supported yet")


def signature(value, kind: str):
    """What a plan depends on: the class of a Python scalar, the dtype of a numpy scalar, the
    kind, dtype and shape of an array (not its strides: views are read with their own)."""
    cls = value.__class__
    if cls in PYTHON_SCALARS:
        return cls
    if isinstance(value, np.generic):
        return value.dtype
    return (kind, cls, value.dtype, tuple(value.shape))


def result_kind(kinds: list) -> str:
    """numpy when every array argument is a numpy array, else the first other kind."""
    return next((kind for kind in kinds if kind not in ("numpy", "scalar")), "numpy")


def to_target(value, target: str):
    """An array argument in the memory the target's kernels read, without copying it back."""
    from gpunb.runtime.devicearray import DeviceArray

    if target == "cpu":
        return value.copy_to_host() if isinstance(value, DeviceArray) else value
    if isinstance(value, np.ndarray):
        from gpunb.runtime import memory

        return memory.to_device(value)
    return value


__all__ = ["prepare", "result_kind", "signature", "to_target"]
