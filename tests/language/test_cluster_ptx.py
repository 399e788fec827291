"""Thread-block clusters on the CUDA target without a GPU: the PTX each cluster operation
lowers to (and ptxas accepting it), cluster_dims as the kernel's .reqnctapercluster, the errors
below sm_90 at the user's line, bad multicast masks at compile time, and the launch check that a
grid is a whole number of clusters."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpunb import CompileError, LaunchError, cuda, float32, int32, int64, uint64
from gpunb.backends.launch_config import validate_config
from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.tensor_types import TensorMap

TILE = TensorMap(float32, 2, (8, 32), 0)


def _queries(out):
    cluster = cuda.cg.this_cluster()
    x, y, z = cluster.block_index()
    dx, dy, dz = cluster.dim_blocks()
    out[cuda.blockIdx.x] = cluster.block_rank() * 1000 + cluster.num_blocks() * 100 + \
        x + y + z + dx + dy + dz + cluster.thread_rank() + cluster.num_threads()


def _dsmem(out):
    cluster = cuda.cg.this_cluster()
    hist = cuda.shared.array(8, int32)
    hist[cuda.threadIdx.x % 8] = 0
    cluster.sync()
    peer = cluster.map_shared_rank(hist, (cluster.block_rank() + 1) % cluster.num_blocks())
    cuda.atomic.add(peer, cuda.threadIdx.x % 8, 1)
    cluster.barrier_arrive()
    cluster.barrier_wait()
    out[cuda.blockIdx.x] = hist[0]


def _remote_arrive(out):
    cluster = cuda.cg.this_cluster()
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 2)
    cluster.sync()
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.arrive(bars, 0, block_rank=cluster.block_rank() ^ 1)
        cuda.mbarrier.arrive(bars, 0, 1, block_rank=cluster.block_rank())
        cuda.mbarrier.wait(bars, 0, 0)
    cluster.sync()
    out[0] = 1


def _multicast(out, desc):
    cluster = cuda.cg.this_cluster()
    tile = cuda.shared.array((16, 32), float32, alignment=128)
    bars = cuda.shared.array(1, uint64)
    rank = cluster.block_rank()
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cluster.sync()
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 32 * 4)
        cuda.tma.load(tile[rank * 8:rank * 8 + 8, :], desc, (rank * 8, 0), bars, 0,
                      multicast=0b11)
        cuda.mbarrier.wait(bars, 0, 0)
    cluster.sync()
    out[0] = tile[0, 0]


def _ptx(fn, argtypes, cc=(9, 0), **options):
    return cuda.compile_ptx(fn, argtypes, cc=cc, **options)[0]


def test_cluster_queries_read_the_cluster_registers(ptxas):
    ptx = _ptx(_queries, (int64[::1],), cluster_dims=(2, 2, 1))
    for reg in ("%cluster_ctarank", "%cluster_nctarank", "%cluster_ctaid.x", "%cluster_ctaid.z",
                "%cluster_nctaid.x", "%cluster_nctaid.y"):
        assert reg in ptx
    assert ".explicitcluster" in ptx and ".reqnctapercluster 2, 2, 1" in ptx
    ptxas(ptx, "sm_90a")


def test_cluster_dims_are_the_kernels_and_absent_without_them():
    assert ".reqnctapercluster 8, 1, 1" in _ptx(_queries, (int64[::1],), cluster_dims=8)
    assert ".reqnctapercluster 1, 2, 4" in _ptx(_queries, (int64[::1],),
                                                cluster_dims=(1, 2, 4))
    plain = _ptx(_queries, (int64[::1],))  # a grid of 1x1x1 clusters, as in CUDA
    assert ".reqnctapercluster" not in plain and ".explicitcluster" not in plain


def test_cluster_barrier_orders_mbarrier_init_and_mapa_reaches_the_peer(ptxas):
    ptx = _ptx(_dsmem, (int32[::1],), cluster_dims=2)
    sync = ptx.index("fence.mbarrier_init.release.cluster")
    assert ptx.index("barrier.cluster.arrive") > sync
    assert ptx.index("barrier.cluster.wait") > ptx.index("barrier.cluster.arrive")
    assert "mapa.u64" in ptx and "atom.add.u32" in ptx  # a generic atomic on the peer's address
    ptxas(ptx, "sm_90")


def test_remote_arrive_is_a_cluster_scoped_arrive_on_the_mapped_barrier(ptxas):
    ptx = _ptx(_remote_arrive, (int32[::1],), cluster_dims=2)
    assert ptx.count("mapa.shared::cluster.u64") == 2
    assert ptx.count("mbarrier.arrive.shared::cluster.b64 _,") == 2
    ptxas(ptx, "sm_90")


def test_multicast_load_sets_the_mask_operand(ptxas):
    ptx = _ptx(_multicast, (float32[::1], TILE), cluster_dims=2)
    line = next(x for x in ptx.splitlines() if "cp.async.bulk.tensor" in x)
    assert ".multicast::cluster" in line
    ptxas(ptx, "sm_90a")
    assert "multicast" not in _ptx(_plain_load, (float32[::1], TILE))


def _plain_load(out, desc):
    tile = cuda.shared.array((8, 32), float32, alignment=128)
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
        cuda.mbarrier.arrive_expect_tx(bars, 0, 8 * 32 * 4)
        cuda.tma.load(tile, desc, (0, 0), bars, 0)
        cuda.mbarrier.wait(bars, 0, 0)
    cuda.syncthreads()
    out[0] = tile[0, 0]


def _error(fn, argtypes, cc=(8, 0), **options) -> CompileError:
    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(fn, argtypes, cc=cc, **options)
    return info.value


@pytest.mark.parametrize(("fn", "argtypes", "line", "what"), [
    (_queries, (int64[::1],), "x, y, z = cluster.block_index()", "a cluster query"),
    (_dsmem, (int32[::1],), "cluster.sync()", "cluster.sync"),
    (_remote_arrive, (int32[::1],), "cluster.sync()", "cluster.sync"),
])
def test_cluster_operations_below_sm_90_are_errors_at_their_line(fn, argtypes, line, what):
    err = _error(fn, argtypes)
    text = str(err)
    assert what in text and "sm_90" in text and "sm_80" in text
    assert line in text and "^" in text  # the source line with its caret


def test_map_and_remote_arrive_below_sm_90_name_themselves():
    def mapped(out):
        hist = cuda.shared.array(8, int32)
        peer = cuda.cg.this_cluster().map_shared_rank(hist, 1)
        out[0] = peer[0]

    def arrive(out):
        bars = cuda.shared.array(1, uint64)
        cuda.mbarrier.arrive(bars, 0, block_rank=1)
        out[0] = 1

    assert "cluster.map_shared_rank needs sm_90" in str(_error(mapped, (int32[::1],)))
    text = str(_error(arrive, (int32[::1],)))
    assert "cuda.mbarrier.arrive with block_rank= needs sm_90" in text
    assert "cuda.mbarrier.arrive(bars, 0, block_rank=1)" in text


def test_cluster_dims_below_sm_90_is_an_error_at_the_function():
    def kernel(out):
        out[0] = 1

    text = str(_error(kernel, (int32[::1],), cluster_dims=2))
    assert "cluster_dims=(2, 1, 1)" in text and "sm_90" in text and "def kernel(out):" in text


def test_a_constant_multicast_mask_past_the_cluster_is_an_error_at_the_load():
    def kernel(out, desc):
        tile = cuda.shared.array((8, 32), float32, alignment=128)
        bars = cuda.shared.array(1, uint64)
        cuda.tma.load(tile, desc, (0, 0), bars, 0, multicast=0b101)
        out[0] = tile[0, 0]

    text = str(_error(kernel, (float32[::1], TILE), cc=(9, 0), cluster_dims=2))
    assert "multicast=0b101 names blocks past the cluster" in text
    assert "2 blocks (cluster_dims=(2, 1, 1))" in text and "multicast=0b101)" in text
    assert "^" in text
    # without cluster_dims every block is a cluster of one: only bit 0 names a block
    text = str(_error(kernel, (float32[::1], TILE), cc=(9, 0)))
    assert "clusters have 1 block" in text
    assert "multicast" in _ptx(kernel, (float32[::1], TILE), cluster_dims=(2, 2, 1))


LIMITS = {"max_threads_per_block": 1024, "max_block_dim": (1024, 1024, 64),
          "max_grid_dim": (2**31 - 1, 65535, 65535), "max_shared_memory_per_block": 232448}


@pytest.mark.parametrize("grid", [3, 4, (3, 1), (4, 3), (2, 2, 3)])  # 4: an int grid, 2x2 clusters
def test_a_grid_that_is_not_whole_clusters_is_a_launch_error(grid):
    limits = {**LIMITS, "cluster_dims": (2, 2, 1) if grid != (2, 2, 3) else (1, 1, 2)}
    with pytest.raises(LaunchError, match="not a whole number of clusters") as info:
        validate_config(grid, 128, limits, 0, "kern")
    assert "cluster_dims" in str(info.value) and "kern" in str(info.value)


def test_whole_clusters_launch_and_kernels_without_clusters_are_unchecked():
    assert validate_config(4, 128, {**LIMITS, "cluster_dims": (2, 1, 1)}, 0, "k") == \
        ((4, 1, 1), (128, 1, 1))
    assert validate_config((4, 6), 128, {**LIMITS, "cluster_dims": (2, 3, 1)}, 0, "k")[0] == \
        (4, 6, 1)
    assert validate_config(3, 128, LIMITS, 0, "k")[0] == (3, 1, 1)


def test_the_artifact_keeps_its_cluster_dims_through_the_disk_cache_format():
    art = KernelArtifact(name="k", symbol="k", target="cuda", arch="sm_90", signature="void()",
                         param_slots=(), binary=b"", cluster_dims=(2, 1, 1))
    again = KernelArtifact.from_json_dict(json.loads(json.dumps(art.to_json_dict())), b"")
    assert again.cluster_dims == (2, 1, 1)
    old = art.to_json_dict()
    del old["cluster_dims"]  # an entry written before clusters: no cluster
    assert KernelArtifact.from_json_dict(old, b"").cluster_dims == ()


def test_a_kernels_cluster_dims_reach_its_ptx_and_artifact():
    from gpunb import backends
    from gpunb.backends.pipeline import compile as run_compile
    from gpunb.foundation.events import Stage

    def body(out):
        out[0] = cuda.cg.this_cluster().num_blocks()

    for dims in (2, (2, 2)):  # as a launch compiles it: the dispatcher's options
        kernel = cuda.jit(cluster_dims=dims)(body)
        art = run_compile(kernel.py_func, (int32[::1],), dict(kernel.options),
                          backends.get("cuda"), stop_after=Stage.PTX, arch=(9, 0)).artifact
        shape = (2, 1, 1) if dims == 2 else (2, 2, 1)
        assert art.cluster_dims == shape
        assert f".reqnctapercluster {shape[0]}, {shape[1]}, {shape[2]}" in art.ptx


def test_max_active_clusters_on_the_cpu_target_is_its_co_resident_blocks_over_the_cluster():
    import gpunb

    gpunb.set_target("cpu")
    try:
        @cuda.jit(cluster_dims=4)
        def four(out):
            out[cuda.blockIdx.x] = cuda.cg.this_cluster().block_rank()

        @cuda.jit
        def plain(out):
            out[0] = 1

        out = np.zeros(8, np.int32)
        four[8, 32](out)
        plain[1, 32](out)
        blocks = plain.max_cooperative_grid_blocks(32)
        assert four.max_active_clusters(32) == blocks // 4
        assert plain.max_active_clusters(32) == blocks
        assert plain.max_active_clusters(32, cluster_dims=(2, 2)) == blocks // 4
        with pytest.raises(LaunchError, match=r"compiled with cluster_dims=\(4, 1, 1\)"):
            four.max_active_clusters(32, cluster_dims=2)
    finally:
        gpunb.set_target(None)


def test_a_constant_block_rank_outside_the_cluster_is_a_compile_error():
    """As constant multicast masks are: a rank known at compile time past cluster_dims."""
    def remote(out):
        bars = cuda.shared.array(1, uint64)
        cuda.mbarrier.arrive(bars, 0, block_rank=3)

    def mapped(out):
        s = cuda.shared.array(4, int32)
        out[0] = cuda.cg.this_cluster().map_shared_rank(s, -1)[0]

    for fn, what in ((remote, r"cuda.mbarrier.arrive: block rank 3"),
                     (mapped, r"cluster.map_shared_rank: block rank -1")):
        with pytest.raises(CompileError, match=what + r" is not in this kernel's clusters of 2 "
                                                      r"blocks") as info:
            cuda.compile_ptx(fn, (int32[::1],), cc=(9, 0), cluster_dims=(2, 1, 1))
        assert "^" in str(info.value)
    ptx, _ = cuda.compile_ptx(remote, (int32[::1],), cc=(9, 0), cluster_dims=(4, 1, 1))
    assert "mapa" in ptx


def test_map_shared_rank_of_local_or_global_memory_is_a_compile_error_on_cuda():
    """mapa of a generic address outside shared memory is undefined on the GPU: refused where
    the compiler can see the array's memory (a device function's parameter it cannot)."""
    def local(out):
        mine = cuda.local.array(4, int32)
        out[0] = cuda.cg.this_cluster().map_shared_rank(mine, 1)[0]

    def argument(out):
        out[0] = cuda.cg.this_cluster().map_shared_rank(out[2:], 1)[0]

    for fn, where in ((local, "local memory"), (argument, "global memory")):
        with pytest.raises(CompileError, match="this array is in the thread's " + where
                           if fn is local else "this array is in " + where) as info:
            cuda.compile_ptx(fn, (int32[::1],), cc=(9, 0), cluster_dims=(2, 1, 1))
        assert "^" in str(info.value)
