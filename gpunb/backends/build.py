"""Target builds: a lowered ModuleBuilder -> KernelArtifact (PTX for CUDA, an object for CPU)."""

from __future__ import annotations

from gpunb.backends.cpu import runner as cpu_runner
from gpunb.backends.cpu import target as cpu
from gpunb.backends.cuda.target import CudaTarget, arch_string, emit_ptx, ptx_line_map
from gpunb.compiler.infer import TypedFunction
from gpunb.compiler.pipeline import kernel_signature, lower_kernel, mangle, slots_of
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage


def build_ptx(typed: TypedFunction, options: dict, cc: tuple) -> KernelArtifact:
    """Compile a typed kernel to PTX (no GPU needed); the cubin is linked later by the driver."""
    symbol = mangle(typed.name, typed.argtypes)
    target = CudaTarget(cc, fastmath=bool(options.get("fastmath")))
    mb = lower_kernel(typed, target, options, symbol)
    ptx, llvm_ir = emit_ptx(str(mb.module), cc, opt=options.get("opt", True) is not False,
                            fastmath=bool(options.get("fastmath")), kernel_symbols=(symbol,),
                            lineinfo=bool(options.get("lineinfo")))
    features = mb.features
    return KernelArtifact(
        name=typed.name, symbol=symbol, target="cuda", arch=arch_string(cc),
        signature=kernel_signature(typed), param_slots=slots_of(typed), binary=b"",
        ptx=ptx, llvm_ir=llvm_ir, cooperative="grid_sync" in features,
        uses_barriers="barrier" in features,
        uses_dynamic_shared="dynamic_shared" in features,
        resources=ResourceUsage(shared_bytes=mb.shared_static_bytes),
        line_map=ptx_line_map(ptx), source_file=typed.source.filename,
        first_line=typed.source.first_line, raise_sites=tuple(mb.raise_sites))


def build_cpu(typed: TypedFunction, options: dict) -> KernelArtifact:
    """Compile a typed kernel for the host CPU target."""
    from gpunb.foundation import config

    symbol = mangle(typed.name, typed.argtypes)
    features = typed.all_features()
    coroutine = bool(features & {"barrier", "warp_barrier", "grid_sync"})
    boundscheck = bool(options.get("debug")) or bool(options.get("boundscheck")) or \
        config.boundscheck()
    target = cpu.CpuTarget(coroutine=coroutine, boundscheck=boundscheck)
    mb = lower_kernel(typed, target, options, symbol)
    cpu_runner.emit_runner(mb.module, symbol, target.body, target.slot_types, coroutine,
                           cooperative="grid_sync" in features)
    obj, llvm_ir, asm = cpu.emit_object(str(mb.module), target.body.name, coroutine,
                                        opt=options.get("opt", True) is not False,
                                        fastmath=bool(options.get("fastmath")))
    return KernelArtifact(
        name=typed.name, symbol=symbol, target="cpu", arch=cpu.host_target_machine().triple,
        signature=kernel_signature(typed), param_slots=slots_of(typed), binary=obj,
        llvm_ir=llvm_ir, asm=asm, cooperative="grid_sync" in features,
        uses_barriers=coroutine, uses_dynamic_shared="dynamic_shared" in features,
        resources=ResourceUsage(shared_bytes=target.static_shared),
        source_file=typed.source.filename, first_line=typed.source.first_line,
        error_sites=tuple(target.error_sites), barrier_sites=tuple(target.barrier_sites),
        prints="print" in features, raise_sites=tuple(mb.raise_sites))
