"""gpunb: write GPU kernels in Python, compile them with our own JIT, see what was produced.

Importing gpunb is cheap and touches no CUDA driver; the compiler and runtime load on first use.
"""

from __future__ import annotations

from gpunb.foundation import exec_sources as _exec_sources
from gpunb.foundation.errors import (
    AsyncCopyError,
    CompileError,
    GpunbError,
    GraphError,
    InitcheckError,
    JitOptionError,
    KernelFaultError,
    LaunchError,
    LaunchTimeoutError,
    RaceError,
    SignatureError,
    TensorMapError,
    ToolchainError,
    WarpMaskError,
)
from gpunb.foundation.version import VERSION as __version__

# kernels exec'd from strings after this point can be compiled: their text is recorded
_exec_sources.install()

__all__ = ["AsyncCopyError", "CompileError", "DebugQuit", "DebuggerError", "GpunbError",
           "GraphError", "InitcheckError", "JitOptionError", "KernelFaultError",
           "KernelIndexError", "LaunchError",
           "LaunchTimeoutError", "RaceError", "SignatureError", "TensorMapError", "ToolchainError",
           "WarpMaskError", "__version__", "access_map", "cuda", "debug", "debug_session",
           "events", "fuse", "graph", "guvectorize", "jit", "last_profile", "last_trace",
           "post_mortem", "profile", "sanitize", "set_target", "trace", "load_ipython_extension",
           "vectorize"]


def set_target(target: str | None) -> None:
    """Run kernels on "cuda", "cpu" or "auto" for the whole process (None: back to GPUNB_TARGET)."""
    from gpunb.foundation import config
    from gpunb.jit.options import check_target

    check_target(target, "gpunb.set_target: target")  # a JitOptionError, also a ValueError
    config.set_process_target(target)


def load_ipython_extension(ipython) -> None:
    """`%load_ext gpunb`: the magics, cell hooks and displays (gpunb.notebook)."""
    from gpunb.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """`%unload_ext gpunb`: remove the cell hooks and displays again."""
    from gpunb.notebook import unload_ipython_extension as unload

    unload(ipython)


def __getattr__(name: str):
    if name in ("cuda", "events", "torch"):  # events: compiles, launches, cache decisions;
        import importlib  # torch: PyTorch operators (imports torch)

        return importlib.import_module({"cuda": "gpunb.cuda", "torch": "gpunb.torch"}.get(
            name, "gpunb.foundation.events"))
    if name in ("profile", "last_profile", "sanitize"):  # profiling: loaded on first use
        from gpunb import profiling

        value = globals()[name] = getattr(profiling, name)  # the next look-up is a plain read
        return value
    if name == "jit":
        from gpunb.cuda import jit

        return jit
    # the CPU target's debugger
    if name in ("debug", "trace", "post_mortem", "last_trace", "debug_session"):
        from gpunb.jit import debug_launch

        return getattr(debug_launch, name)
    if name in ("DebuggerError", "DebugQuit"):
        from gpunb.debugger import errors

        return getattr(errors, name)
    if name == "KernelIndexError":  # the CPU target's bounds checks (a LaunchError, an IndexError)
        from gpunb.backends.cpu.executor import KernelIndexError

        return KernelIndexError
    if name == "access_map":  # which thread touched which element (CPU target, recording)
        from gpunb.jit.access_map import access_map

        return access_map
    if name in ("vectorize", "guvectorize"):  # numba's `@vectorize([...], target="cuda")`
        import gpunb.ufunc

        return getattr(gpunb.ufunc, name)
    if name == "fuse":
        from gpunb.fusion import fuse

        return fuse
    if name == "graph":  # capture launches and copies, replay them (CUDA graphs on a GPU)
        from gpunb.graphs import graph

        return graph
    if name == "types":  # numba's type names and helpers (gpunb.cuda.types)
        import importlib

        return importlib.import_module("gpunb.cuda.types")
    if not name.startswith("_"):  # numba's type names, short ones too (f8)
        from gpunb.foundation import types

        if name in types.TYPE_NAMES:
            return types.TYPE_NAMES[name]
    raise AttributeError(f"module 'gpunb' has no attribute {name!r}")
