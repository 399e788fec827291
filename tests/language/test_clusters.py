"""Thread-block clusters (cluster_dims=, cuda.cg.this_cluster()): ranks and indices for several
cluster shapes, the cluster barrier ordering writes across blocks (sync and the split form),
distributed shared memory (a histogram whose bins live in the cluster's blocks), remote
mbarrier arrivals, TMA multicast, a 2-block multicast GEMM shaped like the Hopper example -
against numpy; misuse reported at the line (ranks and masks outside the cluster, a barrier some
threads never reach, a wait without an arrive, two arrives in one phase), never a hang."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import gpunb
from gpunb import AsyncCopyError, CompileError, LaunchError, cuda, float16, float32, int32, uint64

pytestmark = pytest.mark.slow  # each test compiles coroutine kernels for the CPU target


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _on(target, array):
    return cuda.to_device(array) if target == "cuda" else array


def _back(target, array):
    return array.copy_to_host() if target == "cuda" else array


# ---- ranks and indices -------------------------------------------------------------------------


@functools.cache
def ids_kernel(dims):
    def ids(out):
        c = cuda.cg.this_cluster()
        if cuda.threadIdx.x == 1:
            i = cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y +
                                                    cuda.gridDim.y * cuda.blockIdx.z)
            x, y, z = c.block_index()
            dx, dy, dz = c.dim_blocks()
            out[i, 0] = c.block_rank()
            out[i, 1] = c.num_blocks()
            out[i, 2] = x
            out[i, 3] = y
            out[i, 4] = z
            out[i, 5] = dx
            out[i, 6] = dy
            out[i, 7] = dz
            out[i, 8] = c.thread_rank()
            out[i, 9] = c.num_threads()

    return cuda.jit(ids) if dims is None else cuda.jit(cluster_dims=dims)(ids)


@pytest.mark.parametrize("dims, grid", [
    (None, (3, 2, 1)), ((2, 1, 1), (4, 1, 1)), ((2, 2, 1), (4, 2, 1)), ((1, 2, 2), (2, 4, 2)),
    ((8, 1, 1), (8, 2, 1)), ((3, 1, 1), (6, 1, 1)), ((2, 1, 2), (4, 3, 2))])
def test_ranks_and_indices_in_every_cluster_shape(target, dims, grid):
    n = grid[0] * grid[1] * grid[2]
    out = np.full((n, 10), -1, np.int32)
    d_out = _on(target, out)
    ids_kernel(dims)[grid, 32](d_out)
    out = _back(target, d_out)
    cx, cy, cz = dims or (1, 1, 1)
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                i = bx + grid[0] * (by + grid[1] * bz)
                x, y, z = bx % cx, by % cy, bz % cz
                rank = x + y * cx + z * cx * cy
                assert list(out[i]) == [rank, cx * cy * cz, x, y, z, cx, cy, cz,
                                        rank * 32 + 1, cx * cy * cz * 32], (bx, by, bz)


# ---- the cluster barrier -----------------------------------------------------------------------


@cuda.jit(cluster_dims=(4, 1, 1))
def neighbours(out, scratch, rounds):
    """Each round every block writes its values, the cluster syncs, each block reads the next
    block's: a missing or early barrier reads another round's values."""
    c = cuda.cg.this_cluster()
    t = cuda.threadIdx.x
    blk = cuda.blockIdx.x
    n = cuda.blockDim.x
    nxt = blk - c.block_rank() + (c.block_rank() + 1) % c.num_blocks()
    for r in range(rounds):
        scratch[blk * n + t] = blk * 1000 + t + r * 100000
        c.sync()
        out[r, blk * n + t] = scratch[nxt * n + (n - 1 - t)]
        c.sync()


def test_cluster_sync_orders_writes_across_blocks(target):
    blocks, n, rounds = 8, 64, 3
    out = np.zeros((rounds, blocks * n), np.int64)
    d_out = _on(target, out)
    neighbours[blocks, n](d_out, _on(target, np.zeros(blocks * n, np.int64)), rounds)
    out = _back(target, d_out)
    for r in range(rounds):
        for blk in range(blocks):
            nxt = blk - blk % 4 + (blk % 4 + 1) % 4
            expected = nxt * 1000 + (n - 1 - np.arange(n)) + r * 100000
            np.testing.assert_array_equal(out[r, blk * n:(blk + 1) * n], expected)


@cuda.jit(cluster_dims=(2, 1, 1))
def split_barrier(out, work):
    c = cuda.cg.this_cluster()
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = c.block_rank() * 10 + 7
    c.barrier_arrive()
    work[cuda.blockIdx.x * cuda.blockDim.x + t] = t * 2  # independent work meanwhile
    c.barrier_wait()
    peer = c.map_shared_rank(s, 1 - c.block_rank())
    if t == 0:
        out[cuda.blockIdx.x] = peer[0]
    c.sync()  # no block exits while the other still reads its shared memory


def test_split_arrive_and_wait(target):
    out, work = np.zeros(4, np.int32), np.zeros(4 * 32, np.int32)
    d_out, d_work = _on(target, out), _on(target, work)
    split_barrier[4, 32](d_out, d_work)
    np.testing.assert_array_equal(_back(target, d_out), [17, 7, 17, 7])
    np.testing.assert_array_equal(_back(target, d_work), np.tile(np.arange(32) * 2, 4))


# ---- distributed shared memory -----------------------------------------------------------------

BINS, CLUSTER = 64, 4
PER_BLOCK = BINS // CLUSTER


@cuda.jit(cluster_dims=(CLUSTER, 1, 1))
def histogram(out, data):
    """The histogram's bins split over the cluster: bin b lives in the shared memory of block
    b // PER_BLOCK; every thread adds to the block that owns its value's bin."""
    c = cuda.cg.this_cluster()
    bins = cuda.shared.array(PER_BLOCK, int32)
    t = cuda.threadIdx.x
    if t < PER_BLOCK:
        bins[t] = 0
    c.sync()  # every block's bins are zero before any block adds to them
    start = cuda.blockIdx.x * cuda.blockDim.x + t
    for i in range(start, data.size, cuda.gridDim.x * cuda.blockDim.x):
        v = data[i]
        owner = c.map_shared_rank(bins, v // PER_BLOCK)
        cuda.atomic.add(owner, v % PER_BLOCK, 1)
    c.sync()  # every addition is in before the blocks read (and exit)
    if t < PER_BLOCK:
        cuda.atomic.add(out, c.block_rank() * PER_BLOCK + t, bins[t])


@pytest.mark.parametrize("blocks, threads", [(4, 32), (64, 128)])  # 64 x 128: host threads
def test_distributed_shared_memory_histogram(target, blocks, threads):
    data = np.random.default_rng(3).integers(0, BINS, 20000).astype(np.int32)
    out = np.zeros(BINS, np.int32)
    d_out = _on(target, out)
    histogram[blocks, threads](d_out, _on(target, data))
    np.testing.assert_array_equal(_back(target, d_out), np.bincount(data, minlength=BINS))


@cuda.jit(cluster_dims=(2, 1, 1))
def remote_arrive(out, x):
    """Block 1 fills block 0's buffer and arrives on block 0's mbarrier; block 0's threads wait
    on it (they wait first: the CPU target runs block 0's threads first)."""
    c = cuda.cg.this_cluster()
    bars = cuda.shared.array(1, uint64)
    data = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 64)
    c.sync()  # the barriers are initialised before the other block arrives on them
    if c.block_rank() == 1:
        peer = c.map_shared_rank(data, 0)
        peer[t] = x[t] * 2
        cuda.mbarrier.arrive(bars, 0, block_rank=0)
    else:
        cuda.mbarrier.wait(bars, 0, 0)
        out[t] = data[63 - t]
    c.sync()


def test_a_remote_arrive_releases_the_peers_wait(target):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    d_out = _on(target, out)
    remote_arrive[2, 64](d_out, _on(target, x))
    np.testing.assert_array_equal(_back(target, d_out), x[::-1] * 2)


# ---- TMA multicast -----------------------------------------------------------------------------


@cuda.jit(cluster_dims=(2, 1, 1))
def multicast_tile(out, desc, mask):
    c = cuda.cg.this_cluster()
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    rank = c.block_rank()
    mine = (mask >> rank) & 1
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
        if mine:
            cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 64 * 2)
    c.sync()  # both barriers expect the bytes before the copy can land
    if rank == 0 and t == 0:
        cuda.tma.load(s, desc, (8, 16), bars, 0, multicast=mask)
    if mine:
        cuda.mbarrier.wait(bars, 0, 0)
        for i in range(t, 16 * 64, cuda.blockDim.x):
            out[rank, i] = s[i // 64, i % 64]
    c.sync()  # the copy landed in every block before any exits


@pytest.mark.parametrize("mask", [0b11, 0b10])
def test_a_multicast_load_lands_in_each_block_of_the_mask(target, mask):
    from tests.language.test_tma import expected_tile

    a = (np.arange(40 * 96) % 2039).astype(np.float16).reshape(40, 96)
    out = np.zeros((2, 16 * 64), np.float16)
    d_out = _on(target, out)
    multicast_tile[2, 64](d_out, cuda.tma.descriptor(_on(target, a), (16, 64), 128), mask)
    out = _back(target, d_out)
    tile = expected_tile(a, 8, 16, 16, 64, 128)
    for rank in range(2):
        if mask >> rank & 1:
            np.testing.assert_array_equal(out[rank], tile)
        else:
            assert not out[rank].any()


# ---- a 2-block multicast GEMM, shaped like gpunb/examples/hopper_gemm.py ------------------------

BM, BN, BK, STAGES = 64, 64, 64, 2
A_TILE, B_TILE = BM * BK, BN * BK
STAGE = A_TILE + B_TILE
FULL = STAGES * STAGE * 2 // 8  # the mbarriers, as uint64 indices after the ring
EMPTY = FULL + STAGES
SMEM_BYTES = (EMPTY + STAGES) * 8
HALF_B = B_TILE // 2


@cuda.jit(cluster_dims=(2, 1, 1))
def cluster_gemm(c, da, db_half, K):  # noqa: N803
    """C = A @ B.T. The two blocks of a cluster compute vertically adjacent tiles, so they need
    the same B slices: each loads half of a slice with multicast into both (each block's "full"
    barrier expects its A tile and the whole B slice); a slot is free again when the consumers
    of both blocks are done with it (each arrives on its own and its peer's "empty" barrier)."""
    smem = cuda.shared.array(0, float16, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    cluster = cuda.cg.this_cluster()
    rank = cluster.block_rank()
    tid = cuda.threadIdx.x
    m0 = cuda.blockIdx.x * BM
    n0 = cuda.blockIdx.y * BN
    ktiles = K // BK
    if tid == 0:
        for s in range(STAGES):
            cuda.mbarrier.init(bars, FULL + s, 1)
            cuda.mbarrier.init(bars, EMPTY + s, 2)
    cluster.sync()  # both blocks' barriers exist before any copy or arrival reaches them
    if tid < 128:
        if tid == 0:
            for kt in range(ktiles):
                s = kt % STAGES
                if kt >= STAGES:
                    cuda.mbarrier.wait(bars, EMPTY + s, (kt // STAGES - 1) % 2)
                cuda.mbarrier.arrive_expect_tx(bars, FULL + s, STAGE * 2)
                base = s * STAGE
                cuda.tma.load(smem[base:base + A_TILE], da, (m0, kt * BK), bars, FULL + s)
                half = base + A_TILE + rank * HALF_B
                cuda.tma.load(smem[half:half + HALF_B], db_half,
                              (n0 + rank * (BN // 2), kt * BK), bars, FULL + s, multicast=0b11)
    else:
        acc = cuda.local.array(BN // 2, float32)
        a_desc = cuda.wgmma.descriptor(smem, 128)
        b_desc = cuda.wgmma.descriptor(smem[A_TILE:], 128)
        for kt in range(ktiles):
            s = kt % STAGES
            cuda.mbarrier.wait(bars, FULL + s, (kt // STAGES) % 2)
            stage = s * (STAGE * 2 // 16)
            cuda.wgmma.fence()
            for kk in range(BK // 16):
                cuda.wgmma.mma_async(acc, a_desc + stage + 2 * kk, b_desc + stage + 2 * kk,
                                     (64, BN, 16), float16, scale_d=kt + kk > 0)
            cuda.wgmma.commit_group()
            cuda.wgmma.wait_group(0)
            if tid == 128:
                cuda.mbarrier.arrive(bars, EMPTY + s)
                cuda.mbarrier.arrive(bars, EMPTY + s, block_rank=rank ^ 1)
        cuda.wgmma.store(c[m0:m0 + BM, n0:n0 + BN], acc, BN)
    cluster.sync()  # no block exits while its peer may still multicast or arrive into it


def test_a_two_block_multicast_gemm(target):
    rng = np.random.default_rng(5)
    M, N, K = 128, 128, 192  # noqa: N806 - two clusters of two blocks, three K-slices
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    d_a, d_b, d_c = _on(target, a), _on(target, b), _on(target, c)
    da = cuda.tma.descriptor(d_a, (BM, BK), 128)
    db_half = cuda.tma.descriptor(d_b, (BN // 2, BK), 128)
    cluster_gemm[(M // BM, N // BN), 256, 0, SMEM_BYTES](d_c, da, db_half, K)
    np.testing.assert_array_equal(_back(target, d_c),
                                  a.astype(np.float64) @ b.astype(np.float64).T)


# ---- misuse ------------------------------------------------------------------------------------


@cuda.jit(cluster_dims=(2, 1, 1))
def map_beyond(out, delta):
    c = cuda.cg.this_cluster()
    s = cuda.shared.array(4, int32)
    peer = c.map_shared_rank(s, c.block_rank() + delta)
    out[0] = peer[0]


@cuda.jit(cluster_dims=(2, 1, 1))
def arrive_beyond(rank):
    c = cuda.cg.this_cluster()
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
    c.sync()
    cuda.mbarrier.arrive(bars, 0, block_rank=rank)
    c.sync()


def test_ranks_outside_the_cluster_are_reported_at_the_line(cpu):
    with pytest.raises(AsyncCopyError, match=r"block rank 2 is outside the cluster, whose "
                                             r"blocks have ranks 0 to 1") as info:
        map_beyond[2, 32](np.zeros(1, np.int32), 2)
    assert "cluster.map_shared_rank" in str(info.value) and "line" in str(info.value)
    assert info.value.loc.line == map_beyond.py_func.__code__.co_firstlineno + 4
    with pytest.raises(AsyncCopyError, match=r"cuda.mbarrier.arrive: block rank -1 is outside"):
        arrive_beyond[2, 32](-1)
    map_beyond[2, 32](np.zeros(1, np.int32), 0)  # in range: runs


def test_a_multicast_mask_beyond_the_cluster_is_reported(cpu):
    a = np.zeros((40, 96), np.float16)
    desc = cuda.tma.descriptor(a, (16, 64), 128)
    with pytest.raises(AsyncCopyError, match=r"multicast mask 0x0005 names blocks beyond the "
                                             r"cluster's 2"):
        multicast_tile[2, 64](np.zeros((2, 1024), np.float16), desc, 0b101)


@cuda.jit(cluster_dims=(2, 1, 1))
def half_the_block_syncs_the_cluster(out):
    c = cuda.cg.this_cluster()
    if cuda.threadIdx.x < 16:
        c.sync()
    else:
        cuda.syncthreads()
    out[cuda.threadIdx.x] = 1


@cuda.jit(cluster_dims=(2, 1, 1))
def wait_without_arrive(out):
    c = cuda.cg.this_cluster()
    c.barrier_wait()
    out[0] = 1


@cuda.jit(cluster_dims=(2, 1, 1))
def arrive_twice(out):
    c = cuda.cg.this_cluster()
    c.barrier_arrive()
    c.barrier_arrive()
    c.barrier_wait()
    out[0] = 1


def test_cluster_barrier_misuse_is_reported_never_a_hang(cpu):
    with pytest.raises(LaunchError, match=r"cluster.sync\(\) at line \d+ is not reached by all "
                                          r"threads of the cluster \(32 of 64 live threads "
                                          r"arrived; a thread that has not arrived waits at "
                                          r"cuda.syncthreads"):
        half_the_block_syncs_the_cluster[2, 32](np.zeros(32, np.int32))
    with pytest.raises(AsyncCopyError, match=r"cluster.barrier_wait\(\): waits at the cluster "
                                             r"barrier without arriving first"):
        wait_without_arrive[2, 32](np.zeros(1, np.int32))
    with pytest.raises(AsyncCopyError, match=r"cluster.barrier_arrive\(\): arrives at the "
                                             r"cluster barrier a second time"):
        arrive_twice[2, 32](np.zeros(1, np.int32))


@cuda.jit(cluster_dims=(2, 1, 1))
def exits_early(out):
    """Threads that exit count as arrived (PTX: the barrier waits for non-exited threads); a
    whole warp exits, so that an .aligned barrier on a GPU sees whole warps."""
    c = cuda.cg.this_cluster()
    if c.block_rank() == 1 and cuda.threadIdx.x >= 32:
        return
    c.sync()
    out[cuda.blockIdx.x * 64 + cuda.threadIdx.x] = 1


def test_exited_threads_count_as_arrived(target):
    out = np.zeros(128, np.int32)
    d_out = _on(target, out)
    exits_early[2, 64](d_out)
    np.testing.assert_array_equal(_back(target, d_out), [1] * 64 + [1] * 32 + [0] * 32)


def test_a_grid_that_is_not_whole_clusters_is_a_launch_error(cpu):
    with pytest.raises(LaunchError, match=r"not a whole number of clusters of \(2, 1, 1\)"):
        ids_kernel((2, 1, 1))[3, 32](np.zeros((3, 10), np.int32))


def test_grid_sync_with_clusters_is_refused_at_compile_time(cpu):
    # (racecheck and access maps of cluster kernels: test_cluster_racecheck.py)
    @cuda.jit(cluster_dims=(2, 1, 1))
    def both(out):
        cuda.cg.this_cluster().sync()
        cuda.cg.this_grid().sync()
        out[0] = 1

    with pytest.raises(CompileError, match=r"uses both grid.sync\(\) and a thread-block "
                                           r"cluster"):
        both[2, 32](np.zeros(1, np.int32))


@cuda.jit(cluster_dims=(2, 1, 1))
def use_after_the_peer_exits(out, how):
    """Block 0 exits without a final cluster.sync(); block 1 then reaches into it."""
    c = cuda.cg.this_cluster()
    bars = cuda.shared.array(1, uint64)
    s = cuda.shared.array(32, int32)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 32)
    c.sync()
    if c.block_rank() == 0:
        return
    c.sync()  # completes once block 0 has exited (exited threads count as arrived)
    if how == 0:
        cuda.mbarrier.arrive(bars, 0, block_rank=0)
    else:
        peer = c.map_shared_rank(s, 0)
        out[cuda.threadIdx.x] = peer[cuda.threadIdx.x]


@pytest.mark.parametrize("how, what", [(0, "cuda.mbarrier.arrive"),
                                       (1, "cluster.map_shared_rank")])
def test_reaching_into_a_block_that_has_exited_is_reported(cpu, how, what):
    with pytest.raises(AsyncCopyError, match=rf"{what}: block 0 of the cluster has exited"):
        use_after_the_peer_exits[2, 32](np.zeros(32, np.int32), how)


def test_the_debugger_stops_in_a_cluster_kernel(cpu):
    import inspect

    lines, first = inspect.getsourcelines(split_barrier.py_func)
    line = first + next(k for k, text in enumerate(lines) if "out[cuda.blockIdx.x] =" in text)
    out, work = np.zeros(4, np.int32), np.zeros(4 * 32, np.int32)
    session = gpunb.debug(split_barrier[4, 32], out, work, breaks=[line], thread=(0,),
                          block=(3,))
    assert (session.stop.reason, session.stop.block) == ("breakpoint", (3, 0, 0))
    session.run_to_end()
    np.testing.assert_array_equal(out, [17, 7, 17, 7])


def test_the_readme_snippet_runs_as_pasted(capsys):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### Thread-block clusters on the CPU target\n", 1)[1]
    snippet = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)[0]
    try:
        exec(compile(snippet, "README.md (clusters on the CPU target)", "exec"),  # noqa: S102
             {"__name__": "__main__"})
    finally:
        gpunb.set_target(None)
    assert capsys.readouterr().out.strip() == "[131  31 331 231]"


def test_the_debugger_refuses_clusters_along_y(cpu):
    @cuda.jit(cluster_dims=(1, 2, 1), debugger=True)
    def two_rows(out):
        cuda.cg.this_cluster().sync()
        out[0] = 1

    with pytest.raises(CompileError, match=r"the debugger supports clusters along x only"):
        two_rows[(1, 2), 32](np.zeros(1, np.int32))


@cuda.jit(cluster_dims=(2, 1, 1))
def plain_with_cluster_dims(out):
    i = cuda.grid(1)
    out[i] = i * 3


def test_cluster_dims_without_cluster_calls_run_as_before(cpu):
    out = np.zeros(4 * 32, np.int64)
    plain_with_cluster_dims[4, 32](out)
    np.testing.assert_array_equal(out, np.arange(4 * 32) * 3)
    assert plain_with_cluster_dims.cpu_mode() == "workgroup"
    with pytest.raises(LaunchError, match=r"not a whole number of clusters"):
        plain_with_cluster_dims[3, 32](out)


@cuda.jit(cluster_dims=(2, 1, 1))
def map_a_global_array(out, g):
    peer = cuda.cg.this_cluster().map_shared_rank(g, 1)
    out[0] = peer[0]


@cuda.jit(cluster_dims=(2, 1, 1))
def map_a_local_array(out):
    mine = cuda.local.array(4, int32)
    mine[0] = 1
    out[0] = cuda.cg.this_cluster().map_shared_rank(mine[1:], 1)[0]


@cuda.jit(device=True)
def _first_of_peer(array):  # the array's memory is not known inside a device function
    return cuda.cg.this_cluster().map_shared_rank(array, 1)[0]


@cuda.jit(cluster_dims=(2, 1, 1))
def map_a_global_array_in_a_device_function(out, g):
    out[0] = _first_of_peer(g)


@pytest.mark.parametrize("kernel, args, where", [
    (map_a_global_array, (np.zeros(4, np.int32),), r"global memory \(a kernel argument\)"),
    (map_a_local_array, (), r"the thread's local memory \(cuda.local.array\)")])
def test_mapping_an_array_known_outside_shared_memory_is_a_compile_error(cpu, kernel, args,
                                                                         where):
    with pytest.raises(CompileError, match=r"cluster.map_shared_rank maps shared memory, and "
                                           r"this array is in " + where) as info:
        kernel[2, 32](np.zeros(1, np.int32), *args)
    assert "^" in str(info.value) and "cuda.shared.array" in str(info.value)


def test_mapping_an_array_outside_shared_memory_is_reported(cpu):
    """Where the compiler cannot tell (a device function's parameter), the CPU target checks
    the address when the call runs."""
    with pytest.raises(AsyncCopyError, match=r"cluster.map_shared_rank: the array is not in the "
                                             r"shared memory of the cluster's blocks"):
        map_a_global_array_in_a_device_function[2, 32](np.zeros(1, np.int32),
                                                       np.zeros(4, np.int32))


@cuda.jit(cluster_dims=(2, 1, 1))
def multicast_after_the_peer_exits(desc):
    c = cuda.cg.this_cluster()
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
    c.sync()
    if c.block_rank() == 1:
        return
    c.sync()  # block 1 has exited
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 64 * 2)
        cuda.tma.load(s, desc, (0, 0), bars, 0, multicast=0b11)
    cuda.mbarrier.wait(bars, 0, 0)


def test_a_multicast_into_a_block_that_has_exited_is_reported(cpu):
    desc = cuda.tma.descriptor(np.zeros((40, 96), np.float16), (16, 64), 128)
    with pytest.raises(AsyncCopyError, match=r"cuda.tma.load: block 1 of the cluster has exited"):
        multicast_after_the_peer_exits[2, 32](desc)
