"""WMMA (`from gpunb.cuda import wmma`): every shape and element type against numpy (float64
references; float32 accumulation within (K + 1) * 2**-24 * (|A||B| + |C|), a float16 accumulator
one rounding more, integers exact), row- and column-major tiles, accumulator loads, x[i] lane by
lane, the tile checks, and PTX that ptxas accepts for sm_80, sm_89 and sm_90a."""

from __future__ import annotations

import numpy as np
import pytest
from tensorcore_support import NP_TYPES, random_operand, reference

from gpunb import cuda
from gpunb.compiler.builtins import tensorcore_layouts as tl
from gpunb.cuda import wmma

pytestmark = pytest.mark.slow  # dozens of kernels compiled for two targets

DTYPES = {"f16": np.float16, "bf16": NP_TYPES["bf16"], "tf32": wmma.precision.tf32,
          "s8": np.int8, "u8": np.uint8, "f32": np.float32, "s32": np.int32}

CASES = [  # shape, multiplicand kind, accumulator kind
    (shape, kind, acc) for shape, kinds in tl.WMMA.items() for kind, support in kinds.items()
    for acc in support.accumulators
]
_kernels: dict = {}


def _gemm_kernel(m, n, k, kind, acc, a_layout, b_layout, c_layout):
    """One warp: D = A x B + C with C loaded from memory (c_layout) and D stored the same way."""
    key = (m, n, k, kind, acc, a_layout, b_layout, c_layout)
    if key in _kernels:
        return _kernels[key]
    dt, acc_dt = DTYPES[kind], DTYPES[acc]
    la = wmma.row_major if a_layout == "row" else wmma.col_major
    lb = wmma.row_major if b_layout == "row" else wmma.col_major
    mem = wmma.mem_row_major if c_layout == "row" else wmma.mem_col_major

    @cuda.jit
    def gemm(d, a, b, c):
        fa = wmma.fragment(wmma.matrix_a, m, n, k, dt, la)
        fb = wmma.fragment(wmma.matrix_b, m, n, k, dt, lb)
        fc = wmma.fragment(wmma.accumulator, m, n, k, acc_dt)
        wmma.load_matrix_sync(fa, a[0:m, 0:k])
        wmma.load_matrix_sync(fb, b[0:k, 0:n])
        wmma.load_matrix_sync(fc, c[0:m, 0:n], mem)
        wmma.mma_sync(fc, fa, fb, fc)
        wmma.store_matrix_sync(d[0:m, 0:n], fc, mem)

    _kernels[key] = gemm
    return gemm


def _placed(x: np.ndarray, layout: str, pad: int = 32) -> np.ndarray:
    """`x` inside a padded array (so the leading dimension is 16-byte aligned for every
    element size), as a view of the layout's order."""
    rows, cols = x.shape
    if layout == "row":
        big = np.zeros((rows, pad), x.dtype)
        big[:, :cols] = x
        return big
    big = np.zeros((pad, cols), x.dtype, order="F")
    big[:rows, :] = x
    return big


def _check(d, a, b, c, kind, acc):
    if acc == "s32":
        expected = a.astype(np.int64) @ b.astype(np.int64) + c
        np.testing.assert_array_equal(d, expected.astype(np.int32))
        return
    expected, bound = reference(a, b, c, kind, kind)
    if acc == "f16":
        bound = bound + np.abs(expected) * 2.0 ** -11
    error = np.abs(d.astype(np.float64) - expected)
    assert (error <= bound + 1e-30).all(), f"max error {error.max()}"


@pytest.mark.parametrize("shape, kind, acc", CASES)
def test_wmma_matches_numpy(target, shape, kind, acc):
    m, n, k = tl.shape_dims(shape)
    rng = np.random.default_rng(hash((shape, kind, acc)) % 2**32)
    a, b = random_operand(rng, (m, k), kind), random_operand(rng, (k, n), kind)
    c = random_operand(rng, (m, n), acc)
    d = np.zeros((m, 32), c.dtype)
    _gemm_kernel(m, n, k, kind, acc, "row", "row", "row")[1, 32](
        d, _placed(a, "row"), _placed(b, "row"), _placed(c, "row"))
    _check(d[:, :n], a, b, c, kind, acc)


@pytest.mark.parametrize("layouts", [("col", "col", "col"), ("row", "col", "col"),
                                     ("col", "row", "row")])
@pytest.mark.parametrize("shape", ["m16n16k16", "m32n8k16", "m8n32k16"])
def test_wmma_column_major_tiles(target, shape, layouts):
    m, n, k = tl.shape_dims(shape)
    rng = np.random.default_rng(7)
    a, b = random_operand(rng, (m, k), "f16"), random_operand(rng, (k, n), "f16")
    c = random_operand(rng, (m, n), "f32")
    d = _placed(np.zeros((m, n), np.float32), layouts[2])
    _gemm_kernel(m, n, k, "f16", "f32", *layouts)[1, 32](
        d, _placed(a, layouts[0]), _placed(b, layouts[1]), _placed(c, layouts[2]))
    _check(d[:m, :n], a, b, c, "f16", "f32")


@cuda.jit
def _tf32_gemm(d, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 8, wmma.precision.tf32, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 8, wmma.precision.tf32, wmma.row_major)
    fc = wmma.fragment(wmma.accumulator, 16, 16, 8, np.float32)
    wmma.fill_fragment(fc, 0.0)
    wmma.load_matrix_sync(fa, a[0:16, 0:8])
    wmma.load_matrix_sync(fb, b[0:8, 0:16])
    for i in range(fa.num_elements):
        fa.x[i] = wmma.float_to_tf32(fa.x[i])
    for i in range(fb.num_elements):
        fb.x[i] = wmma.float_to_tf32(fb.x[i])
    wmma.mma_sync(fc, fa, fb, fc)
    wmma.store_matrix_sync(d[0:16, 0:16], fc, wmma.mem_row_major)


def _tf32_rna(x: np.ndarray) -> np.ndarray:
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def test_float_to_tf32_rounds_to_nearest_away(target):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    d = np.zeros((16, 16), np.float32)
    _tf32_gemm[1, 32](d, a, b)
    ra, rb = _tf32_rna(a), _tf32_rna(b)
    expected, bound = reference(ra, rb, np.zeros((16, 16), np.float32), "f32", "f32")
    assert (np.abs(d - expected) <= bound).all()


def _layout_kernel(role, m, n, k, kind):
    dt = DTYPES[kind]
    use = {"a": wmma.matrix_a, "b": wmma.matrix_b}.get(role)
    rows, cols = tl.operand_dims(role, m, n, k)

    if role == "c":
        @cuda.jit
        def probe(out, src):
            f = wmma.fragment(wmma.accumulator, m, n, k, dt)
            wmma.load_matrix_sync(f, src[0:rows, 0:cols], wmma.mem_row_major)
            for i in range(f.num_elements):
                out[cuda.laneid, i] = f.x[i]
            out[cuda.laneid, 31] = f.num_elements
    else:
        @cuda.jit
        def probe(out, src):
            f = wmma.fragment(use, m, n, k, dt, wmma.row_major)
            wmma.load_matrix_sync(f, src[0:rows, 0:cols])
            for i in range(f.num_elements):
                out[cuda.laneid, i] = f.x[i]
            out[cuda.laneid, 31] = f.num_elements

    return probe


@pytest.mark.parametrize("shape, kind, role", [
    ("m16n16k16", "f16", "a"), ("m16n16k16", "f16", "b"), ("m16n16k16", "f32", "c"),
    ("m32n8k16", "f16", "a"), ("m8n32k16", "f16", "b"), ("m16n16k16", "bf16", "a"),
    ("m16n16k8", "tf32", "a"), ("m16n16k16", "u8", "b"), ("m32n8k16", "s32", "c")])
def test_fragment_elements_lane_by_lane(target, shape, kind, role):
    """x[i] of every lane holds the element gpunb's WMMA layout (tensorcore_layouts) names:
    on the CPU target by construction, on a GPU as its tensor cores lay fragments out."""
    m, n, k = tl.shape_dims(shape)
    rows, cols = tl.operand_dims(role, m, n, k)
    src = np.zeros((rows, 32), np.float64)
    src[:, :cols] = np.arange(rows * cols).reshape(rows, cols)
    dtype = NP_TYPES[kind]
    out = np.full((32, 32), -1, np.float64)
    _layout_kernel(role, m, n, k, kind)[1, 32](out, src.astype(dtype))
    layout = tl.wmma_map(role, shape, kind)
    assert out[0, 31] == len(layout[0]) == tl.wmma_num_elements(role, shape, kind)
    for lane in range(32):
        expected = [r * cols + c for r, c in layout[lane]]
        assert list(out[lane, :len(expected)]) == expected, f"lane {lane}"


def test_wmma_tiled_gemm_in_loops(target):
    """A 64 x 64 x 64 GEMM: four warps each own a 32 x 32 block of 16 x 16 tiles, looping over
    K; slices with run-time offsets; shared nothing."""
    @cuda.jit
    def gemm(c, a, b):
        warp = cuda.threadIdx.x // 32
        fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
        fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
        acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
        for tile in range(4):
            r = (warp // 2) * 32 + (tile // 2) * 16
            col = (warp % 2) * 32 + (tile % 2) * 16
            wmma.fill_fragment(acc, 0.0)
            for kk in range(0, a.shape[1], 16):
                wmma.load_matrix_sync(fa, a[r:r + 16, kk:kk + 16])
                wmma.load_matrix_sync(fb, b[kk:kk + 16, col:col + 16])
                wmma.mma_sync(acc, fa, fb, acc)
            wmma.store_matrix_sync(c[r:r + 16, col:col + 16], acc, wmma.mem_row_major)

    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    gemm[1, 128](c, a, b)
    expected, bound = reference(a, b, np.zeros((64, 64), np.float32), "f16", "f16")
    assert (np.abs(c - expected) <= bound).all()


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a"])
def test_wmma_ptx_accepted_by_ptxas(ptxas, arch):
    cc = (int(arch[3]), int(arch[4])) + (("a",) if arch.endswith("a") else ())
    names = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "s8": "int8",
             "u8": "uint8", "f32": "float32", "s32": "int32"}
    for shape, kind, acc in CASES:
        m, n, k = tl.shape_dims(shape)
        kernel = _gemm_kernel(m, n, k, kind, acc, "row", "col", "row")
        sig = (f"void({names[acc]}[:, ::1], {names[kind]}[:, ::1], {names[kind]}[::1, :], "
               f"{names[acc]}[:, ::1])")
        ptx, _ = cuda.compile_ptx(kernel, sig, cc=cc)
        assert f"wmma.mma.sync.aligned.row.col.{shape}" in ptx
        ptxas(ptx, arch)
