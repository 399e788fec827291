"""The GPUs of this process as numba.cuda has them: `cuda.gpus[n]` (a context manager that makes
device n current in this thread), `cuda.list_devices()`, and `cuda.close()` / `cuda.reset()`,
which destroy gpunb's CUDA contexts (and say when a crashed kernel left the process unusable).

Device choice is per thread (the innermost `with cuda.gpus[n]:`, else `cuda.select_device(n)`'s
process-wide choice, else device 0); kernels load into each context they launch in, and device
arrays remember theirs (backends/cuda/driver.py keeps the contexts).
"""

from __future__ import annotations

from gpunb.backends.cuda import driver


class ManagedDevice:
    """`cuda.gpus[n]`: device n's information (numba's Device attributes) and, as a context
    manager, device n made current in this thread for the block."""

    __slots__ = ("id",)

    def __init__(self, device_id: int):
        self.id = device_id

    def __enter__(self) -> ManagedDevice:
        driver.push_device(self.id)
        return self

    def __exit__(self, *exc_info) -> None:
        driver.pop_device()

    def __getattr__(self, name: str):
        return getattr(driver.get_device(self.id), name)

    def reset(self) -> None:
        """Destroy this device's context (numba's Device.reset()); see gpunb.cuda.reset()."""
        driver.reset(self.id)

    def __eq__(self, other) -> bool:
        return getattr(other, "id", None) == self.id and hasattr(other, "compute_capability")

    def __hash__(self) -> int:
        return hash(("gpu", self.id))

    def __repr__(self) -> str:
        return f"<Managed Device {self.id}>"


class DeviceList:
    """`cuda.gpus`: indexable, iterable, sized; `.current` is this thread's device."""

    def __getitem__(self, device_id) -> ManagedDevice:
        count = driver.device_count()
        device_id = int(device_id)
        if device_id < 0:
            device_id += count
        if not 0 <= device_id < count:
            raise IndexError(f"there is no GPU {device_id}: {count} CUDA device(s) found "
                             f"(cuda.gpus[0] to cuda.gpus[{count - 1}])")
        return ManagedDevice(device_id)

    def __len__(self) -> int:
        return driver.device_count() if driver.is_available() else 0

    def __iter__(self):
        return (ManagedDevice(i) for i in range(len(self)))

    @property
    def current(self) -> ManagedDevice:
        return ManagedDevice(driver.current_token().device_id)

    def __repr__(self) -> str:
        return f"<gpunb GPUs: {', '.join(repr(d) for d in self) or 'none'}>"


gpus = DeviceList()


def list_devices() -> DeviceList:
    """Every CUDA device of this process (numba.cuda.list_devices)."""
    return gpus


def reset() -> None:
    """Destroy gpunb's CUDA contexts and continue with fresh ones. Device arrays made before are
    gone (using one raises a LaunchError saying so); kernels load into the new context on their
    next launch. After a sticky error (an illegal address, a crashed kernel) the fresh context is
    checked at once: most NVIDIA drivers keep the process's GPU broken then, and reset() raises
    a LaunchError saying to restart the Python process."""
    driver.reset()


def close() -> None:
    """numba.cuda.close(): the same as reset() here (the next CUDA call makes a fresh
    context)."""
    driver.reset()
