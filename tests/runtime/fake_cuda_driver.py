"""A stand-in for cuda.bindings.driver whose "device memory" is host memory.

It returns results shaped exactly like cuda.bindings' ((CUresult, *values) tuples, the real enum
types), so the runtime's own logic - contexts, error translation, device arrays, copies, the
argument packer on the CUDA target - runs on machines without a GPU. What it cannot check
(that the real driver accepts our arguments) is covered by test_binding_signatures and the GPU
tests.
"""

from __future__ import annotations

import ctypes
import threading

from cuda.bindings import driver as real
from fake_cuda_graphs import FakeGraphs

OK = real.CUresult.CUDA_SUCCESS

H100_ATTRIBUTES = {
    "MULTIPROCESSOR_COUNT": 132, "MAX_THREADS_PER_BLOCK": 1024,
    "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 228 * 1024,
    "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
    "MAX_REGISTERS_PER_BLOCK": 65536, "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 32, "WARP_SIZE": 32, "COOPERATIVE_LAUNCH": 1,
    "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
    "MAX_BLOCK_DIM_X": 1024, "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64,
    "MAX_GRID_DIM_X": 2**31 - 1, "MAX_GRID_DIM_Y": 65535, "MAX_GRID_DIM_Z": 65535,
    "MAX_PITCH": 2**31 - 1,
}


class FakeDriver(FakeGraphs):
    """cuda.bindings.driver look-alike: enums come from the real module, calls are simulated
    (stream capture and graphs: fake_cuda_graphs.py)."""

    def __init__(self):
        # not "cuda.bindings.driver" (which __getattr__ would answer): launch.py builds native
        # trampolines into the real libcuda only for the real module
        self.__name__ = "fake_cuda_driver"
        self.allocations: dict = {}  # ptr -> ctypes buffer
        self.freed: list = []
        self.calls: list = []  # (name, args) of every simulated call
        self.fail_next: dict = {}  # call name -> CUresult returned (once) instead of success
        self.launches: list = []
        self.streams = 0
        self.events: dict = {}
        self._clock = 0.0
        self.device_count = 1  # tests of several GPUs raise it
        self.generation: dict = {}  # device -> how often its primary context was reset
        # with strict_contexts, copies and stream queries need a context made current in the
        # calling thread (cuCtxSetCurrent), as the real driver's do; off: any thread may call
        self.strict_contexts = False
        self._current = threading.local()
        self.refused: list = []  # names of the calls refused for a capture (fake_cuda_graphs)
        self._init_graphs()

    def __getattr__(self, name):
        return getattr(real, name)  # enums and types

    def _call(self, name: str, args: tuple, *values):
        self.calls.append((name, args))
        err = self.fail_next.pop(name, None)
        if err is not None:
            return (err,) + tuple(None for _ in values)
        return (OK, *values)

    # ---- init, devices, contexts ----
    def cuInit(self, flags):
        return self._call("cuInit", (flags,))

    def cuDriverGetVersion(self):
        return self._call("cuDriverGetVersion", (), 13000)

    def cuDeviceGetCount(self):
        return self._call("cuDeviceGetCount", (), self.device_count)

    def cuDeviceGet(self, ordinal):
        return self._call("cuDeviceGet", (ordinal,), ordinal)

    def cuDevicePrimaryCtxRetain(self, dev):
        generation = self.generation.get(dev, 0)
        return self._call("cuDevicePrimaryCtxRetain", (dev,),
                          f"ctx{dev}" + (f"-{generation}" if generation else ""))

    def cuDevicePrimaryCtxReset(self, dev):
        self.generation[dev] = self.generation.get(dev, 0) + 1
        return self._call("cuDevicePrimaryCtxReset", (dev,))

    def cuDevicePrimaryCtxRelease(self, dev):
        return self._call("cuDevicePrimaryCtxRelease", (dev,))

    def cuCtxSetCurrent(self, ctx):
        self._current.context = ctx
        return self._call("cuCtxSetCurrent", (ctx,))

    def _no_context(self, name: str, args: tuple):
        """The real driver's answer to a call from a thread with no current context."""
        if self.strict_contexts and getattr(self._current, "context", None) is None:
            self.calls.append((name, args))
            return (real.CUresult.CUDA_ERROR_INVALID_CONTEXT,)
        return None

    def cuDeviceGetAttribute(self, attr, dev):
        key = attr.name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        return self._call("cuDeviceGetAttribute", (attr, dev), H100_ATTRIBUTES.get(key, 0))

    def cuDeviceGetName(self, length, dev):
        return self._call("cuDeviceGetName", (length, dev), b"Fake H100".ljust(length, b"\0"))

    def cuDeviceGetPCIBusId(self, length, dev):
        return self._call("cuDeviceGetPCIBusId", (length, dev), b"0000:01:00.0\0")

    def cuDeviceTotalMem(self, dev):
        return self._call("cuDeviceTotalMem", (dev,), 80 * 2**30)

    def cuMemGetInfo(self):
        return self._call("cuMemGetInfo", (), 70 * 2**30, 80 * 2**30)

    def cuGetErrorString(self, err):
        return (OK, f"fake description of {err.name}".encode())

    # ---- memory ----
    def cuMemAlloc(self, nbytes):
        refused = self._unsafe("cuMemAlloc", (nbytes,))
        if refused:
            return refused + (None,)
        buffer = ctypes.create_string_buffer(nbytes)
        ptr = ctypes.addressof(buffer)
        result = self._call("cuMemAlloc", (nbytes,), real.CUdeviceptr(ptr))
        if result[0] == OK:
            self.allocations[ptr] = buffer
        return result

    def cuMemFree(self, ptr):
        refused = self._unsafe("cuMemFree", (ptr,))
        if refused:
            return refused
        self.freed.append(int(ptr))
        self.allocations.pop(int(ptr), None)
        return self._call("cuMemFree", (ptr,))

    # mapped and managed memory (page-locked memory: fake_cuda_graphs): host memory whose
    # "device address" is its own address
    def cuMemHostGetDevicePointer(self, ptr, flags):
        return self._call("cuMemHostGetDevicePointer", (ptr, flags), real.CUdeviceptr(int(ptr)))

    def cuMemAllocManaged(self, nbytes, flags):
        buffer = ctypes.create_string_buffer(nbytes)
        self.allocations[ctypes.addressof(buffer)] = buffer
        return self._call("cuMemAllocManaged", (nbytes, flags),
                          real.CUdeviceptr(ctypes.addressof(buffer)))

    def cuMemGetAddressRange(self, ptr):
        for base, buffer in self.allocations.items():
            if base <= int(ptr) < base + len(buffer):
                return self._call("cuMemGetAddressRange", (ptr,), real.CUdeviceptr(base),
                                  len(buffer))
        return (real.CUresult.CUDA_ERROR_NOT_FOUND, real.CUdeviceptr(0), 0)

    # IPC: a handle names the allocation's base; "another process" opening it maps the same
    # host memory (the simulated device memory), so what a receiver reads can be checked
    def cuIpcGetMemHandle(self, base):
        if int(base) not in self.allocations:
            return (real.CUresult.CUDA_ERROR_INVALID_VALUE, None)
        handle = real.CUipcMemHandle()
        ctypes.memmove(handle.getPtr(), int(base).to_bytes(8, "little"), 8)
        return self._call("cuIpcGetMemHandle", (base,), handle)

    def cuIpcOpenMemHandle(self, handle, flags):
        base = int.from_bytes(ctypes.string_at(handle.getPtr(), 8), "little")
        if base not in self.allocations:
            return (real.CUresult.CUDA_ERROR_INVALID_HANDLE, real.CUdeviceptr(0))
        return self._call("cuIpcOpenMemHandle", (base, flags), real.CUdeviceptr(base))

    def cuIpcCloseMemHandle(self, ptr):
        return self._call("cuIpcCloseMemHandle", (ptr,))

    def _copy(self, name, dst, src, nbytes, *stream):
        refused = self._no_context(name, (dst, src, nbytes) + stream) or \
            self._implicit(stream[0] if stream else 0)
        if refused:
            return refused
        if stream and self._capturing(stream[0]) is not None:  # a node: copied at each replay
            self.calls.append((name, (dst, src, nbytes) + stream))
            err = self.fail_next.pop(name, None)
            if err is not None:
                return (err,)
            return (self._add_node(stream[0], {"type": "memcpy", "dst": int(dst),
                                               "src": int(src), "nbytes": nbytes}),)
        result = self._call(name, (dst, src, nbytes) + stream)
        if result[0] == OK:
            ctypes.memmove(int(dst), int(src), nbytes)
        return result

    def cuMemcpyHtoD(self, dst, src, n):
        return self._copy("cuMemcpyHtoD", dst, src, n)

    def cuMemcpyDtoH(self, dst, src, n):
        return self._copy("cuMemcpyDtoH", dst, src, n)

    def cuMemcpyDtoD(self, dst, src, n):
        return self._copy("cuMemcpyDtoD", dst, src, n)

    def cuMemcpyPeer(self, dst, dst_ctx, src, src_ctx, n):
        result = self._call("cuMemcpyPeer", (dst, dst_ctx, src, src_ctx, n))
        ctypes.memmove(int(dst), int(src), n)
        return result

    def cuMemcpyHtoDAsync(self, dst, src, n, stream):
        return self._copy("cuMemcpyHtoDAsync", dst, src, n, stream)

    def cuMemcpyDtoHAsync(self, dst, src, n, stream):
        return self._copy("cuMemcpyDtoHAsync", dst, src, n, stream)

    def cuMemcpyDtoDAsync(self, dst, src, n, stream):
        return self._copy("cuMemcpyDtoDAsync", dst, src, n, stream)

    # ---- streams and events ----
    def cuStreamCreate(self, flags):
        self.streams += 1
        self.stream_flags[0x5000 + self.streams] = int(flags)
        return self._call("cuStreamCreate", (flags,), real.CUstream(0x5000 + self.streams))

    def cuStreamSynchronize(self, stream):
        if self.captures:
            for capture in self.captures.values():
                capture["invalidated"] = True
            return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        return self._call("cuStreamSynchronize", (stream,))

    def cuStreamQuery(self, stream):
        return self._no_context("cuStreamQuery", (stream,)) or self._implicit(stream) or \
            self._of_capturing("cuStreamQuery", stream) or \
            self._unsafe("cuStreamQuery", (stream,)) or self._call("cuStreamQuery", (stream,))

    def _of_capturing(self, name: str, stream) -> tuple | None:
        """A query of a stream that captures, in any mode and thread: invalid ("it does not
        represent items scheduled for execution", CUDA's programming guide), that capture
        invalidated."""
        capture = self.captures.get(int(stream or 0)) if int(stream or 0) > 2 else None
        if capture is None:
            return None
        capture["invalidated"] = True
        self.calls.append((name, (stream,)))
        self.refused.append(name)
        return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)

    def cuStreamDestroy(self, stream):
        return self._call("cuStreamDestroy", (stream,))

    def cuEventCreate(self, flags):
        handle = real.CUevent(0x9000 + len(self.events) + 1)
        self.events[int(handle)] = None
        return self._call("cuEventCreate", (flags,), handle)

    def cuEventRecord(self, event, stream):
        self._clock += 1.5
        self.events[int(event)] = self._clock
        return self._call("cuEventRecord", (event, stream))

    def cuEventSynchronize(self, event):
        return self._call("cuEventSynchronize", (event,))

    def cuEventQuery(self, event):
        return self._unsafe("cuEventQuery", (event,)) or self._call("cuEventQuery", (event,))

    def cuEventElapsedTime(self, start, end):
        ms = self.events[int(end)] - self.events[int(start)]
        return self._call("cuEventElapsedTime", (start, end), ms)

    def cuEventDestroy(self, event):
        return self._call("cuEventDestroy", (event,))

    # ---- launches ----
    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        refused = self._implicit(stream)
        if refused:
            return refused
        if self._capturing(stream) is not None:
            self.calls.append(("cuLaunchKernel", (f, stream, params)))
            return (self._add_node(stream, {"type": "kernel", "grid": (gx, gy, gz),
                                            "block": (bx, by, bz), "shared": shared,
                                            "params": int(params)}),)
        self.launches.append(("kernel", (gx, gy, gz), (bx, by, bz), shared, stream, params))
        return self._call("cuLaunchKernel", (f, gx, gy, gz, bx, by, bz, shared, stream, params,
                                             extra))

    def cuLaunchCooperativeKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params):
        self.launches.append(("cooperative", (gx, gy, gz), (bx, by, bz), shared, stream, params))
        return self._call("cuLaunchCooperativeKernel", (f, gx, gy, gz, bx, by, bz, shared,
                                                        stream, params))

    # ---- modules, linking, occupancy ----
    def cuModuleLoadData(self, image):
        return self._call("cuModuleLoadData", (image,), real.CUmodule(0x7000))

    def cuModuleUnload(self, module):
        return self._unsafe("cuModuleUnload", (module,)) or \
            self._call("cuModuleUnload", (module,))

    def cuModuleGetFunction(self, module, name):
        return self._call("cuModuleGetFunction", (module, name), real.CUfunction(0x7100))

    def cuFuncGetAttribute(self, attr, function):
        values = {"NUM_REGS": 32, "SHARED_SIZE_BYTES": 1024, "LOCAL_SIZE_BYTES": 0,
                  "CONST_SIZE_BYTES": 0, "MAX_THREADS_PER_BLOCK": 1024,
                  "MAX_DYNAMIC_SHARED_SIZE_BYTES": 48 * 1024 - 1024, "PTX_VERSION": 80,
                  "BINARY_VERSION": 90}
        return self._call("cuFuncGetAttribute", (attr, function),
                          values[attr.name.removeprefix("CU_FUNC_ATTRIBUTE_")])

    def cuFuncSetAttribute(self, function, attr, value):
        return self._call("cuFuncSetAttribute", (function, attr, value))

    def cuLinkCreate(self, n, options, values):
        self.link_options = dict(zip(options, values, strict=True))
        return self._call("cuLinkCreate", (n, options, values), real.CUlinkState(0x8000))

    def cuLinkAddData(self, state, kind, data, size, name, n, options, values):
        self.linked_data = bytes(data)
        if b"syntax error" in data:  # what ptxas does with bad PTX: an error log and a code
            log = self.link_options[real.CUjit_option.CU_JIT_ERROR_LOG_BUFFER]
            message = b"ptxas application ptx input, line 3; error : syntax error"
            log[:len(message)] = message
            return (real.CUresult.CUDA_ERROR_INVALID_PTX,)
        return self._call("cuLinkAddData", (state, kind, data, size, name, n, options, values))

    def cuLinkComplete(self, state):
        log = self.link_options[real.CUjit_option.CU_JIT_INFO_LOG_BUFFER]
        message = b"ptxas info    : Used 32 registers"
        log[:len(message)] = message
        image = b"CUBIN:" + self.linked_data
        self._cubin = ctypes.create_string_buffer(image, max(64, len(image) + 1))
        return self._call("cuLinkComplete", (state,), ctypes.addressof(self._cubin), 16)

    def cuLinkDestroy(self, state):
        return self._call("cuLinkDestroy", (state,))

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, function, block, dynamic):
        return self._call("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                          (function, block, dynamic), 2048 // block)

    def cuOccupancyMaxPotentialBlockSize(self, function, callback, dynamic, limit):
        return self._call("cuOccupancyMaxPotentialBlockSize", (function, callback, dynamic, limit),
                          264, 1024)

    def cuMemcpy2D(self, copy):
        return self._copy_2d("cuMemcpy2D", copy)

    def cuMemcpy2DAsync(self, copy, stream):
        return self._copy_2d("cuMemcpy2DAsync", copy, stream)

    def _copy_2d(self, name, copy, *stream):
        result = self._call(name, (copy,) + stream)
        host = real.CUmemorytype.CU_MEMORYTYPE_HOST
        src = int(copy.srcHost) if copy.srcMemoryType == host else int(copy.srcDevice)
        dst = int(copy.dstHost) if copy.dstMemoryType == host else int(copy.dstDevice)
        for row in range(copy.Height):
            ctypes.memmove(dst + row * copy.dstPitch, src + row * copy.srcPitch,
                           copy.WidthInBytes)
        return result
