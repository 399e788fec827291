"""What a backend is: typed function -> artifact (stages), artifact -> loaded Program -> launches.

The jit layer, inspection and `cuda.compile_ptx` talk to `cuda` and `cpu` only through this
interface (`gpunb.backends.get(name)`), and `backends/pipeline.py` runs a backend's stages in
order. A Backend holds no per-kernel state; a Program is one loaded kernel. Modules implementing a
backend import LLVM and the compiler only inside the stage methods, so loading a cached artifact
(a disk hit in a new process) never loads the compiler.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Protocol

from gpunb.backends.launch_config import occupancy_cluster_shape
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage
from gpunb.foundation.errors import LaunchError
from gpunb.foundation.records import record

# CUDA's cap on statically sized shared memory, every arch (both targets check it)
STATIC_SHARED_LIMIT = 48 * 1024

# what the machine code of a native launcher returns besides a CUresult
DECLINED = -1  # it refused the arguments: nothing launched (the Python path launches them)
PACKED = -2  # the arguments are packed and nothing launched: the caller runs the program


@record  # (a frozen, slotted dataclass: foundation/records.py; this module loads with gpunb)
class NativeLaunch:
    """How machine code launches one configuration of a Program, which checked it: what a
    native launcher (jit/launcher.py, backends/native_launch/) binds. The code packs the
    arguments, then either calls `launch_function` itself, or (where that is 0) returns and
    `run` launches."""

    grid: tuple  # (x, y, z), each in 1 .. 2**32 - 1
    block: tuple  # (x, y, z)
    shared_bytes: int  # dynamic shared memory
    stream: int  # the stream's handle
    # a C function shaped like cuLaunchKernel, called with the GIL released; 0: pack only
    launch_function: int = 0
    kernel_function: int = 0  # its first argument (a CUfunction)
    last_launch_word: int = 0  # a u64 the code stores kernel_function in first (0: none)
    # pack only: `run(params_address)` launches the packed arguments
    run: Callable[[int], None] | None = None
    # `failed(result, params_address)`: launch_function returned `result` (not 0); retry or raise
    failed: Callable[[int, int], None] | None = None


class Program(Protocol):
    """A kernel loaded where it runs (a CUDA module function, host machine code)."""

    artifact: KernelArtifact  # what was loaded, with the resources the loader measured
    limits: dict  # max_threads_per_block, max_block_dim, max_grid_dim, max_shared_memory_...
    name: str  # the Python function's name

    def launch(self, grid, block, shared_bytes: int, stream, params_address: int) -> None:
        """Check the configuration against `limits`, launch, raise what the kernel raised."""

    def native_launch(self, grid, block, shared_bytes: int, stream) -> NativeLaunch | None:
        """How machine code may launch this configuration, checked now; None where a launch
        needs more than the code does (the Python path then launches through `launch`)."""

    def max_cooperative_blocks(self, threads: int, dynamic_shared: int = 0) -> int:
        """Blocks of `threads` threads that can all be resident at once (grid sync)."""


class Backend(abc.ABC):
    """One target: its compile stages after inference, loading, and its inspection helpers."""

    name: str  # "cuda" or "cpu": the target name users choose and artifacts carry
    stages: tuple  # the Stages compile() runs, in order, starting with Stage.TYPES

    # ---- architecture ----------------------------------------------------------------------------

    @abc.abstractmethod
    def default_arch(self) -> Any:
        """The arch code is built for when none is given: the current GPU's (or GPUNB_ARCH)
        compute capability as (major, minor); the host's triple on the CPU."""

    @abc.abstractmethod
    def cache_arch(self) -> str:
        """The arch part of a cache key (`sm_90`, the host CPU's identity), found without
        loading LLVM or the compiler: a disk hit in a new process must stay cheap."""

    # ---- stages after inference (backends/pipeline.py calls them in `stages` order) -------------

    @abc.abstractmethod
    def lower(self, typed, options: dict, symbol: str, arch, device: bool = False):
        """Stage.LLVM: the typed function as an LLVM module (a compiler ModuleBuilder)."""

    @abc.abstractmethod
    def emit(self, typed, builder, options: dict, symbol: str, arch) -> KernelArtifact:
        """The stage after LLVM (PTX, host code): an artifact whose `binary` may still be empty."""

    def link(self, artifact: KernelArtifact, options: dict) -> KernelArtifact:
        """Stage.LINK where the backend has it: the artifact's loadable binary."""
        return artifact

    def build(self, typed, options: dict, arch=None) -> KernelArtifact:
        """Every stage after inference, at once and silently (pipeline.compile runs them one by
        one, publishing each stage's events)."""
        from gpunb.compiler.pipeline import mangle

        arch = self.default_arch() if arch is None else arch
        symbol = mangle(typed.name, typed.argtypes)
        builder = self.lower(typed, options, symbol, arch)
        return self.link(self.emit(typed, builder, options, symbol, arch), options)

    # ---- loading and launching -------------------------------------------------------------------

    @abc.abstractmethod
    def load(self, artifact: KernelArtifact) -> Program:
        """A launchable Program for an artifact from build() or from the cache."""

    def max_cooperative_blocks(self, program: Program, threads: int,
                               dynamic_shared: int = 0) -> int:
        """The largest grid of `threads`-thread blocks a grid-synchronising launch may use."""
        return program.max_cooperative_blocks(threads, dynamic_shared)

    def max_active_clusters(self, program: Program, block: tuple, dynamic_shared: int = 0,
                            cluster_dims: tuple | None = None) -> int:
        """Clusters (the kernel's cluster_dims, else `cluster_dims`, else 1 x 1 x 1) that can
        all be resident at once: here the co-resident blocks over the cluster's blocks."""
        dims = occupancy_cluster_shape(program.artifact.cluster_dims, cluster_dims, program.name)
        threads = block[0] * block[1] * block[2]
        return program.max_cooperative_blocks(threads, dynamic_shared) // (
            dims[0] * dims[1] * dims[2])

    def max_active_blocks_per_sm(self, program: Program, threads: int,
                                 dynamic_shared: int = 0) -> int | None:
        """Resident blocks per multiprocessor as the device reports it; None where no device
        answers (the occupancy tables then estimate)."""
        return None

    # ---- inspection ------------------------------------------------------------------------------

    @abc.abstractmethod
    def assembly(self, artifact: KernelArtifact) -> str:
        """The assembly `inspect_asm()` shows: PTX on cuda, host assembly on cpu."""

    def resources(self, artifact: KernelArtifact) -> ResourceUsage:
        """Registers and memory the kernel uses, as this backend can tell."""
        return artifact.resources

    def __repr__(self) -> str:
        return f"<gpunb backend {self.name}>"


__all__ = ["DECLINED", "PACKED", "Backend", "NativeLaunch", "Program"]


def check_static_shared(name: str, static_bytes: int, optin: int | None) -> None:
    """Say what is wrong before the driver's linker does ('uses too much shared data (0x4e200
    bytes, 0xc000 max)'): past 48 KiB, shared memory must be dynamic. The CPU target checks
    it too, so that a kernel it runs also loads on a GPU. `optin`: the most dynamic shared
    memory a block may have on the device, for the hint."""
    if static_bytes <= STATIC_SHARED_LIMIT:
        return
    most = f", up to {optin} bytes per block on this device" if optin else ""
    raise LaunchError(
        f"kernel '{name}' declares {static_bytes} bytes of static shared memory; a CUDA kernel "
        f"may declare at most {STATIC_SHARED_LIMIT} bytes of shared memory statically",
        function=name,
        hint="use dynamic shared memory for more: cuda.shared.array(0, dtype) in the kernel and "
             f"the size as the 4th launch parameter, kernel[grid, block, 0, nbytes]{most}")
