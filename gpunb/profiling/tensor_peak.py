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
    from gpunb.backends.cuda import driver
    from gpunb.runtime.typeof import typeof

    if tuple(device.compute_capability) < (8, 0):
        return None
    cu, check = driver.cuda_driver(), driver.check
    blocks, threads = device.multiprocessor_count * 4, 256
    out = cuda.device_array(blocks * threads, np.float32)
    seed = cuda.to_device(np.array([2.0 ** -10], np.float16))
    kernel = _mma_kernel()

    def run(iters: int) -> None:  # through the specialisation: a running profile records none
        args = (out, seed, np.int64(iters))
        spec = kernel.specialization_for(tuple(typeof(x) for x in args), "cuda")
        params, _ = spec.packer.pack(args, spec.argtypes)
        spec.launch(blocks, threads, 0, 0, params)

    run(16)
    start = check(cu.cuEventCreate(0), "cuEventCreate")
    end = check(cu.cuEventCreate(0), "cuEventCreate")
    try:
        iters, best = 4096, float("inf")
        for _ in range(5):  # the first passes may run before the clocks have risen
            check(cu.cuEventRecord(start, 0), "cuEventRecord")
            run(iters)
            check(cu.cuEventRecord(end, 0), "cuEventRecord")
            check(cu.cuEventSynchronize(end), "cuEventSynchronize")
            ms = float(check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
            best = min(best, ms * 1e-3)
    finally:
        for event in (start, end):
            cu.cuEventDestroy(event)
    if not np.isfinite(out.copy_to_host()[0]):
        raise RuntimeError("the tensor-core kernel's result is not finite")
    warps = blocks * threads // 32
    return warps * iters * CHAINS * FLOPS_PER_MMA / best / 1e9
