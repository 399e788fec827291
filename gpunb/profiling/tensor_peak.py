"""The roofline's tensor-core roof, measured like the FP32 one (peaks.py).

A gpunb kernel whose warps each run 4 independent chains of mma.sync m16n8k16 (FP16 in, FP32
accumulate) in registers, over enough warps to fill the device, timed with CUDA events. GPUs
before sm_80 (and the CPU target) have no such roof: None.
"""

from __future__ import annotations

import numpy as np

CHAINS = 4
FLOPS_PER_MMA = 2 * 16 * 8 * 16  # per warp
_kernel = None


def _mma_kernel():
    global _kernel
    if _kernel is None:
        from gpunb import cuda

        @cuda.jit
        def gpunb_tensor_peak(out, seed, iters):
            h = seed[0]
            a = (h, h, h, h, h, h, h, h)
            b = (h, h, h, h)
            z = np.float32(0)
            c0, c1, c2, c3 = (z, z, z, z), (z, z, z, z), (z, z, z, z), (z, z, z, z)
            for _ in range(iters):
                c0 = cuda.mma_sync("m16n8k16", a, b, c0)
                c1 = cuda.mma_sync("m16n8k16", a, b, c1)
                c2 = cuda.mma_sync("m16n8k16", a, b, c2)
                c3 = cuda.mma_sync("m16n8k16", a, b, c3)
            i = cuda.grid(1)
            if i < out.size:
                out[i] = (c0[0] + c1[1]) + (c2[2] + c3[3])

        _kernel = gpunb_tensor_peak
    return _kernel


def tensor_gflops_cuda(device) -> float | None:
    """FP16 tensor-core GFLOP/s of the current GPU (None before sm_80)."""
    from gpunb import cuda
    from gpunb.profiling.peak_runs import best_event_seconds, spec_launcher

    if tuple(device.compute_capability) < (8, 0):
        return None
    blocks, threads = device.multiprocessor_count * 4, 256
    out = cuda.device_array(blocks * threads, np.float32)
    seed = cuda.to_device(np.array([2.0 ** -10], np.float16))
    iters = 4096
    best = best_event_seconds(spec_launcher(_mma_kernel(), "cuda", blocks, threads, (out, seed)),
                              iters)
    if not np.isfinite(out.copy_to_host()[0]):
        raise RuntimeError("the tensor-core kernel's result is not finite")
    warps = blocks * threads // 32
    return warps * iters * CHAINS * FLOPS_PER_MMA / best / 1e9
