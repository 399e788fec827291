"""Thread-block clusters on an sm_90 GPU: the cluster registers of a launched grid of clusters,
the cluster barrier across blocks, distributed shared memory (reads, writes and atomics in the
peer's shared memory: a histogram split over the blocks), remote mbarrier arrivals, a TMA
multicast landing in both blocks, the occupancy of clusters and the launch check of the grid.
The cluster GEMM is tests/examples' (against numpy and the CPU target)."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import LaunchError, cuda, float32, int32, uint64

pytestmark = pytest.mark.gpu

SPIN = 1 << 22  # polls of an mbarrier before a test reports a missing arrival (never hangs)


@pytest.fixture(autouse=True)
def _cuda():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


@cuda.jit(cluster_dims=(2, 2, 1))
def _registers(out):
    cluster = cuda.cg.this_cluster()
    x, y, z = cluster.block_index()
    dx, dy, dz = cluster.dim_blocks()
    if cuda.threadIdx.x == 1:
        b = cuda.blockIdx.x + cuda.gridDim.x * cuda.blockIdx.y
        out[b, 0] = cluster.block_rank()
        out[b, 1] = cluster.num_blocks()
        out[b, 2], out[b, 3], out[b, 4] = x, y, z
        out[b, 5], out[b, 6], out[b, 7] = dx, dy, dz
        out[b, 8] = cluster.thread_rank()
        out[b, 9] = cluster.num_threads()


def test_a_grid_of_clusters_has_cudas_cluster_registers():
    out = np.zeros((4 * 6, 10), np.int64)
    _registers[(4, 6), 64](out)
    for by in range(6):
        for bx in range(4):
            x, y = bx % 2, by % 2
            rank = x + 2 * y  # %cluster_ctarank: x fastest
            assert list(out[bx + 4 * by]) == [rank, 4, x, y, 0, 2, 2, 1, rank * 64 + 1, 256]


@cuda.jit(cluster_dims=4)
def _exchange(out):
    """Each block writes its slots, syncs the cluster, then reads its neighbour's."""
    cluster = cuda.cg.this_cluster()
    mine = cuda.shared.array(128, int32)
    rank = cluster.block_rank()
    mine[cuda.threadIdx.x] = rank * 1000 + cuda.threadIdx.x
    cluster.sync()
    peer = cluster.map_shared_rank(mine, (rank + 1) % cluster.num_blocks())
    out[cuda.blockIdx.x, cuda.threadIdx.x] = peer[127 - cuda.threadIdx.x]
    cluster.sync()  # the neighbour reads this block's memory until here


def test_cluster_sync_orders_shared_memory_writes_for_the_other_blocks():
    out = np.zeros((8, 128), np.int32)
    _exchange[8, 128](out)
    for b in range(8):
        peer = (b % 4 + 1) % 4
        np.testing.assert_array_equal(out[b], peer * 1000 + np.arange(128)[::-1])


BINS = 64


@cuda.jit(cluster_dims=4)
def _histogram(values, hist):
    """A histogram split over the cluster's shared memory (DSMEM): bin b lives in block
    b % 4; every thread adds to the block that owns its value's bin."""
    cluster = cuda.cg.this_cluster()
    part = cuda.shared.array(BINS // 4, int32)
    rank = cluster.block_rank()
    for i in range(cuda.threadIdx.x, BINS // 4, cuda.blockDim.x):
        part[i] = 0
    cluster.sync()
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        b = values[i]
        owner = cluster.map_shared_rank(part, b % 4)
        cuda.atomic.add(owner, b // 4, 1)
    cluster.sync()
    for i in range(cuda.threadIdx.x, BINS // 4, cuda.blockDim.x):
        cuda.atomic.add(hist, i * 4 + rank, part[i])


def test_a_histogram_in_distributed_shared_memory():
    values = np.random.default_rng(0).integers(0, BINS, 100_000).astype(np.int32)
    hist = np.zeros(BINS, np.int32)
    _histogram[16, 256](values, hist)
    np.testing.assert_array_equal(hist, np.bincount(values, minlength=BINS))


@cuda.jit(cluster_dims=2)
def _remote_arrivals(out):
    """Each block's barrier expects one arrival from each block of the pair (block_rank=):
    it completes only if the peer's remote arrival counted."""
    cluster = cuda.cg.this_cluster()
    bars = cuda.shared.array(2, uint64)
    rank = cluster.block_rank()
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 2)
        cuda.mbarrier.init(bars, 1, 3)
    cluster.sync()
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.arrive(bars, 0, block_rank=rank)
        cuda.mbarrier.arrive(bars, 0, block_rank=rank ^ 1)
        cuda.mbarrier.arrive(bars, 1, 2, block_rank=rank ^ 1)  # a count, remotely
        cuda.mbarrier.arrive(bars, 1)
        done = 0
        for _ in range(SPIN):
            if cuda.mbarrier.try_wait_parity(bars, 0, 0) and \
                    cuda.mbarrier.try_wait_parity(bars, 1, 0):
                done = 1
                break
        out[cuda.blockIdx.x] = done
    cluster.sync()


def test_remote_mbarrier_arrivals_count_on_the_peer():
    out = np.zeros(6, np.int32)
    _remote_arrivals[6, 32](out)
    np.testing.assert_array_equal(out, 1)


ROWS, COLS = 16, 32


@cuda.jit(cluster_dims=2)
def _multicast(out, desc):
    """Block r loads rows 8r..8r+8 of the tile for both blocks (multicast=0b11); each block's
    barrier expects the whole tile."""
    cluster = cuda.cg.this_cluster()
    tile = cuda.shared.array((ROWS, COLS), float32, alignment=128)
    bars = cuda.shared.array(1, uint64)
    rank = cluster.block_rank()
    half = ROWS // 2
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cluster.sync()
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, ROWS * COLS * 4)
        cuda.tma.load(tile[rank * half:(rank + 1) * half, :], desc,
                      (cuda.blockIdx.y * ROWS + rank * half, 0), bars, 0, multicast=0b11)
    cuda.mbarrier.wait(bars, 0, 0)
    b = cuda.blockIdx.x + 2 * cuda.blockIdx.y
    for i in range(cuda.threadIdx.x, ROWS * COLS, cuda.blockDim.x):
        out[b, i // COLS, i % COLS] = tile[i // COLS, i % COLS]
    cluster.sync()


def test_a_multicast_tma_load_lands_in_both_blocks():
    a = np.arange(3 * ROWS * COLS, dtype=np.float32).reshape(3 * ROWS, COLS)
    da = cuda.to_device(a)
    desc = cuda.tma.descriptor(da, (ROWS // 2, COLS))
    out = np.zeros((6, ROWS, COLS), np.float32)
    _multicast[(2, 3), 64](out, desc)
    for y in range(3):
        for x in range(2):
            np.testing.assert_array_equal(out[x + 2 * y], a[y * ROWS:(y + 1) * ROWS])


def test_a_grid_that_is_not_whole_clusters_is_refused_before_the_driver():
    out = np.zeros((4 * 6, 10), np.int64)
    with pytest.raises(LaunchError, match=r"not a whole number of clusters of \(2, 2, 1\)"):
        _registers[(3, 6), 64](out)
    with pytest.raises(LaunchError, match="not a whole number of clusters"):
        _registers[5, 64](out)


def test_max_active_clusters_is_the_drivers_and_fits_the_device():
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    out = np.zeros((4, 10), np.int64)
    _registers[(2, 2), 64](out)
    four = _registers.max_active_clusters(64)
    assert 0 < four <= sms * 32 // 4
    from gpunb.examples import hopper_gemm

    a = cuda.to_device(np.ones((256, 64), np.float16))
    b = cuda.to_device(np.ones((256, 64), np.float16))
    c = cuda.device_array((256, 256), np.float16)
    hopper_gemm.launch(c, a, b)
    pairs = hopper_gemm.gemm.max_active_clusters(hopper_gemm.THREADS, hopper_gemm.SMEM_BYTES)
    assert 0 < pairs <= sms // 2  # one block per SM, two per cluster
    np.testing.assert_array_equal(c.copy_to_host(), 64)

    @cuda.jit
    def plain(out):
        out[0] = 1

    plain[1, 32](np.zeros(1, np.int32))
    # a kernel compiled without cluster_dims is asked about a shape
    assert plain.max_active_clusters(32, cluster_dims=2) >= plain.max_active_clusters(
        32, cluster_dims=8) > 0
    with pytest.raises(LaunchError, match="compiled with cluster_dims"):
        _registers.max_active_clusters(64, cluster_dims=2)


def test_a_cluster_kernel_from_the_disk_cache_launches_clusters(tmp_path):
    import os
    import subprocess
    import sys

    code = ("import numpy as np, gpunb\nfrom gpunb import cuda\ngpunb.set_target('cuda')\n"
            "@cuda.jit(cluster_dims=2, cache=True)\ndef k(out):\n"
            "    out[cuda.blockIdx.x] = cuda.cg.this_cluster().block_rank()\n"
            "out = np.zeros(4, np.int32)\nk[4, 32](out)\n"
            "try:\n    k[3, 32](out)\nexcept gpunb.LaunchError:\n    print('refused')\n"
            "print(out.tolist(), k.cache_info()[-1]['event'])\n")
    src = tmp_path / "cluster_cached.py"
    src.write_text(code)
    env = {**os.environ, "GPUNB_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, str(src)], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert "refused" in run.stdout and "[0, 1, 0, 1]" in run.stdout
    assert "miss" in runs[0].stdout.splitlines()[-1].lower()
    assert "hit" in runs[1].stdout.splitlines()[-1].lower()
