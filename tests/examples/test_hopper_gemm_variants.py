"""benchmarks/hopper_gemm_variants.py, the Hopper GEMM's tuning knobs for bench_hopper --variant:
the specs and their limits, and the variants' products on the CPU target (partial tiles, and
blocks walking several tiles so that the epilogue's buffers are reused)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpunb
from benchmarks import hopper_gemm_variants as hv


def test_specs_and_their_limits():
    config = hv.parse("k32,s8,tma2,l256")
    assert (config.bk, config.stages, config.epilogue, config.c_panels, config.l2) == \
        (32, 8, "tma", 2, 256)
    assert config.layout()["SMEM"] <= hv.SMEM_LIMIT
    assert config.persistent and not hv.parse("tma2,np").persistent
    assert hv.parse("tma2,np").label.endswith(", one block per tile")
    assert hv.parse("").label == ("BK 64, 4 stages, group 8, 1 in flight, epilogue direct, "
                                  "L2 128")
    with pytest.raises(ValueError, match="bytes of shared memory"):
        hv.parse("tma")  # 4 stages and two whole 64 x 256 buffers do not fit
    with pytest.raises(ValueError, match="unknown part 'x3'"):
        hv.parse("s3,x3")
    with pytest.raises(ValueError, match="BK is 32 or 64"):
        hv.parse("k16")


@pytest.mark.slow  # each compiles the warp-specialised kernel for the CPU target
@pytest.mark.parametrize("spec", ["direct", "s3,tma", "k32,s8,tma2", "f0,g16", "tma2,u32,p2",
                                  "tma2,u32,ba"])
def test_variants_on_the_cpu_target(spec):
    config = hv.parse(spec)
    _check_products(hv.make_gemm(config), config, ((136, 264, 72, None), (272, 264, 136, 2)))


def _check_products(kernel, config, shapes):
    """The variant's bfloat16 products on the CPU target for each (m, n, k, blocks), within
    bfloat16's rounding of the float64 product."""
    gpunb.set_target("cpu")
    try:
        for m, n, k, blocks in shapes:
            rng = np.random.default_rng(m)
            a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
            b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
            c = np.zeros((m, n), ml_dtypes.bfloat16)
            hv.launch(kernel, c, a, b, hv.descriptors(a, b, c, config), blocks=blocks)
            exact = a.astype(np.float64) @ b.astype(np.float64).T
            assert np.abs(c.astype(np.float64) - exact).max() <= np.abs(exact).max() * 2.0 ** -7
    finally:
        gpunb.set_target(None)


@pytest.mark.slow  # compiles the warp-specialised kernel for the CPU target
def test_cp_async_feed_on_the_cpu_target():
    # the producer warpgroup's 128 threads copy the ring's 128-byte-swizzled slices with
    # cp.async (whole tiles only): the same products as the TMA feed's
    config = hv.parse("tma2,u32,cp")
    assert config.label.endswith(", cp.async feed")
    kernel = hv.make_gemm(config)
    _check_products(kernel, config, ((128, 256, 128, None), (256, 512, 192, 2)))
    gpunb.set_target("cpu")
    try:
        a = np.zeros((136, 64), ml_dtypes.bfloat16)
        c = np.zeros((136, 256), ml_dtypes.bfloat16)
        b = np.zeros((256, 64), ml_dtypes.bfloat16)
        with pytest.raises(ValueError, match="whole tiles"):
            hv.launch(kernel, c, a, b, hv.descriptors(a, b, c, config))
    finally:
        gpunb.set_target(None)
    with pytest.raises(ValueError, match="cp.async feed takes BK 64"):
        hv.parse("k32,s8,tma2,cp")
