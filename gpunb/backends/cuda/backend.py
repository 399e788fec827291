"""The CUDA backend: typed function -> NVPTX LLVM module -> PTX -> cubin (driver link) -> program.

No stage needs a GPU except `link` and `load`, so PTX for inspection and `cuda.compile_ptx` work
anywhere. LLVM and the compiler are imported inside the stage methods only: loading a cubin from
the cache never loads them.
"""

from __future__ import annotations

import dataclasses

from gpunb.backends.base import Backend, check_static_shared
from gpunb.backends.cuda import driver
from gpunb.foundation import config
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage
from gpunb.foundation.events import Stage


class CudaBackend(Backend):
    """NVIDIA GPUs through the driver API (cuda.bindings); PTX from LLVM's NVPTX backend."""

    name = "cuda"
    stages = (Stage.TYPES, Stage.LLVM, Stage.PTX, Stage.LINK)

    def default_arch(self) -> tuple:
        """The current GPU's compute capability, else GPUNB_ARCH (PTX needs no GPU)."""
        if driver.is_available():
            return tuple(driver.current_device().compute_capability)
        return config.default_arch()

    def cache_arch(self) -> str:
        # the current device's sm_XY: asking needs (and so checks for) a usable GPU
        major, minor = driver.current_device().compute_capability
        return f"sm_{major}{minor}"

    def lower(self, typed, options: dict, symbol: str, arch, device: bool = False):
        from gpunb.backends.cuda.target import CudaTarget
        from gpunb.compiler.pipeline import lower_device_function, lower_kernel

        if options.get("debugger") and not device:
            from gpunb.foundation.errors import CompileError

            raise CompileError(
                f"'{typed.name}' was made with debugger=True, which compiles the CPU target's "
                "debug variant; it is being compiled for the CUDA target",
                typed.source.loc(typed.source.tree), function=typed.name,
                hint="add target='cpu' (or set GPUNB_TARGET=cpu), or use gpunb.debug(kernel[grid, "
                     "block], *args), which runs on the CPU target whatever the active target")
        arch = compiled_arch(typed, arch)
        if options.get("cluster_dims") and not device:
            from gpunb.backends.cuda.cluster_ops import check_cluster_dims_arch

            check_cluster_dims_arch(typed, tuple(arch), tuple(options["cluster_dims"]))
        target = CudaTarget(tuple(arch), fastmath=bool(options.get("fastmath")))
        if device:
            return lower_device_function(typed, target, options, symbol)
        builder = lower_kernel(typed, target, options, symbol)
        from gpunb.backends.cuda.target import keep_shared_arrays

        keep_shared_arrays(builder.module)
        if options.get("launch_bounds"):
            from gpunb.backends.cuda.target import add_launch_bounds

            add_launch_bounds(builder.module, symbol, options["launch_bounds"])
        if options.get("cluster_dims"):
            from gpunb.backends.cuda.cluster_ops import add_cluster_dims

            add_cluster_dims(builder.module, symbol, options["cluster_dims"])
        return builder

    def emit(self, typed, builder, options: dict, symbol: str, arch) -> KernelArtifact:
        """Stage.PTX: the optimised module as PTX; the cubin is linked by `link`."""
        from gpunb.backends.cuda.target import arch_string, emit_ptx, ptx_line_map
        from gpunb.compiler.pipeline import kernel_signature, slots_of
        from gpunb.foundation.sources import debug_source_path

        arch = compiled_arch(typed, arch)
        ptx, llvm_ir = emit_ptx(str(builder.module), tuple(arch),
                                opt=options.get("opt", True) is not False,
                                fastmath=bool(options.get("fastmath")), kernel_symbols=(symbol,),
                                lineinfo=bool(options.get("lineinfo") or options.get("debug")))
        if "wgmma.mma_async" in ptx:  # (imported only then: a first launch imports nothing)
            from gpunb.backends.cuda.wgmma_lint import warn_if_serialised

            warn_if_serialised(ptx, typed.name, typed.source.filename, typed.source.first_line)
        features = builder.features
        return KernelArtifact(
            name=typed.name, symbol=symbol, target=self.name, arch=arch_string(tuple(arch)),
            signature=kernel_signature(typed), param_slots=slots_of(typed), binary=b"",
            ptx=ptx, llvm_ir=llvm_ir,
            cooperative=bool({"grid_sync", "cooperative"} & features) or
            builder.foreign_cooperative,
            uses_barriers="barrier" in features,
            uses_dynamic_shared="dynamic_shared" in features,
            cluster_dims=tuple(options.get("cluster_dims") or ()),
            resources=ResourceUsage(shared_bytes=builder.shared_static_bytes),
            line_map=ptx_line_map(ptx, debug_source_path(typed.source.filename), llvm_ir),
            source_file=typed.source.filename,
            first_line=typed.source.first_line, raise_sites=tuple(builder.raise_sites),
            links=tuple(builder.links))

    def link(self, artifact: KernelArtifact, options: dict) -> KernelArtifact:
        """Stage.LINK: PTX -> cubin by the driver's JIT linker, for the current GPU; a kernel
        with setmaxnreg by whole-program ptxas (whole_program.py: the linker drops it)."""
        from gpunb.backends.cuda import modules, whole_program

        device = driver.current_device()
        check_static_shared(artifact.name, artifact.resources.shared_bytes,
                            getattr(device, "max_shared_memory_per_block_optin", None))
        foreign = (*artifact.links, *options.get("link", ()))
        if foreign:
            if whole_program.needs_whole_program(artifact.ptx):
                whole_program.warn_lost("it is linked with foreign code (link=), which the "
                                        "linker builds as separate compilation units")
            return dataclasses.replace(artifact, binary=link_foreign(artifact, foreign, options))
        cubin, complete = modules.build_cubin(
            artifact.ptx, artifact.arch, max_registers=options.get("max_registers"),
            lineinfo=bool(options.get("lineinfo")), debug=bool(options.get("debug")),
            opt=options.get("opt", True) is not False)
        # a build that lost setmaxnreg is for this process only: a later one with a usable
        # ptxas builds it right instead of reusing it from the disk cache
        return dataclasses.replace(artifact, binary=cubin, disk_cache=complete)

    def load(self, artifact: KernelArtifact):
        """The cubin loaded into the current context; its program reports the driver's
        resource figures (registers, shared, local and const bytes, max threads)."""
        from gpunb.backends.cuda import modules
        from gpunb.backends.cuda.launch import CudaProgram

        device = driver.current_device()
        module = modules.load_module(artifact.binary)
        return CudaProgram(artifact, module, module.get_function(artifact.symbol), device)

    def max_active_blocks_per_sm(self, program, threads: int, dynamic_shared: int = 0) -> int:
        from gpunb.backends.cuda import occupancy

        return int(occupancy.max_active_blocks_per_sm(program.function, threads, dynamic_shared))

    def max_active_clusters(self, program, block: tuple, dynamic_shared: int = 0,
                            cluster_dims: tuple | None = None) -> int:
        return program.max_active_clusters(block, dynamic_shared, cluster_dims)

    def assembly(self, artifact: KernelArtifact) -> str:
        return artifact.ptx

    def resources(self, artifact: KernelArtifact) -> ResourceUsage:
        """The driver's figures for linked code; ptxas's for PTX built only for inspection."""
        if artifact.binary:
            return artifact.resources
        from gpunb.backends.cuda import sass

        return sass.ptxas_resources(artifact)

    def sass(self, artifact: KernelArtifact) -> str:
        """SASS through nvdisasm (ToolchainError naming the wheel to install when absent)."""
        from gpunb.backends.cuda import sass

        return sass.disassemble(artifact)


def compiled_arch(typed, arch) -> tuple:
    """The architecture a kernel compiles for: a kernel that uses sm_90a instructions (wgmma,
    setmaxnreg) compiles for sm_90a on an sm_90 device (its arch-specific features exist there
    only); anything else as asked. Elsewhere those instructions are CompileErrors at their
    lines (backends/cuda/async_common.need)."""
    from gpunb.compiler.typed import Feature

    arch = tuple(arch)
    if arch == (9, 0) and Feature.SM90A in typed.all_features():
        return (9, 0, "a")
    return arch


def link_foreign(artifact: KernelArtifact, items: tuple, options: dict) -> bytes:
    """The kernel's PTX linked with foreign code (declare_device, link=): NVRTC for CUDA C++,
    nvJitLink when LTO-IR is involved (lto=True or LTOIR items), else the driver's linker."""
    from gpunb.backends.cuda import linker, modules

    arch = modules.parse_arch(artifact.arch)
    lto = bool(options.get("lto"))
    unique = []
    for item in items:
        if all(item._gpunb_content_key != u._gpunb_content_key for u in unique):
            unique.append(item)
    inputs = linker.prepare_inputs(tuple(unique), arch, lto)
    flags = {"max_registers": options.get("max_registers"),
             "lineinfo": bool(options.get("lineinfo")), "debug": bool(options.get("debug")),
             "opt": options.get("opt", True) is not False}
    if linker.needs_nvjitlink(inputs, lto):
        cubin, _log = linker.link_offline(artifact.ptx, inputs, arch, lto=lto, **flags)
    else:
        cubin, _log = linker.link_with_driver(artifact.ptx, inputs, artifact.arch, **flags)
    return cubin


BACKEND = CudaBackend()
