"""Device arrays: `DeviceArray` in GPU memory (CUDA target) and `HostDeviceArray` (CPU target).

Both have numba's DeviceNDArray surface (shape, strides in bytes, copy_to_host, copy_to_device,
basic slicing views, reshape, ravel, T) and the same copy semantics, so a program written for the
GPU runs unchanged on the CPU target. DeviceArray exports __cuda_array_interface__ v3 and DLPack
(kDLCUDA); HostDeviceArray exports __array_interface__ and DLPack through numpy (kDLCPU).

Both are values to `copy` and `pickle`: copy.copy and copy.deepcopy make a new allocation holding
the data (numba's device_array_like + copy_to_device), and a pickle carries the data - copied to
the host, and to a new allocation on the unpickling process's current device - never an address,
which means nothing in another process (and under fork, only the memory as it was at the fork).
"""

from __future__ import annotations

import ctypes

import numpy as np

from gpunb.backends.cuda import driver
from gpunb.runtime import arrayview as av
from gpunb.runtime import capture, captured_copies, dlpack, ipc
from gpunb.runtime.allocation import (  # noqa: F401 - DeviceAllocation is imported from here
    DeviceAllocation,
    dead_memory_error,
    forked_memory_error,
)
from gpunb.runtime.array_base import ArrayBase
from gpunb.runtime.copies import copy_dtod, copy_dtoh, copy_htod, copy_peer, copy_strided
from gpunb.runtime.streams import Stream, stream_handle, sync_producer_stream


def _refuse_no_copy(copy) -> None:
    """NumPy 2's `np.array(a, copy=False)` asks for a view: a device array's data reaches the
    host only by a copy, so refuse it as numpy and numba-cuda do (ValueError)."""
    if copy is False:
        raise ValueError("`copy=False` is not supported. A copy is always created (device "
                         "memory reaches numpy only as a copy): use np.asarray(a) or "
                         "a.copy_to_host()")


class DeviceArray(ArrayBase):
    """An n-dimensional array in GPU memory (numba: DeviceNDArray)."""

    __cuda_memory__ = True
    # kernels that read a device array global capture its address (numba's by-reference
    # capture): the target whose kernels may do so (compiler/values.py, cache/encode.py)
    __gpunb_device_array__ = "cuda"

    def __init__(self, shape, strides=None, dtype=np.float64, stream=0, gpu_data=None,
                 offset: int = 0):
        shape = av.normalize_shape(shape)
        dtype = np.dtype(dtype)
        strides = av.c_strides(shape, dtype.itemsize) if strides is None else tuple(
            int(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(f"strides {strides} do not match shape {shape}")
        self._init_geometry(shape, strides, dtype)
        if gpu_data is None:
            low, high = av.span(shape, strides, dtype.itemsize)
            gpu_data = DeviceAllocation(high - low)
            offset = -low
        self.gpu_data = gpu_data
        self.stream = stream
        self._ptr = gpu_data.ptr + offset if self.size else gpu_data.ptr
        # what ArgPacker writes into the kernel's parameter slots: data, shape, strides
        self._slots = (self._ptr,) + shape + strides

    # ---- numba compatibility -------------------------------------------------------------------

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self._ptr)

    @property
    def alloc_size(self) -> int:
        return self.gpu_data.nbytes

    @property
    def device_id(self) -> int:
        """The number of the GPU holding this array (as in cuda.gpus[n])."""
        return self.gpu_data.device_id

    def __repr__(self) -> str:
        return f"<gpunb DeviceArray shape={self.shape} dtype={self.dtype} ptr={self._ptr:#x}>"

    # ---- copies --------------------------------------------------------------------------------

    def copy_to_host(self, ary: np.ndarray | None = None, stream=0) -> np.ndarray:
        """Copy to host memory: into `ary` if given (same shape and dtype), else a new array.

        With a stream, the copy is asynchronous: synchronize the stream before reading."""
        self.gpu_data.check_usable("copy_to_host")
        if capture.open_captures and (cap := capture.current()) is not None:
            return captured_copies.copy_to_host(self, ary, stream, cap)
        if ary is not None:
            self._check_host_compatible(ary, "copy_to_host")
        if self.size == 0:
            return ary if ary is not None else np.empty(self.shape, self.dtype)
        if self._c_contiguous or self._f_contiguous:
            order = "C" if self._c_contiguous else "F"
            direct = ary is not None and _same_layout(ary, self)
            out = ary if direct else np.empty(self.shape, self.dtype, order=order)
            copy_dtoh(out, self._ptr, self.nbytes, stream)
        else:  # a strided view: row by row (cuMemcpy2D), into a C-contiguous host array
            direct = ary is not None and ary.flags.c_contiguous
            out = ary if direct else np.empty(self.shape, self.dtype)
            copy_strided(self, out, to_device=False, stream=stream)
        if ary is not None and not direct:
            ary[...] = out
            return ary
        return out

    def copy_to_device(self, ary, stream=0) -> None:
        """Copy `ary` (numpy-like, or another device array - of this GPU or, peer to peer, of
        another) into this array."""
        self.gpu_data.check_usable("copy_to_device")
        if capture.open_captures and (cap := capture.current()) is not None:
            source = _device_source(ary)
            host = _squeezed_to(ary, self.shape) if source is None and isinstance(
                ary, np.ndarray) else None
            return captured_copies.copy_to_device(self, source, host, stream, cap)
        if self.size == 0:
            return
        source = _device_source(ary)
        if source is not None:
            return self.copy_from_device(source, stream)
        host = _squeezed_to(np.asarray(ary), self.shape)
        self._check_host_compatible(host, "copy_to_device")
        if self._c_contiguous:
            copy_htod(self._ptr, np.ascontiguousarray(host), self.nbytes, stream)
        elif self._f_contiguous:
            copy_htod(self._ptr, np.asfortranarray(host), self.nbytes, stream)
        else:  # a strided view: only its own elements are written, row by row
            copy_strided(self, np.ascontiguousarray(host), to_device=True, stream=stream)

    def copy_from_device(self, source, stream=0) -> None:
        """Copy device array `source` (same shape, dtype and contiguous layout; of this GPU or,
        peer to peer, of another) into this array."""
        if source.shape != self.shape or source.dtype != self.dtype or not _same_layout(
                source, self) or not (self._c_contiguous or self._f_contiguous):
            raise ValueError("device-to-device copy needs the same shape, dtype and "
                             "contiguous layout; copy through the host otherwise")
        other = getattr(source, "gpu_data", None)
        if other is not None:
            other.check_usable("copy_to_device (the source)")
            if other.token is not self.gpu_data.token:  # another GPU: peer to peer
                copy_peer(self._ptr, self.gpu_data.token, source._ptr, other.token,
                          self.nbytes, stream)
                return
        copy_dtod(self._ptr, source._ptr, self.nbytes, stream)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        _refuse_no_copy(copy)
        host = self.copy_to_host()
        return host if dtype is None else host.astype(dtype, copy=False)

    # ---- a value to copy and pickle ------------------------------------------------------------

    def _fresh_copy(self) -> DeviceArray:
        """A new allocation on this array's device holding its data (contiguous layouts kept,
        a strided view becomes C-contiguous), copied on the device when the layout allows."""
        self.gpu_data.check_usable("copying a device array")
        if self._c_contiguous or self._f_contiguous:
            with _on_device(self.gpu_data.token):
                copy = DeviceArray(self.shape, self.strides, self.dtype, self.stream)
                copy.copy_to_device(self)
            return copy
        with _on_device(self.gpu_data.token):
            copy = DeviceArray(self.shape, None, self.dtype, self.stream)
            copy.copy_to_device(self.copy_to_host())
        return copy

    def __copy__(self) -> DeviceArray:
        return self._fresh_copy()

    def __deepcopy__(self, memo: dict) -> DeviceArray:
        copy = memo.get(id(self))
        if copy is None:
            copy = memo[id(self)] = self._fresh_copy()
        return copy

    def __reduce__(self):
        # the data, never the address: unpickled on the receiving process's current device
        return (_device_array_from_host, (self.copy_to_host(),))

    # ---- views ---------------------------------------------------------------------------------

    def _view(self, shape, strides, offset: int = 0) -> DeviceArray:
        return DeviceArray(shape, strides, self.dtype, self.stream, self.gpu_data,
                           self._ptr - self.gpu_data.ptr + offset)

    def _sliced(self, shape, strides, offset: int) -> DeviceArray:
        """A view whose gpu_data is the bytes it spans (numba's: a slice's device_pointer,
        alloc_size and IPC handle are the slice's own)."""
        start = self._ptr + offset
        low, high = av.span(shape, strides, self.itemsize)
        if not all(shape) or (low, high) == (0, self.gpu_data.nbytes) and \
                start == self.gpu_data.ptr:
            return self._view(shape, strides, offset)
        memory = self.gpu_data.view(start + low - self.gpu_data.ptr, high - low)
        return DeviceArray(shape, strides, self.dtype, self.stream, memory, -low)

    def __getitem__(self, index):
        shape, strides, offset, is_element = av.view_of(self.shape, self.strides, self.dtype,
                                                        index)
        view = self._view(shape, strides, offset) if is_element else \
            self._sliced(shape, strides, offset)
        if is_element:
            return view.copy_to_host()[()]
        return view

    def __setitem__(self, index, value) -> None:
        shape, strides, offset, _ = av.view_of(self.shape, self.strides, self.dtype, index)
        target = self._view(shape, strides, offset)
        if _device_source(value) is not None:
            target.copy_to_device(value)
            return
        target.copy_to_device(np.broadcast_to(np.asarray(value, dtype=self.dtype), shape))

    def reshape(self, *newshape, order: str = "C") -> DeviceArray:
        if len(newshape) == 1 and not isinstance(newshape[0], (int, np.integer)):
            newshape = newshape[0]
        shape, strides = av.reshaped(self.shape, self.strides, self.itemsize, newshape, order)
        return self._view(shape, strides)

    def transpose(self, *axes) -> DeviceArray:
        """numba-cuda's transpose: a 2-d array gives a new C-contiguous array holding the
        transpose (writes to it do not reach this one); identity axes give this array. Other
        ranks, which numba refuses, give numpy's strided view."""
        shape, strides = av.transposed(self.shape, self.strides, axes)
        view = self._view(shape, strides)
        if self.ndim != 2 or strides == self.strides:
            return view if self.ndim != 2 else self
        result = DeviceArray(shape, av.c_strides(shape, self.itemsize), self.dtype, self.stream)
        result.copy_to_device(view.copy_to_host())  # strided copies both ways, synchronous
        return result

    def view(self, dtype) -> DeviceArray:
        """The same device memory read as `dtype` (numba's DeviceNDArray.view)."""
        dtype = np.dtype(dtype)
        shape, strides = self._viewed_geometry(dtype)
        return DeviceArray(shape, strides, dtype, self.stream, self.gpu_data,
                           self._ptr - self.gpu_data.ptr)

    def get_ipc_handle(self):
        """An IPC handle another process opens to use this array's memory (numba-cuda's;
        Linux). Keep this array alive while the other process uses it."""
        return ipc.get_ipc_handle(self)

    def bind(self, stream=0) -> DeviceArray:
        """The same array, associated with `stream` for its copies and interface exports."""
        return DeviceArray(self.shape, self.strides, self.dtype, stream, self.gpu_data,
                           self._ptr - self.gpu_data.ptr)

    # ---- interoperability ----------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        handle = stream_handle(self.stream)
        interface = {
            "shape": self.shape,
            "strides": None if self._c_contiguous else self.strides,
            "data": (self._ptr, False),
            "typestr": self.dtype.str,
            "version": 3,
            "stream": handle if handle else None,
        }
        if self.dtype.fields is not None:
            interface["descr"] = self.dtype.descr
        return interface

    def __dlpack_device__(self) -> tuple:
        return (dlpack.kDLCUDA, self.gpu_data.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("a gpunb DeviceArray cannot be copied by __dlpack__; "
                              "copy it first (cuda.device_array_like + copy_to_device)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"this array lives on {self.__dlpack_device__()}, not {dl_device}")
        if stream != -1 and stream_handle(self.stream):
            from gpunb.runtime.streams import Stream

            Stream(stream_handle(self.stream)).synchronize()  # work on our stream is done
        return dlpack.export_capsule(self, self._ptr, self.shape, self.strides, self.dtype,
                                     dlpack.kDLCUDA, self.gpu_data.device_id)


def _device_array_from_host(host: np.ndarray) -> DeviceArray:
    """Unpickling a DeviceArray: a new allocation, on this process's current device, holding the
    pickled data in its layout."""
    array = DeviceArray(host.shape, host.strides if host.flags.f_contiguous and not
                        host.flags.c_contiguous else None, host.dtype)
    array.copy_to_device(host)
    return array


class _on_device:
    """Make the device of `token` current in this thread for the block (a copy lands on the
    device of the array it copies, whatever device is current)."""

    def __init__(self, token):
        self.token = token
        self.pushed = False

    def __enter__(self):
        if driver.current_token() is not self.token:
            driver.push_device(self.token.device_id)
            self.pushed = True
        return self

    def __exit__(self, *exc) -> bool:
        if self.pushed:
            driver.pop_device()
        return False


def _squeezed_to(host: np.ndarray, shape: tuple) -> np.ndarray:
    """numba's rule: shapes that differ only by extent-1 dimensions are compatible."""
    if host.shape != shape and tuple(n for n in host.shape if n != 1) == tuple(
            n for n in shape if n != 1):
        return host.reshape(shape)
    return host


def _same_layout(a, b) -> bool:
    return tuple(a.strides) == tuple(b.strides) or (a.size <= 1 and b.size <= 1)


def _device_source(value):
    """`value` as a DeviceArray if it lives in GPU memory (ours, or via CUDA array interface)."""
    if isinstance(value, DeviceArray):
        return value
    if hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
        return from_cuda_array_interface(value.__cuda_array_interface__, owner=value)
    return None


def from_cuda_array_interface(desc: dict, owner=None, sync: bool = True) -> DeviceArray:
    """A DeviceArray view of the memory a CUDA array interface dict describes."""
    refuse_mask(desc, owner)
    shape = tuple(desc["shape"])
    dtype = cai_dtype(desc)
    strides = desc.get("strides")
    strides = av.c_strides(shape, dtype.itemsize) if strides is None else tuple(strides)
    ptr = desc["data"][0] or 0
    if sync:
        sync_producer_stream(desc.get("stream"))  # the producer's pending writes are done
    low, high = av.span(shape, strides, dtype.itemsize)
    memory = DeviceAllocation(high - low, ptr=ptr + low, owner=owner)
    # the producer's stream becomes the array's (numba's external stream), else numba's 0
    producer = desc.get("stream")
    stream = Stream(int(producer), _external=True) if producer is not None else 0
    return DeviceArray(shape, strides, dtype, stream, memory, -low)


def refuse_mask(desc: dict, owner) -> None:
    """A masked interface (a "mask" that is not None) is refused, as numba-cuda refuses it:
    reading the data without the mask would use the elements it hides."""
    if desc.get("mask") is not None:
        from gpunb.foundation.errors import UnsupportedArrayError

        source = f"{type(owner).__name__}'s " if owner is not None else "a "
        raise UnsupportedArrayError(
            f"Masked arrays are not supported: {source}__cuda_array_interface__ has a mask, "
            "which gpunb would ignore", hint="pass the data and the mask as two arrays")


def cai_dtype(desc: dict) -> np.dtype:
    """The numpy dtype a __cuda_array_interface__ dict describes (records through `descr`)."""
    descr = desc.get("descr")
    if descr and not (len(descr) == 1 and descr[0][0] == ""):
        return np.dtype([tuple(d) for d in descr])
    return np.dtype(desc["typestr"])


class _HostMemory:
    """The CPU target's gpu_data: the address and size of a HostDeviceArray's memory."""

    __slots__ = ("ptr", "nbytes")

    def __init__(self, ptr: int, nbytes: int):
        self.ptr, self.nbytes = ptr, nbytes

    @property
    def device_pointer(self) -> int:
        return self.ptr

    def __eq__(self, other) -> bool:
        return isinstance(other, _HostMemory) and (self.ptr, self.nbytes) == (other.ptr,
                                                                               other.nbytes)

    def __hash__(self) -> int:
        return hash((self.ptr, self.nbytes))


class HostDeviceArray(ArrayBase):
    """The CPU target's "device" array: numpy memory with DeviceArray's API and copy semantics."""

    __gpunb_device_array__ = "cpu"  # captured by address by the CPU target's kernels

    def __init__(self, array: np.ndarray, stream=0):
        if not isinstance(array, np.ndarray):
            raise TypeError("HostDeviceArray wraps a numpy array")
        self._array = array
        self._init_geometry(array.shape, array.strides, array.dtype)
        self.stream = stream
        self._ptr = array.__array_interface__["data"][0]
        self._slots = (self._ptr,) + self.shape + self.strides

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self._ptr)

    @property
    def __array_interface__(self) -> dict:
        return self._array.__array_interface__

    @property
    def gpu_data(self):
        """numba's gpu_data: the memory's address as .device_pointer (numpy's memory here)."""
        return _HostMemory(self._ptr, self.nbytes)

    def __repr__(self) -> str:
        return f"<gpunb HostDeviceArray shape={self.shape} dtype={self.dtype} (CPU target)>"

    def copy_to_host(self, ary: np.ndarray | None = None, stream=0) -> np.ndarray:
        if capture.open_captures and (cap := capture.current()) is not None:
            return captured_copies.copy_to_host(self, ary, stream, cap)
        if ary is None:
            return np.array(self._array, copy=True, order="K")
        self._check_host_compatible(ary, "copy_to_host")
        ary[...] = self._array
        return ary

    def copy_to_device(self, ary, stream=0) -> None:
        if capture.open_captures and (cap := capture.current()) is not None:
            source = ary if isinstance(ary, HostDeviceArray) else None
            host = _squeezed_to(ary, self.shape) if isinstance(ary, np.ndarray) else None
            return captured_copies.copy_to_device(self, source, host, stream, cap)
        host = ary._array if isinstance(ary, HostDeviceArray) else np.asarray(ary)
        host = _squeezed_to(host, self.shape)
        self._check_host_compatible(host, "copy_to_device")
        self._array[...] = host

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.array(self._array, dtype=dtype, copy=True)

    # a value to copy and pickle, as DeviceArray: new memory holding the data, never an address
    def __copy__(self) -> HostDeviceArray:
        return HostDeviceArray(np.array(self._array, copy=True, order="K"), self.stream)

    def __deepcopy__(self, memo: dict) -> HostDeviceArray:
        copy = memo.get(id(self))
        if copy is None:
            copy = memo[id(self)] = self.__copy__()
        return copy

    def __reduce__(self):
        # numpy pickles the elements (a view's own, not its base's); streams stay behind
        return (HostDeviceArray, (np.array(self._array, copy=True, order="K"),))

    def __getitem__(self, index):
        result = self._array[av.normalize_index(index)]
        if isinstance(result, np.ndarray):
            return HostDeviceArray(result, self.stream)
        return result  # one element: a numpy scalar (a copy), as DeviceArray returns

    def __setitem__(self, index, value) -> None:
        capture.refuse("assigning to a device array's elements copies from the host now, "
                       "which a graph would not repeat", "fill the array before the capture, "
                       "or copy into it from an array: d.copy_to_device(h)")
        if isinstance(value, HostDeviceArray):
            value = value._array
        self._array[av.normalize_index(index)] = value

    def reshape(self, *newshape, order: str = "C") -> HostDeviceArray:
        if len(newshape) == 1 and not isinstance(newshape[0], (int, np.integer)):
            newshape = newshape[0]
        # the same checks as DeviceArray (views only), then numpy's reshape, which is a view here
        shape, _ = av.reshaped(self.shape, self.strides, self.itemsize, newshape, order)
        return HostDeviceArray(self._array.reshape(shape, order=order), self.stream)

    def transpose(self, *axes) -> HostDeviceArray:
        """DeviceArray.transpose's semantics: a 2-d array gives a C-contiguous copy (numba)."""
        _, strides = av.transposed(self.shape, self.strides, axes)  # DeviceArray's validation
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        view = self._array.transpose(*axes)
        if self.ndim != 2:
            return HostDeviceArray(view, self.stream)
        if strides == self.strides:
            return self
        return HostDeviceArray(np.ascontiguousarray(view), self.stream)

    def view(self, dtype) -> HostDeviceArray:
        """The same memory read as `dtype` (numba's DeviceNDArray.view)."""
        self._viewed_geometry(np.dtype(dtype))  # DeviceArray's checks, then numpy's view
        return HostDeviceArray(self._array.view(dtype), self.stream)

    def bind(self, stream=0) -> HostDeviceArray:
        return HostDeviceArray(self._array, stream)

    def __dlpack_device__(self) -> tuple:
        return (dlpack.kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kwargs = {"stream": stream}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return self._array.__dlpack__(**kwargs)
