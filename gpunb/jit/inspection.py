"""What a GPU function compiles to, for people: types, PTX, SASS, resources, launch suggestions.

Every function here works without a GPU: PTX comes from the CUDA backend's stages up to PTX
(backends/pipeline.compile), whatever target the kernel runs on, memoised by content so that a
redefined device function it calls gives new PTX, as a launch would.
"""

from __future__ import annotations

import dataclasses
import functools

from gpunb.foundation.arch import check_known, parse_arch
from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.errors import LaunchError
from gpunb.foundation.events import Stage
from gpunb.foundation.memo import ContentKeyed


def ptx_for(dispatcher, argtypes: tuple, arch=None) -> KernelArtifact:
    """A PTX artifact for these argument types on the CUDA backend, for `arch` (sm_XX or
    (major, minor); default: the current GPU's, else GPUNB_ARCH)."""
    from gpunb import backends
    from gpunb.backends.pipeline import compile
    from gpunb.cache.fingerprint import collect, still_valid
    from gpunb.compiler.guard import compile_guard

    cuda = backends.get("cuda")
    cc = (parse_arch(cuda.default_arch()) if arch is None else check_known(arch)).key
    # a kernel's own CUDA artifact serves; a device function's specialisation on the CUDA
    # target is the launchable wrapper made for type checks, not the function's own PTX
    for (target, types), spec in dispatcher.specializations.items():
        if not dispatcher.device and target == cuda.name and types == argtypes and \
                still_valid(spec.watch) and spec.artifact.arch == parse_arch(cc).name:
            return spec.artifact
    options = dict(dispatcher.options)
    with compile_guard(dispatcher.py_func):
        digest = collect(dispatcher, fresh=True).digest  # as a compile would see it now
    code = dispatcher.py_func.__code__
    # the digest leaves out where the source sits; the PTX's `.loc` lines (the line map) do not
    key = (digest, repr(sorted(options.items())), argtypes, cc, code.co_filename,
           code.co_firstlineno, bool(dispatcher.device))

    def make() -> KernelArtifact:
        return compile(dispatcher.py_func, argtypes, options, cuda, stop_after=Stage.PTX,
                       arch=cc, device=dispatcher.device,
                       export_device=device_symbol(dispatcher, argtypes)).artifact

    return _ptx_by_content(ContentKeyed(key, make))


@functools.lru_cache(maxsize=256)
def _ptx_by_content(request: ContentKeyed) -> KernelArtifact:
    """PTX artifacts by their content key (inspection asks for the same ones again)."""
    artifact = request.make()
    request.make = None  # kept as the cache's key: not the function (and kernel) it made it of
    return artifact


def llvm_for(dispatcher, argtypes: tuple, arch=None) -> str:
    """The LLVM IR gpunb hands to LLVM's optimiser for the CUDA target (numba-cuda's
    inspect_llvm shows NVVM's input the same way): device functions are calls here unless
    inlined by inline='always' (forceinline marks them alwaysinline)."""
    from gpunb import backends
    from gpunb.backends.pipeline import compile
    from gpunb.cache.fingerprint import collect
    from gpunb.compiler.guard import compile_guard

    cuda = backends.get("cuda")
    cc = (parse_arch(cuda.default_arch()) if arch is None else check_known(arch)).key
    with compile_guard(dispatcher.py_func):
        digest = collect(dispatcher, fresh=True).digest
    options = dict(dispatcher.options)
    key = ("llvm", digest, repr(sorted(options.items())), argtypes, cc,
           dispatcher.py_func.__code__.co_filename, bool(dispatcher.device))

    def make() -> str:
        compiled = compile(dispatcher.py_func, argtypes, options, cuda, stop_after=Stage.LLVM,
                           arch=cc, device=dispatcher.device,
                           export_device=device_symbol(dispatcher, argtypes))
        return str(compiled.builder.module)

    return _llvm_by_content(ContentKeyed(key, make))


@functools.lru_cache(maxsize=256)
def _llvm_by_content(request: ContentKeyed) -> str:
    """LLVM IR texts by their content key."""
    text = request.make()
    request.make = None
    return text


def device_symbol(dispatcher, argtypes: tuple) -> str | bool:
    """A device function is inspected as numba-cuda shows it: a function of its own (returning
    its value, under a symbol unique to its argument types), not wrapped in a kernel entry."""
    if not dispatcher.device:
        return False
    from gpunb.compiler.pipeline import mangle

    return mangle(dispatcher.py_func.__name__, tuple(argtypes))


def sass_for(dispatcher, spec, arch=None) -> str:
    """SASS of the kernel's PTX (nvdisasm; a ToolchainError says what to install)."""
    from gpunb import backends
    from gpunb.backends.pipeline import run_stage

    cuda = backends.get("cuda")
    artifact = ptx_for(dispatcher, spec.argtypes, arch)
    return run_stage(dispatcher.__name__, artifact.signature, cuda.name, Stage.SASS, cuda.sass,
                     artifact)


def live_registers_for(dispatcher, spec, arch=None) -> dict:
    """SASS instruction address -> registers live there (nvdisasm's life ranges), for the
    inspector's per-line register figures."""
    from gpunb.backends.cuda import sass

    return sass.live_registers(ptx_for(dispatcher, spec.argtypes, arch))


def resources_for(dispatcher, spec, arch=None) -> dict:
    """Registers, shared/local/const bytes, max threads: the driver's figures for a kernel
    loaded on a GPU, ptxas's for PTX compiled for inspection."""
    from gpunb import backends

    if spec.target == "cuda" and arch is None:
        return dataclasses.asdict(spec.artifact.resources)
    artifact = ptx_for(dispatcher, spec.argtypes, arch)
    return dataclasses.asdict(backends.get("cuda").resources(artifact))


def describe_types(typed) -> str:
    """Every variable and its type, then the source annotated with each line's expression types
    (the compiler's own account of a typed function)."""
    from gpunb.compiler.describe import describe_types as describe

    return describe(typed)


def suggest_launch(dispatcher, spec, n: int) -> dict:
    """Block size with the best occupancy for this kernel, and the grid that covers n threads."""
    from gpunb import backends
    from gpunb.backends.cuda import occupancy

    usage = resources_for(dispatcher, spec)
    arch = backends.get("cuda").default_arch()
    best = occupancy.suggest_block_size(f"sm_{arch[0]}{arch[1]}", usage.get("registers") or 32,
                                        usage.get("shared_bytes") or 0)
    block = best["block_size"] if isinstance(best, dict) else int(best)
    grid = max(1, -(-int(n) // block))
    result = {"grid": grid, "block": block, "n": int(n)}
    if isinstance(best, dict):
        result.update({k: v for k, v in best.items() if k != "block_size"})
    return result


def max_active_clusters(spec, blockdim, dynamic_shared: int = 0, cluster_dims=None) -> int:
    """Clusters of the kernel (its cluster_dims, or `cluster_dims` for one compiled without)
    that can be resident at once, for blocks of `blockdim`."""
    from gpunb.jit.options import check_options

    dims = tuple(blockdim) if isinstance(blockdim, (tuple, list)) else (blockdim,)
    block = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if len(block) != 3 or min(block) <= 0:
        raise LaunchError(f"a block of {blockdim} has no threads")
    shape = None if cluster_dims is None else \
        check_options({"cluster_dims": cluster_dims}, ("cluster_dims",))["cluster_dims"]
    return spec.backend.max_active_clusters(spec.program, block, dynamic_shared, shape)


def max_cooperative_blocks(spec, blockdim, dynamic_shared: int = 0) -> int:
    """Blocks of `blockdim` that can be resident at once (a cooperative launch's largest grid)."""
    dims = tuple(blockdim) if isinstance(blockdim, (tuple, list)) else (blockdim,)
    threads = 1
    for d in dims:
        threads *= int(d)
    if threads <= 0:
        raise LaunchError(f"a block of {blockdim} has no threads")
    return spec.backend.max_cooperative_blocks(spec.program, threads, dynamic_shared)
