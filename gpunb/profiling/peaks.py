"""The device's peaks, measured once per process and device: the roofline's two roofs.

Bandwidth: a copy reads and writes every byte, so its bandwidth (2 x bytes / time) is the most a
kernel that streams memory can reach on this device - the honest roof for achieved GB/s, rather
than a datasheet number. On the GPU: cuMemcpyDtoD of 256 MiB timed with CUDA events; on the CPU
target: numpy copies of 64 MiB on the host clock.

FP32 FLOP/s: a gpunb kernel whose threads each run 8 independent chains of fused multiply-adds
in registers (no memory traffic in the loop), over enough threads to fill the device, timed by
CUDA events (the host clock on the CPU target). Where it cannot run, the GPU's datasheet figure
(SMs x FP32 lanes x 2 x clock) stands in, labelled as such; `Peaks.source` says which each is.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

CHAINS = 8  # independent FMA chains per thread (the kernel below writes them out)


@dataclass(frozen=True)
class Peaks:
    """A device's roofs: copy bandwidth, FP32 GFLOP/s, how each was found."""

    gbps: float | None
    gflops: float | None
    device: str
    source: dict = field(default_factory=dict)  # {"gbps": "measured: ...", "gflops": "..."}
    note: str = ""  # one line when a figure fell back or is missing
    tensor_gflops: float | None = None  # FP16 tensor cores (tensor_peak.py); None: no roof


_lock = threading.Lock()
_measured: dict = {}  # (target, device id) -> Peaks


def device_peaks(target: str) -> Peaks:
    """Peaks of the current device of `target` ("cuda" or "cpu"), measured on the first call."""
    key = (target, _device_id() if target == "cuda" else 0)
    with _lock:
        found = _measured.get(key)
        if found is None:
            from gpunb.foundation.events import internal_work

            with internal_work():  # its kernel is gpunb's: no progress line, panel or log entry
                found = _measured[key] = _measure_cuda() if target == "cuda" else _measure_cpu()
        return found


def _device_id() -> int:
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    return driver.current_device().id


# ---- the FP32 roof: a kernel of FMA chains ------------------------------------------------------

_kernel = None


def _fma_kernel():
    global _kernel
    if _kernel is None:
        from gpunb import cuda

        @cuda.jit
        def gpunb_fp32_peak(out, seed, iters):
            i = cuda.grid(1)
            m, c = seed[8], seed[9]
            x0, x1, x2, x3 = seed[0], seed[1], seed[2], seed[3]
            x4, x5, x6, x7 = seed[4], seed[5], seed[6], seed[7]
            for _ in range(iters):
                x0 = cuda.fma(x0, m, c)
                x1 = cuda.fma(x1, m, c)
                x2 = cuda.fma(x2, m, c)
                x3 = cuda.fma(x3, m, c)
                x4 = cuda.fma(x4, m, c)
                x5 = cuda.fma(x5, m, c)
                x6 = cuda.fma(x6, m, c)
                x7 = cuda.fma(x7, m, c)
            if i < out.size:
                out[i] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))

        _kernel = gpunb_fp32_peak
    return _kernel


def _fma_launcher(target: str, blocks: int, threads: int):
    """run(iters) launching the FMA kernel on `target` through its specialisation (so a profile
    that is running in another thread records no launch of it); returns (run, out array)."""
    from gpunb.profiling.peak_runs import spec_launcher

    # x -> 0.999 x + 0.001 stays near 1: no overflow, no denormals, nothing constant
    seed = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 0.999, 0.001], np.float32)
    n = blocks * threads
    if target == "cuda":
        from gpunb import cuda

        out, seed = cuda.device_array(n, np.float32), cuda.to_device(seed)
    else:
        out = np.zeros(n, np.float32)
    return spec_launcher(_fma_kernel(), target, blocks, threads, (out, seed)), out


def _gflops(threads: int, iters: int, seconds: float) -> float:
    return threads * iters * CHAINS * 2 / seconds / 1e9


def _fp32_cuda(device) -> float:
    from gpunb.profiling.peak_runs import best_event_seconds

    blocks, threads = device.multiprocessor_count * 8, 256
    run, out = _fma_launcher("cuda", blocks, threads)
    iters = 16384  # about 1.5 ms a pass on an H100
    best = best_event_seconds(run, iters)
    if not np.isfinite(out.copy_to_host()[0]):
        raise RuntimeError("the FMA kernel's result is not finite")
    return _gflops(blocks * threads, iters, best)


def _fp32_cpu() -> float:
    import os

    blocks, threads = max(os.cpu_count() or 1, 1) * 4, 64
    run, out = _fma_launcher("cpu", blocks, threads)
    run(16)  # compile
    iters = 64
    while True:  # grow the work until one launch takes 20 ms (a short one is mostly start-up)
        started = time.perf_counter()
        run(iters)
        seconds = time.perf_counter() - started
        if seconds > 0.02 or iters >= 1 << 20:
            break
        iters *= 4 if seconds < 0.005 else 2
    best = seconds
    for _ in range(2):
        started = time.perf_counter()
        run(iters)
        best = min(best, time.perf_counter() - started)
    if not np.isfinite(out[0]):
        raise RuntimeError("the FMA kernel's result is not finite")
    return _gflops(blocks * threads, iters, best)


def _datasheet_fp32(device) -> float | None:
    """SMs x FP32 lanes per SM x 2 (an FMA) x clock: the datasheet roof, when no kernel runs."""
    major, minor = device.compute_capability
    lanes = 64 if major == 7 or (major, minor) == (8, 0) else 128 if major >= 8 else None
    if lanes is None or not device.clock_rate_khz:
        return None
    return device.multiprocessor_count * lanes * 2 * device.clock_rate_khz * 1e3 / 1e9


_FMA = "measured: gpunb FP32 FMA kernel"


# ---- the two targets ----------------------------------------------------------------------------


def _measure_cpu() -> Peaks:
    import platform

    src = np.ones(16 << 20, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - started)
    source = {"gbps": "measured: numpy copy of 64 MiB on the host"}
    note = ""
    try:
        gflops = _fp32_cpu()
        source["gflops"] = f"{_FMA} on the CPU target"
    except Exception as exc:  # noqa: BLE001 - the roofline then has no compute roof
        gflops = None
        note = f"FP32 peak not measured on the CPU target ({type(exc).__name__}: {exc})"
    return Peaks(2.0 * src.nbytes / best / 1e9, gflops,
                 f"host CPU ({platform.processor() or 'cpu'})", source, note)


def _copy_gbps_cuda() -> float:
    from gpunb.backends.cuda import driver

    cu = driver.cuda_driver()
    check = driver.check
    nbytes = 256 << 20
    src = check(cu.cuMemAlloc(nbytes), "cuMemAlloc")
    dst = check(cu.cuMemAlloc(nbytes), "cuMemAlloc")
    start = check(cu.cuEventCreate(0), "cuEventCreate")
    end = check(cu.cuEventCreate(0), "cuEventCreate")
    try:
        check(cu.cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")  # warm-up
        copies, best = 10, float("inf")
        for _ in range(3):
            check(cu.cuEventRecord(start, 0), "cuEventRecord")
            for _ in range(copies):
                check(cu.cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")
            check(cu.cuEventRecord(end, 0), "cuEventRecord")
            check(cu.cuEventSynchronize(end), "cuEventSynchronize")
            ms = float(check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime")) / copies
            best = min(best, ms)
    finally:
        for event in (start, end):
            cu.cuEventDestroy(event)
        for ptr in (src, dst):
            cu.cuMemFree(ptr)
    return 2.0 * nbytes / (best * 1e-3) / 1e9


def _measure_cuda() -> Peaks:
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    device = driver.current_device()
    gbps = _copy_gbps_cuda()
    source = {"gbps": "measured: device-to-device copy of 256 MiB"}
    note = ""
    try:
        gflops = _fp32_cuda(device)
        source["gflops"] = _FMA
    except Exception as exc:  # noqa: BLE001 - the datasheet figure stands in, labelled
        gflops = _datasheet_fp32(device)
        why = f"{type(exc).__name__}: {exc}"
        if gflops is not None:
            source["gflops"] = "datasheet: SMs x FP32 lanes x 2 x clock"
            note = f"FP32 peak from the datasheet: the FMA kernel did not run ({why})"
        else:
            note = f"no FP32 peak: the FMA kernel did not run ({why})"
    tensor = None
    try:
        from gpunb.profiling.tensor_peak import tensor_gflops_cuda

        tensor = tensor_gflops_cuda(device)
        if tensor is not None:
            source["tensor_gflops"] = "measured: gpunb mma.sync m16n8k16 FP16 kernel"
    except Exception as exc:  # noqa: BLE001 - the roofline then has no tensor-core roof
        note = (note + "; " if note else "") + \
            f"no tensor-core roof: its kernel did not run ({type(exc).__name__}: {exc})"
    return Peaks(gbps, gflops, device.name, source, note, tensor)
