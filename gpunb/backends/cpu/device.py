"""The CPU target as one simulated CUDA device: `cuda.get_current_device()` on a machine without a
GPU answers with this, under numba-cuda's names.

numba-cuda programs read the device before they launch (the compute capability to choose a code
path, MAX_THREADS_PER_BLOCK to size blocks, MULTIPROCESSOR_COUNT to size grids). Every figure here
is one the CPU target enforces or implements: the launch limits of backends/cpu/backend.py, the
compute capability kernels are typed for (GPUNB_ARCH, default sm_90), a warp of 32 lanes, one
"multiprocessor" per host thread that runs blocks. A CU_DEVICE_ATTRIBUTE_* the CPU target has no
meaning for raises AttributeError naming it, rather than inventing a number.
"""

from __future__ import annotations

from gpunb.backends.cpu.backend import LIMITS
from gpunb.backends.cpu.executor import MAX_COOPERATIVE_THREADS
from gpunb.foundation import config
from gpunb.foundation.memory_info import MemoryInfo

NAME = "gpunb CPU target"
UUID = "GPU-00000000-0000-0000-0000-000000000000"


def _attributes() -> dict:
    """CU_DEVICE_ATTRIBUTE_* suffix -> the CPU target's value."""
    major, minor = config.default_arch()[:2]  # (sm_90a: 9.0)
    block, grid = LIMITS["max_block_dim"], LIMITS["max_grid_dim"]
    sms = config.cpu_threads()
    return {
        "COMPUTE_CAPABILITY_MAJOR": major, "COMPUTE_CAPABILITY_MINOR": minor,
        "MAX_THREADS_PER_BLOCK": LIMITS["max_threads_per_block"],
        "MAX_BLOCK_DIM_X": block[0], "MAX_BLOCK_DIM_Y": block[1], "MAX_BLOCK_DIM_Z": block[2],
        "MAX_GRID_DIM_X": grid[0], "MAX_GRID_DIM_Y": grid[1], "MAX_GRID_DIM_Z": grid[2],
        "MAX_SHARED_MEMORY_PER_BLOCK": LIMITS["max_shared_memory_per_block"],
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": LIMITS["max_shared_memory_per_block"],
        "WARP_SIZE": 32,
        "MULTIPROCESSOR_COUNT": sms,
        # grid-synchronising launches may hold MAX_COOPERATIVE_THREADS threads in all
        "MAX_THREADS_PER_MULTIPROCESSOR": max(1, MAX_COOPERATIVE_THREADS // sms),
        "COOPERATIVE_LAUNCH": 1,
        "UNIFIED_ADDRESSING": 1,  # device arrays are host memory
        "MANAGED_MEMORY": 1,
        "CONCURRENT_MANAGED_ACCESS": 1,
        "CAN_MAP_HOST_MEMORY": 1,
        "INTEGRATED": 1,
        "PCI_DOMAIN_ID": 0, "PCI_BUS_ID": 0, "PCI_DEVICE_ID": 0,
    }


class CpuDevice:
    """numba-cuda's Device for the CPU target: `id`, `name`, `uuid`, `compute_capability`, the
    upper-case CU_DEVICE_ATTRIBUTE_* names, `supports_float16/bfloat16/fp8`."""

    id = 0
    name = NAME
    uuid = UUID

    @property
    def compute_capability(self) -> tuple:
        return config.default_arch()

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def __getattr__(self, name: str):
        # only names that are not class attributes reach here: numba's upper-case attributes
        if name.isupper():
            table = _attributes()
            if name in table:
                return table[name]
            raise AttributeError(
                f"the CPU target's simulated device has no attribute {name!r}: it answers only "
                f"what the CPU target implements ({', '.join(sorted(table))})")
        raise AttributeError(f"'CpuDevice' object has no attribute {name!r}")

    @property
    def supports_float16(self) -> bool:
        return True

    @property
    def supports_bfloat16(self) -> bool:
        return True

    @property
    def supports_fp8(self) -> bool:
        return True

    def get_device_identity(self) -> dict:
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def get_primary_context(self) -> CpuContext:
        return CONTEXT

    def reset(self) -> None:
        """Nothing to tear down: device memory is host memory, freed with its arrays."""

    def __eq__(self, other) -> bool:
        return isinstance(other, CpuDevice)

    def __hash__(self) -> int:
        return hash(CpuDevice)

    def __repr__(self) -> str:
        return f"<CUDA device 0 '{NAME}' (simulated, {self.arch})>"


class CpuContext:
    """numba-cuda's Context for the CPU target: its device, memory info, synchronize (every CPU
    launch is synchronous, so there is nothing to wait for)."""

    @property
    def device(self) -> CpuDevice:
        return DEVICE

    def get_memory_info(self) -> MemoryInfo:
        """(free, total) bytes: the host's available and total physical memory."""
        import os

        page = os.sysconf("SC_PAGE_SIZE")
        total = page * os.sysconf("SC_PHYS_PAGES")
        free = page * os.sysconf("SC_AVPHYS_PAGES")
        return MemoryInfo(free, total)

    def synchronize(self) -> None:
        """CPU launches finish before they return."""

    def reset(self) -> None:
        """Nothing to reset on the CPU target."""

    def __repr__(self) -> str:
        return f"<CUDA context of {DEVICE!r}>"


DEVICE = CpuDevice()
CONTEXT = CpuContext()
