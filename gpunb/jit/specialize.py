"""The dispatcher's slow path: argument types -> a launchable Specialization, through the cache.

Stages are plain functions: infer (compiler/infer) -> build (compiler/build: PTX or host object)
-> load (runtime: driver module or MCJIT) -> a launcher closure over the loaded kernel.
"""

from __future__ import annotations

import dataclasses
import time

from gpunb.foundation import types as t
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage
from gpunb.foundation.errors import LaunchError

CPU_LIMITS = {"max_threads_per_block": 1024, "max_block_dim": (1024, 1024, 64),
              "max_grid_dim": (2**31 - 1, 65535, 65535), "max_shared_memory_per_block": 227 * 1024}


def build_specialization(dispatcher, argtypes: tuple, target: str, previous=None):
    """The specialisation for these argument types: kept, loaded from the cache, or compiled.

    Protocol with gpunb.cache: fingerprint the function (its code and everything it reads,
    transitively); when a previous specialisation's watch list failed but the key is unchanged (a
    rebinding to an equal value, a new notebook epoch) keep it with the new watch list; otherwise
    look the key up (memory, then disk) and compile only on a miss, storing the result. The watch
    list is taken even with the cache disabled: invalidation in a live process is correctness.
    """
    from gpunb.cache import default_cache
    from gpunb.cache.fingerprint import collect
    from gpunb.compiler.guard import compile_guard

    options = dict(dispatcher.options)
    signature = str(t.Signature(t.void, argtypes))
    with compile_guard(dispatcher.py_func):
        # fresh: the code compiled below freezes today's values, so its key must describe them
        # (a digest memoised earlier in this epoch may predate `TABLE[0] = 5`)
        fingerprint = collect(dispatcher, fresh=True)
    cache = default_cache()
    arch = _cache_arch(target)
    checked = time.perf_counter()
    if previous is not None and previous.key is not None and previous.key == cache.key_for(
            fingerprint, signature, options, target, arch):
        if _rebound(previous.watch):
            previous.cache_event = cache.kept(
                dispatcher.__name__, fingerprint, signature, target, previous.key,
                getattr(previous.cache_event, "entry_bytes", 0),
                (time.perf_counter() - checked) * 1000.0)
        previous.watch = fingerprint.watch
        previous.fingerprint = fingerprint
        return previous
    started = time.perf_counter()
    artifact, pending = cache.lookup(dispatcher.__name__, fingerprint, signature, options, target,
                                     arch)
    typed = None
    if artifact is None:
        try:
            with compile_guard(dispatcher.py_func):
                typed = infer(dispatcher, argtypes, options)
                artifact = _build_cpu(typed, options) if target == "cpu" else None
            if target == "cpu":
                launcher = _cpu_launcher(dispatcher, artifact)
            else:
                artifact, launcher = _build_cuda(dispatcher, typed, options)
        except BaseException:
            cache.abandon(pending)  # other processes waiting for this key compile it now
            raise
        compile_ms = (time.perf_counter() - started) * 1000.0
        event = cache.store(pending, artifact, fingerprint, compile_ms)
    else:
        launcher = _load(dispatcher, artifact, target)
        compile_ms = 0.0
        event = pending.event
    spec = _specialization(dispatcher, argtypes, artifact, target, launcher, typed)
    spec.compile_ms = compile_ms
    spec.watch = fingerprint.watch
    spec.fingerprint = fingerprint
    spec.key = pending.key
    spec.cache_event = event
    return spec


def _specialization(dispatcher, argtypes: tuple, artifact: KernelArtifact, target: str,
                    launcher, typed):
    from gpunb.jit.dispatcher import Specialization
    from gpunb.runtime.packing import ArgPacker

    # the packer passes arrays the specialisation's way (host pointers on the CPU target even
    # when the active target is cuda, e.g. cuda.jit(target="cpu") on a GPU machine)
    packer = ArgPacker(artifact.param_slots, target, dispatcher.__name__)
    return Specialization(argtypes, artifact, target, packer, launcher, typed)


def _load(dispatcher, artifact: KernelArtifact, target: str):
    """A launcher for an artifact from the cache: MCJIT for host objects, the driver for cubins."""
    if target == "cpu":
        return _cpu_launcher(dispatcher, artifact)
    from gpunb.backends.cuda import driver

    device = driver.current_device()
    module = driver.load_module(artifact.binary)
    function = module.get_function(artifact.symbol)
    return _cuda_launcher(dispatcher.__name__, artifact, module, function, device)


_host_arch: list = []


def _rebound(watch) -> bool:
    """Whether a name the kernel reads was rebound (not merely a new epoch: a notebook cell ran,
    which re-checks every kernel and is no news)."""
    from gpunb.cache import epoch
    from gpunb.cache.fingerprint import still_valid

    return not still_valid([entry for entry in watch if not epoch.is_watch_entry(entry)])


def _cache_arch(target: str) -> str:
    """The arch part of a cache key: sm_XY of the current GPU, or the host CPU's identity."""
    if target == "cpu":
        if not _host_arch:
            from gpunb.cache import host_arch

            _host_arch.append(host_arch())
        return _host_arch[0]
    from gpunb.backends.cuda import driver

    # spelled here, not imported from compiler.build: that would load LLVM on a disk hit
    major, minor = driver.current_device().compute_capability
    return f"sm_{major}{minor}"


def infer(dispatcher, argtypes: tuple, options: dict):
    from gpunb.compiler.pipeline import infer_kernel

    return infer_kernel(dispatcher.py_func, argtypes, options, device=dispatcher.device)


def _build_cpu(typed, options: dict) -> KernelArtifact:
    from gpunb.backends.build import build_cpu

    return build_cpu(typed, options)


STATIC_SHARED_LIMIT = 48 * 1024  # CUDA's cap on statically sized shared memory, every arch


def _check_static_shared(name: str, static_bytes: int, device) -> None:
    """Say what is wrong before the driver's linker does ('uses too much shared data (0x4e200
    bytes, 0xc000 max)'): past 48 KiB, shared memory must be dynamic."""
    if static_bytes <= STATIC_SHARED_LIMIT:
        return
    from gpunb.foundation.errors import LaunchError

    optin = getattr(device, "max_shared_memory_per_block_optin", None)
    most = f", up to {optin} bytes per block on this GPU" if optin else ""
    raise LaunchError(
        f"kernel '{name}' declares {static_bytes} bytes of static shared memory; a CUDA kernel "
        f"may declare at most {STATIC_SHARED_LIMIT} bytes of shared memory statically",
        function=name,
        hint="use dynamic shared memory for more: cuda.shared.array(0, dtype) in the kernel and "
             f"the size as the 4th launch parameter, kernel[grid, block, 0, nbytes]{most}")


def _cpu_launcher(dispatcher, artifact: KernelArtifact):
    from gpunb.backends.cpu.executor import LoadedCpuKernel
    from gpunb.runtime.packing import validate_config

    loaded = LoadedCpuKernel(artifact)
    name = dispatcher.__name__
    static_shared = artifact.resources.shared_bytes

    def launch(griddim, blockdim, sharedmem, stream, params):
        grid, block = validate_config(griddim, blockdim, CPU_LIMITS, sharedmem + static_shared,
                                      name)
        if grid[0] * grid[1] * grid[2] == 0:
            return
        loaded.launch(grid, block, int(sharedmem), params)

    launch.loaded = loaded
    return launch


def _build_cuda(dispatcher, typed, options: dict):
    from gpunb.backends.build import build_ptx
    from gpunb.backends.cuda import driver
    from gpunb.compiler.guard import compile_guard

    device = driver.current_device()
    cc = tuple(device.compute_capability)
    with compile_guard(dispatcher.py_func):
        artifact = build_ptx(typed, options, cc)
    _check_static_shared(dispatcher.__name__, artifact.resources.shared_bytes, device)
    cubin, _log = driver.link_ptx(artifact.ptx, cc, max_registers=options.get("max_registers"),
                                  lineinfo=bool(options.get("lineinfo")),
                                  debug=bool(options.get("debug")),
                                  opt=options.get("opt", True) is not False)
    module = driver.load_module(cubin)
    function = module.get_function(artifact.symbol)
    attrs = function.attributes()
    artifact = dataclasses.replace(
        artifact, binary=cubin,
        resources=ResourceUsage(registers=attrs["num_regs"],
                                shared_bytes=attrs["shared_size_bytes"],
                                local_bytes=attrs["local_size_bytes"],
                                const_bytes=attrs.get("const_size_bytes", 0),
                                max_threads_per_block=attrs["max_threads_per_block"]))
    return artifact, _cuda_launcher(dispatcher.__name__, artifact, module, function, device)


def _cuda_launcher(name: str, artifact: KernelArtifact, module, function, device):
    from gpunb.runtime.packing import launch_cuda, prepare_native_launch, validate_config
    from gpunb.runtime.streams import stream_handle

    prepare_native_launch()

    limits = {
        "max_threads_per_block": min(device.max_threads_per_block,
                                     artifact.resources.max_threads_per_block),
        "max_block_dim": tuple(device.max_block_dim),
        "max_grid_dim": tuple(device.max_grid_dim),
        "max_shared_memory_per_block": device.max_shared_memory_per_block_optin,
    }
    static_shared = artifact.resources.shared_bytes
    state = {"dyn_limit": 48 * 1024 - static_shared}
    function.name = name  # driver errors name the Python function, not the mangled symbol
    cooperative = artifact.cooperative
    raises = bool(artifact.raise_sites)
    if raises:
        from gpunb.foundation.kernel_errors import check_cuda_exception

    def launch(griddim, blockdim, sharedmem, stream, params):
        grid, block = validate_config(griddim, blockdim, limits, sharedmem + static_shared, name)
        if cooperative:
            _check_co_resident(name, function, grid, block, sharedmem, state)
        if sharedmem > state["dyn_limit"]:
            function.set_max_dynamic_shared(int(sharedmem))
            state["dyn_limit"] = int(sharedmem)
        handle = stream if stream.__class__ is int else stream_handle(stream)
        launch_cuda(function, grid, block, sharedmem, handle, params, cooperative)
        if raises:  # debug=True: the launch waits and raises what the kernel raised
            check_cuda_exception(module, artifact)

    launch.module = module
    launch.function = function
    return launch


def _threads_per_block(blockdim) -> int:
    dims = tuple(blockdim) if isinstance(blockdim, (tuple, list)) else (blockdim,)
    threads = 1
    for d in dims:
        threads *= int(d)
    return threads


def _check_co_resident(name: str, function, grid: tuple, block: tuple, sharedmem: int,
                       state: dict) -> None:
    """A grid-sync kernel's blocks must all be resident: say so before the driver refuses."""
    from gpunb.backends.cuda import occupancy

    key = (block, sharedmem)
    limit = state.get(key)
    if limit is None:
        limit = state[key] = occupancy.max_cooperative_grid_blocks(
            function, block[0] * block[1] * block[2], sharedmem)
    blocks = grid[0] * grid[1] * grid[2]
    threads = block[0] * block[1] * block[2]
    if blocks > limit:
        raise LaunchError(
            f"cooperative kernel '{name}' (it uses grid sync): a grid of {blocks} blocks of "
            f"{block} threads cannot be resident at once; this GPU holds at most {limit}",
            function=name,
            hint=f"launch at most kernel.max_cooperative_grid_blocks({threads}) = {limit} blocks "
                 "and cover the data with a grid-stride loop")


def max_cooperative_blocks(spec, blockdim, dynamic_shared: int = 0) -> int:
    """Blocks of `blockdim` that can be resident at once (a cooperative launch's largest grid)."""
    threads = _threads_per_block(blockdim)
    if threads <= 0:
        raise LaunchError(f"a block of {blockdim} has no threads")
    if spec.target == "cpu":
        from gpunb.backends.cpu.executor import MAX_COOPERATIVE_THREADS

        return MAX_COOPERATIVE_THREADS // threads
    from gpunb.backends.cuda import occupancy

    return occupancy.max_cooperative_grid_blocks(spec.launcher.function, threads, dynamic_shared)


# ---- inspection -------------------------------------------------------------------------------

_ptx_cache: dict = {}


def ptx_for(dispatcher, argtypes: tuple) -> KernelArtifact:
    """PTX for these argument types, whatever the active target (no GPU needed).

    Memoised by content (the function's fingerprint digest, options, arch), so a redefined device
    function it calls gives new PTX, as a launch would.
    """
    from gpunb.backends.build import build_ptx
    from gpunb.cache.fingerprint import collect, still_valid
    from gpunb.compiler.guard import compile_guard

    for (target, types), spec in dispatcher.specializations.items():
        if target == "cuda" and types == argtypes and still_valid(spec.watch):
            return spec.artifact
    options = dict(dispatcher.options)
    cc = _inspection_cc()
    with compile_guard(dispatcher.py_func):
        digest = collect(dispatcher, fresh=True).digest  # as a compile would see it now
    key = (digest, repr(sorted(options.items())), argtypes, cc)
    found = _ptx_cache.get(key)
    if found is None:
        with compile_guard(dispatcher.py_func):
            typed = infer(dispatcher, argtypes, options)
            found = build_ptx(typed, options, cc)
        if len(_ptx_cache) > 256:
            _ptx_cache.clear()
        _ptx_cache[key] = found
    return found


def _inspection_cc() -> tuple:
    from gpunb.backends.cuda import driver
    from gpunb.foundation import config

    if driver.is_available():
        return tuple(driver.current_device().compute_capability)
    return config.default_arch()


def sass_for(dispatcher, spec) -> str:
    from gpunb.backends.cuda import sass

    artifact = ptx_for(dispatcher, spec.argtypes)
    return sass.disassemble(artifact)


def resources_for(dispatcher, spec) -> dict:
    if spec.target == "cuda":
        return dataclasses.asdict(spec.artifact.resources)
    from gpunb.backends.cuda import sass

    artifact = ptx_for(dispatcher, spec.argtypes)
    return dataclasses.asdict(sass.ptxas_resources(artifact))


def describe_types(typed) -> str:
    from gpunb.compiler.describe import describe_types as describe

    return describe(typed)


def suggest_launch(dispatcher, spec, n: int) -> dict:
    """Block size with the best occupancy for this kernel, and the grid that covers n threads."""
    from gpunb.backends.cuda import occupancy

    usage = resources_for(dispatcher, spec)
    arch = _inspection_cc()
    best = occupancy.suggest_block_size(f"sm_{arch[0]}{arch[1]}", usage.get("registers") or 32,
                                        usage.get("shared_bytes") or 0)
    block = best["block_size"] if isinstance(best, dict) else int(best)
    grid = max(1, -(-int(n) // block))
    result = {"grid": grid, "block": block, "n": int(n)}
    if isinstance(best, dict):
        result.update({k: v for k, v in best.items() if k != "block_size"})
    return result


