"""Occupancy: how many blocks of a kernel fit on one SM, from the driver or computed without a GPU.

The pure-Python calculator follows NVIDIA's occupancy rules (cuda_occupancy.h, the CUDA Occupancy
Calculator and the Programming Guide's per-compute-capability table):
- warps: a block takes ceil(threads / 32) warp slots of the SM's max_threads_per_sm / 32;
- blocks: at most max_blocks_per_sm resident blocks;
- registers: each warp gets ceil(regs_per_thread * 32 / 256) * 256 registers; the register file is
  split into 4 sub-partitions (65536 / 4 registers each) and a warp's registers live in one, so an
  SM holds 4 * floor(16384 / regs_per_warp) warps (the spreadsheet's "warp allocation granularity
  4"); a block must also pass the hardware check regs_per_warp * roundup(warps, 4) <= 65536;
- shared memory: each block takes its static + dynamic bytes plus the driver's reserved 1 KiB
  (sm_80 and newer), rounded up to 128 bytes (sm_80+) or 256 bytes (sm_7x); the SM's shared
  capacity is the carve-out (the largest by default, or a requested percentage snapped up to the
  sizes the architecture supports).
The widgets and `suggest_block_size` use it on machines without a GPU; on a GPU the driver's own
`cuOccupancyMaxActiveBlocksPerMultiprocessor` is available too and the tests compare the two.
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True, slots=True)
class ArchLimits:
    """Per-SM resources of one compute capability (CUDA Programming Guide, Table "Technical
    Specifications per Compute Capability")."""

    arch: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int  # the largest shared-memory carve-out
    shared_per_block_optin: int  # the most one block may use after opting in
    reserved_shared_per_block: int  # taken by the driver for every block (sm_80+)
    shared_allocation_unit: int
    carveouts: tuple  # the shared capacities an SM can be configured with, ascending
    max_threads_per_block: int = 1024
    warp_size: int = 32
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256  # registers are allocated per warp in units of 256
    sub_partitions: int = 4

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


_VOLTA_CARVEOUTS = tuple(k * KIB for k in (0, 8, 16, 32, 64, 96))
_AMPERE_CARVEOUTS = tuple(k * KIB for k in (0, 8, 16, 32, 64, 100, 132, 164))
_GA10X_CARVEOUTS = tuple(k * KIB for k in (0, 8, 16, 32, 64, 100))
_HOPPER_CARVEOUTS = tuple(k * KIB for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228))

ARCHS = {
    "sm_70": ArchLimits("sm_70", 2048, 32, 96 * KIB, 96 * KIB, 0, 256, _VOLTA_CARVEOUTS),
    "sm_75": ArchLimits("sm_75", 1024, 16, 64 * KIB, 64 * KIB, 0, 256, (32 * KIB, 64 * KIB)),
    "sm_80": ArchLimits("sm_80", 2048, 32, 164 * KIB, 163 * KIB, KIB, 128, _AMPERE_CARVEOUTS),
    "sm_86": ArchLimits("sm_86", 1536, 16, 100 * KIB, 99 * KIB, KIB, 128, _GA10X_CARVEOUTS),
    "sm_87": ArchLimits("sm_87", 1536, 16, 164 * KIB, 163 * KIB, KIB, 128, _AMPERE_CARVEOUTS),
    "sm_89": ArchLimits("sm_89", 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, _GA10X_CARVEOUTS),
    "sm_90": ArchLimits("sm_90", 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, _HOPPER_CARVEOUTS),
}

LIMITERS = ("warps", "blocks", "registers", "shared_memory")


@dataclass(frozen=True, slots=True)
class Occupancy:
    """The result for one block size: resident blocks and warps per SM and what limits them.

    `limiter` is the binding limit; when several bind equally it is the first of
    ("warps", "blocks", "registers", "shared_memory") - the hardware limits first, since using
    fewer registers or less shared memory would not help then. `limiters` lists all that bind.
    The per-resource limits are in blocks per SM (None: that resource sets no limit).
    """

    arch: str
    block_size: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy_fraction: float
    limiter: str
    limiters: tuple
    blocks_limited_by_warps: int
    blocks_limited_by_blocks: int
    blocks_limited_by_registers: int | None
    blocks_limited_by_shared_memory: int | None
    registers_per_block: int  # as allocated (rounded up per warp)
    shared_per_block: int  # as allocated, the reserved bytes included
    shared_per_sm: int  # the carve-out the calculation assumed

    @property
    def active_threads_per_sm(self) -> int:
        return self.active_blocks_per_sm * self.block_size


def limits_for(arch) -> ArchLimits:
    """The ArchLimits of "sm_90", "90", (9, 0) or a gpunb Device."""
    if isinstance(arch, ArchLimits):
        return arch
    if hasattr(arch, "compute_capability") and hasattr(arch, "max_threads_per_multiprocessor"):
        return limits_from_device(arch)
    key = _arch_key(arch)
    found = ARCHS.get(key)
    if found is None:
        device = _current_device_if(key)
        if device is not None:  # a newer GPU than the table: read its limits from the driver
            return limits_from_device(device)
        raise ValueError(f"no occupancy table for {key}; known: {', '.join(ARCHS)} "
                         "(on a GPU, pass the Device: occupancy(driver.current_device(), ...))")
    return found


def _current_device_if(arch: str):
    """The current GPU when it has compute capability `arch`, else None (never initialises CUDA
    on a machine without one)."""
    from gpunb.backends.cuda import driver

    if not driver.is_available():
        return None
    device = driver.current_device()
    return device if device.arch == arch else None


def limits_from_device(device) -> ArchLimits:
    """ArchLimits read from a device (covers architectures newer than the table)."""
    major, minor = device.compute_capability
    known = ARCHS.get(f"sm_{major}{minor}")
    carveouts = known.carveouts if known else ()
    return ArchLimits(
        arch=f"sm_{major}{minor}",
        max_threads_per_sm=device.max_threads_per_multiprocessor,
        max_blocks_per_sm=device.max_blocks_per_multiprocessor,
        shared_per_sm=device.max_shared_memory_per_multiprocessor,
        shared_per_block_optin=device.max_shared_memory_per_block_optin,
        reserved_shared_per_block=device.reserved_shared_memory_per_block,
        shared_allocation_unit=128 if major >= 8 else 256,
        carveouts=carveouts,
        max_threads_per_block=device.max_threads_per_block,
        warp_size=device.warp_size,
        registers_per_sm=device.regs_per_multiprocessor,
        registers_per_block=device.regs_per_block,
    )


def _arch_key(arch) -> str:
    """`sm_90` for any name of it (sm_90a and sm_90 have the same resources)."""
    from gpunb.foundation.arch import parse_arch

    major, minor = parse_arch(arch).cc
    return f"sm_{major}{minor}"


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def occupancy(arch, block_size: int, registers_per_thread: int, shared_bytes_per_block: int = 0,
              *, carveout_percent: int | None = None) -> Occupancy:
    """Resident blocks and warps per SM for a kernel launched with `block_size` threads.

    `shared_bytes_per_block` is static + dynamic shared memory (without the driver's reserve).
    `carveout_percent` (0-100) models cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT);
    None is the default (the largest carve-out)."""
    lim = limits_for(arch)
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    if registers_per_thread < 0 or shared_bytes_per_block < 0:
        raise ValueError("registers and shared memory cannot be negative")
    warps_per_block = -(-block_size // lim.warp_size)
    by_warps = 0 if block_size > lim.max_threads_per_block else \
        lim.max_warps_per_sm // warps_per_block
    by_blocks = lim.max_blocks_per_sm
    by_registers, registers_per_block = _register_limit(lim, warps_per_block,
                                                        registers_per_thread)
    by_shared, shared_per_block, shared_per_sm = _shared_limit(lim, shared_bytes_per_block,
                                                               carveout_percent)
    limits = {"warps": by_warps, "blocks": by_blocks, "registers": by_registers,
              "shared_memory": by_shared}
    active = min(v for v in limits.values() if v is not None)
    binding = tuple(name for name in LIMITERS if limits[name] == active)
    warps = active * warps_per_block
    return Occupancy(
        arch=lim.arch, block_size=block_size, active_blocks_per_sm=active,
        active_warps_per_sm=warps, max_warps_per_sm=lim.max_warps_per_sm,
        occupancy_fraction=warps / lim.max_warps_per_sm, limiter=binding[0], limiters=binding,
        blocks_limited_by_warps=by_warps, blocks_limited_by_blocks=by_blocks,
        blocks_limited_by_registers=by_registers, blocks_limited_by_shared_memory=by_shared,
        registers_per_block=registers_per_block, shared_per_block=shared_per_block,
        shared_per_sm=shared_per_sm)


def _register_limit(lim: ArchLimits, warps_per_block: int, registers: int) -> tuple:
    regs_per_warp = _round_up(registers * lim.warp_size, lim.register_allocation_unit)
    regs_per_block = regs_per_warp * warps_per_block
    if registers == 0:
        return None, 0
    # the hardware's per-block check assumes the block's warps spread over all sub-partitions
    assumed = regs_per_warp * _round_up(warps_per_block, lim.sub_partitions)
    if registers > lim.max_registers_per_thread or regs_per_block > lim.registers_per_block \
            or assumed > lim.registers_per_block:
        return 0, regs_per_block
    per_partition = lim.registers_per_sm // lim.sub_partitions
    warps_per_sm = (per_partition // regs_per_warp) * lim.sub_partitions
    return warps_per_sm // warps_per_block, regs_per_block


def _shared_limit(lim: ArchLimits, shared_bytes: int, carveout_percent) -> tuple:
    """(blocks or None, allocated bytes per block, SM capacity assumed)."""
    allocated = _round_up(shared_bytes + lim.reserved_shared_per_block, lim.shared_allocation_unit)
    capacity = _carveout(lim, carveout_percent)
    if allocated > lim.shared_per_block_optin + lim.reserved_shared_per_block:
        return 0, allocated, capacity
    if capacity < allocated:
        # a carve-out too small for one block is raised by the driver to the next size that fits
        capacity = _snap_carveout(lim, allocated)
    if allocated == 0:
        return None, 0, capacity
    return capacity // allocated, allocated, capacity


def _carveout(lim: ArchLimits, percent) -> int:
    if percent is None or percent < 0:
        return lim.shared_per_sm
    if percent > 100:
        raise ValueError(f"carveout_percent must be 0..100, got {percent}")
    return _snap_carveout(lim, lim.shared_per_sm * percent // 100)


def _snap_carveout(lim: ArchLimits, nbytes: int) -> int:
    for size in lim.carveouts:
        if nbytes <= size:
            return size
    return lim.shared_per_sm


def suggest_block_size(arch, registers: int, shared_per_block: int = 0,
                       shared_per_thread: int = 0, *, max_block_size: int | None = None,
                       carveout_percent: int | None = None) -> dict:
    """The block size (a multiple of 32) with the most resident warps per SM.

    Ties: a multiple of 128 first (its warps divide evenly over the SM's 4 schedulers), then the
    larger block - the same answer as cudaOccupancyMaxPotentialBlockSize whenever that answer is
    a multiple of 128. `shared_per_thread` adds dynamic shared memory that grows with the block.
    Returns {"block_size", "occupancy", "active_blocks_per_sm", "active_warps_per_sm",
    "limiter"}."""
    lim = limits_for(arch)
    top = lim.max_threads_per_block if max_block_size is None else \
        min(int(max_block_size), lim.max_threads_per_block)
    best = None
    best_rank = None
    for block in range(lim.warp_size, top + 1, lim.warp_size):
        occ = occupancy(lim, block, registers,
                        shared_per_block + shared_per_thread * block,
                        carveout_percent=carveout_percent)
        rank = (occ.active_warps_per_sm, block % 128 == 0, block)
        if occ.active_blocks_per_sm and (best_rank is None or rank > best_rank):
            best, best_rank = occ, rank
    if best is None:
        raise ValueError(f"no block size fits on {lim.arch} with {registers} registers per thread "
                         f"and {shared_per_block} + {shared_per_thread}/thread bytes of shared "
                         "memory")
    return {"block_size": best.block_size, "occupancy": best.occupancy_fraction,
            "active_blocks_per_sm": best.active_blocks_per_sm,
            "active_warps_per_sm": best.active_warps_per_sm, "limiter": best.limiter}


# ---- the driver's calculator -------------------------------------------------------------------


def max_active_blocks_per_sm(function, block_size: int, dynamic_smem: int = 0) -> int:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor for a loaded kernel (a modules.Function)."""
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    return int(driver.check(
        driver.cuda_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
            function.handle, int(block_size), int(dynamic_smem)),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", getattr(function, "name", None)))


def max_potential_block_size(function, dynamic_smem: int = 0, block_size_limit: int = 0) -> tuple:
    """(min grid size for a full device, block size) from cuOccupancyMaxPotentialBlockSize."""
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    min_grid, block = driver.check(
        driver.cuda_driver().cuOccupancyMaxPotentialBlockSize(
            function.handle, None, int(dynamic_smem), int(block_size_limit)),
        "cuOccupancyMaxPotentialBlockSize", getattr(function, "name", None))
    return int(min_grid), int(block)


def max_cooperative_grid_blocks(function, block_size: int, dynamic_smem: int = 0) -> int:
    """The most blocks a grid-synchronising launch may have: every block must be resident."""
    from gpunb.backends.cuda import driver

    per_sm = max_active_blocks_per_sm(function, block_size, dynamic_smem)
    return per_sm * driver.current_device().multiprocessor_count


def max_active_clusters(function, block: tuple, dynamic_smem: int, cluster_dims: tuple,
                        compiled: bool) -> int:
    """cuOccupancyMaxActiveClusters: the most clusters of `cluster_dims` blocks of this kernel
    that can be resident on the device at once, for blocks of `block` threads (`compiled`: the
    kernel has that shape from its cluster_dims; else it is passed as the launch attribute).
    Clusters are placed within a GPC, so not every SM need take a share of one: this can be
    less than blocks per SM x SMs / cluster size; a persistent kernel sizes its grid as
    cluster size x this."""
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    cu = driver.cuda_driver()
    config = cu.CUlaunchConfig()
    # a grid of one cluster (the driver checks it is a whole number of them)
    config.gridDimX, config.gridDimY, config.gridDimZ = (int(n) for n in cluster_dims)
    config.blockDimX, config.blockDimY, config.blockDimZ = (int(n) for n in block)
    config.sharedMemBytes = int(dynamic_smem)
    config.hStream = 0
    config.numAttrs = 0
    if not compiled:
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dim = attr.value.clusterDim
        dim.x, dim.y, dim.z = (int(n) for n in cluster_dims)
        config.attrs = [attr]
        config.numAttrs = 1
    return int(driver.check(cu.cuOccupancyMaxActiveClusters(function.handle, config),
                            "cuOccupancyMaxActiveClusters", getattr(function, "name", None)))
