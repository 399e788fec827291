"""What the CPU target's correctness checks cost: bounds checks (on by default), racecheck and
access maps, each beside the same kernel without checks, measured in the same run.

    python -m benchmarks.bench_correctness [--quick]

Kernels: an elementwise saxpy (global memory only) and a shared-memory tree reduction (barriers,
coroutine threads). Times are medians of several launches after a warm-up launch that compiles.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np


def _kernels(cuda, **options):
    @cuda.jit(**options)
    def saxpy(out, x, y, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    @cuda.jit(**options)
    def block_sum(out, x):
        s = cuda.shared.array(256, np.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i] if i < x.size else 0
        cuda.syncthreads()
        step = 128
        while step > 0:
            if t < step:
                s[t] += s[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    return saxpy, block_sum


def _median_ms(fn, repeats: int) -> float:
    fn()  # compiles
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv=None) -> None:
    import gpunb
    from gpunb import cuda

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args(argv)
    gpunb.set_target("cpu")
    n = 1 << (16 if opts.quick else 20)
    small = 1 << 14  # recording launches log every access: a smaller grid
    repeats = 3 if opts.quick else 7
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    sums = np.zeros(n // 256, np.float32)
    configs = {"boundscheck=False": {"boundscheck": False}, "default (bounds checked)": {},
               "racecheck=True": {"racecheck": True}}
    kernels = {name: _kernels(cuda, **o) for name, o in configs.items()}
    print(f"CPU target correctness checks ({platform.processor() or platform.machine()}, "
          f"{n} elements, recording rows {small})")
    print(f"{'kernel':<12}{'configuration':<28}{'ms':>10}{'vs unchecked':>14}")
    for k, label in enumerate(("saxpy", "block_sum")):
        base = None
        for name in configs:
            kern = kernels[name][k]
            size = small if name == "racecheck=True" else n
            if label == "saxpy":
                def launch(kern=kern, size=size):
                    kern[size // 256, 256](out[:size], x[:size], y[:size], np.float32(2.0))
            else:
                def launch(kern=kern, size=size):
                    kern[size // 256, 256](sums[:size // 256], x[:size])
            ms = _median_ms(launch, repeats)
            per = ms / size
            if base is None:
                base = per
            print(f"{label:<12}{name:<28}{ms:>10.3f}{per / base:>13.1f}x")
        kern = kernels["boundscheck=False"][k]
        args = ((out[:small], x[:small], y[:small], np.float32(2.0)) if label == "saxpy"
                else (sums[:small // 256], x[:small]))
        ms = _median_ms(lambda kern=kern, args=args: gpunb.access_map(
            kern[small // 256, 256], *args), repeats)
        print(f"{label:<12}{'gpunb.access_map':<28}{ms:>10.3f}{ms / small / base:>13.1f}x")


if __name__ == "__main__":
    main()
