"""gpunb.examples' Hopper kernels: the warp-specialised TMA + wgmma GEMM and the causal
FlashAttention-2 forward, against numpy on the CPU target and against the CPU target's own
results (and numpy) on an H100."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import gpunb
from gpunb import bfloat16, cuda, float16, float32, int64
from gpunb.backends.cuda.linker import link_offline
from gpunb.cuda import PerformanceWarning
from gpunb.examples import hopper_attention, hopper_gemm
from gpunb.foundation.errors import ToolchainError
from gpunb.foundation.tensor_types import TensorMap

pytestmark = pytest.mark.slow  # each test compiles asynchronous kernels for the CPU target


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _gemm_inputs(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_gemm_with_partial_tiles_on_the_cpu_target(cpu, dtype):
    a, b = _gemm_inputs(136, 264, 72, dtype)  # partial tiles in M, N and K
    c = hopper_gemm.matmul(a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    # one rounding of the float32 sum to the output type, and float32's own
    assert np.abs(c.astype(np.float64) - exact).max() <= \
        np.abs(exact).max() * (2.0 ** -7 if dtype is ml_dtypes.bfloat16 else 2.0 ** -10)


def test_persistent_blocks_walk_several_tiles_on_the_cpu_target(cpu):
    a, b = _gemm_inputs(272, 264, 136, np.float16, seed=5)  # 3 x 2 tiles for 2 blocks
    c = np.zeros((272, 264), np.float16)
    hopper_gemm.launch(c, a, b, blocks=2)  # one cluster of two blocks
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.abs(c.astype(np.float64) - exact).max() <= np.abs(exact).max() * 2.0 ** -10


def test_attention_on_the_cpu_target(cpu):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16) for _ in range(3))
    out = hopper_attention.attention(q, k, v, 256)
    np.testing.assert_allclose(out.astype(np.float64), hopper_attention.reference(q, k, v, 256),
                               atol=1.5e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("width", hopper_gemm.WIDTHS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_gemm_on_the_gpu_matches_the_cpu_target(dtype, width):
    a, b = _gemm_inputs(256, 712, 192, dtype, seed=2)  # the last column tile partial either way
    gpunb.set_target("cpu")
    try:
        on_cpu = hopper_gemm.matmul(a, b, width=width).astype(np.float32)
    finally:
        gpunb.set_target(None)
    gpunb.set_target("cuda")
    try:
        on_gpu = hopper_gemm.matmul(cuda.to_device(a), cuda.to_device(b),
                                    width=width).copy_to_host()
    finally:
        gpunb.set_target(None)
    # the tensor core sums in its own order: one unit in the last place of the output type
    ulp = 2.0 ** -7 if dtype is ml_dtypes.bfloat16 else 2.0 ** -10
    assert np.abs(on_gpu.astype(np.float32) - on_cpu).max() <= np.abs(on_cpu).max() * ulp


@pytest.mark.gpu
@pytest.mark.parametrize("width", [*hopper_gemm.WIDTHS, None])
def test_gemm_on_the_gpu_at_size(width):
    a, b = _gemm_inputs(2048, 1536, 1024, np.float16, seed=3)
    gpunb.set_target("cuda")
    try:
        c = hopper_gemm.matmul(cuda.to_device(a), cuda.to_device(b), width=width).copy_to_host()
    finally:
        gpunb.set_target(None)
    exact = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), exact, atol=0.1, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [None, 4])
def test_cluster_gemm_on_the_gpu_with_an_odd_number_of_row_tiles(blocks):
    # 5 row tiles: the last pair's second block computes a tile past M (loads zeros, stores
    # nothing); 3 column tiles, the last partial; 4 blocks: 2 clusters walk 9 pairs
    # (the 320-wide kernel's twin: test_hopper_gemm_wide.test_wide_gemm_on_the_gpu)
    a, b = _gemm_inputs(5 * 128 - 40, 2 * 256 + 72, 320, np.float16, seed=6)
    gpunb.set_target("cuda")
    try:
        c = cuda.device_array((a.shape[0], b.shape[0]), np.float16)
        hopper_gemm.launch(c, cuda.to_device(a), cuda.to_device(b), blocks=blocks, width=256)
        c = c.copy_to_host()
    finally:
        gpunb.set_target(None)
    exact = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), exact, atol=0.05, rtol=1e-2)


@pytest.mark.gpu
def test_the_width_choice_asks_the_driver_for_the_gemms_own_residency():
    # resident_clusters() asks before either GEMM is compiled (a tiny kernel with their block
    # shape and shared memory): it must be the count the driver gives each GEMM itself
    from gpunb.examples import hopper_gemm_wide

    gpunb.set_target("cuda")
    try:
        a, b = (cuda.to_device(x) for x in _gemm_inputs(256, 320, 64, np.float16, seed=8))
        c = cuda.device_array((256, 320), np.float16)
        clusters = hopper_gemm.resident_clusters(a)
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        assert 0 < clusters <= sms // 2
        for width, kernel, smem in ((256, hopper_gemm.gemm, hopper_gemm.SMEM_BYTES),
                                    (320, hopper_gemm_wide.gemm, hopper_gemm_wide.SMEM_BYTES)):
            hopper_gemm.launch(c, a, b, width=width)
            assert kernel.max_active_clusters(hopper_gemm.THREADS, smem) == clusters
        chosen = hopper_gemm.descriptors(a, b, c)[1].box[0] * 2
        assert chosen == hopper_gemm.choose_width(256, 320, clusters) == 256  # one round either way
    finally:
        gpunb.set_target(None)


@pytest.mark.gpu
def test_attention_on_the_gpu_matches_the_cpu_target_and_numpy():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2 * 384, 128)).astype(ml_dtypes.bfloat16)
               for _ in range(3))
    gpunb.set_target("cpu")
    try:
        on_cpu = hopper_attention.attention(q, k, v, 384).astype(np.float64)
    finally:
        gpunb.set_target(None)
    gpunb.set_target("cuda")
    try:
        on_gpu = hopper_attention.attention(cuda.to_device(q), cuda.to_device(k),
                                            cuda.to_device(v), 384).copy_to_host()
    finally:
        gpunb.set_target(None)
    np.testing.assert_allclose(on_gpu.astype(np.float64), on_cpu, atol=1.6e-2)
    np.testing.assert_allclose(on_gpu.astype(np.float64),
                               hopper_attention.reference(q, k, v, 384), atol=1.6e-2)


def _ptxas_notes(kernel, argtypes: tuple, threads: int) -> list:
    """ptxas's performance notes for the kernel's sm_90a PTX, by nvJitLink (whose ptxas serialises
    wgmma as the driver's JIT does; the driver's JIT log omits the note)."""
    ptx = _sm90a_ptx(kernel, argtypes, threads)
    try:
        _, log = link_offline(ptx, [], (9, 0), verbose=True)
    except ToolchainError as exc:  # no nvJitLink, or the wheel without its shared library
        pytest.skip(str(exc))
    return [line for line in log.splitlines()
            if "Performance Loss" in line]


def _sm90a_ptx(kernel, argtypes: tuple, threads: int) -> str:
    """The kernel's PTX for sm_90a with its own launch bounds and cluster shape."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)  # gpunb's own serialisation lint
        ptx, _ = cuda.compile_ptx(kernel.py_func, argtypes, cc=(9, 0, "a"),
                                  launch_bounds=(threads, 1),
                                  cluster_dims=kernel.options.get("cluster_dims"))
    return ptx


def _gemm_argtypes(dtype) -> tuple:
    # M, N, K as a Python int launch passes them (int64)
    return (dtype[:, ::1], TensorMap(dtype, 2, (hopper_gemm.BM, hopper_gemm.BK), 128),
            TensorMap(dtype, 2, (hopper_gemm.BN // hopper_gemm.CLUSTER, hopper_gemm.BK), 128),
            TensorMap(dtype, 2, (hopper_gemm.PANEL, hopper_gemm.PANEL), 128),
            int64, int64, int64)


@pytest.mark.parametrize("dtype", [float16, bfloat16])
def test_gemm_wgmma_chain_is_not_serialised_by_ptxas(dtype):
    # a 64-bit division in the tile order was a subroutine call, and ptxas then waited for
    # every wgmma before issuing the next
    notes = _ptxas_notes(hopper_gemm.gemm, _gemm_argtypes(dtype), hopper_gemm.THREADS)
    assert not [n for n in notes if "serialized" in n], notes


def test_gemm_runs_in_2_block_clusters_sharing_b_by_multicast(ptxas):
    ptx = _sm90a_ptx(hopper_gemm.gemm, _gemm_argtypes(float16), hopper_gemm.THREADS)
    assert ".explicitcluster" in ptx and ".reqnctapercluster 2, 1, 1" in ptx
    loads = [line for line in ptx.splitlines() if "cp.async.bulk.tensor" in line and
             ".global.tile" in line]
    assert len(loads) == 2 and sum(".multicast::cluster" in line for line in loads) == 1
    # each consumer frees a stage in both blocks: arrivals on the peers' barriers
    assert "mbarrier.arrive.shared::cluster.b64" in ptx
    assert ptx.count("barrier.cluster.wait") == 2  # after the barriers' init, before exit
    ptxas(ptx, "sm_90a")


def test_attention_wgmma_chain_is_not_serialised_by_ptxas():
    desc = TensorMap(bfloat16, 2, (hopper_attention.BN, 64), 128)
    notes = _ptxas_notes(hopper_attention.attention_fwd,
                         (bfloat16[:, ::1], desc, desc, desc, int64, float32),
                         hopper_attention.THREADS)
    assert not [n for n in notes if "serialized" in n], notes
