"""wgmma: shared-memory matrix descriptors in every canonical layout (K- and MN-major, each
swizzle), the input types, A from registers, the D fragment lane by lane, against numpy; misuse
(a partial warpgroup, a short accumulator) at the line; bad shapes at compile time; sm_90a."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpunb
from gpunb import AsyncCopyError, CompileError, cuda, float16, float32, int32, uint8
from gpunb.foundation import types as t

IMAGE = 16384  # bytes of shared memory per operand image


pytestmark = pytest.mark.slow  # each test compiles asynchronous kernels for the CPU target


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def swizzled(offset: int, swizzle: int) -> int:
    mask = {0: 0, 32: 1, 64: 3, 128: 7}[swizzle]
    return offset ^ (((offset >> 7) & mask) << 4)


def canonical_offset(mn, k, size, mn_major, swizzle, lbo, sbo) -> int:
    """Where a descriptor (lbo, sbo, swizzle) finds element (mn, k): core matrices of 8 rows of
    16 bytes (CUTLASS's GMMA canonical layouts), then the swizzle of the address bits."""
    if not mn_major:
        r0, r1, chunk, inner = mn % 8, mn // 8, k // (16 // size), k % (16 // size)
        if swizzle:
            off = r1 * sbo + r0 * swizzle + chunk * 16 + inner * size
        else:
            off = r1 * sbo + chunk * lbo + r0 * 16 + inner * size
    else:
        k0, k1 = k % 8, k // 8
        per = (swizzle or 16) // size
        if swizzle:
            off = (mn // per) * lbo + k1 * sbo + k0 * swizzle + (mn % per) * size
        else:
            off = (mn // per) * sbo + k1 * lbo + k0 * 16 + (mn % per) * size
    return swizzled(off, swizzle)


def offsets_for(mn_major: bool, swizzle: int, size: int, k: int) -> tuple:
    """(lbo, sbo) of a dense canonical layout of a (rows, k) operand."""
    if not mn_major:
        return (16, 8 * swizzle) if swizzle else (128, 128 * (k * size // 16))
    if swizzle:
        return 8 * swizzle * (k // 8), 8 * swizzle
    return 128, 128 * (k // 8)


def image(x, mn_major, swizzle, lbo, sbo) -> np.ndarray:
    """The shared-memory bytes holding x (rows = M or N, cols = K) in that layout."""
    raw = np.zeros(IMAGE, np.uint8)
    size = x.dtype.itemsize
    data = x.view(np.uint8).reshape(x.shape[0], x.shape[1], size)
    for mn in range(x.shape[0]):
        for k in range(x.shape[1]):
            off = canonical_offset(mn, k, size, mn_major, swizzle, lbo, sbo)
            raw[off:off + size] = data[mn, k]
    return raw


def make_kernel(n, dtype, swizzle_a, swizzle_b, trans_a=0, trans_b=0, acc_type=float32):
    @cuda.jit
    def one_mma(out, a_img, b_img, offs):
        sa = cuda.shared.array(IMAGE, uint8, alignment=1024)
        sb = cuda.shared.array(IMAGE, uint8, alignment=1024)
        tid = cuda.threadIdx.x
        for i in range(tid, IMAGE, cuda.blockDim.x):
            sa[i] = a_img[i]
            sb[i] = b_img[i]
        cuda.fence_proxy_async()  # thread writes, then the async proxy reads them
        cuda.syncthreads()
        acc = cuda.local.array(n // 2, acc_type)
        for i in range(n // 2):
            acc[i] = 1
        da = cuda.wgmma.descriptor(sa, swizzle_a, offs[1], offs[0])
        db = cuda.wgmma.descriptor(sb, swizzle_b, offs[3], offs[2])
        cuda.wgmma.fence()
        cuda.wgmma.mma_async(acc, da, db, (64, n, 32 // dtype_bytes), dtype, scale_d=True,
                             trans_a=trans_a, trans_b=trans_b)
        cuda.wgmma.commit_group()
        cuda.wgmma.wait_group(0)
        cuda.wgmma.store(out, acc, n)

    dtype_bytes = {float16: 2, t.bfloat16: 2, float32: 4}.get(dtype, 1)
    return one_mma


def run(target, kernel, a, b, a_major, b_major, swizzles, out_dtype=np.float32):
    k = a.shape[1]
    la, sa = offsets_for(a_major, swizzles[0], a.dtype.itemsize, k)
    lb, sb = offsets_for(b_major, swizzles[1], b.dtype.itemsize, k)
    out = np.zeros((64, b.shape[0]), out_dtype)
    kernel[1, 128](out, image(a, a_major, swizzles[0], la, sa),
                   image(b, b_major, swizzles[1], lb, sb),
                   np.array([la, sa, lb, sb], np.int64))
    return out


def _inputs(dtype, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (64, k)).astype(dtype)
    b = rng.integers(-4, 5, (n, k)).astype(dtype)
    return a, b, a.astype(np.float64) @ b.astype(np.float64).T + 1  # acc started at 1


LAYOUTS = [(0, 0, 128, 128), (0, 0, 64, 32), (0, 0, 0, 0), (0, 1, 128, 128), (0, 1, 64, 0),
           (1, 0, 32, 64), (1, 1, 0, 128)]
F16_KERNELS = {}


@pytest.mark.parametrize("trans_a, trans_b, swz_a, swz_b", LAYOUTS)
def test_float16_in_every_canonical_layout(target, trans_a, trans_b, swz_a, swz_b):
    key = (trans_a, trans_b, swz_a, swz_b)
    if key not in F16_KERNELS:
        F16_KERNELS[key] = make_kernel(64, float16, swz_a, swz_b, trans_a, trans_b)
    a, b, expected = _inputs(np.float16, 64, 16)
    out = run(target, F16_KERNELS[key], a, b, trans_a, trans_b, (swz_a, swz_b))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype, np_dtype, n", [
    (t.bfloat16, ml_dtypes.bfloat16, 128), (float32, np.float32, 24),
    (t.fp8_e4m3, ml_dtypes.float8_e4m3fn, 64), (t.fp8_e5m2, ml_dtypes.float8_e5m2, 8)])
def test_input_types(target, dtype, np_dtype, n):
    kernel = make_kernel(n, dtype, 128, 128)
    k = 32 // np.dtype(np_dtype).itemsize
    a, b, expected = _inputs(np_dtype, n, k, seed=n)
    out = run(target, kernel, a, b, 0, 0, (128, 128))
    np.testing.assert_array_equal(out, expected)


def test_int8_accumulates_in_int32(target):
    kernel = make_kernel(32, gpunb.int8, 64, 64, acc_type=int32)
    a, b, expected = _inputs(np.int8, 32, 32, seed=3)
    out = run(target, kernel, a, b, 0, 0, (64, 64), np.int32)
    np.testing.assert_array_equal(out, expected.astype(np.int32))


def test_tf32_drops_the_low_mantissa_bits(cpu):
    kernel = make_kernel(8, float32, 128, 128)
    a = np.zeros((64, 8), np.float32)
    b = np.zeros((8, 8), np.float32)
    a[:, 0] = 1 + 2.0 ** -20  # below tf32's 10 mantissa bits: read as 1
    b[:, 0] = 1
    out = run("cpu", kernel, a, b, 0, 0, (128, 128))
    np.testing.assert_array_equal(out, np.full((64, 8), 2.0, np.float32))


@cuda.jit
def lanes(out):
    """D value i of each thread, with A = row index (column 0) and B = column index."""
    sa = cuda.shared.array(2048, float16, alignment=1024)
    sb = cuda.shared.array(1024, float16, alignment=1024)
    tid = cuda.threadIdx.x
    for i in range(tid, 2048, 128):
        sa[i] = 0
    for i in range(tid, 1024, 128):
        sb[i] = 0
    cuda.syncthreads()
    if tid < 64:  # K-major, no swizzle, sbo 256: row r, k 0 at (r // 8) * 256 + (r % 8) * 16
        sa[((tid // 8) * 256 + (tid % 8) * 16) // 2] = tid
    if tid < 32:
        sb[((tid // 8) * 256 + (tid % 8) * 16) // 2] = tid
    cuda.fence_proxy_async()
    cuda.syncthreads()
    acc = cuda.local.array(16, float32)
    cuda.wgmma.fence()
    cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 0, 256, 128),
                         cuda.wgmma.descriptor(sb, 0, 256, 128), (64, 32, 16), float16,
                         scale_d=False)
    cuda.wgmma.commit_group()
    cuda.wgmma.wait_group(0)
    for i in range(16):
        out[tid, i] = acc[i]


def test_the_d_fragment_lane_by_lane(target):
    out = np.zeros((128, 16), np.float32)
    lanes[1, 128](out)
    for tid in range(128):
        warp, lane = divmod(tid, 32)
        for i in range(16):
            row = 16 * warp + lane // 4 + 8 * ((i // 2) % 2)
            col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
            assert out[tid, i] == row * col, (tid, i)


@cuda.jit
def registers_a(out, a, b_img):
    sb = cuda.shared.array(IMAGE, uint8, alignment=1024)
    tid = cuda.threadIdx.x
    for i in range(tid, IMAGE, 128):
        sb[i] = b_img[i]
    cuda.fence_proxy_async()
    cuda.syncthreads()
    warp, lane = tid // 32, tid % 32
    frag = cuda.local.array(8, float16)  # the layout of D's k16 slice
    for j in range(8):
        frag[j] = a[16 * warp + lane // 4 + 8 * ((j // 2) % 2), 8 * (j // 4) + 2 * (lane % 4)
                    + j % 2]
    acc = cuda.local.array(32, float32)
    cuda.wgmma.fence()
    cuda.wgmma.mma_async(acc, frag, cuda.wgmma.descriptor(sb, 128), (64, 64, 16), float16,
                         scale_d=False, negate_b=True)
    cuda.wgmma.commit_group()
    cuda.wgmma.wait_group(0)
    cuda.wgmma.store(out[3:, :], acc, 64)  # a partial view: rows past its end are skipped


def test_a_from_registers_negated_b_and_a_partial_store(target):
    a, b, _ = _inputs(np.float16, 64, 16, seed=7)
    out = np.zeros((67, 64), np.float32)
    registers_a[1, 128](out, a, image(b, False, 128, 16, 1024))
    expected = np.zeros((67, 64), np.float32)
    expected[3:] = -(a.astype(np.float64) @ b.astype(np.float64).T)[:64]
    np.testing.assert_array_equal(out, expected)


def test_a_partial_warpgroup_is_reported(cpu):
    with pytest.raises(AsyncCopyError, match="reached by 96 of the 128 threads of warpgroup 0"):
        lanes[1, 96](np.zeros((128, 16), np.float32))


@cuda.jit
def short_acc(out):
    sa = cuda.shared.array(4096, float16, alignment=1024)
    acc = cuda.local.array(8, float32)
    cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 128), cuda.wgmma.descriptor(sa, 128),
                         (64, 64, 16), float16)
    cuda.wgmma.commit_group()
    cuda.wgmma.wait_group(0)
    out[0] = acc[0]


def test_a_short_accumulator_is_reported(cpu):
    with pytest.raises(AsyncCopyError, match="accumulator holds 8 values, the fragment has 32"):
        short_acc[1, 128](np.zeros(1, np.float32))


@cuda.jit
def unfenced(out):
    sa = cuda.shared.array(4096, float16, alignment=1024)
    acc = cuda.local.array(32, float32)
    for i in range(32):
        acc[i] = 0
    cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 128), cuda.wgmma.descriptor(sa, 128),
                         (64, 64, 16), float16)       # no cuda.wgmma.fence() before it
    cuda.wgmma.commit_group()
    cuda.wgmma.wait_group(0)
    out[cuda.threadIdx.x] = acc[0]


def test_a_wgmma_without_a_fence_is_reported_at_its_line(cpu):
    """It ran and gave the right product on the CPU target, where on a GPU the MMA may read
    stale accumulator registers (the PTX ISA requires wgmma.fence before the first one)."""
    import inspect

    with pytest.raises(AsyncCopyError, match=r"mma_async: no cuda\.wgmma\.fence\(\) before "
                                             r"it in this thread") as info:
        unfenced[1, 128](np.zeros(128, np.float32))
    lines, first = inspect.getsourcelines(unfenced.py_func)
    assert info.value.loc.line == first + next(k for k, line in enumerate(lines)
                                               if "mma_async(" in line)
    assert "cuda.wgmma.fence()" in info.value.hint


def test_the_accumulator_touched_before_wait_group_is_a_compile_error():
    """Reading acc after mma_async with no wait_group between (or with none at all) gave the
    right product on the CPU target, which computes D at the call; on a GPU the registers are
    still being written. A wait_group in between, or an MMA chained on the same acc, is fine."""
    def read_early(out):
        sa = cuda.shared.array(4096, float16, alignment=1024)
        acc = cuda.local.array(32, float32)
        cuda.wgmma.fence()
        cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 128),
                             cuda.wgmma.descriptor(sa, 128), (64, 64, 16), float16)
        cuda.wgmma.commit_group()
        out[cuda.threadIdx.x] = acc[0]
        cuda.wgmma.wait_group(0)

    def never_waits(out):
        sa = cuda.shared.array(4096, float16, alignment=1024)
        acc = cuda.local.array(32, float32)
        cuda.wgmma.fence()
        cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 128),
                             cuda.wgmma.descriptor(sa, 128), (64, 64, 16), float16)
        for i in range(32):
            out[cuda.threadIdx.x * 32 + i] = acc[i]

    def chained_then_waited(out):
        sa = cuda.shared.array(4096, float16, alignment=1024)
        acc = cuda.local.array(32, float32)
        cuda.wgmma.fence()
        for k in range(2):
            cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 128) + 2 * k,
                                 cuda.wgmma.descriptor(sa, 128), (64, 64, 16), float16)
            cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 128),
                                 cuda.wgmma.descriptor(sa, 128), (64, 64, 16), float16)
        cuda.wgmma.commit_group()
        cuda.wgmma.wait_group(0)
        out[cuda.threadIdx.x] = acc[0]

    for fn in (read_early, never_waits):
        with pytest.raises(CompileError, match=r"'acc' is the accumulator of the "
                                               r"cuda\.wgmma\.mma_async at line \d+, which the "
                                               r"tensor cores may still be writing") as info:
            cuda.compile_ptx(fn, (float32[:],), cc=(9, 0, "a"))
        assert "acc[" in str(info.value) and "wait_group(0)" in info.value.hint
    cuda.compile_ptx(chained_then_waited, (float32[:],), cc=(9, 0, "a"))


def _sig():
    return (float32[:, :], uint8[:], uint8[:], gpunb.int64[:])


def test_bad_instructions_are_compile_errors():
    def bad_shape(out, a_img, b_img, offs):
        acc = cuda.local.array(64, float32)
        cuda.wgmma.mma_async(acc, offs[0], offs[1], (128, 64, 16), float16)

    def bad_k(out, a_img, b_img, offs):
        acc = cuda.local.array(64, float32)
        cuda.wgmma.mma_async(acc, offs[0], offs[1], (64, 64, 8), t.bfloat16)

    def bad_trans(out, a_img, b_img, offs):
        acc = cuda.local.array(64, float32)
        cuda.wgmma.mma_async(acc, offs[0], offs[1], (64, 64, 8), float32, trans_b=True)

    def bad_acc(out, a_img, b_img, offs):
        acc = cuda.local.array(64, float16)
        cuda.wgmma.mma_async(acc, offs[0], offs[1], (64, 64, 16), float16)

    def bad_swizzle(out, a_img, b_img, offs):
        sa = cuda.shared.array(64, float16)
        offs[0] = cuda.wgmma.descriptor(sa, 16)

    def bad_nreg(out, a_img, b_img, offs):
        cuda.setmaxnreg_inc(250)

    for fn, text in ((bad_shape, "no m128n64k16 shape for f16"),
                     (bad_k, r"use \(64, N, 16\)"),
                     (bad_trans, "MN-major.*float16 and bfloat16 only"),
                     (bad_acc, "writable 1-d float32 array of 32 per thread"),
                     (bad_swizzle, "must be one of 0, 128, 64, 32"),
                     (bad_nreg, "must be one of 24, 32")):
        with pytest.raises(CompileError, match=text):
            cuda.compile_ptx(fn, _sig(), cc=(9, 0, "a"))


def test_wgmma_needs_sm_90a_and_its_ptx_is_accepted(ptxas):
    kernel = make_kernel(64, float16, 128, 128)
    for cc, arch in (((8, 0), "sm_80"), ((10, 0), "sm_100")):  # wgmma is Hopper's alone
        with pytest.raises(CompileError, match=r"mma_async needs sm_90a \(Hopper: H100, "
                                               rf"H200\); this kernel compiles for {arch}"):
            cuda.compile_ptx(short_acc.py_func, (float32[:],), cc=cc)
    ptx, _ = cuda.compile_ptx(kernel.py_func, _sig(), cc=(9, 0))  # sm_90 compiles as sm_90a
    assert ".target sm_90a" in ptx and "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" \
        in ptx
    ptxas(ptx, "sm_90a")
    ptx, _ = cuda.compile_ptx(registers_a.py_func, (float32[:, :], float16[:, :], uint8[:]),
                              cc=(9, 0, "a"))
    ptxas(ptx, "sm_90a")
