"""Code on the GPU: PTX -> cubin through the driver's JIT linker (or whole-program ptxas for
kernels with setmaxnreg), cubin -> module -> function.

The cubin is what the cache stores, so `link_ptx` returns plain bytes (plus the JIT's info log with
register and spill counts); `load_module` turns bytes into a loaded Module whose Functions carry
the resource attributes the launcher and the widgets report.
"""

from __future__ import annotations

import ctypes
import weakref

from gpunb.backends.cuda import capture_safe, driver, whole_program
from gpunb.foundation.arch import parse_arch as _parse_arch
from gpunb.foundation.errors import ToolchainError

LOG_BUFFER_BYTES = 1 << 16


class PtxLinkError(ToolchainError):
    """The driver's JIT (ptxas inside the driver) rejected PTX; the message holds its error log."""


class Module:
    """A loaded CUmodule; unloaded when garbage collected (tolerating a destroyed context)."""

    def __init__(self, handle, image: bytes, token=None):
        self.handle = handle
        self.image_size = len(image)
        self.token = token  # the context it is loaded in (driver.ContextToken)
        self._functions: dict = {}
        # the finalizer keeps the driver module that made the handle (not whatever is current)
        finalizer = weakref.finalize(self, _unload_module, driver.cuda_driver(), handle, token)
        finalizer.atexit = False  # the process's exit frees it; the driver may be gone by then

    def get_function(self, symbol: str) -> Function:
        """The kernel entry `symbol` (its mangled name as written in the PTX `.entry`)."""
        found = self._functions.get(symbol)
        if found is None:
            cu = driver.cuda_driver()
            handle = driver.check(cu.cuModuleGetFunction(self.handle, symbol.encode()),
                                  f"cuModuleGetFunction({symbol!r})", kernel=symbol)
            found = Function(handle, symbol, self)
            self._functions[symbol] = found
        return found

    def __repr__(self) -> str:
        return f"<CUDA module {int(self.handle):#x}, {self.image_size} bytes>"


class Function:
    """A kernel entry of a loaded module, ready for cuLaunchKernel."""

    __slots__ = ("handle", "address", "name", "module", "_attributes", "_max_dynamic_shared")

    def __init__(self, handle, name: str, module: Module):
        self.handle = handle
        self.address = int(handle)  # what the native launch trampoline takes
        self.name = name
        driver.last_launch.name_function(self.address, name)
        self.module = module  # keeps the module loaded while the function is in use
        self._attributes: dict | None = None
        self._max_dynamic_shared: int | None = None

    def rename(self, name: str) -> None:
        """Call it `name` in errors (the Python function's name rather than the symbol)."""
        self.name = name
        driver.last_launch.name_function(self.address, name)

    def attributes(self) -> dict:
        """Resources ptxas gave this kernel: num_regs, shared/local/const bytes, max threads."""
        if self._attributes is None:
            cu = driver.cuda_driver()
            fa = cu.CUfunction_attribute
            names = {
                "num_regs": fa.CU_FUNC_ATTRIBUTE_NUM_REGS,
                "shared_size_bytes": fa.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                "local_size_bytes": fa.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                "const_size_bytes": fa.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
                "max_threads_per_block": fa.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                "max_dynamic_shared_size_bytes": fa.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                "ptx_version": fa.CU_FUNC_ATTRIBUTE_PTX_VERSION,
                "binary_version": fa.CU_FUNC_ATTRIBUTE_BINARY_VERSION,
            }
            self._attributes = {
                key: driver.check(cu.cuFuncGetAttribute(attr, self.handle),
                                  f"cuFuncGetAttribute({key})", kernel=self.name)
                for key, attr in names.items()
            }
        return dict(self._attributes)

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        """Allow launches with up to `nbytes` of dynamic shared memory (needed above 48 KiB)."""
        nbytes = int(nbytes)
        if self._max_dynamic_shared == nbytes:
            return
        cu = driver.cuda_driver()
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.check(cu.cuFuncSetAttribute(self.handle, attr, nbytes),
                     f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={nbytes})",
                     kernel=self.name)
        self._max_dynamic_shared = nbytes
        if self._attributes is not None:
            self._attributes["max_dynamic_shared_size_bytes"] = nbytes

    def set_shared_memory_carveout(self, percent: int) -> None:
        """numba's shared_memory_carveout: the preferred share of L1 given to shared memory
        (-1: the driver's default, 0..100 percent)."""
        cu = driver.cuda_driver()
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        driver.check(cu.cuFuncSetAttribute(self.handle, attr, int(percent)),
                     f"cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT={percent})",
                     kernel=self.name)

    def __repr__(self) -> str:
        return f"<CUDA function {self.name}>"


def load_module(cubin: bytes) -> Module:
    """Load a cubin (or NUL-terminated PTX bytes, JIT-compiled) into the current context."""
    token = driver.current_token()
    cu = driver.cuda_driver()
    image = bytes(cubin)
    handle = driver.check(cu.cuModuleLoadData(image), "cuModuleLoadData")
    return Module(handle, image, token)


def _unload_module(cu, handle, token) -> None:
    if token is not None and not token.alive:
        return  # its context was reset: the module went with it (the handle may be reused)
    try:
        # (the collector may run this inside a capture: capture_safe.py)
        capture_safe.relaxed(cu, cu.cuModuleUnload, handle)
    except Exception:  # noqa: BLE001 - a destroyed context or a finished driver: nothing to free
        pass


def parse_arch(arch) -> tuple:
    """(major, minor) of an architecture's name (foundation/arch.py); the driver's JIT target
    of sm_90a / sm_100f is their compute capability."""
    return _parse_arch(arch).cc


def build_cubin(ptx: str, arch=None, **flags) -> tuple:
    """(cubin, whether it keeps all the PTX asks for) - the one place that decides how PTX is
    built: PTX that uses setmaxnreg is assembled whole-program by ptxas (whole_program.py: the
    driver's relocatable link drops setmaxnreg), for the architecture its `.target` names; all
    other PTX, and setmaxnreg PTX when no usable ptxas does it (False: setmaxnreg lost, as the
    warning said), by the driver's linker. `flags` are link_ptx's."""
    driver.ensure_context()
    if not whole_program.needs_whole_program(ptx):
        return link_ptx(ptx, arch, **flags)[0], True
    built = whole_program.assemble(ptx, driver.driver_version(), **flags)
    if built is not None:
        return built[0], True
    return link_ptx(ptx, arch, **flags)[0], False


def link_ptx(ptx: str, arch=None, *, max_registers: int | None = None, lineinfo: bool = False,
             debug: bool = False, opt: bool = True) -> tuple:
    """Compile PTX to a cubin with the driver's JIT linker; return (cubin bytes, info log).

    `arch` is a compute capability ((9, 0) or "sm_90"); None targets the current context's device.
    The info log (verbose) has ptxas's register, shared memory and spill counts. Kernels are
    built through build_cubin, which sends setmaxnreg PTX to ptxas instead.
    """
    driver.ensure_context()
    cu = driver.cuda_driver()
    info_log = bytearray(LOG_BUFFER_BYTES)
    error_log = bytearray(LOG_BUFFER_BYTES)
    options = _jit_options(cu, arch, info_log, error_log, max_registers, lineinfo, debug, opt)
    keys, values = list(options), list(options.values())
    state = driver.check(cu.cuLinkCreate(len(keys), keys, values), "cuLinkCreate")
    target = _arch_label(arch)
    try:
        data = ptx.encode("utf-8") + b"\0"
        result = cu.cuLinkAddData(state, cu.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data),
                                  b"kernel.ptx", 0, [], [])
        if result[0]:
            raise _link_error(result[0], "cuLinkAddData", target, error_log)
        result = cu.cuLinkComplete(state)
        if result[0]:
            raise _link_error(result[0], "cuLinkComplete", target, error_log)
        _, cubin_address, size = result
        # the cubin belongs to the link state: copy it out before cuLinkDestroy frees it
        cubin = ctypes.string_at(int(cubin_address), int(size))
    finally:
        cu.cuLinkDestroy(state)
    return cubin, _log_text(info_log)


def _jit_options(cu, arch, info_log, error_log, max_registers, lineinfo, debug, opt) -> dict:
    option = cu.CUjit_option
    options = {
        option.CU_JIT_INFO_LOG_BUFFER: info_log,
        option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: len(info_log),
        option.CU_JIT_ERROR_LOG_BUFFER: error_log,
        option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: len(error_log),
        option.CU_JIT_LOG_VERBOSE: 1,
        # ptxas -O3 is the default; debug code must not be optimised away
        option.CU_JIT_OPTIMIZATION_LEVEL: 4 if (opt and not debug) else 0,
    }
    if arch is None:
        options[option.CU_JIT_TARGET_FROM_CUCONTEXT] = 1
    else:
        major, minor = parse_arch(arch)
        # sm_90a code (wgmma) JITs for the arch-specific target, whose PTX sm_90 cannot take
        suffix = "A" if str(arch).lower().endswith("a") else ""
        target = getattr(cu.CUjit_target, f"CU_TARGET_COMPUTE_{major}{minor}{suffix}", None)
        if target is None:
            raise ToolchainError(f"this CUDA driver binding cannot JIT for sm_{major}{minor}")
        options[option.CU_JIT_TARGET] = target
    if max_registers:
        options[option.CU_JIT_MAX_REGISTERS] = int(max_registers)
    if lineinfo:
        options[option.CU_JIT_GENERATE_LINE_INFO] = 1
    if debug:
        options[option.CU_JIT_GENERATE_DEBUG_INFO] = 1
    return options


def _arch_label(arch) -> str:
    if arch is None:
        return "the current device"
    major, minor = parse_arch(arch)
    return f"sm_{major}{minor}"


def _link_error(err, what: str, target: str, error_log: bytearray) -> PtxLinkError:
    log = _log_text(error_log) or "(the driver wrote no error log)"
    name = driver.driver_error(err, what).name
    return PtxLinkError(f"the CUDA driver could not compile the PTX for {target} ({what}: {name}):"
                        f"\n{log}")


def _log_text(buffer: bytearray) -> str:
    return bytes(buffer).split(b"\0", 1)[0].decode("utf-8", "replace").strip()
