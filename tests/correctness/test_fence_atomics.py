"""racecheck and the CUDA memory model's release/acquire patterns through cuda.threadfence()
and atomics: the CUDA samples' last-block reduction and an atomic-CAS spinlock are clean, and
the same programs with a fence left out (or a block-scope fence across blocks) still race."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

BLOCKS, THREADS = 4, 64


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _last_block(write_fence, read_fence, reset):
    """The threadFenceReduction sample: each block's partial, a fence, a ticket; the block with
    the last ticket sums the partials (`write_fence`/`read_fence`: 0 none, 1 threadfence,
    2 threadfence_block; the reader reads after a barrier unless read_fence is 3: at once)."""

    @cuda.jit(racecheck=True)
    def reduce(x, partial, count, out):
        s = cuda.shared.array(THREADS, np.float32)
        last = cuda.shared.array(1, np.int32)
        t = cuda.threadIdx.x
        s[t] = x[cuda.grid(1)]
        cuda.syncthreads()
        if t == 0:
            acc = np.float32(0)
            for k in range(THREADS):
                acc += s[k]
            partial[cuda.blockIdx.x] = acc
            if write_fence == 1:
                cuda.threadfence()
            elif write_fence == 2:
                cuda.threadfence_block()
            ticket = cuda.atomic.add(count, 0, 1)
            last[0] = ticket == cuda.gridDim.x - 1
            if read_fence == 1:
                cuda.threadfence()
            if read_fence == 3 and ticket == cuda.gridDim.x - 1:
                out[1] = partial[0]  # the reader's access right after its atomic
        cuda.syncthreads()
        if last[0] and t == 0:
            total = np.float32(0)
            for b in range(cuda.gridDim.x):
                total += partial[b]
            out[0] = total
            if reset:
                count[0] = 0  # ready for the next launch, as the sample does

    x = np.arange(BLOCKS * THREADS, dtype=np.float32)
    out, count = np.zeros(2, np.float32), np.zeros(1, np.int32)
    reduce[BLOCKS, THREADS](x, np.zeros(BLOCKS, np.float32), count, out)
    return out, count


def test_the_last_block_reduction_is_clean():
    out, count = _last_block(1, 0, reset=True)
    assert out[0] == np.arange(BLOCKS * THREADS).sum() and count[0] == 0


def test_a_fence_after_the_readers_atomic_also_orders():
    out, _ = _last_block(1, 1, reset=False)
    assert out[0] == np.arange(BLOCKS * THREADS).sum()


def test_without_the_writers_fence_it_races():
    # the reader's fence is there: only the release side is missing
    with pytest.raises(gpunb.RaceError) as info:
        _last_block(0, 1, reset=False)
    assert info.value.array == "partial"
    assert "different blocks" in str(info.value)
    assert "and no a cuda.threadfence()" not in str(info.value)
    assert "no cuda.threadfence() before an atomic write" in str(info.value)
    assert info.value.hint.startswith("publish with cuda.threadfence() after the write")


def test_a_block_scope_fence_does_not_order_other_blocks():
    with pytest.raises(gpunb.RaceError) as info:
        _last_block(2, 0, reset=False)
    assert info.value.array == "partial"


def test_a_read_right_after_the_atomic_with_no_fence_races():
    with pytest.raises(gpunb.RaceError) as info:
        _last_block(1, 3, reset=False)
    assert info.value.array == "partial"
    assert {a[0] for a in info.value.accesses} == {"read", "write"}


def _spinlock(acquire_fence, release_fence, blocks=8):
    """An atomic-CAS spinlock around a read-modify-write of total[0] by each block."""

    @cuda.jit(racecheck=True)
    def locked_sum(x, lock, total):
        if cuda.threadIdx.x == 0:
            while cuda.atomic.cas(lock, 0, 0, 1) != 0:
                pass
            if acquire_fence:
                cuda.threadfence()
            total[0] = total[0] + x[cuda.blockIdx.x]
            if release_fence:
                cuda.threadfence()
            cuda.atomic.exch(lock, 0, 0)

    total = np.zeros(1, np.float32)
    locked_sum[blocks, 32](np.arange(blocks, dtype=np.float32), np.zeros(1, np.int32), total)
    return total


def test_a_spinlock_with_both_fences_is_clean():
    assert _spinlock(True, True)[0] == sum(range(8))


@pytest.mark.parametrize("acquire_fence, release_fence", [(False, True), (True, False)])
def test_a_spinlock_missing_a_fence_races(acquire_fence, release_fence):
    with pytest.raises(gpunb.RaceError) as info:
        _spinlock(acquire_fence, release_fence)
    assert info.value.array == "total"


def test_the_counter_reset_after_the_last_ticket_is_no_race_without_fences():
    # the other blocks' atomics are observed by the last block's own atomic before its store
    @cuda.jit(racecheck=True)
    def tickets(count, last):
        if cuda.threadIdx.x == 0:
            if cuda.atomic.add(count, 0, 1) == cuda.gridDim.x - 1:
                last[0] = cuda.blockIdx.x
                count[0] = 0

    count, last = np.zeros(1, np.int32), np.full(1, -1, np.int32)
    tickets[4, 32](count, last)
    assert count[0] == 0 and last[0] == 3


def test_a_plain_store_before_other_blocks_atomics_still_races():
    @cuda.jit(racecheck=True)
    def first_resets(count):
        if cuda.threadIdx.x == 0:
            if cuda.blockIdx.x == 0:
                count[0] = 0
            cuda.threadfence()
            cuda.atomic.add(count, 0, 1)

    with pytest.raises(gpunb.RaceError):
        first_resets[4, 32](np.zeros(1, np.int32))


def test_a_barrier_before_the_fence_publishes_every_threads_writes():
    # every thread writes its slot; the barrier orders them before thread 0's fence and ticket
    # (cumulativity), and the last block's barrier orders its readers after its ticket
    @cuda.jit(racecheck=True)
    def gather(slots, count, out):
        last = cuda.shared.array(1, np.int32)
        t, b = cuda.threadIdx.x, cuda.blockIdx.x
        slots[b * cuda.blockDim.x + t] = b + t
        cuda.syncthreads()
        if t == 0:
            cuda.threadfence()
            last[0] = cuda.atomic.add(count, 0, 1) == cuda.gridDim.x - 1
        cuda.syncthreads()
        if last[0]:
            acc = 0
            for k in range(t, slots.size, cuda.blockDim.x):
                acc += slots[k]
            out[t] = acc

    blocks, threads = 16, 32
    slots, out = np.zeros(blocks * threads, np.int64), np.zeros(threads, np.int64)
    gather[blocks, threads](slots, np.zeros(1, np.int32), out)
    want = [sum(b + t for b in range(blocks)) for t in range(threads)]
    np.testing.assert_array_equal(out, want)


def test_too_many_publishing_threads_say_so(monkeypatch):
    from gpunb.backends.cpu import fence_sync

    monkeypatch.setattr(fence_sync, "MAX_PUBLISHERS", 4)

    @cuda.jit(racecheck=True)
    def everyone(out, count):
        i = cuda.grid(1)
        out[i] = i
        cuda.threadfence()
        cuda.atomic.add(count, 0, 1)
        cuda.syncthreads()
        out[i] += 1

    with pytest.warns(UserWarning, match="threads publish through cuda.threadfence"):
        everyone[2, 8](np.zeros(16), np.zeros(1, np.int32))


@pytest.mark.parametrize("fenced", [True, False])
def test_a_spinlock_between_warps_of_one_block_needs_block_fences(fenced):
    @cuda.jit(racecheck=True)
    def locked(lock, total):
        if cuda.threadIdx.x % 32 == 0:
            while cuda.atomic.cas(lock, 0, 0, 1) != 0:
                pass
            if fenced:
                cuda.threadfence_block()  # enough within a block
            total[0] = total[0] + 1
            if fenced:
                cuda.threadfence_block()
            cuda.atomic.exch(lock, 0, 0)

    total = np.zeros(1, np.float32)
    if fenced:
        locked[1, 128](np.zeros(1, np.int32), total)
        assert total[0] == 4
    else:
        with pytest.raises(gpunb.RaceError, match="no cuda.syncthreads"):
            locked[1, 128](np.zeros(1, np.int32), total)


def test_cluster_barriers_still_order_in_a_kernel_that_fences():
    # a fence makes the replay grid-wide: each cluster's barrier phases stay its own
    @cuda.jit(cluster_dims=(4, 1, 1), racecheck=True)
    def neighbours(out, scratch, count):
        c = cuda.cg.this_cluster()
        t, blk, n = cuda.threadIdx.x, cuda.blockIdx.x, cuda.blockDim.x
        nxt = blk - c.block_rank() + (c.block_rank() + 1) % c.num_blocks()
        if t == 0:  # a ticket, acquired by the barrier after it
            cuda.threadfence()
            cuda.atomic.add(count, 0, 1)
        cuda.syncthreads()
        scratch[blk * n + t] = blk * 1000 + t
        c.sync()
        out[blk * n + t] = scratch[nxt * n + (n - 1 - t)]
        c.sync()

    from gpunb.backends.cpu import happens_before

    built = []
    build = happens_before.build

    def noted(log):
        built.append(build(log))
        return built[-1]

    blocks, n = 8, 32
    out, count = np.zeros(blocks * n, np.int64), np.zeros(1, np.int32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(happens_before, "build", noted)
        neighbours[blocks, n](out, np.zeros(blocks * n, np.int64), count)
    assert count[0] == blocks and out[0] == 1 * 1000 + n - 1
    assert built and built[0].grid_wide  # the replay this test is about
