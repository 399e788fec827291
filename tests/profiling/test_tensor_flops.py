"""The profile's FLOPs of tensor-core kernels: each WMMA / mma.sync operation's 2 m n k per
warp, times the trip counts of the loops around it, evaluated for the launch's shapes."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import tensorcore_kernels as tk
from gpunb import cuda
from gpunb.foundation import types as t
from gpunb.jit import inspection
from gpunb.profiling.counts import count_llvm

pytestmark = pytest.mark.slow  # GEMM kernels compiled (and run on the CPU target)


def _flops(kernel, argtypes, shapes, grid, block):
    counts = count_llvm(inspection.ptx_for(kernel, argtypes).llvm_ir, argtypes)
    threads = int(np.prod(grid) * np.prod(block))
    meta = tuple((t.sizeof(a.dtype), int(np.prod(s))) if isinstance(a, t.Array) else None
                 for a, s in zip(argtypes, shapes, strict=True))
    return counts.flops_for(meta, threads, shapes, grid, block)


@pytest.mark.parametrize("n, k", [(256, 256), (512, 1024)])
def test_gemm_kernels_count_2mnk(n, k):
    f16 = t.float16[:, ::1]
    grid, block = (n // 128, n // 128, 1), (256, 1, 1)
    types = (t.float32[:, ::1], f16, f16)
    shapes = ((n, n), (n, k), (k, n))
    assert _flops(tk.make_mma_gemm(np.float16), types, shapes, grid, block) == 2 * n * n * k
    assert _flops(tk.make_wmma_gemm(np.float16), types, shapes, grid, block) == 2 * n * n * k
    wide = tk.make_mma_gemm(np.float16, bn=256, stages=4)
    assert _flops(wide, types, shapes, (n // 256, n // 128, 1), block) == 2 * n * n * k


def test_loop_bound_from_a_scalar_is_not_counted():
    from gpunb.cuda import wmma

    @cuda.jit
    def repeat(c, a, times):
        fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
        fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
        acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
        wmma.fill_fragment(acc, 0.0)
        wmma.load_matrix_sync(fa, a[0:16, 0:16])
        wmma.load_matrix_sync(fb, a[0:16, 0:16])
        for _ in range(times):
            wmma.mma_sync(acc, fa, fb, acc)
        wmma.store_matrix_sync(c[0:16, 0:16], acc, wmma.mem_row_major)

    types = (t.float32[:, ::1], t.float16[:, ::1], t.int64)
    assert _flops(repeat, types, ((16, 16), (16, 16), ()), (1, 1, 1), (32, 1, 1)) is None

    @cuda.jit
    def once(c, a):
        fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
        acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
        wmma.fill_fragment(acc, 0.0)
        wmma.load_matrix_sync(fa, a[0:16, 0:16])
        fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
        wmma.load_matrix_sync(fb, a[0:16, 0:16])
        wmma.mma_sync(acc, fa, fb, acc)
        wmma.store_matrix_sync(c[0:16, 0:16], acc, wmma.mem_row_major)

    types = (t.float32[:, ::1], t.float16[:, ::1])
    assert _flops(once, types, ((16, 16), (16, 16)), (3, 1, 1), (64, 1, 1)) == \
        2 * 16 * 16 * 16 * 3 * 2  # one mma per warp: 3 blocks of 2 warps


def test_profile_of_a_wmma_gemm_counts_its_flops_and_draws_the_tensor_roof():
    import gpunb
    from gpunb.profiling.records import Profile
    from gpunb.profiling.view import peaks_label, roofline_svg

    gpunb.set_target("cpu")
    try:
        n = 256
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(np.float16)
        b = rng.standard_normal((n, n)).astype(np.float16)
        c = np.zeros((n, n), np.float32)
        kernel = tk.make_wmma_gemm(np.float16, async_copies=False)
        with gpunb.profile() as prof:
            tk.launch(kernel, c, a, b)
        record = prof.launches[0]
        assert record.flops == 2 * n ** 3
        assert prof.peak_tensor_gflops is None  # the CPU target has no tensor cores
        drawn = Profile([record], peak_gbps=100.0, peak_gflops=1000.0,
                        peak_tensor_gflops=50000.0, peak_source={"tensor_gflops": "measured: x"})
        assert 'class="gpunb-tensor-roof"' in roofline_svg(drawn)
        assert "FP16 tensor cores 50000 GFLOP/s (measured)" in peaks_label(drawn)
        assert drawn.to_dict()["peak_tensor_gflops"] == 50000.0
    finally:
        gpunb.set_target(None)
