"""The host API for memory, streams and events (numba.cuda's names), for the active target.

On the CUDA target arrays live in GPU memory (DeviceArray); on the CPU target they are
HostDeviceArrays over numpy memory with the same copy semantics (`to_device` copies, `copy_to_host`
copies), so code moves between targets unchanged. Each function takes `target=` ("cuda", "cpu" or
"auto"); by default it follows gpunb.set_target / GPUNB_TARGET.
"""

from __future__ import annotations

import contextlib
import ctypes
import weakref

import numpy as np

from gpunb.backends.cuda import capture_safe, driver
from gpunb.runtime import arrayview as av
from gpunb.runtime import capture, dlpack
from gpunb.runtime.devicearray import (
    DeviceAllocation,
    DeviceArray,
    HostDeviceArray,
    cai_dtype,
    from_cuda_array_interface,
    refuse_mask,
)
from gpunb.runtime.streams import (
    CpuEvent,
    CpuStream,
    Event,
    Stream,
    event_elapsed_time,
    stream_handle,
)


class _DeviceNDArrayKind(type):
    """numba's DeviceNDArray as one class for both targets: isinstance holds for a DeviceArray
    (GPU memory) and a HostDeviceArray (the CPU target's); calling it allocates for the active
    target, as numba's constructor does."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, (DeviceArray, HostDeviceArray))

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, (DeviceArray, HostDeviceArray))

    def __call__(cls, shape, strides=None, dtype=np.float64, stream=0, gpu_data=None):
        if gpu_data is not None:
            raise TypeError("DeviceNDArray(gpu_data=...) is numba's allocator internals; gpunb "
                            "allocates the memory itself (use cuda.device_array)")
        shape = av.normalize_shape(shape)
        return device_array(shape, dtype, strides=tuple(strides) if strides else None,
                            stream=stream)


class DeviceNDArray(metaclass=_DeviceNDArrayKind):
    """numba's device array class (see _DeviceNDArrayKind)."""

CU_MEMHOSTALLOC_PORTABLE = 0x01
CU_MEMHOSTALLOC_DEVICEMAP = 0x02
CU_MEMHOSTALLOC_WRITECOMBINED = 0x04
CU_MEMHOSTREGISTER_DEVICEMAP = 0x02
CU_MEM_ATTACH_GLOBAL = 0x01
CU_MEM_ATTACH_HOST = 0x02

__all__ = [
    "DeviceArray", "DeviceNDArray", "Event", "HostDeviceArray", "Stream", "as_cuda_array",
    "default_stream", "device_array", "device_array_like", "event", "event_elapsed_time",
    "external_stream", "from_cuda_array_interface", "from_dlpack", "is_cuda_array",
    "legacy_default_stream", "managed_array", "mapped", "mapped_array", "mapped_array_like",
    "open_ipc_array",
    "per_thread_default_stream", "pinned", "pinned_array", "pinned_array_like", "stream",
    "to_device",
]


def _on_host(target: str | None) -> bool:
    """Whether arrays for this target (None: the active one) live in host memory: the CPU
    target's "device" memory is numpy memory."""
    from gpunb.runtime.target import active_target

    return active_target(target) == "cpu"


# ---- arrays ------------------------------------------------------------------------------------


def to_device(ary, stream=0, copy: bool = True, to=None, *, target: str | None = None):
    """A device array holding a copy of `ary` (or copy into `to` and return it)."""
    if to is not None:
        to.copy_to_device(ary, stream=stream)
        return to
    capture.refuse_allocation("cuda.to_device()")
    if _on_host(target):
        host = _as_host(ary)
        av.check_dtype(host.dtype, "cuda.to_device()")
        return HostDeviceArray(np.array(host, copy=True, order="K") if copy else
                               np.empty_like(host, order="K"), stream)
    if isinstance(ary, DeviceArray) and (ary.is_c_contiguous() or ary.is_f_contiguous()):
        device = device_array_like(ary, stream=stream, target="cuda")
        if copy:
            device.copy_to_device(ary, stream=stream)  # device to device
        return device
    host = _as_host(ary)
    av.check_dtype(host.dtype, "cuda.to_device()")
    order = "F" if host.flags.f_contiguous and not host.flags.c_contiguous else "C"
    device = device_array(host.shape, host.dtype, order=order, stream=stream, target="cuda")
    if copy:
        device.copy_to_device(host, stream=stream)
    return device


def _as_host(ary) -> np.ndarray:
    if isinstance(ary, HostDeviceArray):
        return ary._array
    if isinstance(ary, DeviceArray):
        return ary.copy_to_host()
    return np.asarray(ary)


def device_array(shape, dtype=np.float64, strides=None, order: str = "C", stream=0, *,
                 target: str | None = None):
    """An uninitialised device array (numba: cuda.device_array)."""
    capture.refuse_allocation("cuda.device_array()")
    shape = av.normalize_shape(shape)
    av.check_order(order)
    dtype = np.dtype(dtype)
    av.check_dtype(dtype, "cuda.device_array()")
    if strides is None:
        strides = av.f_strides(shape, dtype.itemsize) if order == "F" else \
            av.c_strides(shape, dtype.itemsize)
    if _on_host(target):
        return HostDeviceArray(_host_empty(shape, dtype, strides), stream)
    return DeviceArray(shape, strides, dtype, stream)


def _host_empty(shape: tuple, dtype: np.dtype, strides: tuple) -> np.ndarray:
    """Uninitialised numpy memory with exactly these strides."""
    low, high = av.span(shape, strides, dtype.itemsize)
    raw = np.empty(high - low, dtype=np.uint8)
    return np.ndarray(shape, dtype, buffer=raw, offset=-low, strides=strides)


def device_array_like(ary, stream=0, *, target: str | None = None):
    """An uninitialised device array of `ary`'s shape, dtype and (contiguous) layout."""
    return device_array(ary.shape, ary.dtype, strides=contiguous_strides_like(ary),
                        order=_order_like(ary), stream=stream, target=target)


def contiguous_strides_like(ary) -> tuple | None:
    """Strides of a new contiguous array that keeps `ary`'s order of strides (numba-cuda's
    rule, after numpy's empty_like): None where C or F order already does (contiguous input,
    one dimension)."""
    if _is_f_only(ary) or ary.ndim <= 1 or _is_c(ary):
        return None
    by_stride = sorted(range(ary.ndim), key=lambda k: ary.strides[k])
    strides = [0] * ary.ndim
    step = np.dtype(ary.dtype).itemsize
    for k in by_stride:
        strides[k] = step
        step *= ary.shape[k]
    return tuple(strides)


def _is_c(ary) -> bool:
    if isinstance(ary, np.ndarray):
        return bool(ary.flags.c_contiguous)
    is_c = getattr(ary, "is_c_contiguous", None)
    return bool(is_c and is_c())


def _order_like(ary) -> str:
    return "F" if _is_f_only(ary) else "C"


def _is_f_only(ary) -> bool:
    """Whether a new array like `ary` is Fortran-ordered: F-contiguous arrays, and views whose
    strides grow from the first axis to the last (numpy's zeros_like keeps that order)."""
    if isinstance(ary, np.ndarray):
        c, f = ary.flags.c_contiguous, ary.flags.f_contiguous
    else:
        is_f = getattr(ary, "is_f_contiguous", None)
        is_c = getattr(ary, "is_c_contiguous", None)
        if not (is_f and is_c):
            return False
        c, f = is_c(), is_f()
    if c or f:
        return f and not c
    strides = [abs(s) for s, n in zip(ary.strides, ary.shape, strict=True) if n > 1]
    return len(strides) > 1 and strides == sorted(strides) and strides[0] < strides[-1]


# ---- page-locked host memory -------------------------------------------------------------------


def pinned_array(shape, dtype=np.float64, strides=None, order: str = "C", *,
                 target: str | None = None) -> np.ndarray:
    """A host array in page-locked memory (fast, asynchronous copies); plain numpy on the CPU."""
    capture.refuse_allocation("cuda.pinned_array()")
    shape = av.normalize_shape(shape)
    av.check_order(order)
    dtype = np.dtype(dtype)
    av.check_dtype(dtype, "cuda.pinned_array()")
    if _on_host(target):
        return _strided_empty(shape, dtype, strides, order)
    return _host_alloc(shape, dtype, strides, order, 0)


def pinned_array_like(ary, *, target: str | None = None) -> np.ndarray:
    return pinned_array(ary.shape, ary.dtype, strides=contiguous_strides_like(ary),
                        order=_order_like(ary), target=target)


def mapped_array(shape, dtype=np.float64, strides=None, order: str = "C", stream=0,
                 portable: bool = False, wc: bool = False, *, target: str | None = None):
    """A host array the GPU can read and write directly (zero-copy); plain numpy on the CPU.

    On CUDA the result is a numpy array that also has __cuda_array_interface__ (its device
    address), so kernels use it in place."""
    capture.refuse_allocation("cuda.mapped_array()")
    shape = av.normalize_shape(shape)
    av.check_order(order)
    dtype = np.dtype(dtype)
    av.check_dtype(dtype, "cuda.mapped_array()")
    if _on_host(target):
        return _strided_empty(shape, dtype, strides, order)
    flags = CU_MEMHOSTALLOC_DEVICEMAP
    flags |= CU_MEMHOSTALLOC_PORTABLE if portable else 0
    flags |= CU_MEMHOSTALLOC_WRITECOMBINED if wc else 0
    host = _host_alloc(shape, dtype, strides, order, flags)
    cu = driver.cuda_driver()
    device_ptr = driver.check(cu.cuMemHostGetDevicePointer(host.ctypes.data, 0),
                              "cuMemHostGetDevicePointer")
    mapped = host.view(MappedArray)
    mapped._device_ptr = int(device_ptr)
    mapped._stream = stream  # its interface names it, as a device array's does
    return mapped


def mapped_array_like(ary, stream=0, portable: bool = False, wc: bool = False, *,
                      target: str | None = None):
    return mapped_array(ary.shape, ary.dtype, strides=contiguous_strides_like(ary),
                        order=_order_like(ary), stream=stream, portable=portable, wc=wc,
                        target=target)


def managed_array(shape, dtype=np.float64, strides=None, order: str = "C", stream=0,
                  attach_global: bool = True, *, target: str | None = None):
    """An array in CUDA managed (unified) memory: a numpy array on the host that kernels use in
    place, the driver migrating its pages (numba-cuda's managed_array); plain numpy on the CPU
    target. attach_global=False attaches it to the host (devices of compute capability 6.0+
    still reach it). Synchronize before reading what a kernel wrote."""
    shape = av.normalize_shape(shape)
    av.check_order(order)
    dtype = np.dtype(dtype)
    av.check_dtype(dtype, "cuda.managed_array()")
    if _on_host(target):
        return _strided_empty(shape, dtype, strides, order)
    if strides is None:
        strides = av.f_strides(shape, dtype.itemsize) if order == "F" else \
            av.c_strides(shape, dtype.itemsize)
    low, high = av.span(shape, strides, dtype.itemsize)
    nbytes = max(high - low, 1)
    driver.ensure_context()
    cu = driver.cuda_driver()
    flags = CU_MEM_ATTACH_GLOBAL if attach_global else CU_MEM_ATTACH_HOST
    ptr = int(driver.check(capture_safe.relaxed(cu, cu.cuMemAllocManaged, nbytes, flags),
                           f"cuMemAllocManaged({nbytes} bytes)"))  # (relaxed: as allocation.py)
    block = type("_ManagedBlock", (ctypes.c_uint8 * nbytes,), {}).from_address(ptr)
    finalizer = weakref.finalize(block, _free_managed, cu, ptr)
    finalizer.atexit = False
    raw = np.frombuffer(block, dtype=np.uint8)  # keeps `block` (and so the memory) alive
    host = np.ndarray(shape, dtype, buffer=raw, offset=-low if high > low else 0,
                      strides=strides)
    managed = host.view(MappedArray)
    managed._device_ptr = ptr  # one address for host and device (unified addressing)
    managed._stream = stream
    return managed


def _free_managed(cu, ptr: int) -> None:
    try:
        capture_safe.relaxed(cu, cu.cuMemFree, ptr)  # (the collector may run it in a capture)
    except Exception:  # noqa: BLE001 - a destroyed context frees its allocations itself
        pass


def open_ipc_array(handle, shape, dtype, strides=None, offset: int = 0):
    """numba-cuda's open_ipc_array: `with cuda.open_ipc_array(handle, shape, dtype) as darr:`, a
    device array over another process's allocation that a raw IPC handle (the 64 bytes of a
    CUipcMemHandle, e.g. IpcArrayHandle.handle) names; unmapped when the block ends."""
    from gpunb.runtime import ipc

    return ipc.open_ipc_array(handle, shape, dtype, strides, offset, DeviceArray,
                              DeviceAllocation)


class MappedArray(np.ndarray):
    """Host memory mapped into the GPU's address space (mapped_array), or managed memory
    (managed_array): numpy on the host, CAI for kernels."""

    def _allocation(self) -> np.ndarray:
        """The array mapped_array/managed_array made (a view's base), holding the facts."""
        base = self
        while not hasattr(base, "_device_ptr") and isinstance(base.base, np.ndarray):
            base = base.base
        return base

    @property
    def stream(self):
        """The stream given to mapped_array/managed_array (numba's default stream: 0)."""
        return getattr(self._allocation(), "_stream", 0)

    @property
    def __cuda_array_interface__(self) -> dict:
        base = self._allocation()
        offset = self.ctypes.data - base.ctypes.data
        handle = stream_handle(getattr(base, "_stream", 0))
        return {"shape": self.shape, "strides": None if self.flags.c_contiguous else
                self.strides, "data": (base._device_ptr + offset, False),
                "typestr": self.dtype.str, "version": 3, "stream": handle if handle else None}


def _strided_empty(shape, dtype, strides, order) -> np.ndarray:
    if strides is None:
        return np.empty(shape, dtype=dtype, order=order)
    return _host_empty(shape, dtype, tuple(strides))


def _host_alloc(shape, dtype, strides, order, flags: int) -> np.ndarray:
    if strides is None:
        strides = av.f_strides(shape, dtype.itemsize) if order == "F" else \
            av.c_strides(shape, dtype.itemsize)
    low, high = av.span(shape, strides, dtype.itemsize)
    nbytes = max(high - low, 1)
    driver.ensure_context()
    cu = driver.cuda_driver()
    # relaxed capture mode: no error while another library captures (as allocation.py)
    ptr = int(driver.check(capture_safe.relaxed(cu, cu.cuMemHostAlloc, nbytes, flags),
                           f"cuMemHostAlloc({nbytes} bytes)"))
    block = type("_PageLockedBlock", (ctypes.c_uint8 * nbytes,), {}).from_address(ptr)
    finalizer = weakref.finalize(block, _free_host, cu, ptr)
    finalizer.atexit = False
    raw = np.frombuffer(block, dtype=np.uint8)  # keeps `block` (and so the memory) alive
    if high == low:
        return np.ndarray(shape, dtype, buffer=raw, offset=0, strides=strides)
    return np.ndarray(shape, dtype, buffer=raw, offset=-low, strides=strides)


def _free_host(cu, ptr: int) -> None:
    try:
        capture_safe.relaxed(cu, cu.cuMemFreeHost, ptr)  # (the collector may run it in a capture)
    except Exception:  # noqa: BLE001 - a destroyed context frees its host allocations itself
        pass


@contextlib.contextmanager
def pinned(*arrays, target: str | None = None):
    """`with cuda.pinned(a, b):` page-locks existing host arrays for the duration of the block."""
    if _on_host(target):
        yield
        return
    registered = _register(arrays, 0)
    try:
        yield
    finally:
        _unregister(registered)


@contextlib.contextmanager
def mapped(*arrays, stream=0, target: str | None = None):
    """`with cuda.mapped(a) as d_a:` maps host arrays into the GPU's address space; yields device
    arrays (one, or a list) that kernels use in place."""
    if _on_host(target):
        views = [HostDeviceArray(np.asarray(a), stream) for a in arrays]
        yield views[0] if len(views) == 1 else views
        return
    registered = _register(arrays, CU_MEMHOSTREGISTER_DEVICEMAP)
    try:
        cu = driver.cuda_driver()
        views = []
        for host, start in registered:
            device_ptr = int(driver.check(cu.cuMemHostGetDevicePointer(start, 0),
                                          "cuMemHostGetDevicePointer"))
            low, high = av.span(host.shape, host.strides, host.itemsize)
            memory = DeviceAllocation(high - low, ptr=device_ptr, owner=host)
            views.append(DeviceArray(host.shape, host.strides, host.dtype, stream, memory, -low))
        yield views[0] if len(views) == 1 else views
    finally:
        _unregister(registered)


def _register(arrays, flags: int) -> list:
    driver.ensure_context()
    cu = driver.cuda_driver()
    done = []
    try:
        for array in arrays:
            host = np.asarray(array)
            low, high = av.span(host.shape, host.strides, host.itemsize)
            if high == low:
                continue
            start = host.ctypes.data + low
            driver.check(cu.cuMemHostRegister(start, high - low, flags), "cuMemHostRegister")
            done.append((host, start))
    except BaseException:
        _unregister(done)
        raise
    return done


def _unregister(registered: list) -> None:
    cu = driver.cuda_driver()
    for _, start in registered:
        cu.cuMemHostUnregister(start)


# ---- foreign arrays ----------------------------------------------------------------------------


def is_cuda_array(obj) -> bool:
    """True for objects exporting __cuda_array_interface__ (CuPy, PyTorch, numba, gpunb)."""
    return hasattr(obj, "__cuda_array_interface__")


def as_cuda_array(obj, sync: bool = True) -> DeviceArray:
    """A DeviceArray view (no copy) of any object with __cuda_array_interface__."""
    if isinstance(obj, DeviceArray):
        return obj
    if not is_cuda_array(obj):
        raise TypeError(f"{type(obj).__name__} does not export __cuda_array_interface__")
    return from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj, sync=sync)


def check_interface(desc, owner) -> dict:
    """A __cuda_array_interface__ dict whose entries have the types CAI v3 gives them; a clear
    TypeError naming the bad entry otherwise (a broken exporter must not reach the driver)."""
    def bad(what: str):
        return TypeError(f"{type(owner).__name__} has a bad __cuda_array_interface__: {what}")

    if not isinstance(desc, dict):
        raise bad(f"expected a dict, got {type(desc).__name__}")
    missing = [k for k in ("shape", "typestr", "data") if k not in desc]
    if missing:
        raise bad(f"missing {', '.join(repr(k) for k in missing)}")
    shape, strides, data = desc["shape"], desc.get("strides"), desc["data"]
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(n, (int, np.integer)) and n >= 0 for n in shape):
        raise bad(f"'shape' must be a tuple of non-negative ints, got {shape!r}")
    if strides is not None and (not isinstance(strides, (tuple, list)) or len(strides) !=
                                len(shape) or not all(isinstance(n, (int, np.integer))
                                                      for n in strides)):
        raise bad(f"'strides' must be None or {len(shape)} ints, got {strides!r}")
    if not isinstance(data, (tuple, list)) or len(data) != 2 or not (
            data[0] is None or isinstance(data[0], (int, np.integer))):
        raise bad(f"'data' must be (pointer, read_only), got {data!r}")
    try:
        cai_dtype(desc)
    except (TypeError, ValueError, KeyError) as exc:
        raise bad(f"cannot read its dtype ({exc})") from None
    refuse_mask(desc, owner)
    return desc


def from_dlpack(obj):
    """A view (no copy) of a DLPack-exporting object: DeviceArray for GPU memory, a numpy array
    for host memory."""
    device_type = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else None
    if device_type in (None, dlpack.kDLCPU, dlpack.kDLCUDAHost):
        return np.from_dlpack(obj)
    tensor = dlpack.import_capsule(obj.__dlpack__(stream=1))
    if tensor.device_type not in (dlpack.kDLCUDA, dlpack.kDLCUDAManaged):
        raise TypeError(f"DLPack device type {tensor.device_type} is not a CUDA device")
    low, high = av.span(tensor.shape, tensor.strides, tensor.dtype.itemsize)
    memory = DeviceAllocation(high - low, ptr=tensor.data + low, owner=tensor.owner)
    return DeviceArray(tensor.shape, tensor.strides, tensor.dtype, 0, memory, -low)


# ---- streams and events ------------------------------------------------------------------------


def stream(*, target: str | None = None):
    """A new stream (CUDA), or the synchronous CPU stream."""
    return CpuStream() if _on_host(target) else Stream.create()


def default_stream(*, target: str | None = None):
    return CpuStream(is_default=True) if _on_host(target) else Stream(0)


def legacy_default_stream(*, target: str | None = None):
    from gpunb.runtime.streams import CU_STREAM_LEGACY

    return CpuStream(is_default=True) if _on_host(target) else Stream(CU_STREAM_LEGACY)


def per_thread_default_stream(*, target: str | None = None):
    from gpunb.runtime.streams import CU_STREAM_PER_THREAD

    return CpuStream(is_default=True) if _on_host(target) else Stream(CU_STREAM_PER_THREAD)


def external_stream(ptr: int) -> Stream:
    """Wrap a stream made elsewhere (CuPy, PyTorch) by its CUstream address; not destroyed here."""
    return Stream(int(ptr), _external=True)


def event(timing: bool = True, *, target: str | None = None):
    """A new event (numba: cuda.event); on the CPU target, a perf_counter timestamp."""
    return CpuEvent(timing) if _on_host(target) else Event(timing)

