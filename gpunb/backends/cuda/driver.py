"""A thin typed wrapper over cuda.bindings.driver: lazy init, primary contexts, devices, errors.

Nothing here touches CUDA at import time: `cuda.bindings` is imported and `cuInit` called on the
first function that needs the driver, so `import gpunb` and `%load_ext gpunb` stay fast and work
on machines without a GPU. Every driver result goes through `check`, which turns a CUresult into
a `CudaDriverError` (a LaunchError) that names the call, the kernel and what to do about it.
Modules, functions and PTX linking live in modules.py, which builds on this module.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass

from gpunb.backends.cuda import capture_safe
from gpunb.backends.cuda.driver_hints import FIND, HINTS, RESTART, STICKY_ERRORS
from gpunb.backends.cuda.last_launch import LastLaunch
from gpunb.foundation import events
from gpunb.foundation.errors import CudaUnavailableError, LaunchError


class DriverState:
    """This process's CUDA driver state, in one object: the bindings module, whether cuInit
    worked, the selected device, the primary contexts gpunb made and the devices it asked about.
    Nothing here touches CUDA until asked. Tests and benchmarks stand a simulated driver in with
    `state = DriverState(cu=FakeDriver())`."""

    def __init__(self, cu=None):
        self.lock = threading.RLock()
        # .token (+ .context, .device_id): this thread's current context; .stack: the devices
        # of this thread's `with cuda.gpus[n]:` blocks, innermost last
        self.tls = threading.local()
        self.cu = cu  # the cuda.bindings.driver module once imported
        self.init_error: BaseException | None = None
        self.initialized = False
        self.available: bool | None = None
        self.selected_device = 0  # the device threads that have not chosen one use
        self.primary_contexts: dict = {}  # device id -> ContextToken of its primary context
        self.devices: dict = {}  # device id -> Device
        self.answered = threading.Event()  # set once cuInit has returned (preload.py)
        self.contexts_made = 0
        # the parent's pid in a process forked after CUDA was initialised (its contexts do
        # not survive the fork: every use is refused, as numba-cuda refuses it)
        self.forked_from: int | None = None


state = DriverState()


class CudaDriverError(LaunchError):
    """A CUDA driver call failed; `code` is the CUresult value and `name` its symbolic name."""

    def __init__(self, message: str, *, code: int, name: str, hint: str | None = None,
                 function: str | None = None):
        self.code = code
        self.name = name
        super().__init__(message, hint=hint, function=function)

    def __reduce__(self):  # keyword-only fields: a worker process sends it back to its pool
        return (_rebuild_driver_error, (self.message, self.code, self.name, self.hint,
                                        self.function))


def _rebuild_driver_error(message, code, name, hint, function) -> CudaDriverError:
    return CudaDriverError(message, code=code, name=name, hint=hint, function=function)


# ---- lazy import and initialisation ------------------------------------------------------------


def cuda_driver():
    """The `cuda.bindings.driver` module, imported on first use (never at `import gpunb`)."""
    if state.cu is None:
        from cuda.bindings import driver as cu

        state.cu = cu
    return state.cu


def init() -> None:
    """Call cuInit once per process; raise CudaUnavailableError (remembered) when it fails."""
    if state.initialized:
        if state.forked_from is not None:
            raise _forked_error(state.forked_from)
        return
    with state.lock:
        if state.initialized:
            return
        if state.init_error is not None:
            raise CudaUnavailableError(str(state.init_error))
        _start_preload()
        try:
            _call_cuinit()
        finally:
            state.answered.set()


def _forked_error(parent: int) -> CudaDriverError:
    return CudaDriverError(
        f"CUDA initialized before forking: this process was forked from process {parent} "
        "after that process initialised CUDA, and CUDA contexts do not survive a fork",
        code=3, name="CUDA_ERROR_NOT_INITIALIZED",
        hint="start worker processes with the 'spawn' method (multiprocessing.get_context("
             "'spawn')), or fork before the first use of the GPU")


def _after_fork_in_child() -> None:
    """A child forked after CUDA was initialised: no context is current in it any more (the
    thread-local tokens it inherited name the parent's), and init() refuses every new one."""
    if state.initialized:
        state.forked_from = os.getppid()
        state.tls = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _call_cuinit() -> None:
    try:
        cu = cuda_driver()
        (err,) = cu.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - no driver library, wrong bindings, ...
        # remembered with its explanation, so every later call says the same thing
        state.init_error = RuntimeError(f"the CUDA driver could not be loaded: {exc}")
        raise CudaUnavailableError(str(state.init_error)) from exc
    if err:
        state.init_error = RuntimeError(f"cuInit failed: {_error_name(err)}")
        raise CudaUnavailableError(f"cuInit failed: {_error_name(err)} "
                                   f"({_error_string(err)})")
    state.initialized = True


def _start_preload() -> None:
    """Just before cuInit: the thread that imports the compiler while the driver starts
    (preload.py; it waits for `state.answered` and does nothing without a GPU)."""
    from gpunb.backends.cuda import preload

    real = getattr(state.cu, "__name__", None) in (None, "cuda.bindings.driver")
    preload.start(state.answered, _selected_compute_capability, real_driver=real)


def _selected_compute_capability() -> tuple | None:
    """(major, minor) of the selected device without making a context (its Device is queried
    and cached, as the first launch would); None without a GPU."""
    if not state.initialized:
        return None
    try:
        return tuple(get_device(state.selected_device).compute_capability)
    except Exception:  # noqa: BLE001 - no device: nothing to warm
        return None


def drives_libcuda() -> bool:
    """Whether launches reach libcuda through cuda.bindings (not a stand-in driver, as the
    tests' simulated one): only then may machine code call libcuda's entry points itself."""
    return getattr(state.cu, "__name__", None) == "cuda.bindings.driver"


def has_context() -> bool:
    """Whether this process made a CUDA context (never makes one)."""
    return bool(state.primary_contexts)


def entry_point(name: str) -> int | None:
    """The address of libcuda's function `name` (its per-thread-default-stream twin when
    CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM is set, as cuda.bindings then calls), for
    machine code to call; None where this process does not drive libcuda or lacks it."""
    from gpunb.foundation import config

    if not drives_libcuda():
        return None
    suffix = "_ptsz" if config.per_thread_default_stream() else ""
    try:
        return ctypes.cast(getattr(ctypes.CDLL("libcuda.so.1"), name + suffix),
                           ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None


def is_available() -> bool:
    """True when a CUDA driver and at least one device are usable. Never raises."""
    if state.available is None:
        try:
            init()
            state.available = device_count() > 0
        except Exception:  # noqa: BLE001 - "not available" is the answer to any failure here
            state.available = False
    return state.available


def device_count() -> int:
    init()
    return check(cuda_driver().cuDeviceGetCount(), "cuDeviceGetCount")


def driver_version() -> tuple:
    """The installed driver's CUDA version as (major, minor), e.g. (13, 0)."""
    init()
    version = check(cuda_driver().cuDriverGetVersion(), "cuDriverGetVersion")
    return version // 1000, (version % 1000) // 10


# ---- contexts ----------------------------------------------------------------------------------


class ContextToken:
    """One primary context of one device, as made current by gpunb: device arrays, loaded
    modules and threads remember the token they were made with. `reset()` marks every token
    dead (`alive = False`); the next use retains a fresh context with a new token."""

    __slots__ = ("device_id", "handle", "alive", "__weakref__")

    def __init__(self, device_id: int, handle):
        self.device_id = device_id
        self.handle = handle
        self.alive = True

    def __repr__(self) -> str:
        state = "live" if self.alive else "reset"
        return f"<CUDA context of device {self.device_id} ({state})>"


# True once this process has made a second context (another device, or a fresh one after
# reset()): from then on launches check which context is current in their thread and whether
# their arrays belong to it. A process with one GPU and no reset never pays for those checks.
several_contexts = False  # (a module attribute: every CUDA launch on the Python path reads it)
_reset_listeners: list = []  # callables run by reset() (cached per-context state elsewhere)


last_launch = LastLaunch()  # the kernel launched last (sticky errors name it)


def ensure_context(force: bool = False):
    """Make this thread's device's primary context current in this thread; return its handle.

    The device is the innermost `with cuda.gpus[n]:` of this thread, else the process's
    selected device. Cheap after the first call in a thread (`force` re-sets it, for when other
    code changed the thread's current context). The launch fast path of a single-context
    process does not call this: a launch from a thread without a current context fails with
    CUDA_ERROR_INVALID_CONTEXT, and launch_cuda then calls this and retries once.
    """
    return current_token(force).handle


def current_token(force: bool = False) -> ContextToken:
    """The live context of this thread's device, made current in this thread if needed."""
    token = getattr(state.tls, "token", None)
    if token is not None and token.alive and not force:
        stack = getattr(state.tls, "stack", None)
        if token.device_id == (stack[-1] if stack else state.selected_device):
            return token
    stack = getattr(state.tls, "stack", None)
    return _make_current(stack[-1] if stack else state.selected_device)


def _make_current(device_id: int) -> ContextToken:
    global several_contexts
    init()
    cu = cuda_driver()
    made_another = False
    with state.lock:
        token = state.primary_contexts.get(device_id)
        if token is None:
            count = device_count()
            if not 0 <= device_id < count:
                raise CudaUnavailableError(
                    f"CUDA device {device_id} does not exist ({count} device(s) found)",
                    hint=f"use a device number from 0 to {count - 1} (cuda.list_devices())")
            handle = check(cu.cuDeviceGet(device_id), "cuDeviceGet")
            ctx = check(cu.cuDevicePrimaryCtxRetain(handle), "cuDevicePrimaryCtxRetain")
            token = ContextToken(device_id, ctx)
            state.primary_contexts[device_id] = token
            state.contexts_made += 1
            if state.contexts_made > 1:
                several_contexts = True
                made_another = True
    if made_another:  # native launchers assume one context: they stop
        events.runtime_changed(events.RuntimeChange.CONTEXTS)
    check(cu.cuCtxSetCurrent(token.handle), "cuCtxSetCurrent")
    state.tls.token = token
    state.tls.context = token.handle
    state.tls.device_id = device_id
    return token


def select_device(device_id: int) -> Device:
    """Use device `device_id` from now on (this thread now, other threads at their next use
    unless they are inside a `with cuda.gpus[n]:` block)."""
    device_id = int(device_id)
    _make_current(device_id)
    state.selected_device = device_id
    return get_device(device_id)


def push_device(device_id: int) -> Device:
    """Enter `with cuda.gpus[n]:` in this thread: `device_id` is current until pop_device()."""
    device_id = int(device_id)
    _make_current(device_id)
    stack = getattr(state.tls, "stack", None)
    if stack is None:
        stack = state.tls.stack = []
    stack.append(device_id)
    return get_device(device_id)


def pop_device() -> None:
    """Leave the innermost `with cuda.gpus[n]:` of this thread; the device before it is
    current again."""
    stack = getattr(state.tls, "stack", None)
    if stack:
        stack.pop()
    current_token()


def current_device() -> Device:
    """The device whose context is current in this thread (initialising it if needed)."""
    return get_device(current_token().device_id)


def reset(device_id: int | None = None) -> None:
    """Destroy the primary contexts gpunb made (of every device, or of `device_id`) and start
    afresh (numba's cuda.close() / Device.reset(); CUDA's cudaDeviceReset). All device memory,
    modules and streams of those contexts are gone: arrays made before raise a clear error when
    used, kernels load again on their next launch. After a sticky error (an illegal address)
    the fresh context is tried at once: where the driver keeps the process broken (NVIDIA's
    drivers mostly do; the H100's 580 does) a CudaDriverError says to restart the process."""
    global several_contexts
    if not state.initialized:
        return
    cu = cuda_driver()
    with state.lock:
        tokens = [token for device, token in state.primary_contexts.items()
                  if device_id is None or device == device_id]
        for token in tokens:
            del state.primary_contexts[token.device_id]
            token.alive = False
        several_contexts = True  # arrays and programs of the dead contexts may still be used
        events.runtime_changed(events.RuntimeChange.CONTEXTS)
        for token in tokens:
            handle = cu.cuDeviceGet(token.device_id)[1]
            # a corrupt context refuses nothing here: reset destroys it, release drops our
            # retain so the next retain makes a fresh one
            cu.cuDevicePrimaryCtxReset(handle)
            cu.cuDevicePrimaryCtxRelease(handle)
        state.tls.__dict__.pop("token", None)
        state.tls.__dict__.pop("context", None)
        last_launch.clear()
        for listener in list(_reset_listeners):
            listener()
        for token in tokens:
            _check_fresh_context(token.device_id)


def _check_fresh_context(device_id: int) -> None:
    """Make a context of `device_id` and use it once (allocate, free, synchronize): whether the
    driver gave this process a working one after the reset. Some drivers keep a process's
    device poisoned after a crashed kernel whatever it resets; then only a new process helps."""
    cu = cuda_driver()
    try:
        _make_current(device_id)
    except CudaDriverError as exc:  # on the H100's driver 580: retain fails with the old error
        err = exc.code
    else:
        result = cu.cuMemAlloc(256)
        err = result[0]
        if not err:
            err = cu.cuMemFree(result[1])[0] or cu.cuCtxSynchronize()[0]
    if err:
        name = _error_name(err)
        # the context stays gpunb's: a later reset() resets it again
        raise CudaDriverError(
            f"gpunb.cuda.reset(): the fresh CUDA context of device {device_id} fails too "
            f"({name}: {_error_string(err)}): the driver keeps this process's GPU state broken "
            "after the kernel crash", code=int(err), name=name,
            hint="restart the Python process (in a notebook: restart the kernel). " + FIND)


def on_reset(listener) -> None:
    """Run `listener()` after every reset() (state cached per context elsewhere)."""
    _reset_listeners.append(listener)


def synchronize() -> None:
    """Wait for all work on the current device (cuCtxSynchronize); surfaces async errors. The
    default stream's work (where kernels launch unless told otherwise) is waited for first in
    a way Ctrl-C and the watchdog can end (waits.py). While a gpunb capture is open on another
    thread, where cuCtxSynchronize would invalidate it, the wait goes stream by stream
    (capture_safe.streams_outside: all but the capturing ones, which run nothing)."""
    from gpunb.backends.cuda import waits

    ensure_context()
    kernel = last_launch.kernel  # named by an error the wait surfaces, as cuCtxSynchronize's

    def checked(result, what):
        return check(result, what, kernel)

    cu = cuda_driver()
    capturing = capture_safe.capturing_streams()
    if capturing:
        for stream in capture_safe.streams_outside(cu, capturing):
            waits.wait_until(waits.stream_done(cu, checked, stream), "cuda.synchronize()",
                             kernel, cu)
        return
    waits.wait_until(waits.stream_done(cu, checked, 0), "cuda.synchronize()", kernel, cu)
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize", last_launch.kernel)


def memory_info() -> tuple:
    """(free, total) bytes of device memory on the current device."""
    ensure_context()
    return check(cuda_driver().cuMemGetInfo(), "cuMemGetInfo")


# ---- devices -----------------------------------------------------------------------------------

_DEVICE_FIELDS = {  # Device field -> CU_DEVICE_ATTRIBUTE_* suffix
    "multiprocessor_count": "MULTIPROCESSOR_COUNT",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_shared_memory_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
    "max_shared_memory_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_shared_memory_per_multiprocessor": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "reserved_shared_memory_per_block": "RESERVED_SHARED_MEMORY_PER_BLOCK",
    "regs_per_multiprocessor": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "regs_per_block": "MAX_REGISTERS_PER_BLOCK",
    "max_threads_per_multiprocessor": "MAX_THREADS_PER_MULTIPROCESSOR",
    "max_blocks_per_multiprocessor": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "warp_size": "WARP_SIZE",
    "cooperative_launch": "COOPERATIVE_LAUNCH",
    "clock_rate_khz": "CLOCK_RATE",
    "memory_clock_rate_khz": "MEMORY_CLOCK_RATE",
    "memory_bus_width": "GLOBAL_MEMORY_BUS_WIDTH",
}


@dataclass(frozen=True, slots=True)
class Device:
    """What gpunb needs to know about one GPU, read once. Names follow numba's Device.

    Any other CU_DEVICE_ATTRIBUTE_* is readable numba-style as an upper-case attribute,
    e.g. `device.MAX_PITCH` or `device.MULTIPROCESSOR_COUNT`.
    """

    id: int
    name: str
    compute_capability: tuple
    total_memory: int
    multiprocessor_count: int
    max_threads_per_block: int
    max_block_dim: tuple
    max_grid_dim: tuple
    max_shared_memory_per_block: int
    max_shared_memory_per_block_optin: int
    max_shared_memory_per_multiprocessor: int
    reserved_shared_memory_per_block: int
    regs_per_multiprocessor: int
    regs_per_block: int
    max_threads_per_multiprocessor: int
    max_blocks_per_multiprocessor: int
    warp_size: int
    cooperative_launch: bool
    clock_rate_khz: int
    memory_clock_rate_khz: int
    memory_bus_width: int
    pci_bus_id: str
    driver_version: tuple

    @property
    def arch(self) -> str:
        """`sm_90` for compute capability 9.0."""
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    def __getattr__(self, name: str):
        # only reached for names that are not fields: numba's upper-case attribute access
        if name.isupper():
            cu = cuda_driver()
            attr = getattr(cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}", None)
            if attr is not None:
                return _device_attribute(self.id, attr)
        raise AttributeError(f"'Device' object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<CUDA device {self.id} '{self.name}' {self.arch}>"


def get_device(device_id: int = 0) -> Device:
    """Device information for `device_id` (queried once, then cached)."""
    found = state.devices.get(device_id)
    if found is None:
        found = _query_device(device_id)
        state.devices[device_id] = found
    return found


def device_info(device_id: int) -> Device:
    return get_device(device_id)


def _device_attribute(device_id: int, attr) -> int:
    cu = cuda_driver()
    handle = check(cu.cuDeviceGet(device_id), "cuDeviceGet")
    return check(cu.cuDeviceGetAttribute(attr, handle), f"cuDeviceGetAttribute({attr.name})")


def _query_device(device_id: int) -> Device:
    init()
    cu = cuda_driver()
    handle = check(cu.cuDeviceGet(device_id), "cuDeviceGet")
    attrs = cu.CUdevice_attribute

    def attr(suffix: str) -> int:
        return check(cu.cuDeviceGetAttribute(getattr(attrs, f"CU_DEVICE_ATTRIBUTE_{suffix}"),
                                             handle), f"cuDeviceGetAttribute({suffix})")

    raw_name = check(cu.cuDeviceGetName(256, handle), "cuDeviceGetName")
    raw_bus = check(cu.cuDeviceGetPCIBusId(64, handle), "cuDeviceGetPCIBusId")
    fields = {field: attr(suffix) for field, suffix in _DEVICE_FIELDS.items()}
    fields["cooperative_launch"] = bool(fields["cooperative_launch"])
    return Device(
        id=device_id,
        name=_cstr(raw_name),
        compute_capability=(attr("COMPUTE_CAPABILITY_MAJOR"), attr("COMPUTE_CAPABILITY_MINOR")),
        total_memory=check(cu.cuDeviceTotalMem(handle), "cuDeviceTotalMem"),
        max_block_dim=(attr("MAX_BLOCK_DIM_X"), attr("MAX_BLOCK_DIM_Y"), attr("MAX_BLOCK_DIM_Z")),
        max_grid_dim=(attr("MAX_GRID_DIM_X"), attr("MAX_GRID_DIM_Y"), attr("MAX_GRID_DIM_Z")),
        pci_bus_id=_cstr(raw_bus),
        driver_version=driver_version(),
        **fields,
    )


def _cstr(raw) -> str:
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw).split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(raw)


# ---- errors ------------------------------------------------------------------------------------

def check(result, what: str, kernel: str | None = None):
    """Unpack a cuda.bindings result `(err, *values)`; raise CudaDriverError when err != 0.

    Returns None for calls that return only an error code, the value for one value, else a tuple.
    """
    err = result[0]
    if err:
        raise driver_error(err, what, kernel)
    n = len(result)
    if n == 1:
        return None
    if n == 2:
        return result[1]
    return tuple(result[1:])


def driver_error(err, what: str, kernel: str | None = None) -> CudaDriverError:
    """The CudaDriverError for CUresult `err` from call `what` (with the kernel's name if any).

    A sticky error (the context is lost) names the kernel most likely at fault - the one that
    failed, or the latest one launched - and says how to recover and how to find the bug."""
    name = _error_name(err)
    message = f"{what} failed: {name}: {_error_string(err)}"
    hint = HINTS.get(name)
    if name in STICKY_ERRORS:
        culprit = kernel or last_launch.kernel
        if "launch" not in what.lower():
            cause = f"kernel '{culprit}' (the latest launched)" if culprit else \
                "an earlier kernel launch"
            message += (f" (reported here, but most likely caused by {cause}: kernel errors "
                        "surface at the next call that waits for the GPU)")
        elif culprit:
            message += f" in kernel '{culprit}'"
        message += "; the CUDA context is lost (see the hint: gpunb.cuda.reset() or a restart)"
        kernel = culprit
        if hint is None:
            hint = RESTART
    return CudaDriverError(message, code=int(err), name=name, hint=hint, function=kernel)


def _error_name(err) -> str:
    name = getattr(err, "name", None)
    if name:
        return name
    try:
        return cuda_driver().CUresult(int(err)).name
    except Exception:  # noqa: BLE001 - an unknown code still deserves a message
        return f"CUresult {int(err)}"


def _error_string(err) -> str:
    try:
        code, text = cuda_driver().cuGetErrorString(err)
        if not code and text:
            return _cstr(text)
    except Exception:  # noqa: BLE001 - fall back to the name alone
        pass
    return "no description"
