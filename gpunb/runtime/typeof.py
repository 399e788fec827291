"""Kernel-language types of launch arguments, and a fast key that determines them.

`typeof` runs on the slow path (a new specialisation); `type_key` runs on every launch, so it
reads only what decides the type: for a numpy array its class, dtype, ndim and contiguity flags;
for a gpunb device array a key computed once when the array was made; for a Python number its
class. Anything unusual falls back to a key that *is* its type.
"""

from __future__ import annotations

import numpy as np

from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.runtime import arrayview as av
from gpunb.runtime import torch_tensors
from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

_PYTHON_SCALARS = {bool: t.boolean, int: t.int64, float: t.float64, complex: t.complex128}
_INT64_END = 1 << 63  # numba types a Python int as int64, from here to 2**64 - 1 as uint64


def _int_type(value: int) -> t.Type:
    """numba's typeof of a Python int: int64, uint64 for 2**63 .. 2**64 - 1, else refused."""
    if -_INT64_END <= value < _INT64_END:
        return t.int64
    if 0 <= value < 2 * _INT64_END:
        return t.uint64
    raise TypeError(f"the int {value} does not fit in 64 bits (numba's types for a Python int: "
                    "int64, or uint64 from 2**63 to 2**64 - 1)")


def typeof(value) -> t.Type:
    """The kernel-language type of a launch argument; TypeError for unsupported values."""
    cls = value.__class__
    if cls is int:
        return _int_type(value)
    scalar = _PYTHON_SCALARS.get(cls)
    if scalar is not None:
        return scalar
    if isinstance(value, (DeviceArray, HostDeviceArray)):
        return t.Array(_element_type(value.dtype), value.ndim, value._layout)
    if isinstance(value, np.ndarray) and not hasattr(value, "__cuda_array_interface__"):
        return _numpy_array_type(value)
    if isinstance(value, np.generic):
        return _element_type(value.dtype)
    if isinstance(value, tuple):
        names = getattr(type(value), "_fields", ())  # a namedtuple keeps its field names
        return t.Tuple(tuple(typeof(item) for item in value),
                       tuple(names) if len(names) == len(value) else ())
    geo = torch_tensors.geometry(value)
    if geo is not None:  # a plain torch tensor: its own attributes, not CAI/DLPack
        return _geometry_type(geo.shape, geo.strides, geo.dtype)
    desc = _interface_of(value)
    if desc is not None:
        if hasattr(value, "__dlpack__") and _opaque(desc):
            # an opaque element ("<V2": CuPy's bfloat16): DLPack names what it holds
            return _dlpack_type(value)
        return _interface_type(desc)
    if hasattr(value, "__dlpack__"):
        return _dlpack_type(value)
    from gpunb.runtime.arghints import ArgHint

    if isinstance(value, ArgHint):  # cuda.In(a) & co: the array's type
        return typeof(value.value)
    from gpunb.runtime.tma import TensorMap

    if isinstance(value, TensorMap):  # cuda.tma.descriptor(...): its type says box and swizzle
        return value.type
    enum_member = enum_types.enum_type(value)  # Enum / IntEnum members (numba's enum types)
    if enum_member is not None:
        return enum_member
    if isinstance(value, (bool, int, float, complex)):  # subclasses
        base = next(k for k in (bool, int, float, complex) if isinstance(value, k))
        return _int_type(int(value)) if base is int else _PYTHON_SCALARS[base]
    pointer = _ctypes_pointer_type(value)
    if pointer is not None:
        return pointer
    raise TypeError(f"cannot pass a {cls.__name__} to a kernel")


def _ctypes_pointer_type(value):
    """A ctypes pointer's type (numba types a c_void_p as voidptr, POINTER(c_int) as int32*)."""
    import ctypes

    from gpunb.foundation.pointer_types import Pointer, voidptr

    if isinstance(value, ctypes.c_void_p):
        return voidptr
    if isinstance(value, ctypes._Pointer):
        try:
            return Pointer(t.from_dtype(np.dtype(value._type_)))
        except (TypeError, ValueError, KeyError):
            return voidptr
    return None


def _element_type(dtype: np.dtype) -> t.Type:
    if not dtype.isnative:
        raise TypeError(f"arrays of non-native byte order ({dtype}) are not supported; convert "
                        f"with ary.astype(ary.dtype.newbyteorder('='))")
    return t.from_dtype(dtype)


def _numpy_array_type(value: np.ndarray) -> t.Array:
    flags = value.flags
    layout = av.layout_of(value.ndim, flags.c_contiguous, flags.f_contiguous)
    return t.Array(_element_type(value.dtype), value.ndim, layout, not flags.writeable,
                   flags.aligned)


def _geometry_type(shape: tuple, strides: tuple, dtype: np.dtype) -> t.Array:
    c, f = av.contiguity(shape, strides, dtype.itemsize)
    return t.Array(_element_type(dtype), len(shape), av.layout_of(len(shape), c, f))


def _interface_of(value):
    """The object's __cuda_array_interface__ checked (None if it has none); TypeError if reading
    it fails or it is malformed, which the launch turns into a LaunchError."""
    from gpunb.runtime.memory import check_interface

    try:
        desc = getattr(value, "__cuda_array_interface__", None)
    except Exception as exc:  # noqa: BLE001 - a broken exporter's property can raise anything
        raise TypeError(f"reading __cuda_array_interface__ of {type(value).__name__} raised "
                        f"{type(exc).__name__}: {exc}") from None
    return None if desc is None else check_interface(desc, value)


def _interface_type(desc: dict) -> t.Array:
    from gpunb.runtime.devicearray import cai_dtype

    dtype = cai_dtype(desc)
    shape = tuple(desc["shape"])
    strides = desc.get("strides")
    strides = av.c_strides(shape, dtype.itemsize) if strides is None else tuple(strides)
    return _geometry_type(shape, strides, dtype)


def _opaque(desc: dict) -> bool:
    """Elements the interface names only by size ("<V2"), not a record."""
    from gpunb.runtime.devicearray import cai_dtype

    dtype = cai_dtype(desc)
    return dtype.kind == "V" and dtype.names is None


def _dlpack_type(value) -> t.Array:
    """The type of a DLPack exporter's array; TypeError (a LaunchError at the launch) when the
    export fails - the exporter's own reason, e.g. torch's "Can't export tensors that require
    gradient, use tensor.detach()"."""
    from gpunb.runtime import dlpack

    try:
        device_type = value.__dlpack_device__()[0] if hasattr(value, "__dlpack_device__") else 1
        if device_type in (dlpack.kDLCPU, dlpack.kDLCUDAHost):
            return _numpy_array_type(np.from_dlpack(value))
        capsule = value.__dlpack__(stream=-1)
    except Exception as exc:  # noqa: BLE001 - an exporter's refusal can be any exception
        raise TypeError(f"exporting {type(value).__name__} through __dlpack__ raised "
                        f"{type(exc).__name__}: {exc}") from None
    tensor = dlpack.import_capsule(capsule)  # released when dropped
    return _geometry_type(tensor.shape, tensor.strides, tensor.dtype)


# ---- the fast key ------------------------------------------------------------------------------


def type_key(value):
    """A small hashable that determines typeof(value): equal keys mean equal types."""
    cls = value.__class__
    if cls is np.ndarray:
        flags = value.flags
        return (cls, value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous,
                flags.writeable, flags.aligned)
    if cls in _SCALAR_CLASSES:
        if cls is int and not -_INT64_END <= value < _INT64_END:
            return ("type", _int_type(value))  # uint64 (or refused): not int's usual int64
        return cls
    if cls is DeviceArray or cls is HostDeviceArray:
        return value._key
    if cls is tuple:
        return (tuple,) + tuple([type_key(item) for item in value])
    if cls in _NUMPY_SCALAR_CLASSES:
        return cls
    return _slow_key(value)


_SCALAR_CLASSES = frozenset({int, float, bool, complex})
# numpy scalar classes whose class alone fixes the dtype (np.void records do not)
_NUMPY_SCALAR_CLASSES = frozenset(
    np.dtype(c).type for c in "?bBhHiIlLqQefdgFDG" if np.dtype(c).type is not np.void)


def _slow_key(value):
    # device array subclasses, numpy subclasses, records, CAI and DLPack objects: the key is
    # the type itself (correct by construction, just not as cheap)
    if isinstance(value, (DeviceArray, HostDeviceArray)):
        return value._key
    facts = torch_tensors.type_facts(value)
    if facts is not None:  # (dtype, ndim, layout): what typeof gives it, without making it
        return (torch_tensors.TensorGeometry, *facts)
    return ("type", typeof(value))
