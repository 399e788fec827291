"""racecheck on thread-block cluster kernels (CPU target): the cluster barrier (sync and the
split arrive/wait), remote mbarrier arrivals and TMA multicast order accesses across the
cluster's blocks, so correct kernels - test_clusters.py's, a 2-block multicast GEMM included -
run clean; the races those orderings miss are reported at the line: a distributed shared memory
write read by another block with no cluster barrier between, a write after the arrive that was
to publish it, a multicast refill of a stage a peer's consumer may still read, a read of a
multicast tile before its mbarrier phase completed. Access maps record cluster kernels too."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import AsyncCopyError, CompileError, RaceError, cuda, float16, float32, int32, uint64
from gpunb.foundation.errors import CompileWarning
from tests.language import test_clusters as tc

pytestmark = pytest.mark.slow  # each test compiles recording coroutine kernels


@pytest.fixture(autouse=True)
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def line_of(kernel, text: str) -> int:
    """The file line of the first line of a kernel's source holding `text`."""
    import inspect

    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, line in enumerate(lines) if text in line)


def checked(kernel, dims=(2, 1, 1)):
    """The same kernel compiled with racecheck=True."""
    return cuda.jit(cluster_dims=dims, racecheck=True)(kernel.py_func)


# ---- correct kernels run clean (and compute what they compute without racecheck) ---------------


def test_the_cluster_barrier_orders_distributed_shared_memory():
    out, work = np.zeros(4, np.int32), np.zeros(4 * 32, np.int32)
    checked(tc.split_barrier)[4, 32](out, work)
    np.testing.assert_array_equal(out, [17, 7, 17, 7])
    blocks, n, rounds = 8, 64, 2
    out = np.zeros((rounds, blocks * n), np.int64)
    checked(tc.neighbours, (4, 1, 1))[blocks, n](out, np.zeros(blocks * n, np.int64), rounds)
    assert out[1, 0] == 1 * 1000 + n - 1 + 100000


def test_atomics_into_other_blocks_between_cluster_barriers_are_clean():
    data = np.random.default_rng(3).integers(0, tc.BINS, 3000).astype(np.int32)
    out = np.zeros(tc.BINS, np.int32)
    checked(tc.histogram, (tc.CLUSTER, 1, 1))[8, 32](out, data)
    np.testing.assert_array_equal(out, np.bincount(data, minlength=tc.BINS))


def test_a_remote_arrive_releases_the_writes_before_it():
    out = np.zeros(64, np.float32)
    checked(tc.remote_arrive)[2, 64](out, np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32)[::-1] * 2)


@pytest.mark.parametrize("mask", [0b11, 0b10])
def test_a_multicast_completes_on_each_destinations_mbarrier(mask):
    a = (np.arange(40 * 96) % 2039).astype(np.float16).reshape(40, 96)
    out = np.zeros((2, 16 * 64), np.float16)
    checked(tc.multicast_tile)[2, 64](out, cuda.tma.descriptor(a, (16, 64), 128), mask)
    assert out[1].any() and out[0].any() == bool(mask & 1)


def gemm_operands():
    rng = np.random.default_rng(5)
    M, N, K = 128, 128, 192  # noqa: N806
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (N, K)).astype(np.float16)
    da = cuda.tma.descriptor(a, (tc.BM, tc.BK), 128)
    db_half = cuda.tma.descriptor(b, (tc.BN // 2, tc.BK), 128)
    return a, b, da, db_half, K


def test_the_two_block_multicast_gemm_is_clean():
    a, b, da, db_half, K = gemm_operands()  # noqa: N806
    c = np.zeros((a.shape[0], b.shape[0]), np.float32)
    checked(tc.cluster_gemm)[(2, 2), 256, 0, tc.SMEM_BYTES](c, da, db_half, K)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64).T)


# ---- races across the cluster's blocks are reported --------------------------------------------


@cuda.jit(cluster_dims=(2, 1, 1), racecheck=True)
def handoff(out, synced):
    """Block 0 writes block 1's buffer (distributed shared memory); block 1 reads it - after a
    cluster barrier when `synced`, else with nothing between."""
    c = cuda.cg.this_cluster()
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    c.sync()  # block 1 runs before block 0 reaches into it
    if c.block_rank() == 0:
        peer = c.map_shared_rank(s, 1)
        peer[t] = t * 3
    if synced:
        c.sync()
    if c.block_rank() == 1:
        out[t] = s[t]
    c.sync()  # block 1 stays until block 0 is done with its memory


def test_a_distributed_shared_memory_write_needs_a_cluster_barrier_before_the_read():
    out = np.zeros(32, np.int32)
    handoff[2, 32](out, 1)
    np.testing.assert_array_equal(out, np.arange(32) * 3)
    with pytest.raises(RaceError) as err:
        handoff[2, 32](np.zeros(32, np.int32), 0)
    text = str(err.value)
    read, write = line_of(handoff, "out[t] = s[t]"), line_of(handoff, "peer[t] = t * 3")
    assert f"data race on s[0] (shared memory): a read at line {read} by thread (0, 0, 0) of " \
        f"block (1, 0, 0) and a write at line {write} by thread (0, 0, 0) of block (0, 0, 0); " \
        "they are in different blocks of one cluster" in text
    assert "cluster.sync()" in err.value.hint


@cuda.jit(cluster_dims=(2, 1, 1), racecheck=True)
def late_write(out):
    """The write comes after this thread's cluster barrier arrive: the peer's wait does not
    order it before the peer's read."""
    c = cuda.cg.this_cluster()
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    c.barrier_arrive()
    if t == 0:
        s[0] = c.block_rank() * 10 + 7
    c.barrier_wait()
    peer = c.map_shared_rank(s, 1 - c.block_rank())
    if t == 0:
        out[cuda.blockIdx.x] = peer[0]
    c.sync()


def test_a_write_after_the_split_arrive_is_not_published_by_it():
    with pytest.raises(RaceError, match=r"data race on peer\[0\] \(shared memory of block "
                                        r"\(1, 0, 0\)\): a read at line \d+ by thread "
                                        r"\(0, 0, 0\) of block \(0, 0, 0\)") as err:
        late_write[2, 32](np.zeros(2, np.int32))
    assert "different blocks of one cluster" in str(err.value)


@cuda.jit(cluster_dims=(2, 1, 1), racecheck=True)
def arrive_first(out, x):
    """tc.remote_arrive with block 1's arrive before its writes into block 0."""
    c = cuda.cg.this_cluster()
    bars = cuda.shared.array(1, uint64)
    data = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 64)
    c.sync()
    if c.block_rank() == 1:
        peer = c.map_shared_rank(data, 0)
        cuda.mbarrier.arrive(bars, 0, block_rank=0)
        peer[t] = x[t] * 2
    else:
        cuda.mbarrier.wait(bars, 0, 0)
        out[t] = data[63 - t]
    c.sync()


def test_a_remote_arrive_does_not_release_writes_after_it():
    with pytest.raises(RaceError, match=r"data race on data\[\d+\]"):
        arrive_first[2, 64](np.zeros(64, np.float32), np.arange(64, dtype=np.float32))


@cuda.jit(cluster_dims=(2, 1, 1), racecheck=True)
def multicast_no_wait(out, desc, landed):
    """Block 0 multicasts a tile into both blocks; block 1 reads its copy without waiting on its
    own mbarrier - at once, or (`landed`) after block 0 waited on its mbarrier and the cluster
    synced: block 0's copy is then complete, block 1's is not ordered before the read."""
    c = cuda.cg.this_cluster()
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    rank = c.block_rank()
    if t == 0:
        cuda.mbarrier.init(bars, 0, 1)
        cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 64 * 2)
    c.sync()
    if rank == 0 and t == 0:
        cuda.tma.load(s, desc, (8, 16), bars, 0, multicast=0b11)
    if rank == 0:
        cuda.mbarrier.wait(bars, 0, 0)
    if landed:
        c.sync()
    for i in range(t, 16 * 64, cuda.blockDim.x):
        out[rank, i] = s[i // 64, i % 64]
    if rank == 1:
        cuda.mbarrier.wait(bars, 0, 0)
    c.sync()


def test_reading_a_multicast_tile_before_its_mbarrier_phase_is_reported():
    a = (np.arange(40 * 96) % 2039).astype(np.float16).reshape(40, 96)
    desc = cuda.tma.descriptor(a, (16, 64), 128)
    read, load = (line_of(multicast_no_wait, text) for text in ("= s[i // 64", "cuda.tma.load"))
    with pytest.raises(AsyncCopyError, match=rf"read of s\[0\] at line {read} by thread "
                                             rf"\(0, 0, 0\) of block \(1, 0, 0\) while the "
                                             rf"asynchronous copy issued at line {load} by "
                                             rf"thread \(0, 0, 0\) of block \(0, 0, 0\) was "
                                             rf"still filling it"):
        multicast_no_wait[2, 64](np.zeros((2, 16 * 64), np.float16), desc, 0)
    # landed, but only block 0's mbarrier wait (and the cluster barrier after it) orders it
    with pytest.raises(AsyncCopyError, match=rf"read of s\[0\] at line {read} by thread "
                                             rf"\(0, 0, 0\) of block \(1, 0, 0\) is not ordered "
                                             rf"after the TMA load issued at line {load}"):
        multicast_no_wait[2, 64](np.zeros((2, 16 * 64), np.float16), desc, 1)


def gemm_local_release():
    """tc.cluster_gemm, but a stage's "empty" barrier counts only its own block's consumers (the
    arrive on the peer's taken out): a producer multicasts the next B half into its peer's stage
    while the peer's wgmmas may still read it."""
    return edited(tc.cluster_gemm.py_func, tc, ("block_rank=rank ^ 1",),
                  {"cuda.mbarrier.init(bars, EMPTY + s, 2)":
                   "cuda.mbarrier.init(bars, EMPTY + s, 1)"}, cluster_dims=(2, 1, 1))


def test_a_multicast_refill_of_a_stage_the_peer_may_still_read_is_reported():
    a, b, da, db_half, K = gemm_operands()  # noqa: N806
    c = np.zeros((a.shape[0], b.shape[0]), np.float32)
    kernel = gemm_local_release()
    line = line_of(kernel, "multicast=0b11") - 1  # the call's first line
    with pytest.raises(AsyncCopyError, match=rf"issued at line {line} by thread \(0, 0, 0\) of "
                                             rf"block \(0, 0, 0\) is not ordered after the TMA "
                                             rf"load issued at line {line}") as err:
        kernel[(2, 2), 256, 0, tc.SMEM_BYTES](c, da, db_half, K)
    assert "in the shared memory of block (1, 0, 0)" in str(err.value)
    assert "block_rank=" in err.value.hint


# ---- the environment switch, access maps, the debugger -----------------------------------------


def test_gpunb_racecheck_checks_cluster_kernels(monkeypatch):
    monkeypatch.setenv("GPUNB_RACECHECK", "1")  # every kernel, this cluster kernel included
    kernel = cuda.jit(cluster_dims=(2, 1, 1))(handoff.py_func)
    out = np.zeros(32, np.int32)
    kernel[2, 32](out, 1)
    np.testing.assert_array_equal(out, np.arange(32) * 3)
    with pytest.raises(RaceError, match="different blocks of one cluster"):
        kernel[2, 32](out, 0)


def test_an_access_map_of_a_cluster_kernel_counts_distributed_shared_memory():
    m = gpunb.access_map(tc.split_barrier[2, 32], np.zeros(2, np.int32), np.zeros(64, np.int32))
    # s[0]: written by thread 0 of each block, read by thread 0 of the other through
    # map_shared_rank: those reads are of s (block 0's: the map shows block 0's memory), not
    # of some global address
    assert m["peer/s"].memory == "shared"  # block 0's s: its own write, block 1's read
    assert m["peer/s"].writes.tolist() == [1] and m["peer/s"].reads.tolist() == [1]


def test_racecheck_with_the_debugger_on_a_cluster_kernel_is_refused():
    @cuda.jit(cluster_dims=(2, 1, 1), racecheck=True, debugger=True)
    def both(out):
        cuda.cg.this_cluster().sync()
        out[0] = 1

    with pytest.raises(CompileError, match="cluster and the debugger"):
        both[2, 32](np.zeros(1, np.int32))


def test_gpunb_racecheck_leaves_a_cluster_kernel_under_the_debugger_unchecked(monkeypatch):
    monkeypatch.setenv("GPUNB_RACECHECK", "1")  # every kernel: a warning, then it runs
    import inspect

    lines, first = inspect.getsourcelines(tc.split_barrier.py_func)
    line = first + next(k for k, text in enumerate(lines) if "out[cuda.blockIdx.x] =" in text)
    kernel = cuda.jit(cluster_dims=(2, 1, 1))(tc.split_barrier.py_func)
    out, work = np.zeros(2, np.int32), np.zeros(2 * 32, np.int32)
    with pytest.warns(CompileWarning, match="GPUNB_RACECHECK=1 does not check it"):
        session = gpunb.debug(kernel[2, 32], out, work, breaks=[line], thread=(0,), block=(1,))
    session.run_to_end()
    np.testing.assert_array_equal(out, [17, 7])


def edited(py_func, module, dropped: tuple, replaced: dict | None = None, **options):
    """`py_func` (a kernel of `module`) with the source lines holding any of `dropped` taken
    out and the texts of `replaced` swapped, compiled with racecheck and `options` (its source
    registered, as a cell's is, for error carets)."""
    import inspect
    import linecache

    lines = [line for line in inspect.getsourcelines(py_func)[0]
             if not line.startswith("@") and not any(d in line for d in dropped)]
    for old, new in (replaced or {}).items():
        lines = [line.replace(old, new) for line in lines]
    name = f"<{py_func.__name__} without {dropped}>"
    linecache.cache[name] = (sum(map(len, lines)), None, lines, name)
    namespace = dict(vars(module))
    exec(compile("".join(lines), name, "exec"), namespace)  # noqa: S102 - our own test code
    return cuda.jit(racecheck=True, **options)(namespace[py_func.__name__])


def example_without(*dropped: str):
    """gpunb/examples/hopper_gemm.py's kernel with the source lines holding `dropped` taken
    out, compiled with racecheck."""
    from gpunb.examples import hopper_gemm

    return edited(hopper_gemm.gemm.py_func, hopper_gemm, dropped,
                  launch_bounds=(hopper_gemm.THREADS, 1),
                  cluster_dims=(hopper_gemm.CLUSTER, 1, 1)), hopper_gemm


def test_the_hopper_example_without_its_peer_handshake_is_reported():
    """The producers' handshake (arrive on the peer's PEER barrier, wait on one's own) is what
    keeps a multicast from refilling a stage the peer's consumers still read."""
    kernel, ex = example_without("block_rank=rank ^ 1", "cuda.mbarrier.wait(bars, PEER + s")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((136, 192)).astype(np.float16)
    b = rng.standard_normal((264, 192)).astype(np.float16)
    c = np.zeros((136, 264), np.float16)
    with pytest.raises(AsyncCopyError, match=r"is not ordered after the TMA load issued at line "
                                             r"\d+ by thread \(0, 0, 0\), which writes it: the "
                                             r"two copies may land in either order \(in the "
                                             r"shared memory of block \(1, 0, 0\)"):
        kernel[ex.CLUSTER, ex.THREADS, 0, ex.SMEM_BYTES](c, *ex.descriptors(a, b, c), 136, 264,
                                                         192)


def test_the_readme_snippet_runs_as_pasted(capsys):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### Thread-block clusters on the CPU target\n", 1)[1]
    snippets = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    snippet = next(s for s in snippets if "racecheck=True" in s)
    exec(compile(snippet, "README.md (racecheck of clusters)", "exec"),  # noqa: S102
         {"__name__": "__main__"})
    assert capsys.readouterr().out.strip() == "s (0,)"


# ---- cluster shapes: the recorded shared addresses name the right block ------------------------


@cuda.jit(cluster_dims=(2, 2, 1), racecheck=True)
def ring(out, synced):
    """Each block of a 2 x 2 cluster writes its rank into the next rank's buffer; every block
    then reads its own buffer (after a cluster barrier when `synced`)."""
    c = cuda.cg.this_cluster()
    s = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    rank = c.block_rank()
    c.sync()
    nxt = c.map_shared_rank(s, (rank + 1) % c.num_blocks())
    nxt[t] = rank * 10 + t
    if synced:
        c.sync()
    out[cuda.blockIdx.y, cuda.blockIdx.x, t] = s[t]
    c.sync()


def test_distributed_shared_memory_in_a_two_dimensional_cluster():
    out = np.zeros((4, 4, 8), np.int32)
    ring[(4, 4), 8](out, 1)
    rank = np.add.outer(np.arange(4) % 2 * 2, np.arange(4) % 2)  # x + 2 y, per (y, x)
    previous = (rank + 3) % 4
    np.testing.assert_array_equal(out, previous[..., None] * 10 + np.arange(8))
    with pytest.raises(RaceError, match=r"data race on s\[0\] \(shared memory\): a read at line "
                                        r"\d+ by thread \(0, 0, 0\) of block \(1, 0, 0\) and a "
                                        r"write at line \d+ by thread \(0, 0, 0\) of block "
                                        r"\(0, 0, 0\)"):
        ring[(4, 4), 8](out, 0)


@cuda.jit(cluster_dims=(2, 1, 1), racecheck=True)
def no_cluster_calls(out, synced):
    """cluster_dims, but no cluster feature: the blocks run alone, as before."""
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    s[t] = cuda.blockIdx.x * 100 + t
    if synced:
        cuda.syncthreads()
    out[cuda.blockIdx.x, t] = s[31 - t]


def test_a_kernel_with_cluster_dims_and_no_cluster_calls_is_checked_per_block():
    out = np.zeros((4, 32), np.int32)
    no_cluster_calls[4, 32](out, 1)
    np.testing.assert_array_equal(out, np.arange(4)[:, None] * 100 + np.arange(31, -1, -1))
    with pytest.raises(RaceError, match=r"data race on s\[0\] \(shared memory\): a read at "
                                        r"line \d+ by thread \(31, 0, 0\) of block \(0, 0, 0\) "
                                        r"and a write at line \d+ by thread \(0, 0, 0\) of "
                                        r"block \(0, 0, 0\); no cuda.syncthreads\(\)"):
        no_cluster_calls[4, 32](out, 0)
