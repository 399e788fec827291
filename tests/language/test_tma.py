"""TMA descriptors and bulk tensor copies: the shared tile as the hardware lays it out (each
swizzle, out-of-bounds fill), stores back to global memory, the completion on an mbarrier, bad
descriptors refused on the host and bad tiles at compile time or at the line."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import AsyncCopyError, CompileError, TensorMapError, cuda, float16, float32, uint64
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import TensorMap


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _on(target, array):
    """The array where `target` runs kernels (a TMA descriptor needs the array itself)."""
    return cuda.to_device(array) if target == "cuda" else array


def swizzled(offset: int, swizzle: int) -> int:
    """The documented swizzle: 16-byte chunk index (bits 4-6) XOR the 128-byte row (bits 7-9),
    masked to the pattern's width."""
    mask = {0: 0, 32: 1, 64: 3, 128: 7}[swizzle]
    return offset ^ (((offset >> 7) & mask) << 4)


def expected_tile(a, r, c, rows, cols, swizzle, fill=0.0):
    """The bytes a TMA load of box (rows, cols) at (r, c) leaves in shared memory, as elements
    in shared-memory order."""
    tile = np.full((rows, cols), fill, a.dtype)
    for i in range(rows):
        for j in range(cols):
            if 0 <= r + i < a.shape[0] and 0 <= c + j < a.shape[1]:
                tile[i, j] = a[r + i, c + j]
    flat, out = tile.reshape(-1), np.empty(tile.size, a.dtype)
    size = a.dtype.itemsize
    for e in range(flat.size):
        out[swizzled(e * size, swizzle) // size] = flat[e]
    return out


def make_loader(rows, cols, dtype):
    @cuda.jit
    def load_tile(out, desc, r, c):
        s = cuda.shared.array((rows, cols), dtype, alignment=1024)
        bars = cuda.shared.array(1, uint64)
        t = cuda.threadIdx.x
        if t == 0:
            cuda.mbarrier.init(bars, 0, 1)
        cuda.syncthreads()
        if t == 0:
            cuda.mbarrier.arrive_expect_tx(bars, 0, rows * cols * 2)
            cuda.tma.load(s, desc, (r, c), bars, 0)
        cuda.mbarrier.wait(bars, 0, 0)
        for i in range(t, rows * cols, cuda.blockDim.x):
            out[i] = s[i // cols, i % cols]

    return load_tile


LOADERS = {cols: make_loader(16, cols, float16) for cols in (16, 32, 64)}


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
@pytest.mark.parametrize("swizzle, cols", [(0, 64), (32, 16), (64, 32), (128, 64)])
def test_loads_lay_the_box_out_swizzled_with_zero_fill(target, swizzle, cols):
    a = (np.arange(100 * 80) % 2047).astype(np.float16).reshape(100, 80)
    desc = cuda.tma.descriptor(_on(target, a), (16, cols), swizzle)
    out = np.zeros(16 * cols, np.float16)
    LOADERS[cols][1, 64](out, desc, 90, 40)  # rows 100.. and columns 80.. are out of bounds
    np.testing.assert_array_equal(out, expected_tile(a, 90, 40, 16, cols, swizzle))


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_nan_fill(target):
    a = np.ones((20, 64), np.float16)
    desc = cuda.tma.descriptor(_on(target, a), (16, 64), 128, fill="nan")
    out = np.zeros(16 * 64, np.float16)
    LOADERS[64][1, 32](out, desc, 10, 0)
    tile = out.reshape(16, 64)  # 128-byte swizzle moves chunks within rows: rows stay rows
    assert np.all(tile[:10] == 1) and np.all(np.isnan(tile[10:]))


@cuda.jit
def copy_through(dst_desc, src_desc, r, c):
    s = cuda.shared.array(16 * 64, float32, alignment=1024)  # a flat tile of the box
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 32 * 4)
        cuda.tma.load(s[0:512], src_desc, (r, c), bars, 0)
    cuda.mbarrier.wait(bars, 0, 0)
    for i in range(t, 512, cuda.blockDim.x):
        s[i] = s[i] * 2.0  # the generic proxy writes ...
    cuda.fence_proxy_async()  # ... made visible to the async proxy before the store reads
    cuda.syncthreads()
    if t == 0:
        cuda.tma.store(dst_desc, (r, c), s[0:512])
        cuda.tma.commit_group()
        cuda.tma.wait_group(0)


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_store_writes_the_tile_back_skipping_out_of_bounds(target):
    src = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    dst = np.full((40, 48), -1.0, np.float32)
    d_src, d_dst = _on(target, src), _on(target, dst)
    copy_through[1, 64](cuda.tma.descriptor(d_dst, (16, 32), 128),
                        cuda.tma.descriptor(d_src, (16, 32), 128), 32, 24)
    got = d_dst.copy_to_host() if target == "cuda" else d_dst
    expected = dst.copy()
    expected[32:40, 24:48] = src[32:40, 24:48] * 2
    np.testing.assert_array_equal(got, expected)


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
@pytest.mark.parametrize("r, c", [(32, 24), (-8, -16), (10, 8)])
def test_the_access_map_counts_tma_reads_and_writes_of_the_tensor(cpu, r, c):
    """A TMA load reads, and a TMA store writes, the box's elements inside the tensor (those
    outside are zero-filled or skipped, never touched) for the thread that issues it: the map
    counts them as that thread's, on the descriptors' arrays."""
    src = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    dst = np.full((40, 48), -1.0, np.float32)
    amap = gpunb.access_map(copy_through[1, 64], cuda.tma.descriptor(dst, (16, 32), 128),
                            cuda.tma.descriptor(src, (16, 32), 128), r, c)
    inside = np.zeros((40, 48), np.int64)
    inside[max(r, 0):r + 16, max(c, 0):c + 32] = 1
    box = int(inside.sum())
    assert box == {(32, 24): 8 * 24, (-8, -16): 8 * 16, (10, 8): 16 * 32}[(r, c)]
    np.testing.assert_array_equal(amap.arrays["src_desc"].reads, inside)
    np.testing.assert_array_equal(amap.arrays["src_desc"].writes, 0)
    np.testing.assert_array_equal(amap.arrays["dst_desc"].writes, inside)
    np.testing.assert_array_equal(amap.arrays["dst_desc"].reads, 0)
    np.testing.assert_array_equal(amap.global_reads, [box] + [0] * 63)
    np.testing.assert_array_equal(amap.global_writes, [box] + [0] * 63)
    np.testing.assert_array_equal(amap.arrays["src_desc"].first_reader[inside == 1], 0)
    # the TMA unit moves the box in bulk: no warp requests, so no coalescing rows
    assert not [c for c in amap.coalescing if c.array in ("src_desc", "dst_desc")]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_blocks_storing_one_box_race_under_racecheck(cpu):
    """The copies' global accesses are the issuing threads': two blocks that store the same box
    write the same elements, which nothing orders; one block is clean."""
    checked = cuda.jit(racecheck=True)(copy_through.py_func)
    src = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    dst = np.full((40, 48), -1.0, np.float32)
    descs = (cuda.tma.descriptor(dst, (16, 32), 128), cuda.tma.descriptor(src, (16, 32), 128))
    checked[1, 64](*descs, 32, 24)
    with pytest.raises(gpunb.RaceError, match=r"dst_desc\[32, 24\].*different blocks"):
        checked[2, 64](*descs, 32, 24)


def test_the_cpu_descriptor_layout_is_the_one_access_logs_read():
    """runtime/tma.py writes the CPU target's descriptor; backends/cpu/abi.py's offsets read
    it back (kernels and access logs): one layout."""
    from gpunb.backends.cpu import abi
    from gpunb.runtime import tma as runtime_tma

    assert runtime_tma.CPU_MAGIC == abi.TMAP_MAGIC_WORD
    assert runtime_tma.CPU_LAYOUT.size == abi.TMAP_MAGIC + 4
    fields = runtime_tma.CPU_LAYOUT.unpack(bytes(range(128)))
    assert fields[0] == int.from_bytes(bytes(range(abi.TMAP_ADDRESS, abi.TMAP_ADDRESS + 8)),
                                       "little")
    assert fields[3] == int.from_bytes(bytes(range(abi.TMAP_DIMS, abi.TMAP_DIMS + 8)), "little")
    assert fields[8] == int.from_bytes(bytes(range(abi.TMAP_STRIDES, abi.TMAP_STRIDES + 8)),
                                       "little")
    assert fields[13] == int.from_bytes(bytes(range(abi.TMAP_BOX, abi.TMAP_BOX + 4)), "little")
    assert fields[18] == int.from_bytes(bytes(range(abi.TMAP_SWIZZLE, abi.TMAP_SWIZZLE + 4)),
                                        "little")
    assert fields[19] == int.from_bytes(bytes(range(abi.TMAP_FILL, abi.TMAP_FILL + 4)), "little")


@pytest.mark.parametrize("box", [(16,), (8, 32), (2, 4, 8)])
def test_a_kernels_signature_text_with_a_descriptor_reads_back(box):
    """Access logs read a compiled kernel's argument types back from its signature text (the
    descriptor's tensor is then the argument's array): a TensorMap's text parses to itself."""
    from gpunb.foundation.tensor_types import SIGNATURE_NAMES

    desc = TensorMap(t.float32, len(box), box, 64)
    text = f"void({desc}, float32[:, ::1], int64)"
    args = t.parse_signature(text, SIGNATURE_NAMES).args
    assert args[0] == desc and str(args[1]) == "float32[:, ::1]"
    with pytest.raises(TypeError, match="cannot parse"):
        t.parse_signature(text)  # user signatures are unchanged: no descriptors in them


@cuda.jit(racecheck=True)
def read_too_early(out, desc):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 2048)
        cuda.tma.load(s, desc, (0, 0), bars, 0)
    cuda.mbarrier.wait(bars, 0, 1)  # the wrong parity: returns at once, the load is pending
    out[t] = s[0, t]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_wait_on_the_wrong_phase_then_reading_the_tile_is_reported(cpu):
    desc = cuda.tma.descriptor(np.ones((16, 64), np.float16), (16, 64), 128)
    with pytest.raises(AsyncCopyError, match=r"read of s\[.*asynchronous copy issued at line"):
        read_too_early[1, 32](np.zeros(32, np.float16), desc)


def _load_without_expect(out, desc):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.tma.load(s, desc, (0, 0), bars, 0)   # no arrive_expect_tx: the arrive completes
        cuda.mbarrier.arrive(bars, 0)             # the phase before the tile lands
    cuda.mbarrier.wait(bars, 0, 0)
    out[t] = s[0, t]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_load_nobody_waited_for_is_an_error_at_its_line_not_a_stale_tile(cpu):
    """Without arrive_expect_tx the phase completed on the arrive alone, every thread read the
    old tile (zeros) and the launch succeeded; the load is now an error at its line, and with
    racecheck the read that came too early is named instead."""
    import inspect

    desc = cuda.tma.descriptor(np.ones((16, 64), np.float16), (16, 64))
    plain = cuda.jit(_load_without_expect)
    with pytest.raises(AsyncCopyError, match=r"cuda\.tma\.load: the copy of 2048 bytes was "
                                             r"still in flight .* nothing waited for it") as info:
        plain[1, 32](np.zeros(32, np.float16), desc)
    lines, first = inspect.getsourcelines(_load_without_expect)
    assert info.value.loc.line == first + next(k for k, line in enumerate(lines)
                                               if "cuda.tma.load(" in line)
    assert "arrive_expect_tx" in info.value.hint
    checked = cuda.jit(racecheck=True)(_load_without_expect)
    with pytest.raises(AsyncCopyError, match=r"read of s\[.*asynchronous copy issued at line"):
        checked[1, 32](np.zeros(32, np.float16), desc)


@cuda.jit
def expects_half_the_box(out, desc):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 1024)   # the box is 2048 bytes
        cuda.tma.load(s, desc, (0, 0), bars, 0)
    cuda.mbarrier.wait(bars, 0, 0)
    out[t] = s[0, t]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_expecting_fewer_bytes_than_the_box_says_so_in_the_hint(cpu):
    desc = cuda.tma.descriptor(np.ones((16, 64), np.float16), (16, 64))
    with pytest.raises(AsyncCopyError, match="-1024 transaction bytes pending") as info:
        expects_half_the_box[1, 32](np.zeros(32, np.float16), desc)
    assert "brought 1024 bytes more than the phase expected" in info.value.hint
    assert "the whole box" in info.value.hint


@cuda.jit
def wrong_tile(out, desc, rows):
    s = cuda.shared.array((32, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
        cuda.mbarrier.arrive_expect_tx(bars, 0, 2048)
        cuda.tma.load(s[0:rows], desc, (0, 0), bars, 0)
        cuda.mbarrier.wait(bars, 0, 0)
    out[0] = s[0, 0]


@cuda.jit
def misaligned_tile(out, desc):
    pad = cuda.shared.array(4, float32)
    s = cuda.shared.array((16, 64), float16)  # 16-byte aligned only
    bars = cuda.shared.array(1, uint64)
    pad[0] = 0.0
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
        cuda.mbarrier.arrive_expect_tx(bars, 0, 2048)
        cuda.tma.load(s, desc, (0, 0), bars, 0)
        cuda.mbarrier.wait(bars, 0, 0)
    out[0] = s[0, 0]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_tiles_that_do_not_fit_the_box_are_reported_at_the_line(cpu):
    desc = cuda.tma.descriptor(np.ones((64, 64), np.float16), (16, 64), 0)
    with pytest.raises(AsyncCopyError, match="axis 0 has 8 elements, not the descriptor's box"):
        wrong_tile[1, 32](np.zeros(1, np.float16), desc, 8)
    with pytest.raises(AsyncCopyError, match="not 128-byte aligned") as info:
        misaligned_tile[1, 32](np.zeros(1, np.float16), desc)
    assert "cuda.tma.load(s, desc" in str(info.value)


def test_descriptors_the_hardware_refuses_are_refused_on_the_host():
    a = np.zeros((64, 128), np.float16)
    with pytest.raises(TensorMapError, match="swizzle=48 is not a TMA swizzle"):
        cuda.tma.descriptor(a, (16, 16), 48)
    with pytest.raises(TensorMapError, match="l2_promotion=96 is not a TMA L2 promotion"):
        cuda.tma.descriptor(a, (16, 16), 0, l2_promotion=96)
    assert cuda.tma.descriptor(a, (16, 16), 0, l2_promotion=256).l2_promotion == 256
    with pytest.raises(TensorMapError, match="128 bytes, wider than the 64-byte swizzle"):
        cuda.tma.descriptor(a, (16, 64), 64)
    with pytest.raises(TensorMapError, match="between 1 and 256"):
        cuda.tma.descriptor(a, (512, 8), 0)
    with pytest.raises(TensorMapError, match="one size per dimension"):
        cuda.tma.descriptor(a, (16,), 0)
    # a float size was 'must give one size per dimension' (it does); a float box a TypeError
    with pytest.raises(TensorMapError, match=r"holds 16\.0 \(float\); box sizes are integers"):
        cuda.tma.descriptor(a, (16.0, 16), 0)
    with pytest.raises(TensorMapError, match="must be a tuple of 2 integer sizes"):
        cuda.tma.descriptor(a, 16.0, 0)
    with pytest.raises(TensorMapError, match=r"holds True \(bool\)"):
        cuda.tma.descriptor(a, (True, 16), 0)
    with pytest.raises(TensorMapError, match="whole 16-byte units"):
        cuda.tma.descriptor(a, (16, 4), 0)
    with pytest.raises(TensorMapError, match="last axis is not contiguous"):
        cuda.tma.descriptor(np.zeros((64, 128), np.float16)[:, ::2], (16, 8), 0)
    with pytest.raises(TensorMapError, match="stride of axis 0 is 14 bytes") as info:
        cuda.tma.descriptor(np.zeros((8, 7), np.float16), (8, 8), 0)
    assert "test_tma.py" in str(info.value)  # the user's line


def test_tiles_of_another_dtype_rank_or_coordinates_are_compile_errors():
    desc = TensorMap(float16, 2, (16, 64), 128)

    def dtype(d):
        s = cuda.shared.array((16, 64), float32)
        bars = cuda.shared.array(1, uint64)
        cuda.tma.load(s, d, (0, 0), bars, 0)

    def coords(d):
        s = cuda.shared.array((16, 64), float16)
        bars = cuda.shared.array(1, uint64)
        cuda.tma.load(s, d, (0, 0, 0), bars, 0)

    def rank(d):
        s = cuda.shared.array((4, 16, 64), float16)
        cuda.tma.store(d, (0, 0), s)

    def prefetch_coords(d):
        cuda.tma.prefetch(d, (0,))

    def prefetch_array(d):
        cuda.tma.prefetch(cuda.shared.array((16, 64), float16), (0, 0))

    for fn, text in ((dtype, "holds float32 but the descriptor copies float16"),
                     (coords, "needs 2 integer coordinates"), (rank, r"has 3 dimension\(s\)"),
                     (prefetch_coords, "cuda.tma.prefetch needs 2 integer coordinates"),
                     (prefetch_array, "cuda.tma.prefetch needs a TMA descriptor")):
        with pytest.raises(CompileError, match=text):
            cuda.compile_ptx(fn, (desc,), cc=(9, 0))


@cuda.jit
def prefetch_then_load(out, desc, r, c):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
        cuda.tma.prefetch(desc, (r, c))  # a hint: the load below reads the same box
        cuda.tma.prefetch(desc, (r + 1000, c))  # out of bounds: a hint still, no fault
    cuda.syncthreads()
    if t == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 64 * 2)
        cuda.tma.load(s, desc, (r, c), bars, 0)
    cuda.mbarrier.wait(bars, 0, 0)
    for i in range(t, 16 * 64, cuda.blockDim.x):
        out[i] = s[i // 64, i % 64]


@pytest.mark.slow  # compiles a CPU-target kernel (coroutines)
def test_a_prefetch_changes_nothing_the_load_then_reads(target):
    a = (np.arange(100 * 80) % 2047).astype(np.float16).reshape(100, 80)
    desc = cuda.tma.descriptor(_on(target, a), (16, 64), 128)
    out = _on(target, np.zeros(16 * 64, np.float16))
    prefetch_then_load[1, 64](out, desc, 40, 8)
    got = out if target == "cpu" else out.copy_to_host()
    np.testing.assert_array_equal(got, expected_tile(a, 40, 8, 16, 64, 128))


def test_tma_needs_sm_90_and_its_ptx_is_accepted(ptxas):
    sig = (float16[:], TensorMap(float16, 2, (16, 64), 128), t.int64, t.int64)
    with pytest.raises(CompileError, match=r"needs sm_90 \(Hopper\) or newer; this kernel "
                                           r"compiles for sm_80"):
        cuda.compile_ptx(LOADERS[64].py_func, sig, cc=(8, 0))
    ptx, _ = cuda.compile_ptx(LOADERS[64].py_func, sig, cc=(9, 0))
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" \
        in ptx and ".param .align 64 .b8" in ptx
    ptxas(ptx, "sm_90")
    sig = (TensorMap(float32, 2, (16, 32), 128),) * 2 + (t.int64, t.int64)
    ptx, _ = cuda.compile_ptx(copy_through.py_func, sig, cc=(9, 0))
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx and "fence.proxy.async" in ptx
    ptxas(ptx, "sm_90")
    sig = (float16[:], TensorMap(float16, 2, (16, 64), 128), t.int64, t.int64)
    ptx, _ = cuda.compile_ptx(prefetch_then_load.py_func, sig, cc=(9, 0))
    assert "cp.async.bulk.prefetch.tensor.2d.L2.global.tile" in ptx
    ptxas(ptx, "sm_90")


@pytest.mark.gpu
def test_descriptors_of_torch_tensors_through_dlpack():
    torch = pytest.importorskip("torch")
    gpunb.set_target("cuda")
    try:
        a = torch.arange(100 * 80, device="cuda", dtype=torch.float32).reshape(100, 80) % 2047
        desc = cuda.tma.descriptor(a.to(torch.float16), (16, 64), 128)  # float16: CAI
        out = np.zeros(16 * 64, np.float16)
        LOADERS[64][1, 64](out, desc, 90, 40)
        host = a.cpu().numpy().astype(np.float16)
        np.testing.assert_array_equal(out, expected_tile(host, 90, 40, 16, 64, 128))
        bf16 = cuda.tma.descriptor(a.to(torch.bfloat16), (16, 64), 128)  # bfloat16: DLPack
        assert str(bf16.type) == "TensorMap(bfloat16, box=(16, 64), swizzle=128)"
    finally:
        gpunb.set_target(None)
