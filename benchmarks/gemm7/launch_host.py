"""Host time of one hopper_gemm.launch per input dtype (RESULTS.md, ninth session: at 3072^3
every gpunb GEMM ran BF16 at 55-67 % of its FP16 speed while Triton's and cuBLAS's did not -
host-bound launches?). Per dtype: the seconds the Python call takes (launches queued, no
synchronisation), the wall time per GEMM including the GPU, and gpunb's typeof of the output
tensor alone (torch has no __cuda_array_interface__ for bfloat16: DLPack instead).

    python3 -m benchmarks.gemm7.launch_host [--n 3072]
"""

from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    import torch

    import gpunb
    from gpunb.examples import hopper_gemm
    from gpunb.runtime.typeof import typeof

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3072)
    parser.add_argument("--launches", type=int, default=200)
    args = parser.parse_args(argv)
    gpunb.set_target("cuda")
    for name in ("float16", "bfloat16"):
        dtype = getattr(torch, name)
        a = torch.randn(args.n, args.n, device="cuda", dtype=dtype)
        bt = torch.randn(args.n, args.n, device="cuda", dtype=dtype)
        c = torch.empty(args.n, args.n, device="cuda", dtype=dtype)
        descs = hopper_gemm.descriptors(a, bt, c)
        for _ in range(20):
            hopper_gemm.launch(c, a, bt, descs)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(args.launches):
            hopper_gemm.launch(c, a, bt, descs)
        queued = time.perf_counter() - start
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(1000):
            typeof(c)
        typed = (time.perf_counter() - start) / 1000
        print(f"{name}: launch() {queued / args.launches * 1e6:.1f} us on the host, "
              f"{wall / args.launches * 1e6:.1f} us per GEMM with the GPU, typeof(c) "
              f"{typed * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
