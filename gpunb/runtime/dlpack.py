"""DLPack in plain ctypes: export gpunb arrays as "dltensor" capsules, import other libraries' ones.

The structs follow dlpack.h (v0.8 unversioned `DLManagedTensor` and v1 `DLManagedTensorVersioned`).
An export keeps its owner (the array) alive in `_live_exports` until the consumer calls the
deleter, or until the capsule dies unconsumed. An import renames the capsule to "used_dltensor"
(so the producer's capsule destructor leaves it alone) and calls the producer's deleter when the
importing view is garbage collected.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from dataclasses import dataclass

import numpy as np

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13

# DLDataTypeCode
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # in elements; NULL means C-contiguous
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),  # void (*)(DLManagedTensor*)
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),  # void (*)(DLManagedTensorVersioned*)
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_DELETER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DESTRUCTOR_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# capsule names must outlive every capsule: static buffers
_NAME = ctypes.create_string_buffer(b"dltensor")
_USED_NAME = ctypes.create_string_buffer(b"used_dltensor")
_VERSIONED_NAME = ctypes.create_string_buffer(b"dltensor_versioned")
_USED_VERSIONED_NAME = ctypes.create_string_buffer(b"used_dltensor_versioned")

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
# raw pointers: the destructor runs while the capsule's refcount is zero, so no py_object there
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

_live_exports: dict = {}  # address of a DLManagedTensor -> (struct, shape, strides, owner)
_exports_lock = threading.Lock()


def _release_export(address: int) -> None:
    with _exports_lock:
        _live_exports.pop(address, None)


@_DELETER_TYPE
def _export_deleter(address):
    _release_export(address)


@_DESTRUCTOR_TYPE
def _capsule_destructor(capsule):
    # an unconsumed capsule still holds our tensor: free it; a consumed one was renamed
    name = ctypes.addressof(_NAME)
    if _api.PyCapsule_IsValid(capsule, name):
        _release_export(_api.PyCapsule_GetPointer(capsule, name))


_DELETER_ADDRESS = ctypes.cast(_export_deleter, ctypes.c_void_p).value
_DESTRUCTOR_ADDRESS = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value


def dl_dtype(dtype: np.dtype) -> DLDataType:
    """The DLPack data type of a numpy dtype (numbers and bool only)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "V" and dtype.itemsize == 2 and dtype == _bfloat16_dtype():
        return DLDataType(_BFLOAT, 16, 1)
    codes = {"i": _INT, "u": _UINT, "f": _FLOAT, "c": _COMPLEX, "b": _BOOL}
    code = codes.get(dtype.kind)
    if code is None or not dtype.isnative:
        raise BufferError(f"DLPack cannot describe dtype {dtype}")
    return DLDataType(code, dtype.itemsize * 8, 1)


def np_dtype(dl: DLDataType) -> np.dtype:
    """The numpy dtype of a DLPack data type."""
    if dl.lanes != 1:
        raise TypeError(f"DLPack vector types ({dl.lanes} lanes) are not supported")
    kinds = {_INT: "i", _UINT: "u", _FLOAT: "f", _COMPLEX: "c"}
    if dl.code == _BOOL and dl.bits == 8:
        return np.dtype(np.bool_)
    if dl.code in kinds:
        return np.dtype(f"{kinds[dl.code]}{dl.bits // 8}")
    if dl.code == _BFLOAT and dl.bits == 16:
        bf16 = _bfloat16_dtype()
        if bf16 is None:
            raise TypeError("a bfloat16 DLPack tensor needs ml_dtypes for its numpy dtype: "
                            "pip install ml_dtypes")
        return bf16
    raise TypeError(f"unsupported DLPack data type code {dl.code} ({dl.bits} bits)")


def _bfloat16_dtype() -> np.dtype | None:
    """ml_dtypes' bfloat16 (numpy has none), imported only when a bfloat16 tensor is met."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def export_capsule(owner, data_ptr: int, shape: tuple, strides: tuple, dtype: np.dtype,
                   device_type: int, device_id: int = 0):
    """A "dltensor" capsule for memory at `data_ptr`; `owner` stays alive until it is released.

    `strides` are in bytes (numpy convention) and must be multiples of the item size.
    """
    dtype = np.dtype(dtype)
    ndim = len(shape)
    itemsize = dtype.itemsize
    if any(s % itemsize for s in strides):
        raise BufferError("DLPack needs strides that are whole elements")
    managed = DLManagedTensor()
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*(s // itemsize for s in strides))
    tensor = managed.dl_tensor
    tensor.data = data_ptr or None
    tensor.device = DLDevice(device_type, device_id)
    tensor.ndim = ndim
    tensor.dtype = dl_dtype(dtype)
    tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    managed.deleter = _DELETER_ADDRESS
    address = ctypes.addressof(managed)
    with _exports_lock:
        _live_exports[address] = (managed, shape_arr, strides_arr, owner)
    return _api.PyCapsule_New(address, ctypes.addressof(_NAME), _DESTRUCTOR_ADDRESS)


@dataclass(frozen=True)
class ImportedTensor:
    """A tensor taken from a DLPack capsule: geometry, device, and the producer's keep-alive.

    `data` already includes the tensor's byte_offset; `strides` are in bytes.
    """

    data: int
    shape: tuple
    strides: tuple
    dtype: np.dtype
    device_type: int
    device_id: int
    readonly: bool
    owner: object  # calls the producer's deleter when garbage collected


class _ProducerHandle:
    """Owns an imported DLManagedTensor: calls its deleter exactly once, when collected."""

    def __init__(self, address: int, deleter: int | None):
        self.address = address
        if deleter:
            weakref.finalize(self, _DELETER_TYPE(deleter), address)


def import_capsule(capsule) -> ImportedTensor:
    """Take ownership of a "dltensor" or "dltensor_versioned" capsule."""
    raw = id(capsule)  # a live capsule: its address is the PyObject*
    if _api.PyCapsule_IsValid(raw, ctypes.addressof(_NAME)):
        address = _api.PyCapsule_GetPointer(raw, ctypes.addressof(_NAME))
        managed = DLManagedTensor.from_address(address)
        readonly = False
        renamed = _USED_NAME
    elif _api.PyCapsule_IsValid(raw, ctypes.addressof(_VERSIONED_NAME)):
        address = _api.PyCapsule_GetPointer(raw, ctypes.addressof(_VERSIONED_NAME))
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major > 1:
            raise BufferError(f"DLPack version {managed.version.major} is not supported")
        readonly = bool(managed.flags & 1)  # DLPACK_FLAG_BITMASK_READ_ONLY
        renamed = _USED_VERSIONED_NAME
    else:
        raise TypeError("expected a DLPack capsule named 'dltensor' (was it already consumed?)")
    tensor = managed.dl_tensor
    dtype = np_dtype(tensor.dtype)
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] * dtype.itemsize for i in range(ndim))
    else:
        strides = c_contiguous_strides(shape, dtype.itemsize)
    data = (tensor.data or 0) + tensor.byte_offset
    _api.PyCapsule_SetName(raw, ctypes.addressof(renamed))
    owner = _ProducerHandle(address, managed.deleter)
    return ImportedTensor(data, shape, strides, dtype, tensor.device.device_type,
                          tensor.device.device_id, readonly, owner)


def c_contiguous_strides(shape: tuple, itemsize: int) -> tuple:
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def live_export_count() -> int:
    """How many exported tensors are still held (for tests of the deleter protocol)."""
    return len(_live_exports)
