"""numba.cuda's device and context accessors: `get_current_device()`, `current_context()`,
`cuda.gpus`, on either target.

On the CUDA target they answer from the driver. On the CPU target they answer with one simulated
device (backends/cpu/device.py) whose figures are the CPU target's real limits, so numba-cuda code
that sizes launches from the device, or chooses a path by compute capability, runs unchanged.
"""

from __future__ import annotations

from gpunb.foundation.memory_info import MemoryInfo


def _on_gpu() -> bool:
    from gpunb.runtime.target import active_target

    return active_target() == "cuda"


def get_current_device():
    """The device kernels launch on: the current GPU, or the CPU target's simulated device."""
    if _on_gpu():
        from gpunb.backends.cuda import driver

        return driver.current_device()
    from gpunb.backends.cpu.device import DEVICE

    return DEVICE


class _GpuContext:
    """numba-cuda's Context for a GPU: its device, memory info, synchronize."""

    def __init__(self, device):
        self.device = device

    def get_memory_info(self) -> MemoryInfo:
        from gpunb.backends.cuda import driver

        return MemoryInfo(*driver.memory_info())

    def get_ipc_handle(self, memory):
        """numba-cuda's: an IPC handle of device memory (`devarr.gpu_data`) for another process
        (Linux); `devarr.get_ipc_handle()` exports an array with its shape instead."""
        from gpunb.runtime import ipc
        from gpunb.runtime.devicearray import DeviceArray

        return ipc.memory_ipc_handle(memory, DeviceArray)

    def synchronize(self) -> None:
        from gpunb.backends.cuda import driver
        from gpunb.runtime import capture

        capture.refuse_synchronize("cuda.current_context().synchronize()")
        driver.synchronize()

    def __repr__(self) -> str:
        return f"<CUDA context of {self.device!r}>"


def current_context(devnum: int | None = None):
    """The current context (made current first; `devnum` selects that device first)."""
    if _on_gpu():
        from gpunb.backends.cuda import driver

        if devnum is not None:
            driver.select_device(devnum)
        return _GpuContext(driver.current_device())
    if devnum not in (None, 0):
        raise ValueError(f"current_context({devnum}): the CPU target has one device, number 0")
    from gpunb.backends.cpu.device import CONTEXT

    return CONTEXT


def _gpu_list():
    from gpunb.runtime import devices

    return devices.gpus


class _DeviceEntry:
    """`cuda.gpus[i]`: the device's attributes, and `with cuda.gpus[i]:` makes it current in this
    thread for the block (runtime/devices.py on a GPU; the one simulated device on the CPU)."""

    def __init__(self, number: int):
        self._number = number
        self._managed = _gpu_list()[number] if _on_gpu() else None

    def _device(self):
        if self._managed is not None:
            from gpunb.backends.cuda import driver

            return driver.get_device(self._number)
        from gpunb.backends.cpu.device import DEVICE

        return DEVICE

    @property
    def id(self) -> int:
        return self._number

    def __getattr__(self, name: str):
        return getattr(self._device(), name)

    def __enter__(self):
        if self._managed is not None:
            self._managed.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._managed is not None:
            self._managed.__exit__(*exc)

    def reset(self) -> None:
        """Destroy this device's context (numba's Device.reset())."""
        if self._managed is not None:
            self._managed.reset()

    def __eq__(self, other) -> bool:
        return getattr(other, "id", None) == self._number

    def __hash__(self) -> int:
        return hash(("device", self._number))

    def __repr__(self) -> str:
        return repr(self._managed) if self._managed is not None else repr(self._device())


class _DeviceList:
    """`cuda.gpus`: the devices kernels can run on (one, simulated, on the CPU target)."""

    def __len__(self) -> int:
        return len(_gpu_list()) if _on_gpu() else 1

    def __getitem__(self, number: int) -> _DeviceEntry:
        if isinstance(number, slice):  # cuda.gpus[1:], as numba-cuda's list allows
            return [self[i] for i in range(len(self))[number]]
        if _on_gpu():  # runtime/devices checks the number against the driver's devices
            return _DeviceEntry(_gpu_list()[number].id)
        number = int(number)
        if number not in (0, -1):
            raise IndexError(f"cuda.gpus[{number}]: the CPU target has one device, number 0")
        return _DeviceEntry(0)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def current(self):
        if _on_gpu():
            return self[_gpu_list().current.id]
        return self[0]

    def __repr__(self) -> str:
        return f"<gpunb device list of {len(self)} device(s)>"


gpus = _DeviceList()


def list_devices() -> _DeviceList:
    """The devices of this process (numba.cuda.list_devices): GPUs, or the CPU target's one."""
    return gpus
