"""CUDA IPC: a device array shared with another process on the same machine, as numba-cuda's
`devary.get_ipc_handle()` and `cuda.open_ipc_array(handle, shape, dtype)` share it.

`get_ipc_handle` returns an IpcArrayHandle: small, picklable (the 64-byte CUipcMemHandle of the
array's allocation, the array's offset in it, shape, strides, dtype). In the receiving process,
`with handle as darr:` (or `handle.open()` / `handle.close()`) maps the allocation and gives a
device array over it; the owner must keep its array alive meanwhile. Linux only, as CUDA IPC.
"""

from __future__ import annotations

import contextlib

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
    return IpcArrayHandle(bytes(handle.reserved), offset, array.shape, array.strides,
                          array.dtype, offset + max(high, 0), type(array), type(array.gpu_data))


def open_handle(handle: bytes) -> int:
    """Map another process's allocation; its base address here."""
    if len(bytes(handle)) != _IPC_HANDLE_BYTES:
        raise ValueError(f"a CUDA IPC handle is {_IPC_HANDLE_BYTES} bytes, got "
                         f"{len(bytes(handle))}")
    driver.ensure_context()
    cu = driver.cuda_driver()
    raw = cu.CUipcMemHandle()
    raw.reserved = bytes(handle)
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
