"""Device memory: one cuMemAlloc (or pool) block per DeviceAllocation, freed with its last view.

An allocation is an address in one process's CUDA context: it refuses to be copied or pickled
(the arrays over it copy their data instead: devicearray.py), and it knows the process that made
it, so a forked child is told why its parent's memory is unusable instead of crashing on it.
"""

from __future__ import annotations

import os
import weakref

from gpunb.backends.cuda import capture_safe, driver
from gpunb.runtime import capture


class DeviceAllocation:
    """A cuMemAlloc block, freed when the last view of it is garbage collected.

    With stream_ordered=True the block comes from the device's memory pool (cuMemAllocAsync on
    the legacy default stream) and goes back to it with cuMemFreeAsync: neither waits for the
    GPU, where cuMemFree waits for all queued work. Short-lived results (gpunb.fuse's) use it.
    """

    __slots__ = ("ptr", "nbytes", "device_id", "token", "owner", "pid", "__weakref__")

    def __init__(self, nbytes: int, *, ptr: int | None = None, owner=None,
                 stream_ordered: bool = False):
        self.nbytes = int(nbytes)
        self.owner = owner  # for foreign memory (DLPack imports): keeps the producer alive
        self.pid = os.getpid()  # a forked child inherits the object, not the CUDA context
        # the context (device, and which of its contexts after a reset) the memory belongs to
        self.token = driver.current_token()
        self.device_id = self.token.device_id
        if ptr is not None:
            self.ptr = int(ptr)
            return
        self.ptr = 0
        if self.nbytes:
            capture.refuse_allocation("a device array")
            cu = driver.cuda_driver()
            free = _free_device
            # relaxed capture mode (capture_safe.py): an allocation while another library
            # captures in global mode - torch.cuda.graph, in this thread or another - is then
            # no error that invalidates that capture (torch's own allocator allocates so)
            if stream_ordered and _has_memory_pools(self.device_id) and \
                    capture_safe.legacy_stream_usable(cu):
                handle = driver.check(
                    capture_safe.relaxed(cu, cu.cuMemAllocAsync, self.nbytes, cu.CUstream(0)),
                    f"cuMemAllocAsync({self.nbytes} bytes)")
                free = _free_device_async
            else:  # (also while a blocking stream captures: the legacy stream is refused then)
                handle = driver.check(capture_safe.relaxed(cu, cu.cuMemAlloc, self.nbytes),
                                      f"cuMemAlloc({self.nbytes} bytes)")
            self.ptr = int(handle)
            finalizer = weakref.finalize(self, free, cu, self.ptr, self.token)
            finalizer.atexit = False  # the driver frees everything at exit; it may be gone

    @property
    def device_pointer(self) -> int:
        """numba's MemoryPointer.device_pointer: the block's address (int() of it works)."""
        return self.ptr

    def view(self, start: int, nbytes: int) -> DeviceAllocation:
        """`nbytes` of this block from byte `start` (numba's MemoryPointer.view): an array
        view's gpu_data, so its device_pointer, alloc_size and IPC handle are the view's, as in
        numba-cuda. It keeps this block alive and frees nothing itself."""
        part = DeviceAllocation.__new__(DeviceAllocation)
        part.ptr, part.nbytes = self.ptr + int(start), int(nbytes)
        part.device_id, part.token, part.pid = self.device_id, self.token, self.pid
        part.owner = self
        return part

    def check_usable(self, what: str) -> None:
        """LaunchError when the memory's context was reset (gpunb.cuda.reset()), or belongs to
        the process this one was forked from."""
        if self.pid != os.getpid():
            raise forked_memory_error(what, self.pid)
        if not self.token.alive:
            raise dead_memory_error(what, self.device_id)

    def __reduce__(self):
        raise TypeError("a gpunb DeviceAllocation is an address in this process's CUDA context "
                        "and cannot be copied or pickled; copy or pickle the DeviceArray "
                        "instead (its data travels), or its copy_to_host()")


def forked_memory_error(what: str, parent: int):
    from gpunb.foundation.errors import LaunchError

    return LaunchError(
        f"{what}: this device array was made by process {parent}, which this process was "
        "forked from; CUDA memory and contexts do not survive a fork",
        hint="start worker processes with the 'spawn' method (multiprocessing.get_context("
             "'spawn')) and pass arrays as arguments - a pickled device array carries its data "
             "- or pass host arrays and call cuda.to_device in the worker")


def dead_memory_error(what: str, device_id: int):
    from gpunb.foundation.errors import LaunchError

    return LaunchError(
        f"{what}: this device array belonged to a CUDA context of device {device_id} that was "
        "reset (gpunb.cuda.reset()); its memory is gone",
        hint="make the array again after the reset, e.g. cuda.to_device(host_array)")


def _free_device(cu, ptr: int, token=None) -> None:
    """The finalizer's cuMemFree, in this thread's relaxed capture mode (capture_safe.py: the
    collector may run it inside anyone's graph capture)."""
    if token is not None and not token.alive:
        return  # freed with its context (the address may belong to a new array by now)
    try:
        (err,) = capture_safe.relaxed(cu, cu.cuMemFree, ptr)
        if err == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:  # collected in a thread without one
            driver.ensure_context()
            capture_safe.relaxed(cu, cu.cuMemFree, ptr)
    except Exception:  # noqa: BLE001 - a destroyed or corrupt context: nothing left to free
        pass


def _free_device_async(cu, ptr: int, token=None) -> None:
    if token is not None and not token.alive:
        return
    if not capture_safe.legacy_stream_usable(cu):
        # a blocking stream captures: a free ordered on the legacy stream would invalidate it
        # in any mode, so free it now (cuMemFree takes pool memory too)
        _free_device(cu, ptr, token)
        return
    try:
        (err,) = capture_safe.relaxed(cu, cu.cuMemFreeAsync, ptr, cu.CUstream(0))
        if err == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
            driver.ensure_context()
            capture_safe.relaxed(cu, cu.cuMemFreeAsync, ptr, cu.CUstream(0))
    except Exception:  # noqa: BLE001 - as _free_device
        pass


_memory_pools: dict = {}  # device id -> whether cuMemAllocAsync is supported (and set up)
driver.on_reset(_memory_pools.clear)  # a fresh context sets its pool up again
# freed pool memory the device's default pool keeps for the next allocation; with CUDA's default
# (0) every synchronisation hands it back, and the next allocation maps it again (~0.5 ms for
# 256 MB on an H100, more than a fused kernel takes)
POOL_KEEP_FRACTION = 8  # keep up to 1/8 of the device's memory


def _has_memory_pools(device_id: int) -> bool:
    found = _memory_pools.get(device_id)
    if found is None:
        try:
            device = driver.get_device(device_id)
            found = bool(device.MEMORY_POOLS_SUPPORTED)
            if found:
                cu = driver.cuda_driver()
                handle = driver.check(cu.cuDeviceGet(device_id), "cuDeviceGet")
                pool = driver.check(cu.cuDeviceGetDefaultMemPool(handle),
                                    "cuDeviceGetDefaultMemPool")
                keep = cu.cuuint64_t(device.total_memory // POOL_KEEP_FRACTION)
                driver.check(cu.cuMemPoolSetAttribute(
                    pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, keep),
                    "cuMemPoolSetAttribute(RELEASE_THRESHOLD)")
        except Exception:  # noqa: BLE001 - an old driver without pools: plain cuMemAlloc
            found = False
        _memory_pools[device_id] = found
    return found
