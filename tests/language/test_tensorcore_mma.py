"""cuda.mma_sync, cuda.ldmatrix and cuda.stmatrix: every shape and element kind against numpy
(float64 references; float32 accumulation within (K + 1) * 2**-24 * (|A||B| + |C|), integers
exact), the PTX ISA's lane layouts lane by lane, the PTX ptxas accepts."""

from __future__ import annotations

import numpy as np
import pytest
from tensorcore_support import (
    NP_TYPES,
    index_tables,
    mma_counts,
    mma_kernel,
    ptx_a,
    ptx_b,
    ptx_c,
    random_operand,
    reference,
)

from gpunb import cuda
from gpunb.compiler.builtins import tensorcore_layouts as tl

pytestmark = pytest.mark.slow  # dozens of kernels compiled for two targets

CASES = [  # shape, A kind, B kind, C kind
    ("m16n8k8", "f16", "f16", "f32"), ("m16n8k8", "f16", "f16", "f16"),
    ("m16n8k8", "bf16", "bf16", "f32"), ("m16n8k8", "tf32", "tf32", "f32"),
    ("m16n8k16", "f16", "f16", "f32"), ("m16n8k16", "f16", "f16", "f16"),
    ("m16n8k16", "bf16", "bf16", "f32"), ("m16n8k16", "s8", "s8", "s32"),
    ("m16n8k16", "u8", "s8", "s32"), ("m16n8k32", "s8", "u8", "s32"),
    ("m16n8k32", "u8", "u8", "s32"), ("m16n8k32", "e4m3", "e4m3", "f32"),
    ("m16n8k32", "e5m2", "e4m3", "f32"),
]


def _layouts(shape: str, a_kind: str, b_kind: str):
    """The PTX ISA's layouts, from the formulas in tensorcore_support (not gpunb's tables)."""
    na, nb = mma_counts(shape, a_kind)
    k = int(shape.split("k")[1])
    a = [[ptx_a(lane, i, a_kind, k) for i in range(na)] for lane in range(32)]
    b = [[ptx_b(lane, i, b_kind, k) for i in range(nb)] for lane in range(32)]
    c = [[ptx_c(lane, i) for i in range(4)] for lane in range(32)]
    return a, b, c


_kernels: dict = {}


def _run_mma(shape, a_kind, b_kind, a, b, c, satfinite=False):
    na, nb = mma_counts(shape, a_kind)
    key = (shape, na, nb, satfinite)
    if key not in _kernels:
        _kernels[key] = mma_kernel(shape, na, nb, satfinite=satfinite)
    la, lb, lc = _layouts(shape, a_kind, b_kind)
    d = np.zeros(c.shape, c.dtype)
    _kernels[key][1, 32](d, a, b, c, *index_tables(la), *index_tables(lb), *index_tables(lc))
    return d


@pytest.mark.parametrize("shape, a_kind, b_kind, c_kind", CASES)
def test_mma_sync_matches_numpy(target, shape, a_kind, b_kind, c_kind):
    m, n, k = tl.shape_dims(shape)
    rng = np.random.default_rng(hash((shape, a_kind, b_kind, c_kind)) % 2**32)
    a = random_operand(rng, (m, k), a_kind)
    b = random_operand(rng, (k, n), b_kind)
    c = random_operand(rng, (m, n), c_kind)
    d = _run_mma(shape, a_kind, b_kind, a, b, c)
    assert d.dtype == NP_TYPES[c_kind]
    if c_kind == "s32":
        expected = a.astype(np.int64) @ b.astype(np.int64) + c
        np.testing.assert_array_equal(d, expected.astype(np.int32))
        return
    expected, bound = reference(a, b, c, a_kind, b_kind)
    if c_kind == "f16":  # one rounding to float16 at the end
        bound = bound + np.abs(expected) * 2.0 ** -11
    if target == "cuda" and a_kind in tl.FP8_KINDS:
        bound = bound * 2**11  # Hopper accumulates fp8 products with fewer mantissa bits
    error = np.abs(d.astype(np.float64) - expected)
    assert (error <= bound + 1e-30).all(), f"max error {error.max()}, bound {bound.min()}"


def test_tf32_uses_the_top_19_bits(target):
    """tf32 multiplicands: the low 13 bits of each float32 are ignored (truncation)."""
    m, n, k = 16, 8, 8
    a = np.full((m, k), 1.0 + 2.0 ** -12, np.float32)  # below tf32's precision: ignored
    b = np.ones((k, n), np.float32)
    d = _run_mma("m16n8k8", "tf32", "tf32", a, b, np.zeros((m, n), np.float32))
    np.testing.assert_array_equal(d, np.full((m, n), 8.0, np.float32))


def test_integer_mma_wraps_and_saturates(target):
    m, n, k = 16, 8, 32
    a = np.full((m, k), 127, np.int8)
    b = np.full((k, n), 127, np.int8)
    c = np.full((m, n), 2**31 - 100, np.int32)
    wrapped = _run_mma("m16n8k32", "s8", "s8", a, b, c)
    assert (wrapped == np.int32(np.int64(2**31 - 100 + 32 * 127 * 127) - 2**32)).all()
    saturated = _run_mma("m16n8k32", "s8", "s8", a, b, c, satfinite=True)
    assert (saturated == 2**31 - 1).all()


@pytest.mark.parametrize("shape, a_kind, b_kind, c_kind", CASES)
def test_gpunb_layout_tables_are_the_ptx_isa(shape, a_kind, b_kind, c_kind):
    la, lb, lc = _layouts(shape, a_kind, b_kind)
    op = tl.MmaOp("mma", shape, a_kind, b_kind, c_kind, c_kind)
    assert [list(x) for x in op.layout("a")] == la
    assert [list(x) for x in op.layout("b")] == lb
    assert [list(x) for x in op.layout("c")] == lc


# ---- ldmatrix / stmatrix ---------------------------------------------------------------------

def _ldmatrix_kernel(num: int, trans: bool):
    @cuda.jit
    def kernel(out, src):
        lane = cuda.laneid
        tile = cuda.shared.array((32, 8), np.float16)
        for j in range(8):
            tile[lane, j] = src[lane, j]
        cuda.syncwarp()
        regs = cuda.ldmatrix(tile, (lane, 0), num, trans)
        for j in range(2 * num):
            out[lane, j] = regs[j]

    return kernel


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_lane_by_lane(target, num, trans):
    src = np.arange(256, dtype=np.float16).reshape(32, 8)  # matrix i = rows 8i..8i+7
    out = np.full((32, 8), -1, np.float16)
    _ldmatrix_kernel(num, trans)[1, 32](out, src)
    for lane in range(32):
        group, quad = lane // 4, lane % 4
        for i in range(num):
            for j in range(2):
                row, col = (2 * quad + j, group) if trans else (group, 2 * quad + j)
                assert out[lane, 2 * i + j] == src[8 * i + row, col], (lane, i, j)


@cuda.jit
def _stmatrix_roundtrip(out, src, trans):
    lane = cuda.laneid
    tile = cuda.shared.array((32, 8), np.float16)
    back = cuda.shared.array((32, 8), np.float16)
    for j in range(8):
        tile[lane, j] = src[lane, j]
    cuda.syncwarp()
    if trans:
        regs = cuda.ldmatrix(tile, (lane, 0), 4, True)
        cuda.stmatrix(back, (lane, 0), regs, True)
    else:
        regs = cuda.ldmatrix(tile, (lane, 0), 4)
        cuda.stmatrix(back, (lane, 0), regs)
    cuda.syncwarp()
    for j in range(8):
        out[lane, j] = back[lane, j]


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_inverts_ldmatrix(target, trans):
    if target == "cuda":
        from gpunb.backends.cuda import driver

        if driver.current_device().compute_capability < (9, 0):
            pytest.skip("stmatrix needs sm_90")
    src = np.random.default_rng(3).standard_normal((32, 8)).astype(np.float16)
    out = np.zeros((32, 8), np.float16)
    _stmatrix_roundtrip[1, 32](out, src, trans)
    np.testing.assert_array_equal(out, src)


def _stmatrix_f32_kernel(np_dtype, scalar_first: bool):
    """Each lane stmatrix-es 8 float32 values into a (32, 8) tile of np_dtype: converted by
    stmatrix itself (pairs rounded together), or each converted first (`scalar_first`)."""
    from gpunb import bfloat16, float16

    elem = {np.float16: float16}.get(np_dtype, bfloat16)

    @cuda.jit
    def kernel(out, src):
        lane = cuda.laneid
        back = cuda.shared.array((32, 8), np_dtype)
        v = (src[lane, 0], src[lane, 1], src[lane, 2], src[lane, 3], src[lane, 4],
             src[lane, 5], src[lane, 6], src[lane, 7])
        if scalar_first:
            cuda.stmatrix(back, (lane, 0), (elem(v[0]), elem(v[1]), elem(v[2]), elem(v[3]),
                                             elem(v[4]), elem(v[5]), elem(v[6]), elem(v[7])))
        else:
            cuda.stmatrix(back, (lane, 0), v)
        cuda.syncwarp()
        for j in range(8):
            out[lane, j] = back[lane, j]

    return kernel


def _rounding_cases(np_dtype) -> np.ndarray:
    """float32 values that test round-to-nearest-even into np_dtype: exact ties (to the even
    neighbour, up and down), just off ties, overflow to inf, subnormals, inf and NaN."""
    mant = 10 if np_dtype == np.float16 else 7
    # past the largest finite value by more than half an ulp: rounds to inf
    over = 65600.0 if np_dtype == np.float16 else float(np.finfo(np.float32).max)
    with np.errstate(over="ignore"):
        assert np.isinf(np.float32(over).astype(np_dtype))
    ulp = 2.0 ** -mant
    special = [1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + ulp / 2), 1 + ulp / 2 + 2.0 ** -20,
               over, -over, 2.0 ** -20, -(2.0 ** -130), np.inf, -np.inf, np.nan,
               0.0, -0.0, 1.0 / 3, -2.0 / 3, 1e-3]
    rng = np.random.default_rng(11)
    values = np.concatenate([np.array(special, np.float32),
                             rng.standard_normal(256 - len(special)).astype(np.float32) * 50])
    return values.reshape(32, 8)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_stmatrix_rounds_float32_pairs_like_scalar_conversions(target, dtype_name):
    # stmatrix converts each lane's float32 pairs with one packed conversion (F2FP on sm_90):
    # bit for bit the scalar round-to-nearest-even, and the values numpy/ml_dtypes give
    import ml_dtypes

    if target == "cuda":
        from gpunb.backends.cuda import driver

        if driver.current_device().compute_capability < (9, 0):
            pytest.skip("stmatrix needs sm_90")
    np_dtype = np.float16 if dtype_name == "float16" else ml_dtypes.bfloat16
    src = _rounding_cases(np_dtype)
    paired, scalar = (np.zeros((32, 8), np_dtype) for _ in range(2))
    _stmatrix_f32_kernel(np_dtype, False)[1, 32](paired, src)
    _stmatrix_f32_kernel(np_dtype, True)[1, 32](scalar, src)
    bits = np.uint16
    np.testing.assert_array_equal(paired.view(bits), scalar.view(bits))
    # the layout moves values between lanes; as a multiset they are numpy's conversions
    # (NaN aside: PTX's cvt gives the canonical NaN, numpy another one)
    with np.errstate(over="ignore"):
        got, want = paired.ravel(), src.ravel().astype(np_dtype)
    nan = np.isnan(got.astype(np.float32))
    assert nan.sum() == 1 and np.isnan(want.astype(np.float32)).sum() == 1
    assert sorted(got[~nan].view(bits)) == sorted(want[~np.isnan(want.astype(np.float32))]
                                                  .view(bits))


def test_stmatrix_float32_pairs_are_one_packed_conversion(ptxas):
    import ml_dtypes

    for np_dtype, cvt in ((np.float16, "f16"), (ml_dtypes.bfloat16, "bf16")):
        ptx, _ = cuda.compile_ptx(_stmatrix_f32_kernel(np_dtype, False).py_func,
                                  f"void({'float16' if cvt == 'f16' else 'bfloat16'}[:, ::1], "
                                  "float32[:, ::1])", cc=(9, 0, "a"))
        assert ptx.count(f"cvt.rn.{cvt}x2.f32") == 4, ptx
        assert f"cvt.rn.{cvt}.f32" not in ptx
        ptxas(ptx, "sm_90a")


@cuda.jit
def _ldmatrix_feeds_mma(d, a, b):
    """A 16x8x16 product with A (row-major) and B (stored as B^T, row-major) loaded from shared
    memory by ldmatrix: the fragment layouts of ldmatrix and mma.sync fit together."""
    lane = cuda.laneid
    sa = cuda.shared.array((16, 16), np.float16)
    sbt = cuda.shared.array((8, 16), np.float16)
    for j in range(8):
        sa[lane % 16, (lane // 16) * 8 + j] = a[lane % 16, (lane // 16) * 8 + j]
    for j in range(4):
        sbt[lane % 8, (lane // 8) * 4 + j] = b[(lane // 8) * 4 + j, lane % 8]
    cuda.syncwarp()
    av = cuda.ldmatrix(sa, (lane % 16, (lane // 16) * 8), 4)
    bv = cuda.ldmatrix(sbt, (lane % 8, ((lane // 8) % 2) * 8), 2)
    zero = np.float32(0)
    out = cuda.mma_sync("m16n8k16", av, bv, (zero, zero, zero, zero))
    group, quad = lane // 4, lane % 4
    d[group, 2 * quad] = out[0]
    d[group, 2 * quad + 1] = out[1]
    d[group + 8, 2 * quad] = out[2]
    d[group + 8, 2 * quad + 1] = out[3]


def test_ldmatrix_feeds_mma_sync(target):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    d = np.zeros((16, 8), np.float32)
    _ldmatrix_feeds_mma[1, 32](d, a, b)
    expected, bound = reference(a, b, np.zeros((16, 8), np.float32), "f16", "f16")
    assert (np.abs(d - expected) <= bound).all()


def test_mma_ptx_accepted_by_ptxas(ptxas):
    for shape, a_kind, b_kind, c_kind in CASES:
        na, nb = mma_counts(shape, a_kind)
        kernel = mma_kernel(shape, na, nb)
        sig = (f"void({c_kind_type(c_kind)}[:, ::1], {c_kind_type(a_kind)}[:, ::1], "
               f"{c_kind_type(b_kind)}[:, ::1], {c_kind_type(c_kind)}[:, ::1]"
               + ", int32[:, ::1]" * 6 + ")")
        archs = ["sm_89", "sm_90a"] if a_kind in tl.FP8_KINDS else ["sm_80", "sm_89", "sm_90a"]
        for arch in archs:
            cc = (int(arch[3]), int(arch[4])) + (("a",) if arch.endswith("a") else ())
            ptx, _ = cuda.compile_ptx(kernel, sig, cc=cc)
            assert "mma.sync.aligned." + shape in ptx
            ptxas(ptx, arch)


def test_ldmatrix_stmatrix_ptx_accepted_by_ptxas(ptxas):
    for num in (1, 2, 4):
        for trans in (False, True):
            ptx, _ = cuda.compile_ptx(_ldmatrix_kernel(num, trans),
                                      "void(float16[:, ::1], float16[:, ::1])", cc=(8, 0))
            assert f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}" in ptx
            ptxas(ptx, "sm_80")
    ptx, _ = cuda.compile_ptx(_stmatrix_roundtrip,
                              "void(float16[:, ::1], float16[:, ::1], boolean)", cc=(9, 0, "a"))
    assert "stmatrix.sync.aligned.m8n8.x4.trans" in ptx
    ptxas(ptx, "sm_90a")


def c_kind_type(kind: str) -> str:
    return {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "s8": "int8",
            "u8": "uint8", "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2", "f32": "float32",
            "s32": "int32"}[kind]
