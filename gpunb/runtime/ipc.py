"""CUDA IPC: a device array shared with another process on the same machine, as numba-cuda's
`devary.get_ipc_handle()` and `cuda.open_ipc_array(handle, shape, dtype)` share it.

`get_ipc_handle` returns an IpcArrayHandle: small, picklable (the 64-byte CUipcMemHandle of the
array's allocation, the array's offset in it, shape, strides, dtype). In the receiving process,
`with handle as darr:` (or `handle.open()` / `handle.close()`) maps the allocation and gives a
device array over it; the owner must keep its array alive meanwhile. Linux only, as CUDA IPC.
"""

from __future__ import annotations

import contextlib
import ctypes

import numpy as np

from gpunb.backends.cuda import driver
from gpunb.foundation.errors import LaunchError
from gpunb.runtime import arrayview as av

_IPC_HANDLE_BYTES = 64


class IpcArrayHandle:
    """A device array exported to other processes (numba-cuda's IpcArrayHandle)."""

    def __init__(self, handle: bytes, offset: int, shape: tuple, strides: tuple, dtype,
                 size: int, array_class: type, memory_class: type):
        self.handle = bytes(handle)
        # devicearray's DeviceArray and DeviceAllocation (passed in: that module imports this)
        self.array_class, self.memory_class = array_class, memory_class
        self.offset = int(offset)
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.dtype = np.dtype(dtype)
        self.size = int(size)  # bytes from the allocation's base the array needs
        self._opened: int | None = None  # the mapped base address while open

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_opened"] = None  # an open mapping belongs to the process that opened it
        return state

    def open(self):
        """Map the allocation into this process: a device array over it."""
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")
        self._opened = open_handle(self.handle)
        memory = self.memory_class(self.size, ptr=self._opened, owner=self)
        return self.array_class(self.shape, self.strides, self.dtype, 0, memory, self.offset)

    def close(self) -> None:
        """Unmap the allocation (the arrays opened from it must not be used afterwards)."""
        if self._opened is not None:
            close_handle(self._opened)
            self._opened = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<IpcArrayHandle shape={self.shape} dtype={self.dtype}>"


def get_ipc_handle(array) -> IpcArrayHandle:
    """The IPC handle of a CUDA device array (a view shares its allocation, at its offset)."""
    array.gpu_data.check_usable("get_ipc_handle")
    cu = driver.cuda_driver()
    base, _ = driver.check(cu.cuMemGetAddressRange(array._ptr), "cuMemGetAddressRange")
    handle = driver.check(cu.cuIpcGetMemHandle(int(base)), "cuIpcGetMemHandle")
    offset = array._ptr - int(base)
    low, high = av.span(array.shape, array.strides, array.itemsize)
    return IpcArrayHandle(handle_bytes(handle), offset, array.shape, array.strides,
                          array.dtype, offset + max(high, 0), type(array), type(array.gpu_data))


class RawIpcHandle:
    """numba-cuda's `IpcHandle.handle`: the CUipcMemHandle, whose `.reserved` is its 64 bytes
    (what `cuda.open_ipc_array` takes)."""

    __slots__ = ("reserved",)

    def __init__(self, reserved: bytes):
        self.reserved = bytes(reserved)

    def __reduce__(self):
        return (RawIpcHandle, (self.reserved,))


class IpcMemoryHandle:
    """numba-cuda's IpcHandle, from `cuda.current_context().get_ipc_handle(devarr.gpu_data)`:
    the memory (not an array) exported; another process maps it with `open(context)` (device
    memory) or `open_array(context, shape, dtype)`, then `close()`. `base` is the exported
    memory in the exporting process and None in a process it was pickled to."""

    def __init__(self, base, handle: bytes, size: int, offset: int, array_class: type,
                 memory_class: type):
        self.base = base
        self.handle = RawIpcHandle(handle)
        self.size, self.offset = int(size), int(offset)
        self.array_class, self.memory_class = array_class, memory_class
        self._opened: int | None = None

    def __reduce__(self):
        return (IpcMemoryHandle, (None, self.handle.reserved, self.size, self.offset,
                                  self.array_class, self.memory_class))

    def open(self, context=None):
        """The exported memory mapped into this process (its device_pointer is the memory's
        start); `context` is numba's and unused: the current context maps it."""
        if self.base is not None:
            raise ValueError("the process that made an IPC handle cannot open it: CUDA maps "
                             "no allocation into the process that owns it")
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")
        self._opened = open_handle(self.handle.reserved)
        return self.memory_class(self.size, ptr=self._opened + self.offset, owner=self)

    def open_array(self, context, shape, dtype, strides=None):
        """A device array of `shape` and `dtype` over the mapped memory."""
        dtype = np.dtype(dtype)
        shape = av.normalize_shape(shape)
        strides = tuple(strides) if strides is not None else av.c_strides(shape, dtype.itemsize)
        if av.span(shape, strides, dtype.itemsize)[1] > self.size:
            raise ValueError(f"an array of shape {shape} and dtype {dtype} needs more than the "
                             f"{self.size} bytes this IPC handle exports")
        return self.array_class(shape, strides, dtype, 0, self.open(context), 0)

    def close(self) -> None:
        """Unmap the memory (arrays opened from it must not be used afterwards)."""
        if self._opened is not None:
            close_handle(self._opened)
            self._opened = None

    def __repr__(self) -> str:
        return f"<IpcHandle of {self.size} bytes at offset {self.offset}>"


def memory_ipc_handle(memory, array_class: type) -> IpcMemoryHandle:
    """numba-cuda's Context.get_ipc_handle(memory): the IPC handle of device memory (an array's
    gpu_data; a view's is the bytes it spans)."""
    memory.check_usable("get_ipc_handle")
    cu = driver.cuda_driver()
    base, _ = driver.check(cu.cuMemGetAddressRange(memory.ptr), "cuMemGetAddressRange")
    handle = driver.check(cu.cuIpcGetMemHandle(int(base)), "cuIpcGetMemHandle")
    return IpcMemoryHandle(memory, handle_bytes(handle), memory.nbytes,
                           memory.ptr - int(base), array_class, type(memory))


def handle_bytes(handle) -> bytes:
    """The 64 bytes of a CUipcMemHandle, read through its address: cuda-bindings 13.4 and later
    no longer expose its `reserved` field (getPtr() exists in every version)."""
    return ctypes.string_at(handle.getPtr(), _IPC_HANDLE_BYTES)


def open_handle(handle: bytes) -> int:
    """Map another process's allocation; its base address here."""
    if len(bytes(handle)) != _IPC_HANDLE_BYTES:
        raise ValueError(f"a CUDA IPC handle is {_IPC_HANDLE_BYTES} bytes, got "
                         f"{len(bytes(handle))}")
    driver.ensure_context()
    cu = driver.cuda_driver()
    raw = cu.CUipcMemHandle()
    ctypes.memmove(raw.getPtr(), bytes(handle), _IPC_HANDLE_BYTES)
    flags = cu.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
    try:
        return int(driver.check(cu.cuIpcOpenMemHandle(raw, flags), "cuIpcOpenMemHandle"))
    except LaunchError as exc:
        raise LaunchError(f"{exc.message}: the handle must come from another process "
                          "(CUDA maps no allocation into the process that made it)",
                          hint="open it in the process you sent it to") from None


def close_handle(base: int) -> None:
    cu = driver.cuda_driver()
    driver.check(cu.cuIpcCloseMemHandle(base), "cuIpcCloseMemHandle")


@contextlib.contextmanager
def open_ipc_array(handle, shape, dtype, strides, offset: int, array_class: type,
                   memory_class: type):
    """A device array of `shape` and `dtype` over the allocation a raw IPC handle (the 64 bytes
    of a CUipcMemHandle) names, for the block; unmapped after (memory.open_ipc_array)."""
    dtype = np.dtype(dtype)
    shape = av.normalize_shape(shape)
    strides = tuple(strides) if strides is not None else av.c_strides(shape, dtype.itemsize)
    size = offset + max(av.span(shape, strides, dtype.itemsize)[1], 0)
    ipc = IpcArrayHandle(bytes(handle), offset, shape, strides, dtype, size, array_class,
                         memory_class)
    with ipc as array:
        yield array
