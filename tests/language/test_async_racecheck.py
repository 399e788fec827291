"""racecheck on asynchronous kernels: accesses ordered only by mbarrier phases are not races (and
unordered ones are); a wgmma reads its shared operands until its wait_group and a TMA store its
source until wait_group_read, so overwriting them earlier is reported, as is a stage released to
the producer before the wgmma reading it completed; a generic write read by TMA or wgmma needs a
cuda.fence_proxy_async() in between. Each bug caught at its line, each correct kernel clean."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import AsyncCopyError, RaceError, cuda, float16, float32, int32, uint8, uint64
from gpunb.examples import hopper_gemm

pytestmark = pytest.mark.slow  # each test compiles asynchronous kernels for the CPU target


@pytest.fixture(autouse=True)
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _line_of(kernel, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, line in enumerate(lines) if text in line)


# ---- ordinary shared memory ordered by mbarriers ----------------------------------------------


@cuda.jit(racecheck=True)
def exchange(out, rounds, wait_first):
    """Each round every thread writes its slot, arrives, waits for the phase, then reads its
    mirror's slot: ordered by the mbarrier alone (the syncthreads only ends the round)."""
    bars = cuda.shared.array(1, uint64)
    s = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 64)
    cuda.syncthreads()
    total = 0
    for r in range(rounds):
        s[t] = t * (r + 1)
        cuda.mbarrier.arrive(bars, 0)
        if wait_first:
            cuda.mbarrier.wait(bars, 0, r % 2)
            total += s[63 - t]
        else:
            total += s[63 - t]  # before the phase completes: the mirror may not have written
            cuda.mbarrier.wait(bars, 0, r % 2)
        cuda.syncthreads()
    out[t] = total


def test_accesses_ordered_by_an_mbarrier_phase_are_not_races():
    out = np.zeros(64, np.int32)
    exchange[1, 64](out, 3, True)
    np.testing.assert_array_equal(out, (63 - np.arange(64)) * 6)


def test_a_read_before_the_phase_completes_is_a_race():
    with pytest.raises(RaceError, match=r"data race on s\[\d+\] \(shared memory\).*nor an "
                                        r"mbarrier phase that one arrived on and the other "
                                        r"waited for") as info:
        exchange[1, 64](np.zeros(64, np.int32), 3, False)
    # the later access of the pair: the read, or the mirror's write that came after it
    assert info.value.loc.line in (_line_of(exchange, "total += s[63 - t]  # before"),
                                   _line_of(exchange, "s[t] = t * (r + 1)"))


@cuda.jit(racecheck=True)
def init_without_barrier(out):
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 32)
    cuda.mbarrier.arrive(bars, 0)           # no syncthreads after the init
    cuda.mbarrier.wait(bars, 0, 0)
    out[cuda.threadIdx.x] = 1


def test_an_arrive_racing_the_init_is_named_with_an_article_that_fits():
    """The message said 'a atomic at line ...'."""
    with pytest.raises(RaceError, match=r"data race on bars\[0\]") as info:
        init_without_barrier[1, 32](np.zeros(32, np.int32))
    assert "an atomic at line" in str(info.value)
    assert "a atomic" not in str(info.value)


@cuda.jit(racecheck=True)
def ring(out, items, release_late):
    """Warp 0's lane 0 produces values into a 2-slot ring, warp 1's lane 0 consumes them: full
    and empty mbarriers order every slot's write, read and rewrite (no syncthreads). Without
    `release_late` the consumer frees a slot before reading it."""
    slots = cuda.shared.array(2, int32)
    full = cuda.shared.array(2, uint64)
    empty = cuda.shared.array(2, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        for s in range(2):
            cuda.mbarrier.init(full, s, 1)
            cuda.mbarrier.init(empty, s, 1)
    cuda.syncthreads()
    if t == 0:
        for i in range(items):
            s = i % 2
            if i >= 2:
                cuda.mbarrier.wait(empty, s, (i // 2 - 1) % 2)
            slots[s] = i * i
            cuda.mbarrier.arrive(full, s)
    elif t == 32:
        total = 0
        for i in range(items):
            s = i % 2
            cuda.mbarrier.wait(full, s, (i // 2) % 2)
            if release_late:
                total += slots[s]
                cuda.mbarrier.arrive(empty, s)
            else:
                cuda.mbarrier.arrive(empty, s)
                total += slots[s]  # the producer may be rewriting it
        out[0] = total


def test_a_producer_consumer_ring_of_plain_stores_is_clean():
    out = np.zeros(1, np.int32)
    ring[1, 64](out, 7, True)
    assert out[0] == sum(i * i for i in range(7))


def test_a_consumer_that_frees_its_slot_before_reading_it_races_with_the_producer():
    with pytest.raises(RaceError, match=r"data race on slots\[[01]\]") as info:
        ring[1, 64](np.zeros(1, np.int32), 7, False)
    assert info.value.loc.line in (_line_of(ring, "slots[s] = i * i"),
                                   _line_of(ring, "total += slots[s]  # the producer"))


@cuda.jit(racecheck=True)
def one_waits_all_read(out, desc):
    """Only thread 0 waits for the TMA load; a syncthreads hands what it acquired to all."""
    tile = cuda.shared.array((16, 32), float32, alignment=128)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 32 * 4)
        cuda.tma.load(tile, desc, (0, 0), bars, 0)
        cuda.mbarrier.wait(bars, 0, 0)
    cuda.syncthreads()
    for i in range(t, 512, cuda.blockDim.x):
        out[i // 32, i % 32] = tile[i // 32, i % 32] + 1


def test_what_one_thread_acquired_crosses_a_block_barrier():
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    out = np.zeros_like(a)
    one_waits_all_read[1, 64](out, cuda.tma.descriptor(a, (16, 32), 0))
    np.testing.assert_array_equal(out, a + 1)


# ---- wgmma and TMA stores own their shared operands until they complete ------------------------

IMAGE = 64 * 16 * 2  # one 64 x 16 float16 operand, K-major, no swizzle


@cuda.jit(racecheck=True)
def one_wgmma(out, a, b, mode):
    """D (64 x 64) = A (64 x 16) x B^T, operands copied into shared memory by the threads.
    mode 1: no fence_proxy_async; 2: a thread rewrites B before the wait_group."""
    sa = cuda.shared.array(IMAGE, uint8, alignment=128)
    sb = cuda.shared.array(IMAGE * 4, uint8, alignment=128)
    t = cuda.threadIdx.x
    for i in range(t, IMAGE, 128):
        sa[i] = a[i]
    for i in range(t, IMAGE * 4, 128):
        sb[i] = b[i]
    if mode != 1:
        cuda.fence_proxy_async()
    cuda.syncthreads()
    acc = cuda.local.array(32, float32)
    cuda.wgmma.fence()
    cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 0, 256, 128),
                         cuda.wgmma.descriptor(sb, 0, 256, 128), (64, 64, 16), float16,
                         scale_d=False)
    cuda.wgmma.commit_group()
    if mode == 2 and t == 5:
        sb[6] = 0  # the wgmma may still be reading B (element (0, 3), bytes 6-7)
    cuda.wgmma.wait_group(0)
    cuda.wgmma.store(out, acc, 64)


def _core_image(x: np.ndarray) -> np.ndarray:
    """(rows, 16) float16 in core matrices of 8 rows x 16 bytes: lbo 128 (along K), sbo 256."""
    raw = np.zeros(x.shape[0] * 32, np.uint8)
    data = x.astype(np.float16).view(np.uint8).reshape(x.shape[0], 16, 2)
    for r in range(x.shape[0]):
        for k in range(16):
            off = (r // 8) * 256 + (k // 8) * 128 + (r % 8) * 16 + (k % 8) * 2
            raw[off:off + 2] = data[r, k]
    return raw


def _wgmma_inputs():
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (64, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 16)).astype(np.float16)
    image_b = np.zeros(IMAGE * 4, np.uint8)
    image_b[:64 * 32] = _core_image(b)
    return a, b, _core_image(a), image_b


def test_a_fenced_wgmma_on_thread_written_tiles_is_clean():
    a, b, ia, ib = _wgmma_inputs()
    out = np.zeros((64, 64), np.float32)
    one_wgmma[1, 128](out, ia, ib, 0)
    np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32).T)


def test_a_wgmma_reading_unfenced_generic_writes_is_reported():
    _, _, ia, ib = _wgmma_inputs()
    with pytest.raises(AsyncCopyError, match=r"the cuda.wgmma.mma_async issued at line \d+ by "
                                             r"warpgroup 0 reads s[ab]\[\d+\], which thread "
                                             r"\(\d+, 0, 0\) of block \(0, 0, 0\) wrote at line "
                                             r"\d+ with no cuda.fence_proxy_async\(\)") as info:
        one_wgmma[1, 128](np.zeros((64, 64), np.float32), ia, ib, 1)
    assert info.value.loc.line in (_line_of(one_wgmma, "sa[i] = a[i]"),
                                   _line_of(one_wgmma, "sb[i] = b[i]"))


def test_overwriting_a_wgmma_operand_before_its_wait_group_is_reported():
    _, _, ia, ib = _wgmma_inputs()
    with pytest.raises(AsyncCopyError, match=r"write of sb\[6\] at line \d+ by thread "
                                             r"\(5, 0, 0\) of block \(0, 0, 0\) while the "
                                             r"cuda.wgmma.mma_async issued at line \d+ by "
                                             r"warpgroup 0 may still read it \(until the "
                                             r"cuda.wgmma.wait_group") as info:
        one_wgmma[1, 128](np.zeros((64, 64), np.float32), ia, ib, 2)
    assert info.value.loc.line == _line_of(one_wgmma, "sb[6] = 0")


@cuda.jit(racecheck=True)
def store_back(dst_desc, src_desc, mode):
    """Load a tile by TMA, double it in place, store it by TMA. mode 1: no fence before the
    store; 2: the issuer rewrites the tile before wait_group_read; 3: another thread does."""
    s = cuda.shared.array(512, float32, alignment=128)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    if t == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 32 * 4)
        cuda.tma.load(s[0:512], src_desc, (0, 0), bars, 0)
    cuda.mbarrier.wait(bars, 0, 0)
    for i in range(t, 512, cuda.blockDim.x):
        s[i] = s[i] * 2.0
    if mode != 1:
        cuda.fence_proxy_async()
    cuda.syncthreads()
    if t == 0:
        cuda.tma.store(dst_desc, (0, 0), s[0:512])
        cuda.tma.commit_group()
        if mode == 2:
            s[5] = 0.0
        cuda.tma.wait_group_read(0)
    if mode == 3 and t == 1:
        s[7] = 1.0


@pytest.mark.parametrize("mode, line, match", [
    (1, "s[i] = s[i] * 2.0", r"the TMA store issued at line \d+ by thread \(0, 0, 0\) reads "
                             r"s\[0\], which thread \(0, 0, 0\) of block \(0, 0, 0\) wrote at "
                             r"line \d+ with no cuda.fence_proxy_async\(\)"),
    (2, "s[5] = 0.0", r"write of s\[5\] at line \d+ by thread \(0, 0, 0\) of block \(0, 0, 0\) "
                      r"while the TMA store issued at line \d+ by thread \(0, 0, 0\) may still "
                      r"read it \(until the cuda.tma.wait_group_read"),
    (3, "s[7] = 1.0", r"write of s\[7\] at line \d+ by thread \(1, 0, 0\)"),
])
def test_tma_store_source_misuse_is_reported(mode, line, match):
    src = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    dst = np.zeros_like(src)
    with pytest.raises(AsyncCopyError, match=match) as info:
        store_back[1, 64](cuda.tma.descriptor(dst, (16, 32), 0),
                          cuda.tma.descriptor(src, (16, 32), 0), mode)
    assert info.value.loc.line == _line_of(store_back, line)


def test_a_fenced_tma_store_after_its_wait_is_clean():
    src = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    dst = np.zeros_like(src)
    store_back[1, 64](cuda.tma.descriptor(dst, (16, 32), 0), cuda.tma.descriptor(src, (16, 32), 0),
                      0)
    np.testing.assert_array_equal(dst, src * 2)


# ---- a warp-specialised TMA + wgmma pipeline --------------------------------------------------

BM, BN, BK, STAGES = 64, 64, 64, 2  # 32 KiB of static shared memory (CUDA allows 48)


@cuda.jit(racecheck=True)
def pipeline(c, da, db, k_total, mode):
    """Notebook 11's GEMM: one TMA producer thread, a 2-stage full/empty ring, one consumer
    warpgroup. mode 1 releases a stage before the wgmma reading it completed."""
    sa = cuda.shared.array((STAGES, BM, BK), float16, alignment=1024)
    sb = cuda.shared.array((STAGES, BN, BK), float16, alignment=1024)
    full = cuda.shared.array(STAGES, uint64)
    empty = cuda.shared.array(STAGES, uint64)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(STAGES):
            cuda.mbarrier.init(full, s, 1)
            cuda.mbarrier.init(empty, s, 1)
    cuda.syncthreads()
    ktiles = k_total // BK
    if tid == 0:
        for kt in range(ktiles):
            s = kt % STAGES
            if kt >= STAGES:
                cuda.mbarrier.wait(empty, s, (kt // STAGES - 1) % 2)
            cuda.mbarrier.arrive_expect_tx(full, s, (BM + BN) * BK * 2)
            cuda.tma.load(sa[s], da, (0, kt * BK), full, s)
            cuda.tma.load(sb[s], db, (0, kt * BK), full, s)
    elif tid >= 128:
        acc = cuda.local.array(BN // 2, float32)
        for kt in range(ktiles):
            s = kt % STAGES
            cuda.mbarrier.wait(full, s, (kt // STAGES) % 2)
            cuda.wgmma.fence()
            for kk in range(BK // 16):
                cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa[s, 0, kk * 16:], 128),
                                     cuda.wgmma.descriptor(sb[s, 0, kk * 16:], 128),
                                     (64, BN, 16), float16, scale_d=kt + kk > 0)
            cuda.wgmma.commit_group()
            if mode == 1 and tid == 128:
                cuda.mbarrier.arrive(empty, s)  # too early: the wgmmas may still read stage s
            cuda.wgmma.wait_group(0)
            if mode == 0 and tid == 128:
                cuda.mbarrier.arrive(empty, s)
        cuda.wgmma.store(c, acc, BN)


def _pipeline_inputs():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((BM, 4 * BK)).astype(np.float16)
    bt = rng.standard_normal((BN, 4 * BK)).astype(np.float16)
    return a, bt, cuda.tma.descriptor(a, (BM, BK), 128), cuda.tma.descriptor(bt, (BN, BK), 128)


def test_the_warp_specialised_pipeline_is_clean():
    a, bt, da, db = _pipeline_inputs()
    c = np.zeros((BM, BN), np.float32)
    pipeline[1, 256](c, da, db, 4 * BK, 0)
    exact = a.astype(np.float64) @ bt.astype(np.float64).T
    assert np.abs(c - exact).max() <= 1e-4 * np.abs(exact).max()


def test_a_stage_released_before_its_wgmma_completed_is_reported():
    _, _, da, db = _pipeline_inputs()
    with pytest.raises(AsyncCopyError, match=r"the asynchronous copy of block \(0, 0, 0\) into "
                                             r"s[ab]\[s\]\[\d+\] issued at line \d+ by thread "
                                             r"\(0, 0, 0\) writes it while the "
                                             r"cuda.wgmma.mma_async issued at line \d+ by "
                                             r"warpgroup 1 may still read it"):
        pipeline[1, 256](np.zeros((BM, BN), np.float32), da, db, 4 * BK, 1)


def test_the_hopper_gemm_example_is_clean_under_racecheck():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((136, 192)).astype(np.float16)
    b = rng.standard_normal((264, 192)).astype(np.float16)
    c = np.zeros((136, 264), np.float16)
    # the example's clusters of two (remote arrivals between the producers, multicast B
    # halves); one cluster, persistent over both tile pairs: 6 K-slices through the 4-stage
    # ring, so stages are refilled after both blocks' consumers released them
    checked = cuda.jit(racecheck=True, launch_bounds=(hopper_gemm.THREADS, 1),
                       cluster_dims=(hopper_gemm.CLUSTER, 1, 1))(hopper_gemm.gemm.py_func)
    checked[hopper_gemm.CLUSTER, hopper_gemm.THREADS, 0, hopper_gemm.SMEM_BYTES](
        c, *hopper_gemm.descriptors(a, b, c, width=256), 136, 264, 192)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.abs(c.astype(np.float64) - exact).max() <= np.abs(exact).max() * 2.0 ** -10


def test_the_attention_example_is_clean_under_racecheck():
    import math

    import ml_dtypes

    from gpunb.examples import hopper_attention as ha

    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16) for _ in range(3))
    out = np.zeros_like(q)
    checked = cuda.jit(racecheck=True, launch_bounds=(ha.THREADS, 1))(ha.attention_fwd.py_func)
    dq, dk, dv = ha.descriptors(q, k, v)
    checked[256 // ha.BM, ha.THREADS, 0, ha.SMEM_BYTES](
        out, dq, dk, dv, 256, np.float32(ha.LOG2E / math.sqrt(ha.D)))
    np.testing.assert_allclose(out.astype(np.float64), ha.reference(q, k, v, 256), atol=1.5e-2)


# ---- cp.async writes through the generic proxy ------------------------------------------------


@cuda.jit(racecheck=True)
def cp_async_then_wgmma(out, a, b, fenced):
    sa = cuda.shared.array(IMAGE, uint8, alignment=128)
    sb = cuda.shared.array(IMAGE * 4, uint8, alignment=128)
    t = cuda.threadIdx.x
    for i in range(t, IMAGE // 16, 128):
        cuda.cp_async.copy(sa[i * 16:], a[i * 16:], 16)
    for i in range(t, IMAGE * 4 // 16, 128):
        cuda.cp_async.copy(sb[i * 16:], b[i * 16:], 16)
    cuda.cp_async.wait_all()
    if fenced:
        cuda.fence_proxy_async()  # cp.async writes through the generic proxy
    cuda.syncthreads()
    acc = cuda.local.array(32, float32)
    cuda.wgmma.fence()
    cuda.wgmma.mma_async(acc, cuda.wgmma.descriptor(sa, 0, 256, 128),
                         cuda.wgmma.descriptor(sb, 0, 256, 128), (64, 64, 16), float16,
                         scale_d=False)
    cuda.wgmma.commit_group()
    cuda.wgmma.wait_group(0)
    cuda.wgmma.store(out, acc, 64)


def test_cp_async_data_read_by_wgmma_needs_a_fence():
    a, b, ia, ib = _wgmma_inputs()
    out = np.zeros((64, 64), np.float32)
    cp_async_then_wgmma[1, 128](out, ia, ib, True)
    np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32).T)
    with pytest.raises(AsyncCopyError, match="with no cuda.fence_proxy_async"):
        cp_async_then_wgmma[1, 128](out, ia, ib, False)
