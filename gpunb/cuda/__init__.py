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
from gpunb.cuda.api import (  # noqa: F401 - re-exported host API
    cuda_error,
    declare_device,
    detect,
    is_available,
    is_bfloat16_supported,
    is_float16_supported,
    is_fp8_supported,
    is_fp16_supported,
    is_supported_version,
    profile_start,
    profile_stop,
    profiling,
    select_device,
    synchronize,
)
from gpunb.cuda.compiler import (  # noqa: F401 - re-exported
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

# numba.cuda's submodules under their attribute names (`cuda.devicearray` is cudadrv's)
_SUBMODULES = {name: name for name in ("libdevice", "libdevicefuncs", "types", "random", "np",
                                       "kernels", "cudadrv", "compiler", "api", "typing", "misc",
                                       "vector_types", "args")}
_SUBMODULES["devicearray"] = "cudadrv.devicearray"
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
        from gpunb.foundation.errors import PerformanceWarning

        return PerformanceWarning
    if name == "InvalidConfigWarning":
        from gpunb.foundation.errors import InvalidConfigWarning

        return InvalidConfigWarning
    if name in ("In", "Out", "InOut"):  # argument hints: how a host array travels
        from gpunb.runtime import arghints

        return getattr(arghints, name)
    from gpunb.compiler.kernel_api import VECTOR_NAMES

    if name in VECTOR_NAMES:  # CUDA's vector types: cuda.float32x4(...), cuda.int2(...)
        return VECTOR_NAMES[name]
    if name in _SUBMODULES:  # numba.cuda's submodules, imported when first named
        import importlib

        return importlib.import_module(f"{__name__}.{_SUBMODULES[name]}")
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
