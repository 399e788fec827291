"""The CPU backend: typed function -> host LLVM module (+ block runner) -> object file -> MCJIT.

Threads of a block are coroutines when the kernel has barriers (runner.py schedules them), plain
loops otherwise; blocks run in parallel on host threads (executor.py). LLVM and the compiler are
imported inside the stage methods only.
"""

from __future__ import annotations

import functools

from gpunb.backends.base import Backend, NativeLaunch, check_static_shared
from gpunb.backends.cpu.executor import (
    MAX_COOPERATIVE_THREADS,
    LoadedCpuKernel,
    LoadedDebugKernel,
)
from gpunb.backends.launch_config import validate_config
from gpunb.foundation import config
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage
from gpunb.foundation.events import Stage

# like a large GPU, so code written for one launches here unchanged
LIMITS = {"max_threads_per_block": 1024, "max_block_dim": (1024, 1024, 64),
          "max_grid_dim": (2**31 - 1, 65535, 65535), "max_shared_memory_per_block": 227 * 1024}


class CpuProgram:
    """A CPU-target kernel loaded into this process; streams are accepted and ignored (every
    launch is synchronous)."""

    __slots__ = ("artifact", "limits", "loaded", "name", "_static_shared", "_native_launches")

    def __init__(self, artifact: KernelArtifact):
        self.artifact = artifact
        kernel_max = artifact.resources.max_threads_per_block  # launch_bounds lower it
        self.limits = LIMITS if kernel_max >= LIMITS["max_threads_per_block"] else \
            {**LIMITS, "max_threads_per_block": kernel_max,
             "kernel_max_threads_per_block": kernel_max}
        if artifact.cluster_dims:  # launches are whole clusters (validate_config checks)
            self.limits = {**self.limits, "cluster_dims": tuple(artifact.cluster_dims)}
        self.loaded = (LoadedDebugKernel if artifact.debug_area else LoadedCpuKernel)(artifact)
        self.name = artifact.name
        self._static_shared = artifact.resources.shared_bytes
        check_static_shared(self.name, self._static_shared,  # as a GPU's loader would
                            LIMITS["max_shared_memory_per_block"])
        # the native launches of the configurations launched last: a launcher is bound again
        # at every profile block's start and end
        self._native_launches = functools.lru_cache(maxsize=32)(self._checked_native_launch)

    def launch(self, grid, block, shared_bytes: int, stream, params_address: int) -> None:
        """Run the whole grid now, on the host's cores; raise what the kernel reported."""
        grid3, block3 = validate_config(grid, block, self.limits,
                                        shared_bytes + self._static_shared, self.name)
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return
        self.loaded.launch(grid3, block3, int(shared_bytes), params_address)

    def native_launch(self, grid, block, shared_bytes: int, stream) -> NativeLaunch | None:
        """On the CPU target the machine code only packs, and `run(params_address)` runs the
        grid; None where the configuration is invalid (the Python path raises the error) or
        empty."""
        try:
            return self._native_launches(grid, block, shared_bytes, stream)
        except TypeError:  # an unhashable configuration (lists): checked each time
            return self._checked_native_launch(grid, block, shared_bytes, stream)

    def _checked_native_launch(self, grid, block, shared_bytes: int,
                               stream) -> NativeLaunch | None:
        try:
            grid3, block3 = validate_config(grid, block, self.limits,
                                            shared_bytes + self._static_shared, self.name)
        except Exception:  # noqa: BLE001 - the Python path raises the right error
            return None
        if grid3[0] * grid3[1] * grid3[2] == 0 or self.artifact.debug_area:
            return None  # the debug variant launches through the debugger only
        run = functools.partial(self.loaded.launch, grid3, block3, int(shared_bytes))
        return NativeLaunch(grid3, block3, int(shared_bytes), 0, run=run)

    def max_cooperative_blocks(self, threads: int, dynamic_shared: int = 0) -> int:
        """The CPU target's co-residency limit: as many threads as a large GPU holds."""
        return MAX_COOPERATIVE_THREADS // threads

    def __repr__(self) -> str:
        return f"<CPU program {self.name} ({self.artifact.signature})>"


class CpuBackend(Backend):
    """The host CPU through llvmlite: GPU semantics (barriers, shared memory, warps) kept."""

    name = "cpu"
    stages = (Stage.TYPES, Stage.LLVM, Stage.HOST_CODE)

    def default_arch(self) -> str:
        from gpunb.backends.cpu.target import host_target_machine

        return host_target_machine().triple

    def cache_arch(self) -> str:
        return host_arch()

    def lower(self, typed, options: dict, symbol: str, arch, device: bool = False):
        """The kernel's body for the host, and the runner that executes a range of blocks."""
        from gpunb.backends.cpu import runner, runtime_lib
        from gpunb.backends.cpu.target import CpuTarget
        from gpunb.compiler.pipeline import lower_kernel

        if device:
            raise ValueError("the CPU backend compiles kernels only (device functions compile "
                             "into the kernels that call them)")
        features = typed.all_features()
        cluster = _cluster_schedule(typed, options, features)
        # bounds checks are on by default here (an out-of-range access must never take the
        # process down); boundscheck=False (or GPUNB_BOUNDSCHECK=0) opts out, debug always checks
        boundscheck = bool(options.get("debug")) or (
            options.get("boundscheck") is not False and config.boundscheck())
        record = bool(options.get("racecheck")) or (
            options.get("racecheck") is not False and config.racecheck())
        # the debug variant: asked for, or the kernel calls breakpoint()
        debugger = bool(options.get("debugger")) or "breakpoint" in features
        if record and cluster is not None and debugger:
            record = _cluster_recording(typed, bool(options.get("racecheck")))
        if debugger and cluster is not None and cluster[1:] != (1, 1):
            _refuse_debugging(typed, cluster)
        if record:  # access recording needs one context (a coroutine) per thread
            mode, why, plan = "coroutine", "accesses are recorded (racecheck, access maps)", None
        elif debugger:  # so does stopping one thread while the others wait
            mode, why, plan = "coroutine", "compiled for the debugger", None
        else:
            mode, why, plan = choose_mode(typed, options)

        polls = config.cpu_interrupt_checks()  # 0 only to measure what stopping points cost

        def make_target():
            target = CpuTarget(coroutine=mode == "coroutine", boundscheck=boundscheck,
                               record=record, polls=polls and not debugger,
                               debugger=debugger, cluster_dims=cluster or (1, 1, 1))
            target.uses_async = "async" in features
            target.clustered = cluster is not None
            return target

        if plan is not None:
            from gpunb.backends.cpu.wg_lower import lower_workgroup

            builder = lower_workgroup(typed, make_target, plan, options, symbol)
        else:
            builder = lower_kernel(typed, make_target(), options, symbol)
        target = builder.target
        target.mode_reason = why
        from gpunb.backends.cpu.codesites import runner_location

        runner.emit_runner(builder.module, symbol, target.body, target.slot_types,
                           target.coroutine, cooperative="grid_sync" in features,
                           workgroup=plan is not None,
                           scratch_per_thread=target.scratch_bytes_per_thread(),
                           async_state=target.uses_async,
                           scheduler=runtime_lib.scheduler_symbol(
                               target.uses_async, record, "grid_sync" in features,
                               cluster is not None)
                           if target.coroutine else "",
                           cluster=cluster, record=record,
                           debug_area=target.debug.tables()[2] if target.debug else 0,
                           location=None if builder.debug is None else
                           lambda fn: runner_location(builder.debug, fn, typed.source,
                                                      typed.name))
        one_code_section(builder.module)
        return builder

    def emit(self, typed, builder, options: dict, symbol: str, arch) -> KernelArtifact:
        """Stage.HOST_CODE: an object file for this host (and its assembly, for inspection)."""
        from gpunb.backends.cpu import runtime_lib
        from gpunb.backends.cpu.objects import emit_object
        from gpunb.compiler.pipeline import kernel_signature, slots_of

        target = builder.target
        features = typed.all_features()
        sites, frames, area = target.debug.tables() if target.debug else ((), (), 0)
        obj, llvm_ir = emit_object(str(builder.module), target.body.name, target.coroutine,
                                   opt=options.get("opt", True) is not False,
                                   fastmath=bool(options.get("fastmath")))
        # the schedulers it calls travel with it: a disk hit loads them instead of compiling
        runtime = runtime_lib.objects_called(obj, typed.name) if target.coroutine else ()
        return KernelArtifact(
            name=typed.name, symbol=symbol, target=self.name, arch=arch,
            signature=kernel_signature(typed), param_slots=slots_of(typed), binary=obj,
            llvm_ir=llvm_ir, cooperative=bool({"grid_sync", "cooperative"} & features),
            uses_barriers="barrier" in features,
            cpu_mode="coroutine" if target.coroutine else "workgroup",
            cpu_mode_reason=target.mode_reason, uses_dynamic_shared="dynamic_shared" in features,
            cluster_dims=tuple(options.get("cluster_dims") or ()),
            resources=ResourceUsage(shared_bytes=target.static_shared,
                                    max_threads_per_block=(options.get("launch_bounds") or
                                                           (LIMITS["max_threads_per_block"],))[0]),
            source_file=typed.source.filename, first_line=typed.source.first_line,
            error_sites=tuple(target.error_sites), barrier_sites=tuple(target.barrier_sites),
            prints="print" in features, raise_sites=tuple(builder.raise_sites),
            access_sites=tuple(target.access_sites), shared_layout=tuple(target.shared_layout),
            code_sites=tuple(builder.debug.sites) if builder.debug is not None else (),
            debug_sites=sites, debug_frames=frames, debug_area=area,
            runtime_objects=runtime)

    def load(self, artifact: KernelArtifact) -> CpuProgram:
        return CpuProgram(artifact)

    def assembly(self, artifact: KernelArtifact) -> str:
        """The host assembly: made from the optimised IR on request (compiles skip it); an
        entry cached before that carries its own."""
        from gpunb.backends.cpu.objects import host_assembly

        return artifact.asm or host_assembly(artifact.llvm_ir)


def _cluster_schedule(typed, options: dict, features) -> tuple | None:
    """The cluster dims whose blocks the runner schedules together: the kernel's cluster_dims
    ((1, 1, 1) without) when it uses a cluster feature, else None (its blocks run alone)."""
    from gpunb.foundation.errors import CompileError

    if "cluster" not in features:
        return None
    if "grid_sync" in features:
        raise CompileError(f"kernel '{typed.name}' uses both grid.sync() and a thread-block "
                           "cluster: the CPU target cannot run them together yet",
                           function=typed.name,
                           hint="run the CUDA target for it, or split the kernel at the "
                                "grid.sync() into two launches")
    return tuple(options.get("cluster_dims") or (1, 1, 1))


def _cluster_recording(typed, asked: bool) -> bool:
    """A cluster kernel compiled for the debugger cannot also record its accesses (a recording
    cluster kernel's barrier counts take the context slot of the debugger's area:
    abi.cluster_slots): asked for
    this kernel (racecheck=True, an access map) that is a CompileError; asked for every kernel
    (GPUNB_RACECHECK=1) a CompileWarning, and the kernel compiles without recording."""
    from gpunb.foundation.errors import CompileError, CompileWarning

    message = (f"kernel '{typed.name}' uses a thread-block cluster and the debugger: racecheck "
               "and memory access maps do not support the two together")
    if asked:
        raise CompileError(message, function=typed.name,
                           hint="racecheck it without the debugger (no breakpoint(), no "
                                "debugger=True), or debug it without racecheck=True")
    import warnings

    warnings.warn_explicit(message + "; GPUNB_RACECHECK=1 does not check it", CompileWarning,
                           typed.source.filename, typed.source.first_line)
    return False


def _refuse_debugging(typed, cluster: tuple) -> None:
    """The debugger finds a running group's blocks in launch order, which clusters along x
    keep (cluster_runner.py's numbering) and clusters along y or z do not."""
    from gpunb.foundation.errors import CompileError

    raise CompileError(f"kernel '{typed.name}' has clusters of {cluster} blocks: the debugger "
                       "supports clusters along x only (cluster_dims=(n, 1, 1)) for now",
                       function=typed.name,
                       hint="debug it with cluster_dims=(n, 1, 1), or run it without the "
                            "debugger")


def one_code_section(module) -> None:
    """Every function in one named text section (ELF): LLVM would put cold ones in a
    `.text.unlikely` section of their own, loaded elsewhere, and a fault's offset into the line
    table (codesites.py) is relative to the section the kernel's entry is in. And every
    function nounwind (nothing unwinds through kernel code: a stop or a fault longjmps), so the
    object has no .eh_frame, whose relocations the line-table reader cannot apply."""
    import sys

    elf = sys.platform.startswith("linux")
    for fn in module.functions:
        if fn.name.startswith("llvm."):
            continue
        fn.attributes.add("nounwind")
        if elf and not fn.is_declaration:
            fn.section = CODE_SECTION


# the section the CPU target's machine code lives in (one_code_section)
CODE_SECTION = ".text.gpunb"


def choose_mode(typed, options: dict) -> tuple:
    """("workgroup" | "coroutine", why coroutines, work-group plan or None) for one kernel.

    The `cpu_mode` option ("auto", "workgroup", "coroutine"), else GPUNB_CPU_MODE, asks; "auto"
    takes work-group loops whenever wg_plan proves them safe. "workgroup" insists (a
    CompileError says why it cannot); "coroutine" forces the coroutine path (race detection).
    """
    from gpunb.backends.cpu.wg_plan import plan_workgroup
    from gpunb.foundation.errors import CompileError

    asked = options.get("cpu_mode") or config.cpu_mode()
    if asked not in ("auto", "workgroup", "coroutine"):
        raise CompileError(f"cpu_mode={asked!r}: expected 'auto', 'workgroup' or 'coroutine'",
                           function=typed.name)
    if asked == "coroutine":
        return "coroutine", "asked for (cpu_mode='coroutine' or GPUNB_CPU_MODE)", None
    plan, why = plan_workgroup(typed, bool(options.get("debug")))
    if plan is not None:
        return "workgroup", "", plan
    if asked == "workgroup":
        raise CompileError(f"kernel '{typed.name}' cannot run as work-group loops: {why}",
                           function=typed.name,
                           hint="drop cpu_mode='workgroup' to let it run as coroutines")
    return "coroutine", why, None


@functools.cache
def host_arch() -> str:
    """The CPU target's arch in cache keys: triple, CPU name and a digest of its features.

    Host objects are compiled for the host CPU's features, so a cache directory shared between
    machines (an NFS home) must not hand an AVX-512 object to a machine without AVX-512.
    """
    import hashlib

    import llvmlite.binding as llvm

    from gpunb.backends.cpu.host_cpu import host_features

    features = host_features()  # what objects are compiled for (exact bf16 rounding too)
    digest = hashlib.blake2b(features.encode(), digest_size=6).hexdigest()
    return f"{llvm.get_default_triple()}/{llvm.get_host_cpu_name()}/{digest}"


BACKEND = CpuBackend()
