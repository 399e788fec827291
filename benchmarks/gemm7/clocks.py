"""The SM clock and board power each 8192^3 GEMM runs at on the GPU, sampled by NVML while the
kernel runs back to back (RESULTS.md, ninth session): every GEMM of the H200 runs at its 700 W
cap, so a kernel that draws more power per flop runs at a lower clock. Per kernel: its time
per GEMM (CUDA events), the median SM clock and power over its loops, and from them the SM
cycles and the energy one GEMM takes. Kernels alternate in shuffled rounds, as bench_hopper's.

    python3 -m benchmarks.gemm7.clocks [--module benchmarks.gemm7.uniform ...] [--seconds 0.8]
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import random
import statistics
import threading
import time

NVML_CLOCK_SM = 1


class _Nvml:
    """The two NVML readings used here, through the driver's libnvidia-ml (no package)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2():
            raise RuntimeError("nvmlInit failed")
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)):
            raise RuntimeError("nvmlDeviceGetHandleByIndex failed")

    def sample(self) -> tuple[int, int]:
        """(SM clock in MHz, board power in mW)."""
        clock, power = ctypes.c_uint(), ctypes.c_uint()
        self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(clock))
        self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(power))
        return clock.value, power.value


def _sampled(nvml: _Nvml, fn, seconds: float) -> dict:
    """Launch `fn` back to back for about `seconds` while a thread samples NVML every ms."""
    import torch

    samples: list = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            samples.append(nvml.sample())
            time.sleep(0.001)

    torch.cuda.synchronize()
    for _ in range(20):  # the clock settles into this kernel's state before sampling starts
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    thread = threading.Thread(target=poll)
    launches = 0
    until = time.perf_counter() + seconds
    thread.start()
    start.record()
    while time.perf_counter() < until:
        for _ in range(20):
            fn()
        launches += 20
        torch.cuda.synchronize()
    stop.record()
    stop.synchronize()
    done.set()
    thread.join()
    ms = start.elapsed_time(stop) / launches
    return {"ms": ms, "mhz": statistics.median(s[0] for s in samples),
            "watts": statistics.median(s[1] for s in samples) / 1000, "samples": len(samples)}


def main(argv=None) -> int:
    import torch

    import gpunb
    from benchmarks.bench_hopper import _triton_matmul
    from gpunb.examples import hopper_gemm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", default=[])
    parser.add_argument("--seconds", type=float, default=0.8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dtype", default="float16")
    args = parser.parse_args(argv)
    gpunb.set_target("cuda")
    n = 8192
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    bt = torch.randn(n, n, device="cuda", dtype=dtype)
    b_kn = bt.t().contiguous()
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    descs = hopper_gemm.descriptors(a, bt, c)
    kernels = {"cublas": lambda: torch.matmul(a, bt.t()),
               "gpunb": lambda: hopper_gemm.launch(c, a, bt, descs)}
    for name in args.module:
        module = importlib.import_module(name)
        out = torch.empty_like(c)
        made = module.descriptors(a, bt, out)
        kernels[name] = (lambda m=module, o=out, d=made: m.launch(o, a, bt, d))
    matmul = _triton_matmul(((128, 256, 64, 3, 8),))
    c_t = torch.empty_like(c)
    kernels["triton"] = lambda: matmul(a, b_kn, c_t)
    nvml = _Nvml()
    rows: dict = {name: [] for name in kernels}
    for r in range(args.rounds):
        order = list(kernels)
        random.Random(r).shuffle(order)
        for name in order:
            rows[name].append(_sampled(nvml, kernels[name], args.seconds))
    flops = 2 * n ** 3
    print(f"| kernel ({args.dtype}) | ms | TFLOP/s | SM MHz | W | M cycles / GEMM | J / GEMM |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in rows.items():
        ms = statistics.median(x["ms"] for x in runs)
        mhz = statistics.median(x["mhz"] for x in runs)
        watts = statistics.median(x["watts"] for x in runs)
        print(f"| {name} | {ms:.4f} | {flops / ms / 1e9:.0f} | {mhz:.0f} | {watts:.0f} | "
              f"{mhz * ms / 1e3:.3f} | {watts * ms / 1e3:.3f} |")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
