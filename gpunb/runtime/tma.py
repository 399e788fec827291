"""TMA tensor-map descriptors made on the host: `cuda.tma.descriptor(array, box, swizzle)`.

For a device array the 128 bytes are the driver's CUtensorMap (cuTensorMapEncodeTiled through
cuda.bindings), passed to the kernel by value as a __grid_constant__ parameter. For a host
array (the CPU target) gpunb encodes the same facts in its own 128-byte layout (CPU_LAYOUT),
which backends/cpu/async_tma.py reads. The hardware's rules are checked here, for both targets,
so a descriptor the GPU would refuse is refused on the CPU too, at the user's line.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

import numpy as np

from gpunb.foundation import types as t
from gpunb.foundation.errors import SourceLocation, TensorMapError
from gpunb.foundation.tensor_types import TensorMap as TensorMapType

SWIZZLES = (0, 32, 64, 128)
FILLS = ("zero", "nan")
L2_PROMOTIONS = (0, 64, 128, 256)  # bytes the L2 fetches around each TMA read (0: none)
MAX_RANK, MAX_BOX = 5, 256
# the CPU target's descriptor: address, rank, element size, dims and byte strides (innermost
# first, 5 each), box (5), swizzle bytes, fill (0 zero, 1 NaN), a magic word
CPU_LAYOUT = struct.Struct("<QII5Q5Q5IIII")
CPU_MAGIC = 0x544D4150
_CU_TYPES = {"uint8": "UINT8", "int8": "UINT8", "uint16": "UINT16", "int16": "UINT16",
             "uint32": "UINT32", "int32": "INT32", "uint64": "UINT64", "int64": "INT64",
             "float16": "FLOAT16", "float32": "FLOAT32", "float64": "FLOAT64",
             "bfloat16": "BFLOAT16", "fp8_e4m3": "UINT8", "fp8_e5m2": "UINT8"}
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TensorMap:
    """A TMA descriptor: an array, the box one copy moves and the swizzle of the shared tile.
    Pass it to a kernel like any argument; it keeps its array alive."""

    __slots__ = ("array", "target", "type", "shape", "strides", "box", "swizzle", "fill",
                 "l2_promotion", "_bytes", "_cpu_buffer")

    def __init__(self, array, target: str, ty: TensorMapType, shape: tuple, strides: tuple,
                 fill: str, l2_promotion: int = 128):
        self.array = array
        self.l2_promotion = l2_promotion
        self.target = target
        self.type = ty
        self.shape, self.strides = shape, strides
        self.box, self.swizzle, self.fill = ty.box, ty.swizzle, fill
        self._bytes = None
        self._cpu_buffer = None

    def __repr__(self) -> str:
        return (f"<TMA descriptor of a {self.target} array {self.shape} {self.type.dtype}: "
                f"box {self.box}, swizzle {self.swizzle}>")

    # ---- what a launch packs ---------------------------------------------------------------------

    def cuda_bytes(self) -> bytes:
        """The 128-byte CUtensorMap (encoded by the driver once)."""
        if self._bytes is None:
            self._bytes = _encode_cuda(self)
        return self._bytes

    def cpu_address(self) -> int:
        """The address of the CPU target's 128-byte encoding (made once, kept here)."""
        if self._cpu_buffer is None:
            buffer = (ctypes.c_uint8 * 128)()
            CPU_LAYOUT.pack_into(buffer, 0, *_cpu_fields(self))
            self._cpu_buffer = buffer
        return ctypes.addressof(self._cpu_buffer)


def descriptor(array, box, swizzle: int = 0, *, fill: str = "zero",
               l2_promotion: int = 128) -> TensorMap:
    """A TMA descriptor of `array` (a device array for the GPU, a numpy array for the CPU
    target) copying tiles of shape `box` (numpy order: outermost first). `swizzle` is the shared
    tile's swizzle in bytes (0, 32, 64 or 128: the inner box row must fit in it); `fill` is what
    out-of-bounds elements read as ("zero", or "nan" for floating types); `l2_promotion` the
    bytes (0, 64, 128 or 256) the L2 cache fetches around each read (a GPU performance hint,
    CUtensorMapL2promotion; the CPU target's copies do not depend on it)."""
    target, shape, strides, data, dtype = _array_facts(array)
    elem = _element_type(dtype)
    box = _box(box, len(shape))
    _check(shape, strides, data, box, swizzle, fill, elem)
    if l2_promotion not in L2_PROMOTIONS:
        raise _fail(f"l2_promotion={l2_promotion!r} is not a TMA L2 promotion",
                    "use 0, 64, 128 or 256 (bytes)")
    ty = TensorMapType(elem, len(shape), box, int(swizzle))
    tm = TensorMap(array, target, ty, shape, strides, fill, int(l2_promotion))
    if target == "cuda":
        tm.cuda_bytes()  # the driver's own checks, reported here rather than at a launch
    return tm


# ---- checks (cuTensorMapEncodeTiled's requirements) ----------------------------------------------


def _fail(message: str, hint: str | None = None) -> TensorMapError:
    return TensorMapError(message, _caller(), hint=hint)


def _caller() -> SourceLocation | None:
    frame = sys._getframe(1)
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno, 0)
        frame = frame.f_back
    return None


def _array_facts(array) -> tuple:
    """(target, shape, byte strides, data address, dtype) of a host or device array."""
    from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

    if isinstance(array, HostDeviceArray):
        array = array._array
    if isinstance(array, np.ndarray):
        return "cpu", array.shape, array.strides, array.ctypes.data, array.dtype
    from gpunb.runtime import torch_tensors

    try:
        geo = torch_tensors.geometry(array)  # a plain torch tensor, bfloat16 and fp8 included
    except TypeError as exc:  # a tensor without reachable data (meta, freed storage, vmap)
        raise _fail(f"cuda.tma.descriptor: {exc}") from None
    if geo is not None:
        return "cuda" if geo.on_cuda else "cpu", geo.shape, geo.strides, geo.pointer, geo.dtype
    desc = None
    if isinstance(array, DeviceArray) or hasattr(type(array), "__cuda_array_interface__"):
        try:
            desc = array.__cuda_array_interface__
        except (TypeError, AttributeError):
            desc = None
        # an opaque element ("<V2": torch's and CuPy's bfloat16) is named by DLPack
        if desc is not None and not isinstance(array, DeviceArray) and \
                "V" in str(desc.get("typestr", "")) and hasattr(array, "__dlpack__"):
            desc = None
    if desc is None and hasattr(array, "__dlpack__"):
        from gpunb.runtime import dlpack

        tensor = dlpack.import_capsule(array.__dlpack__(stream=-1))
        if tensor.device_type in (dlpack.kDLCPU, dlpack.kDLCUDAHost):
            raise _fail("cuda.tma.descriptor of a host DLPack array: pass a numpy array")
        return "cuda", tensor.shape, tensor.strides, tensor.data, tensor.dtype
    if desc is not None:
        from gpunb.runtime import arrayview as av
        from gpunb.runtime.devicearray import cai_dtype

        dtype = cai_dtype(desc)
        shape = tuple(desc["shape"])
        strides = desc.get("strides") or av.c_strides(shape, dtype.itemsize)
        if dtype.kind == "V" and hasattr(array, "dtype"):  # CuPy's bfloat16 as "<V2"
            dtype = np.dtype(array.dtype)
        return "cuda", shape, tuple(strides), desc["data"][0] or 0, dtype
    raise _fail(f"cuda.tma.descriptor needs a device array (GPU) or a numpy array (CPU "
                f"target), got a {type(array).__name__}")


def _element_type(dtype) -> t.Type:
    try:
        elem = t.from_dtype(dtype)
    except TypeError:
        elem = None
    if elem is None or str(elem) not in _CU_TYPES:
        raise _fail(f"TMA copies integers, float16/32/64, bfloat16 and fp8, not {dtype}")
    return elem


def _box(box, rank: int) -> tuple:
    example = f"e.g. box=({', '.join(['64'] * rank)})"
    try:
        box = (box,) if isinstance(box, (int, np.integer)) else tuple(box)
    except TypeError:  # a float, None...: not a size, nor a sequence of them
        raise _fail(f"the box {box!r} must be a tuple of {rank} integer sizes", example) from None
    if len(box) != rank:
        raise _fail(f"the box {box!r} must give one size per dimension of the {rank}-d array",
                    example)
    wrong = [b for b in box if isinstance(b, bool) or not isinstance(b, (int, np.integer))]
    if wrong:
        raise _fail(f"the box {box!r} holds {wrong[0]!r} ({type(wrong[0]).__name__}); box "
                    "sizes are integers", f"{example}; int(...) a computed size")
    return tuple(int(b) for b in box)


def _check(shape, strides, data: int, box, swizzle, fill, elem: t.Type) -> None:
    itemsize = t.sizeof(elem)
    rank = len(shape)
    if not 1 <= rank <= MAX_RANK:
        raise _fail(f"TMA handles arrays of 1 to {MAX_RANK} dimensions, not {rank}")
    if any(b < 1 or b > MAX_BOX for b in box):
        raise _fail(f"every box size must be between 1 and {MAX_BOX}, got {box}")
    if box[-1] * itemsize % 16:
        raise _fail(f"the box's inner row is {box[-1] * itemsize} bytes; TMA moves whole "
                    "16-byte units", f"make box[-1] a multiple of {16 // itemsize}")
    if swizzle not in SWIZZLES:
        raise _fail(f"swizzle={swizzle!r} is not a TMA swizzle", "use 0, 32, 64 or 128 (bytes)")
    if swizzle and box[-1] * itemsize > swizzle:
        raise _fail(f"the box's inner row is {box[-1] * itemsize} bytes, wider than the "
                    f"{swizzle}-byte swizzle", f"use box[-1] <= {swizzle // itemsize}, or a "
                    "wider swizzle")
    if fill not in FILLS or (fill == "nan" and not isinstance(elem, (t.Float, t.BFloat16))):
        raise _fail(f"fill={fill!r}: out-of-bounds elements read as 'zero', or 'nan' for "
                    "floating-point arrays")
    if data % 16:
        raise _fail("the array's data is not 16-byte aligned, as TMA needs",
                    "pass the whole allocation (or a view starting at a 16-byte boundary)")
    if strides[-1] != itemsize:
        raise _fail("the array's last axis is not contiguous; TMA reads rows of contiguous "
                    "elements", "use a C-contiguous array (np.ascontiguousarray)")
    for axis in range(rank - 1):
        if strides[axis] % 16 or strides[axis] <= 0 or strides[axis] >= 1 << 40:
            raise _fail(f"the stride of axis {axis} is {strides[axis]} bytes; TMA needs "
                        "positive multiples of 16 below 2**40",
                        "pad the rows to a multiple of 16 bytes")
    if any(n < 1 or n > 1 << 32 for n in shape):
        raise _fail(f"TMA handles dimensions of 1 to 2**32 elements, got {shape}")


# ---- encodings ---------------------------------------------------------------------------------


def _cpu_fields(tm: TensorMap) -> tuple:
    rank = len(tm.shape)
    itemsize = t.sizeof(tm.type.dtype)
    dims = list(reversed(tm.shape)) + [1] * (MAX_RANK - rank)
    strides = list(reversed(tm.strides)) + [0] * (MAX_RANK - rank)
    box = list(reversed(tm.box)) + [1] * (MAX_RANK - rank)
    data = _array_facts(tm.array)[3]
    return (data, rank, itemsize, *dims, *strides, *box, tm.swizzle,
            FILLS.index(tm.fill), CPU_MAGIC)


def _encode_cuda(tm: TensorMap) -> bytes:
    """cuTensorMapEncodeTiled's 128 bytes for this descriptor."""
    from gpunb.backends.cuda import driver

    cu = driver.cuda_driver()
    rank = len(tm.shape)
    data = _array_facts(tm.array)[3]
    kind = getattr(cu.CUtensorMapDataType,
                   f"CU_TENSOR_MAP_DATA_TYPE_{_CU_TYPES[str(tm.type.dtype)]}")
    swizzle = getattr(cu.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" +
                      ("NONE" if tm.swizzle == 0 else f"{tm.swizzle}B"))
    fill = (cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE if tm.fill == "zero"
            else cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    result = cu.cuTensorMapEncodeTiled(
        kind, rank, data, [cu.cuuint64_t(n) for n in reversed(tm.shape)],
        [cu.cuuint64_t(s) for s in list(reversed(tm.strides))[1:]],
        [cu.cuuint32_t(b) for b in reversed(tm.box)], [cu.cuuint32_t(1)] * rank,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        getattr(cu.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_" +
                ("NONE" if tm.l2_promotion == 0 else f"L2_{tm.l2_promotion}B")), fill)
    err, tensor_map = result[0], result[1]
    if int(err) != 0:
        raise _fail(f"cuTensorMapEncodeTiled refused the descriptor ({err!r}) of a "
                    f"{tm.shape} {tm.type.dtype} array with box {tm.box}, swizzle {tm.swizzle}")
    return b"".join(int(word).to_bytes(8, "little") for word in tensor_map.opaque)
