"""The names of the asynchronous kernel language: cp.async, mbarriers, TMA and wgmma.

`cuda.cp_async`, `cuda.mbarrier`, `cuda.tma` and `cuda.wgmma` are namespaces of markers (as
kernel_api's), typed and lowered by compiler/builtins/{async_copy,tma,wgmma}.py; the CUDA target
emits the PTX instructions of the same names, the CPU target runs them with their completion
rules (backends/cpu/async_*.py). `cuda.tma.descriptor` is the one host function here: the facade
(gpunb/cuda) attaches it from the runtime layer.
"""

from __future__ import annotations

from gpunb.compiler.kernel_api import KernelOnly, Namespace

cp_async = Namespace("cuda.cp_async", ["copy", "commit_group", "wait_group", "wait_all"])
mbarrier = Namespace("cuda.mbarrier", ["init", "arrive", "arrive_expect_tx", "expect_tx",
                                       "try_wait", "try_wait_parity", "wait", "inval"])
tma = Namespace("cuda.tma", ["load", "store", "prefetch", "commit_group", "wait_group",
                            "wait_group_read"])
wgmma = Namespace("cuda.wgmma", ["fence", "commit_group", "wait_group", "mma_async",
                                 "descriptor", "store"])
fence_proxy_async = KernelOnly("cuda.fence_proxy_async")
setmaxnreg_inc = KernelOnly("cuda.setmaxnreg_inc")
setmaxnreg_dec = KernelOnly("cuda.setmaxnreg_dec")

ASYNC_NAMES = {"cp_async": cp_async, "mbarrier": mbarrier, "tma": tma, "wgmma": wgmma,
               "fence_proxy_async": fence_proxy_async, "setmaxnreg_inc": setmaxnreg_inc,
               "setmaxnreg_dec": setmaxnreg_dec}
