"""benchmarks/tensorcore_pipelined.py, the tuned mma.sync + ldmatrix + cp.async GEMMs: right on
the CPU target at a small size (cp.async with its completion rules, every code path: swizzled and
padded tiles, 32- and 64-wide K steps, fragments double-buffered or not, 4 rows per copy pass),
free of races under racecheck, without spills for sm_90 (ptxas -v), and right on a GPU."""

from __future__ import annotations

import re

import numpy as np
import pytest
from tensorcore_support import NP_TYPES, reference

from benchmarks import tensorcore_pipelined as tp
from gpunb import cuda

SIG = "void(float32[:, ::1], {0}[:, ::1], {0}[:, ::1])"


def _run(config, dtype=np.float16, tiles=(2, 2, 3), seed=11):
    m, n, k = config.bm * tiles[0], config.bn * tiles[1], config.bk * tiles[2]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32).astype(dtype)
    b = rng.standard_normal((k, n)).astype(np.float32).astype(dtype)
    c = np.zeros((m, n), np.float32)
    kernel = tp.make_gemm(dtype, config)
    return kernel, c, a, b


def _check(c, a, b):
    expected, bound = reference(a, b, np.zeros(c.shape, np.float32), "f32", "f32")
    assert (np.abs(c - expected) <= bound).all()


def test_variant_specs_and_their_limits():
    config = tp.parse("128x128x64:2x2:3")
    assert (config.threads, config.shared_bytes(), config.swizzle, config.double_buffer) == \
        (128, 3 * (128 * 64 + 64 * 128) * 2, True, True)
    assert config.label == ("128x128x64, 2x2 warps, 3 stages, swizzled, fragments "
                            "double-buffered")
    padded = tp.parse("128x256x32:2x4:4:pad:nodb")
    assert (padded.row_a, padded.row_b, padded.double_buffer) == (40, 264, False)
    with pytest.raises(ValueError, match="warps of 64 x 64 must tile the block"):
        tp.parse("128x128x64:4x2:3")
    with pytest.raises(ValueError, match="bk must be 32 or 64"):
        tp.parse("128x128x48:2x2:3")
    with pytest.raises(ValueError, match="passes of a multiple of 8 rows"):
        tp.parse("64x64x64:1x1:3")
    with pytest.raises(ValueError, match=r"variant '12x3' is not <bm>x<bn>x<bk>:<warps m>x"):
        tp.parse("12x3")
    with pytest.raises(ValueError, match=r"unknown flags \['fast'\]"):
        tp.parse("128x128x64:2x2:3:fast")
    assert tp.parse("256x128x64:4x2:3:g8").group == 8
    assert tp.parse("256x128x64:4x2:3:g8").label.endswith("blocks in groups of 8 rows")
    for bad in ("128x128x64:2x2:3:g0", "128x128x64:2x2:3:g2:g4"):
        with pytest.raises(ValueError, match="unknown flags|one group flag"):
            tp.parse(bad)
    from benchmarks.bench_tensorcore import parse_variant

    assert parse_variant("mma2:all") == tuple(("mma2", v) for v in tp.VARIANTS)
    assert parse_variant("mma:256:3") == (("mma", 256, 3),)
    for bad, text in (("mma2:1x2", "is not <bm>x<bn>"), ("mma:256", "is not mma:<block width>"),
                      ("tcgen05:1:1", "unknown kernel 'tcgen05'")):
        with pytest.raises(SystemExit, match=text):
            parse_variant(bad)
    kernel, c, a, b = _run(config)
    with pytest.raises(ValueError, match="must be multiples of 128, 128, 64"):
        tp.launch(kernel, c[:100], a[:100], b)


# each compiles a large tensor-core kernel for the CPU target (~12 s on a busy CI core), so
# the specs do not repeat what the two tests below compile: the plain 2x2-warp kernel (the race
# test's) and the 1x2-warp one (the grouped-order test's)
@pytest.mark.slow
@pytest.mark.parametrize("spec", ["128x128x32:2x2:4:nodb", "128x128x64:2x2:2:pad"])
def test_variants_on_the_cpu_target(spec):
    import gpunb

    gpunb.set_target("cpu")
    try:
        kernel, c, a, b = _run(tp.parse(spec))
        tp.launch(kernel, c, a, b)
        _check(c, a, b)
    finally:
        gpunb.set_target(None)


@pytest.mark.slow
def test_grouped_block_order_covers_every_tile_on_the_cpu_target():
    # 5 tile rows in bands of 2: two whole bands and a last band of one row
    import gpunb

    gpunb.set_target("cpu")
    try:
        kernel, c, a, b = _run(tp.parse("64x128x64:1x2:3:g2"), tiles=(5, 3, 2))
        tp.launch(kernel, c, a, b)
        _check(c, a, b)
    finally:
        gpunb.set_target(None)


@pytest.mark.slow
def test_the_pipeline_is_free_of_races():
    # cp.async completion, the one barrier per K step and the stage reuse, checked: a copy
    # into a stage some warp still reads, or a fragment read before its copy landed, raises
    import gpunb

    gpunb.set_target("cpu")
    try:
        config = tp.parse("128x128x64:2x2:3")
        # 4 K steps through 3 stages: a stage is reused (the padded and nodb variants above
        # check several blocks of the 2 x 2-warp kernel)
        kernel, c, a, b = _run(config, tiles=(1, 1, 4))
        checked = cuda.jit(racecheck=True)(kernel.py_func)
        checked.config = config
        tp.launch(checked, c, a, b)
        _check(c, a, b)
    finally:
        gpunb.set_target(None)


@pytest.mark.slow  # nine kernels through LLVM's NVPTX backend and ptxas
@pytest.mark.parametrize("spec", tp.VARIANTS)
def test_variants_compile_for_sm_90_without_spills(ptxas, spec):
    kernel = tp.make_gemm(np.float16, tp.parse(spec))
    ptx, _ = cuda.compile_ptx(kernel, SIG.format("float16"), cc=(9, 0))
    assert "cp.async.cg.shared.global" in ptx and "ldmatrix.sync.aligned.m8n8.x4.trans" in ptx
    assert ptx.count("mma.sync.aligned.m16n8k16") == 32 * (tp.parse(spec).bk // 16)
    report = ptxas(ptx, "sm_90")
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    assert "bytes stack frame" not in report or "0 bytes stack frame" in report, report


@pytest.mark.gpu  # (bench_tensorcore checks every variant's product at 8192 too)
@pytest.mark.parametrize("spec", ["128x128x64:2x2:3", "128x256x64:2x4:3", "256x128x64:4x2:4",
                                  "256x128x64:4x2:3:g8"])
@pytest.mark.parametrize("dtype", [np.float16, NP_TYPES["bf16"]])
def test_variants_on_the_gpu(spec, dtype):
    import gpunb

    gpunb.set_target("cuda")
    try:
        kernel, c, a, b = _run(tp.parse(spec), dtype, tiles=(4, 4, 16))
        d_c = cuda.to_device(c)
        tp.launch(kernel, d_c, cuda.to_device(a), cuda.to_device(b))
        _check(d_c.copy_to_host(), a, b)
    finally:
        gpunb.set_target(None)
