"""The numba.cuda dialect: `from gpunb import cuda` and numba-cuda programs run unchanged.

Host API (jit, to_device, streams, events, devices) and the kernel-language names (threadIdx,
shared.array, atomic.add, ...) in one namespace, as numba.cuda has them. The submodules
`libdevice` and `libdevicefuncs` are imported when first named (`from gpunb.cuda import libdevice`).
"""

from __future__ import annotations

import sys as _sys

from gpunb.compiler.async_api import (  # noqa: F401 - re-exported kernel language
    cp_async,
    fence_proxy_async,
    mbarrier,
    setmaxnreg_dec,
    setmaxnreg_inc,
    tma,
    wgmma,
)
from gpunb.compiler.kernel_api import (  # noqa: F401 - re-exported kernel language
    activemask,
    all_sync,
    any_sync,
    atomic,
    ballot_sync,
    bf16,
    blockDim,
    blockIdx,
    brev,
    cbrt,
    cg,
    clz,
    const,
    eq_sync,
    ffs,
    fma,
    fp8,
    fp16,
    grid,
    gridDim,
    gridsize,
    inline_ptx,
    laneid,
    lanemask_lt,
    ldca,
    ldcg,
    ldcs,
    ldcv,
    ldlu,
    ldmatrix,
    literal_unroll,
    local,
    match_all_sync,
    match_any_sync,
    mma_sync,
    nanosleep,
    popc,
    selp,
    shared,
    shfl_down_sync,
    shfl_sync,
    shfl_up_sync,
    shfl_xor_sync,
    stcg,
    stcs,
    stmatrix,
    stwb,
    stwt,
    syncthreads,
    syncthreads_and,
    syncthreads_count,
    syncthreads_or,
    syncwarp,
    threadfence,
    threadfence_block,
    threadfence_system,
    threadIdx,
    warpsize,
    wmma,
)
from gpunb.cuda.compiling import (  # noqa: F401 - re-exported
    compile,
    compile_all,
    compile_for_current_device,
    compile_ptx,
    compile_ptx_for_current_device,
)
from gpunb.cuda.devices import (  # noqa: F401
    current_context,
    get_current_device,
    gpus,
    list_devices,
)
from gpunb.jit.decorator import jit  # noqa: F401 - re-exported: @cuda.jit
from gpunb.runtime.tma import descriptor as _tma_descriptor

# cuda.tma.descriptor(array, box, swizzle): the one host function of the TMA namespace
tma.descriptor = _tma_descriptor

# `from gpunb.cuda.bf16 import hadd` as numba-cuda's `from numba.cuda.bf16 import hadd`
_sys.modules[__name__ + ".bf16"] = bf16
_sys.modules[__name__ + ".fp8"] = fp8
_sys.modules[__name__ + ".wmma"] = wmma


def declare_device(name: str, sig, link=None, use_cooperative: bool = False, abi: str = "numba"):
    """A foreign device function callable from kernels: `name` with the numba signature `sig`,
    defined in the code `link` names (.cu compiled by NVRTC, .ptx, .cubin, .fatbin, .o, .a,
    .ltoir, or cuda.CUSource & co.), linked into every kernel that calls it (CUDA target only).
    abi="numba": `int name(Ret *out, args...)`; abi="c": `Ret name(args...)`."""
    from gpunb.compiler.builtins.external import ABIS, ExternalFunction
    from gpunb.foundation.errors import JitOptionError
    from gpunb.foundation.linkable import link_items
    from gpunb.jit import options as jit_checks

    if abi not in ABIS:
        raise JitOptionError(f"Unsupported ABI: {abi!r}", jit_checks.user_location(),
                             hint="abi='numba' (int f(Ret *out, args...)) or abi='c'")
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"declare_device: the name must be the function's C symbol, got {name!r}")
    if isinstance(sig, str) and sig.strip().startswith("("):
        raise TypeError("Return type must be provided for device declarations, e.g. "
                        f"'int32{sig.strip()}'")
    parsed = jit_checks.parse_signature(sig, "declare_device signature")
    if parsed.return_type is None:
        raise TypeError("Return type must be provided for device declarations, e.g. "
                        "int32(float32, int32)")
    return ExternalFunction(name, parsed, link_items(link), abi, use_cooperative)


# ---- host API: devices, memory, streams, events (the runtime layer) ----------------------------


def _device_supports(cc: tuple) -> bool:
    """On the CPU target every number type works; on a GPU, by compute capability."""
    from gpunb.runtime.target import active_target

    if active_target() != "cuda":
        return True
    from gpunb.backends.cuda import driver

    return tuple(driver.current_device().compute_capability) >= cc


def is_fp16_supported() -> bool:
    """float16 arithmetic: compute capability 5.3 and later (always on the CPU target)."""
    return _device_supports((5, 3))


def is_bfloat16_supported() -> bool:
    """bfloat16 (cuda.bf16): compute capability 8.0 and later, as in numba-cuda (always on the
    CPU target)."""
    return _device_supports((8, 0))


def is_fp8_supported() -> bool:
    """fp8 types: compute capability 8.9 and later, as in numba-cuda (always on the CPU target).
    gpunb converts fp8 in software on every arch; this answers numba-cuda's question."""
    return _device_supports((8, 9))



def is_available() -> bool:
    from gpunb.backends.cuda import driver

    return driver.is_available()


def detect() -> bool:
    """Print the devices found, as numba.cuda.detect does; True when at least one is usable."""
    from gpunb.backends.cuda import driver

    if not driver.is_available():
        print("gpunb: no CUDA GPU found (kernels run on the CPU target)")
        return False
    print(f"Found {driver.device_count()} CUDA device(s)")
    for i in range(driver.device_count()):
        d = driver.device_info(i) if hasattr(driver, "device_info") else driver.current_device()
        cc = ".".join(map(str, d.compute_capability))
        print(f"id {i}    {d.name}    [SUPPORTED] compute capability: {cc}")
    return True


def select_device(device_id: int):
    from gpunb.backends.cuda import driver

    return driver.select_device(device_id)


def synchronize() -> None:
    from gpunb.runtime import capture
    from gpunb.runtime.target import active_target

    capture.refuse_synchronize("cuda.synchronize()")
    if active_target() == "cuda":
        from gpunb.backends.cuda import driver

        driver.synchronize()


_UFUNC_NAMES = ("vectorize", "guvectorize", "reduce", "Reduce")
_LINKABLE_NAMES = ("LinkableCode", "CUSource", "PTXSource", "Cubin", "Fatbin", "Archive", "Object",
                   "LTOIR")


def __getattr__(name: str):
    # memory and stream helpers come from the runtime layer, imported on first use
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _UFUNC_NAMES:  # numba-cuda's ufunc API (gpunb.ufunc), loaded when first named
        import gpunb.ufunc

        return getattr(gpunb.ufunc, name)
    if name in _LINKABLE_NAMES:  # code for declare_device's / cuda.jit's link=
        from gpunb.foundation import linkable

        return getattr(linkable, name)
    if name == "PerformanceWarning":  # gpunb's warning for host arrays copied per launch
        from gpunb.runtime.packing import PerformanceWarning

        return PerformanceWarning
    if name == "InvalidConfigWarning":
        from gpunb.foundation.errors import InvalidConfigWarning

        return InvalidConfigWarning
    if name in ("In", "Out", "InOut"):  # argument hints: how a host array travels
        from gpunb.runtime import arghints

        return getattr(arghints, name)
    if name in ("libdevice", "libdevicefuncs"):  # numba.cuda's submodules, imported when named
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    from gpunb.foundation import types

    if name in types.TYPE_NAMES:  # `from numba.cuda import float32` works in numba-cuda
        return types.TYPE_NAMES[name]
    from gpunb.runtime import memory

    if hasattr(memory, name):
        return getattr(memory, name)
    if name in ("reset", "close"):  # a fresh context after a crashed kernel
        from gpunb.runtime import devices

        return getattr(devices, name)
    raise AttributeError(f"module 'gpunb.cuda' has no attribute {name!r}")
