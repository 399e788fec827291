"""The mixed-width kernel's products on the GPU at small odd shapes (partial tiles in M, N and
K; replanned grids so that clusters walk both widths), against numpy in float64."""

from __future__ import annotations

import numpy as np


def main() -> int:
    import gpunb
    from benchmarks.gemm7 import mixed
    from gpunb import cuda

    gpunb.set_target("cuda")
    worst = 0.0
    for m, n, k, blocks in ((136, 800, 72, None), (640, 904, 192, 4), (512, 1280, 320, 6),
                            (1000, 2056, 200, None)):
        rng = np.random.default_rng(m)
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((n, k)).astype(np.float16)
        c = cuda.device_array((m, n), np.float16)
        mixed.launch(c, cuda.to_device(a), cuda.to_device(b), blocks=blocks)
        exact = a.astype(np.float64) @ b.astype(np.float64).T
        err = np.abs(c.copy_to_host().astype(np.float64) - exact).max() / np.abs(exact).max()
        print(m, n, k, blocks, f"relative error {err:.2e}")
        worst = max(worst, err)
    return 0 if worst <= 2.0 ** -10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
