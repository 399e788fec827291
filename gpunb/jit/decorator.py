"""`@cuda.jit`: a Python function -> a Dispatcher, with numba.cuda's call forms.

Kept in the jit layer (gpunb.cuda re-exports it) so that code below the facade - gpunb.fuse's
helpers, gpunb.random's generators - can make GPU functions without importing the facade.
"""

from __future__ import annotations

from gpunb.backends.cuda import preload
from gpunb.foundation.types import Signature

# while the driver starts, a thread imports the compile path (down to these modules of the
# layers above the backends) and warms LLVM's code generator: backends/cuda/preload.py
preload.install("gpunb.jit.slow_path", "gpunb.cache.kernel_cache", "gpunb.cache.toolchain_id",
                "gpunb.cache.compile_once", "gpunb.cache.keylock", "gpunb.foundation.sources",
                "gpunb.runtime.packing", "gpunb.runtime.arghints")


def jit(func_or_sig=None, device: bool = False, target: str | None = None, **options):
    """Make a GPU function, as numba.cuda.jit does.

    `@cuda.jit`, `@cuda.jit()`, `@cuda.jit("void(float32[:], float32)")`, `@cuda.jit(device=True)`;
    options: fastmath, lineinfo, debug, opt, max_registers, cache, boundscheck (on by default on
    the CPU target), racecheck (CPU target: raise gpunb.RaceError on data races); target: "cuda",
    "cpu" or "auto" (default: GPUNB_TARGET / gpunb.set_target). Compilation happens at the first
    launch (or first call from another GPU function) for the argument types seen.
    """
    from gpunb.foundation import loaded_sources
    from gpunb.jit import versions
    from gpunb.jit.dispatcher import Dispatcher

    if options.get("debug") and (options.get("opt", True) or options.get("lineinfo")):
        import warnings

        from gpunb.foundation.errors import InvalidConfigWarning

        if options.get("opt", True):
            warnings.warn("debug=True with opt=True is not supported by CUDA: optimised code's "
                          "line and variable information is unreliable; pass opt=False with "
                          "debug=True (as numba-cuda advises)", InvalidConfigWarning,
                          stacklevel=2)
        if options.get("lineinfo"):
            warnings.warn("debug and lineinfo are mutually exclusive. Use debug to get full "
                          "debug info (this disables some optimizations), or lineinfo for "
                          "line info only with code generation unaffected.",
                          InvalidConfigWarning, stacklevel=2)
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, Signature)):
        loaded_sources.remember_module_text(func_or_sig)  # compiled from the text as imported
        made = Dispatcher(func_or_sig, device=device, target=target, **options)
        versions.note(made)  # a redefinition keeps the definition it replaces (diff view)
        return made
    signatures = func_or_sig

    def decorate(func):
        loaded_sources.remember_module_text(func)
        made = Dispatcher(func, device=device, signatures=signatures, target=target, **options)
        versions.note(made)
        return made

    return decorate
