"""A CUDA kernel loaded and launched: the Program the CUDA backend hands to the dispatcher.

`CudaProgram.launch` is the device half of every launch's hot path: check the configuration
against the kernel's limits (a few comparisons for `kernel[int, int]`), turn a stream object into
its handle, one cuLaunchKernel - through gpunb's native trampoline when the process has one
(DriverCalls), else through cuda.bindings - and, for kernels compiled with debug=True that
can raise, wait and raise what the kernel raised.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import sys
import threading

from gpunb.backends.base import NativeLaunch
from gpunb.backends.cuda import abi as cuda_abi
from gpunb.backends.cuda import driver
from gpunb.backends.launch_config import occupancy_cluster_shape, validate_config
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage
from gpunb.foundation.errors import LaunchError
from gpunb.foundation.kernel_errors import kernel_exception


class CudaProgram:
    """One kernel of a loaded module, with the limits its launches are checked against."""

    __slots__ = ("artifact", "module", "function", "limits", "name", "_static_shared",
                 "_dyn_limit", "_cooperative", "_raises", "_resident", "_loaded",
                 "_native_launches")

    def __init__(self, artifact: KernelArtifact, module, function, device):
        # the module loaded in each context this kernel launched in (one per device, a fresh
        # one after gpunb.cuda.reset()); `module`/`function` are the first context's
        self._loaded = {module.token: function}
        attrs = function.attributes()
        # what the driver reports for the linked code (a cache hit reads the same numbers)
        self.artifact = dataclasses.replace(artifact, resources=ResourceUsage(
            registers=attrs["num_regs"], shared_bytes=attrs["shared_size_bytes"],
            local_bytes=attrs["local_size_bytes"], const_bytes=attrs.get("const_size_bytes", 0),
            max_threads_per_block=attrs["max_threads_per_block"]))
        self.module = module
        self.function = function
        self.name = artifact.name
        function.rename(artifact.name)  # driver errors name the Python function, not the symbol
        self.limits = {
            "max_threads_per_block": min(device.max_threads_per_block,
                                         self.artifact.resources.max_threads_per_block),
            "max_block_dim": tuple(device.max_block_dim),
            "max_grid_dim": tuple(device.max_grid_dim),
            "max_shared_memory_per_block": device.max_shared_memory_per_block_optin,
        }
        if artifact.cluster_dims:  # launches are checked for whole clusters (launch_config)
            self.limits["cluster_dims"] = tuple(artifact.cluster_dims)
        self._static_shared = self.artifact.resources.shared_bytes
        self._dyn_limit = 48 * 1024 - self._static_shared  # above it: cuFuncSetAttribute first
        self._cooperative = artifact.cooperative
        self._raises = bool(artifact.raise_sites)
        self._resident: dict = {}  # (block, dynamic shared) -> most co-resident blocks
        # the native launches of the configurations launched last: a launcher is bound again
        # at every profile block's start and end
        self._native_launches = functools.lru_cache(maxsize=32)(self._checked_native_launch)

    def launch(self, grid, block, shared_bytes: int, stream, params_address: int) -> None:
        """Launch on `stream` (a handle or any stream object) with the packed parameters, on
        this thread's current device."""
        function = self.function
        if driver.several_contexts:  # several devices, or a reset: this thread's context's
            function = self._loaded.get(driver.current_token()) or self._load_here()
        grid3, block3 = validate_config(grid, block, self.limits,
                                        shared_bytes + self._static_shared, self.name)
        if self._cooperative:
            self._check_co_resident(grid3, block3, shared_bytes, function)
        if shared_bytes > self._dyn_limit:
            function.set_max_dynamic_shared(int(shared_bytes))
            if function is self.function:
                self._dyn_limit = int(shared_bytes)
        elif function is not self.function and shared_bytes > 48 * 1024 - self._static_shared:
            function.set_max_dynamic_shared(int(shared_bytes))  # that module's own attribute
        handle = stream if stream.__class__ is int else stream_handle(stream)
        launch_cuda(function, grid3, block3, shared_bytes, handle, params_address,
                    self._cooperative)
        if self._raises:  # debug=True: the launch waits and raises what the kernel raised
            check_cuda_exception(function.module, self.artifact)

    def native_launch(self, grid, block, shared_bytes: int, stream) -> NativeLaunch | None:
        """The machine code calls libcuda's cuLaunchKernel itself; None where a launch needs more
        than one cuLaunchKernel (several contexts, cooperative or raising kernels, a
        shared-memory attribute to set), the configuration is invalid (the Python path raises
        the error), the stream is one read at each launch (gpunb.torch.current_stream) or
        libcuda's entry point is not at hand (a stand-in driver)."""
        if driver.several_contexts or self._cooperative or self._raises or \
                getattr(stream, "__gpunb_dynamic_stream__", False):  # a handle read per launch
            return None
        try:
            return self._native_launches(grid, block, shared_bytes, stream)
        except TypeError:  # an unhashable configuration (lists): checked each time
            try:
                return self._checked_native_launch(grid, block, shared_bytes, stream)
            except _NotNative:
                return None
        except _NotNative:
            return None

    def _checked_native_launch(self, grid, block, shared_bytes: int, stream) -> NativeLaunch:
        address = driver_launch_address()
        if address is None:
            raise _NotNative
        try:
            grid3, block3 = validate_config(grid, block, self.limits,
                                            shared_bytes + self._static_shared, self.name)
            handle = stream if stream.__class__ is int else stream_handle(stream)
        except Exception:  # noqa: BLE001 - the Python path raises the right error
            raise _NotNative from None
        shared = int(shared_bytes)
        # (the dynamic shared memory limit only grows: a configuration within it stays so)
        if shared > self._dyn_limit or not 0 <= handle < 2**64 or \
                not all(0 < n < 2**32 for n in grid3 + block3):
            raise _NotNative
        function = self.function

        def failed(err: int, params_address: int) -> None:  # retry or raise as launch_cuda
            _launch_failed(err, function, grid3, block3, shared, handle, params_address, False)

        return NativeLaunch(grid3, block3, shared, handle, address, function.address,
                            driver.last_launch.address, failed=failed)

    def _load_here(self):
        """This kernel loaded into this thread's current context (another device, or a fresh
        context after gpunb.cuda.reset()): the cubin where the device's architecture matches,
        else the PTX linked for it. Modules of reset contexts are dropped."""
        from gpunb.backends.cuda import modules

        token = driver.current_token()
        for old in [t for t in self._loaded if not t.alive]:
            del self._loaded[old]
        device = driver.get_device(token.device_id)
        binary = self.artifact.binary
        if device.arch != self.artifact.arch and self.artifact.ptx:
            binary, _ = modules.build_cubin(self.artifact.ptx, device.arch)
        module = modules.load_module(binary)
        function = module.get_function(self.artifact.symbol)
        function.rename(self.name)
        self._loaded[token] = function
        return function

    def max_cooperative_blocks(self, threads: int, dynamic_shared: int = 0,
                               function=None) -> int:
        """Blocks of `threads` threads that can all be resident at once (the driver's answer)."""
        from gpunb.backends.cuda import occupancy

        return occupancy.max_cooperative_grid_blocks(function or self.function, threads,
                                                     dynamic_shared)

    def max_active_clusters(self, block: tuple, dynamic_shared: int = 0,
                            cluster_dims: tuple | None = None) -> int:
        """Clusters of this kernel that can be resident at once (the driver's answer), of its
        cluster_dims or, for a kernel compiled without, of `cluster_dims`."""
        from gpunb.backends.cuda import occupancy

        dims = occupancy_cluster_shape(self.artifact.cluster_dims, cluster_dims, self.name)
        if dynamic_shared > self._dyn_limit:  # the occupancy of a launch that raises it
            self.function.set_max_dynamic_shared(int(dynamic_shared))
            self._dyn_limit = int(dynamic_shared)
        return occupancy.max_active_clusters(self.function, block, dynamic_shared, dims,
                                             compiled=bool(self.artifact.cluster_dims))

    def _check_co_resident(self, grid: tuple, block: tuple, shared_bytes: int,
                           function) -> None:
        """A grid-sync kernel's blocks must all be resident: say so before the driver refuses."""
        key = (block, shared_bytes, function.address)
        threads = block[0] * block[1] * block[2]
        limit = self._resident.get(key)
        if limit is None:
            limit = self._resident[key] = self.max_cooperative_blocks(threads, shared_bytes,
                                                                      function)
        blocks = grid[0] * grid[1] * grid[2]
        if blocks > limit:
            raise LaunchError(
                f"cooperative kernel '{self.name}' (it uses grid sync): a grid of {blocks} "
                f"blocks of {block} threads cannot be resident at once; this GPU holds at most "
                f"{limit}", function=self.name,
                hint=f"launch at most kernel.max_cooperative_grid_blocks({threads}) = {limit} "
                     "blocks and cover the data with a grid-stride loop")

    def __repr__(self) -> str:
        return f"<CUDA program {self.name} ({self.artifact.signature})>"


class _NotNative(Exception):
    """No native launch for this configuration (never cached: it may apply later)."""


def stream_handle(stream) -> int:
    """The CUstream value of anything used as a stream: 0/None, an int, a gpunb, numba, CuPy or
    PyTorch stream object."""
    if stream is None or stream == 0:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("handle", "ptr", "cuda_stream"):
        value = getattr(stream, attr, None)
        if value is not None:
            value = getattr(value, "value", value)  # numba's handle is a ctypes c_void_p
            return int(value or 0)
    raise TypeError(f"cannot use {stream!r} as a CUDA stream")


def check_cuda_exception(module, artifact: KernelArtifact) -> None:
    """After a launch of a kernel that can raise: wait for it, read and clear its record."""
    driver.synchronize()
    cu = driver.cuda_driver()
    address, _size = driver.check(
        cu.cuModuleGetGlobal(module.handle, cuda_abi.EXCEPTION_SYMBOL.encode()),
        "cuModuleGetGlobal", kernel=artifact.name)
    words = (ctypes.c_int32 * cuda_abi.EXCEPTION_WORDS)()
    nbytes = ctypes.sizeof(words)
    driver.check(cu.cuMemcpyDtoH(ctypes.addressof(words), address, nbytes), "cuMemcpyDtoH",
                 kernel=artifact.name)
    if words[0] == 0:
        return
    record = list(words)
    driver.check(cu.cuMemsetD32(address, 0, cuda_abi.EXCEPTION_WORDS), "cuMemsetD32",
                 kernel=artifact.name)
    raise kernel_exception(artifact, record[0] - 1, record[1:4], record[4:7])


def launch_cuda(function, grid3: tuple, block3: tuple, shared_bytes: int, stream_handle: int,
                params_address: int, cooperative: bool = False) -> None:
    """One cuLaunchKernel (or cuLaunchCooperativeKernel for grid-synchronising kernels), through
    the native trampoline when the process has one (`driver_calls`), else through
    cuda.bindings."""
    driver.last_launch.note(function.address)  # named by a sticky error surfacing later
    trampolines = driver_calls.trampolines
    if trampolines is not None:
        try:
            err = trampolines[cooperative].call(function.address, grid3[0], grid3[1], grid3[2],
                                                block3[0], block3[1], block3[2], shared_bytes,
                                                stream_handle, params_address)
        except (TypeError, OverflowError):  # e.g. numpy integers: the bindings convert those
            err = _launch_with_bindings(function, grid3, block3, shared_bytes, stream_handle,
                                        params_address, cooperative)
    else:
        err = _launch_with_bindings(function, grid3, block3, shared_bytes, stream_handle,
                                    params_address, cooperative)
    if err:
        _launch_failed(err, function, grid3, block3, shared_bytes, stream_handle, params_address,
                       cooperative)


class DriverCalls:
    """How this process calls libcuda's launch functions from Python: through cuda.bindings
    until the trampolines (backends/native_launch/trampoline.py) are built, then through them;
    and libcuda's cuLaunchKernel for native launchers to call.

    The trampolines are built at the NATIVE_AFTER-th launch through cuda.bindings (and tried
    again every NATIVE_CHECK_EVERY launches while llvmlite is not loaded), not at the first:
    building them (an MCJIT compile) would add milliseconds to a process's first launch, the
    figure a cold compile or a disk-cache hit is measured by, to save about a microsecond per
    launch after it. Only for the real driver: a stand-in (the tests' simulated one) has no
    libcuda behind it. GPUNB_NATIVE_LAUNCH=0 turns both off."""

    NATIVE_AFTER = 8
    NATIVE_CHECK_EVERY = 256

    def __init__(self):
        self.trampolines: tuple | None = None  # (launch, cooperative launch) once built
        self.bindings_launches = 0
        self._built = False  # building was tried (it is not tried again after a failure)
        self._launch_address: list = []  # [libcuda's cuLaunchKernel or None] once looked up

    def counted_bindings_launch(self) -> None:
        """A launch went through cuda.bindings: the NATIVE_AFTER-th (of every
        NATIVE_CHECK_EVERY) tries to build the trampolines."""
        self.bindings_launches += 1
        if self.bindings_launches % self.NATIVE_CHECK_EVERY == self.NATIVE_AFTER:
            self.prepare()

    def prepare(self) -> bool:
        """Build the trampolines if this process can; True when launches go through them."""
        from gpunb.foundation import config

        if self.trampolines is not None or self._built:
            return self.trampolines is not None
        if "llvmlite.binding" not in sys.modules or not config.native_launch_enabled() or \
                not driver.drives_libcuda():
            return False  # tried again later
        with _build_lock:
            if not self._built:
                self._built = True
                self.trampolines = _build_trampolines()
        return self.trampolines is not None

    def launch_address(self) -> int | None:
        """libcuda's cuLaunchKernel for native launchers to call (None: not this process)."""
        from gpunb.foundation import config

        if not driver.drives_libcuda() or not config.native_launch_enabled():
            return None
        if not self._launch_address:
            self._launch_address.append(driver.entry_point("cuLaunchKernel"))
        return self._launch_address[0]


_build_lock = threading.Lock()
driver_calls = DriverCalls()


def driver_launch_address() -> int | None:
    """libcuda's cuLaunchKernel for native launchers (see DriverCalls.launch_address)."""
    return driver_calls.launch_address()


def _build_trampolines() -> tuple | None:
    from gpunb.backends.native_launch.trampoline import Trampoline

    launch = driver.entry_point("cuLaunchKernel")
    cooperative = driver.entry_point("cuLaunchCooperativeKernel")
    if launch is None or cooperative is None:
        return None
    try:
        return (Trampoline(launch, "cuLaunchKernel", True),
                Trampoline(cooperative, "cuLaunchCooperativeKernel", False))
    except Exception:  # noqa: BLE001 - no trampoline is only slower: the bindings still launch
        return None


def _launch_with_bindings(function, grid3, block3, shared_bytes, stream_handle, params_address,
                          cooperative) -> int:
    driver_calls.counted_bindings_launch()  # later launches go native when they can
    cu = driver.cuda_driver()
    if cooperative:
        return _launch_cooperative(cu, function, grid3, block3, shared_bytes, stream_handle,
                                   params_address)
    return cu.cuLaunchKernel(function.handle, grid3[0], grid3[1], grid3[2], block3[0],
                             block3[1], block3[2], shared_bytes, stream_handle,
                             params_address, 0)[0]


def _launch_cooperative(cu, function, grid3, block3, shared_bytes, stream_handle, params_address):
    return cu.cuLaunchCooperativeKernel(function.handle, grid3[0], grid3[1], grid3[2], block3[0],
                                        block3[1], block3[2], shared_bytes, stream_handle,
                                        params_address)[0]


def _launch_failed(err, function, grid3, block3, shared_bytes, stream_handle, params_address,
                   cooperative) -> None:
    cu = driver.cuda_driver()
    if err == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
        # the first launch from a thread that has no current context: make ours current, retry
        driver.ensure_context(force=True)
        err = _launch_with_bindings(function, grid3, block3, shared_bytes, stream_handle,
                                    params_address, cooperative)
        if not err:
            return
    what = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
    raise driver.driver_error(err, f"{what}(grid={grid3}, block={block3}, shared={shared_bytes})",
                              getattr(function, "name", None))
