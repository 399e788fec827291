"""The device's copy bandwidth, measured once per process: what `pct_of_peak` is against.

A copy reads and writes every byte, so its bandwidth (2 x bytes / time) is the most a kernel
that streams memory can reach on this device - the honest roof for achieved GB/s, rather than
a datasheet number. On the GPU: cuMemcpyDtoD of 256 MiB timed with CUDA events; on the CPU
target: numpy copies of 64 MiB on the host clock.
"""

from __future__ import annotations

import threading
import time

_lock = threading.Lock()
_measured: dict = {}  # target -> (GB/s, GFLOP/s or None, device name)


def device_peaks(target: str) -> tuple:
    """(copy GB/s, theoretical FP32 GFLOP/s or None, device name) for "cuda" or "cpu"."""
    with _lock:
        found = _measured.get(target)
        if found is None:
            found = _measured[target] = _measure_cuda() if target == "cuda" else _measure_cpu()
        return found


def _measure_cpu() -> tuple:
    import platform

    import numpy as np

    src = np.ones(16 << 20, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - started)
    return 2.0 * src.nbytes / best / 1e9, None, f"host CPU ({platform.processor() or 'cpu'})"


def _measure_cuda() -> tuple:
    from gpunb.backends.cuda import driver

    driver.ensure_context()
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
    device = driver.current_device()
    return 2.0 * nbytes / (best * 1e-3) / 1e9, _fp32_peak(device), device.name


def _fp32_peak(device) -> float | None:
    """SMs x FP32 lanes per SM x 2 (an FMA) x clock: the datasheet roof for the roofline."""
    major, minor = device.compute_capability
    lanes = 64 if major == 7 or (major, minor) == (8, 0) else 128 if major >= 8 else None
    if lanes is None or not device.clock_rate_khz:
        return None
    return device.multiprocessor_count * lanes * 2 * device.clock_rate_khz * 1e3 / 1e9
