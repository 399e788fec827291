"""Where bench_torch_op's time goes: the fused bias + GELU kernels timed alone (no operator
around them) beside a copy of the same bytes, the same kernels through their operators, and an
operator call's host time taken apart.

    python -m benchmarks.profile_torch_op [--host]   # on a GPU machine with torch (and Triton)

Kernels: gpunb's as the benchmark writes it (four rows per thread, loads first, fastmath), one
element per thread with fastmath and without (IEEE division, libdevice's expf), Triton's; the
anchor is `torch.clone` of the input (read + write the same bytes). Each is the median of
CUDA-event timings of many launches. Host (--host): cProfile of operator calls on tiny tensors.
"""

from __future__ import annotations

import cProfile
import io
import math
import pstats
import sys

import numpy as np

from benchmarks import bench_torch_op as bench
from gpunb import cuda


def bias_gelu_precise(x, bias, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        v = x[i, j] + bias[j]
        u = bench.SQRT_2_OVER_PI * (v + bench.GELU_CUBIC * v * v * v)
        out[i, j] = bench.HALF * v * (bench.ONE + (bench.TWO / (bench.ONE + math.exp(
            -bench.TWO * u)) - bench.ONE))


def _ms(fn, steps: int = 50, repeats: int = 7) -> float:
    import torch

    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(steps):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / steps)
    return sorted(samples)[len(samples) // 2]


def kernels() -> list[tuple[str, float]]:
    import torch

    from gpunb.torch.tensors import current_stream_handle, kernel_argument

    x = torch.randn(bench.BATCH, bench.HIDDEN, device="cuda")
    bias = torch.randn(bench.HIDDEN, device="cuda")
    out = torch.empty_like(x)
    args = [kernel_argument(a) for a in (x, bias, out)]
    stream = current_stream_handle(torch.cuda.current_device())
    x4 = bench._launch(x, bias, out)
    x1 = bench._launch_one(x, bias, out)
    rows = bench.bias_gelu[x4[0], x4[1], stream]
    one = bench.bias_gelu_one[x1[0], x1[1], stream]
    precise = cuda.jit(bias_gelu_precise)[x1[0], x1[1], stream]
    reference = torch.nn.functional.gelu(x + bias, approximate="tanh")
    op, op_one = bench.gpunb_op(), bench.gpunb_op_one()
    found = []
    for name, launch in (("gpunb, four rows per thread, loads first, fastmath",
                          lambda: rows(*args)),
                         ("gpunb, one element per thread, fastmath", lambda: one(*args)),
                         ("gpunb, one element per thread, precise", lambda: precise(*args))):
        out.zero_()
        launch()
        torch.cuda.synchronize()
        assert torch.allclose(out, reference, atol=1e-4), name
        found.append((name, _ms(launch)))
    found.append(("  the same, four rows, through its operator", _ms(lambda: op(x, bias))))
    found.append(("  the same, one element, through its operator", _ms(lambda: op_one(x, bias))))
    try:
        import triton

        from benchmarks.triton_kernels import bias_gelu as tk

        n = x.numel()
        found.append(("Triton, BLOCK=1024", _ms(lambda: tk[(triton.cdiv(n, 1024),)](
            x, bias, out, n, bias.numel(), BLOCK=1024))))
    except ImportError as exc:
        found.append((f"Triton: {exc}", float("nan")))
    found.append(("torch.clone (copy roof)", _ms(lambda: x.clone())))
    return found


def host_profile(calls: int = 2000) -> str:
    import torch

    op = bench.gpunb_op()
    x = torch.randn(*bench.HOST_SHAPE, device="cuda")
    bias = torch.randn(bench.HOST_SHAPE[1], device="cuda")
    for _ in range(50):
        op(x, bias)
    torch.cuda.synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        op(x, bias)
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(18)
    return text.getvalue()


def main(argv: list[str]) -> int:
    nbytes = 2 * bench.BATCH * bench.HIDDEN * np.dtype(np.float32).itemsize
    for name, ms in kernels():
        print(f"{name:55s} {ms:7.4f} ms  {nbytes / ms / 1e9:6.2f} TB/s")
    if "--host" in argv:
        print(host_profile())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
