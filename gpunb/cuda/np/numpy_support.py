"""numba.cuda.np.numpy_support under gpunb: numpy dtypes <-> kernel types.

`from_dtype(np.dtype)` gives the type a kernel sees for that dtype (records included), usable in
signatures and as the dtype of shared/local arrays; `as_dtype(type)` goes back.
"""

from __future__ import annotations

import numpy as np

from gpunb.foundation.types import Type, from_dtype, to_dtype

numpy_version = tuple(int(part) for part in np.__version__.split(".")[:2])


def as_dtype(nbtype: Type) -> np.dtype:
    """The numpy dtype of a kernel type (numba's as_dtype); a TypeError names a type that has
    none (void, tuples)."""
    try:
        return to_dtype(nbtype)
    except (KeyError, TypeError, ValueError):
        raise TypeError(f"{nbtype} cannot be represented as a NumPy dtype") from None


def carray(ptr, shape, dtype=None) -> np.ndarray:
    """A numpy array (C order) over the memory a ctypes pointer points at (numba's carray); in
    a kernel, an array view of the memory a CPointer argument points at."""
    return _pointer_array(ptr, shape, dtype)


def farray(ptr, shape, dtype=None) -> np.ndarray:
    """As carray, in Fortran order: `shape` is the array's own shape."""
    if not isinstance(shape, int):
        shape = tuple(shape)[::-1]
    return _pointer_array(ptr, shape, dtype).T


carray._gpunb_intrinsic = "cuda.np.carray"
farray._gpunb_intrinsic = "cuda.np.farray"


def _pointer_array(ptr, shape, dtype) -> np.ndarray:
    import ctypes

    ptr = getattr(ptr, "_as_parameter_", ptr)
    dtype = None if dtype is None else np.dtype(dtype)
    if isinstance(ptr, ctypes.c_void_p):
        if dtype is None:
            raise TypeError("explicit dtype required for void* argument")
        address = ptr.value or 0
    elif isinstance(ptr, ctypes._Pointer):
        own = np.dtype(ptr._type_)
        if dtype is not None and dtype != own:
            raise TypeError(f"mismatching dtype '{dtype}' for pointer {ptr}")
        dtype, address = own, ctypes.cast(ptr, ctypes.c_void_p).value or 0
    else:
        raise TypeError(f"expected a ctypes pointer, got {ptr!r}")
    count = int(np.prod(shape, dtype=np.intp))
    buffer = (ctypes.c_byte * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(buffer, dtype).reshape(shape)


__all__ = ["as_dtype", "carray", "farray", "from_dtype", "numpy_version"]
