"""gpunb.access_map: per-element threads, per-thread counts, coalescing and bank conflicts."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@cuda.jit
def double(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * 2


@cuda.jit
def gather_strided(out, x):
    i = cuda.grid(1)
    if i * 4 < x.size:
        out[i] = x[i * 4]


@cuda.jit
def column_read(out):
    tile = cuda.shared.array((32, 32), np.float32)
    t = cuda.threadIdx.x
    tile[t, 0] = t
    cuda.syncthreads()
    out[t] = tile[t, 0]


@cuda.jit
def stencil(out, x):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = x[i - 1] + x[i] + x[i + 1]


def test_elements_threads_and_counts():
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    m = gpunb.access_map(double[2, 128], out, x)
    np.testing.assert_array_equal(out, x * 2)  # the launch really ran
    assert m.kernel == "double" and m.grid == (2, 1, 1) and m.block == (128, 1, 1)
    np.testing.assert_array_equal(m["x"].reads, np.ones(256))
    np.testing.assert_array_equal(m["x"].writes, np.zeros(256))
    np.testing.assert_array_equal(m["out"].last_writer, np.arange(256))
    np.testing.assert_array_equal(m["x"].first_reader, np.arange(256))
    assert m.thread_counts(200) == (1, 1)
    assert m.global_reads.shape == (256,) and m.global_writes.sum() == 256
    assert "double" in repr(m) and "<table" in m._repr_html_()


def test_stencil_counts_per_thread_and_element():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    m = gpunb.access_map(stencil[1, 64], out, x)
    assert m.thread_counts(0) == (0, 0)
    assert m.thread_counts(5) == (3, 1)
    assert int(m["x"].reads[10]) == 3 and int(m["x"].readers[10]) == 3
    assert int(m["x"].reads[0]) == 1


def test_coalescing_of_contiguous_and_strided_reads():
    x = np.arange(512, dtype=np.float32)
    out = np.zeros(128, np.float32)
    rows = {(c.kind, c.array): c for c in gpunb.access_map(gather_strided[1, 128], out,
                                                          x).coalescing}
    contiguous, strided = rows[("write", "out")], rows[("read", "x")]
    assert contiguous.requests == 4 and contiguous.sectors_per_request == 4.0
    assert contiguous.efficiency == 1.0
    assert strided.sectors_per_request == 16.0 and strided.efficiency == 0.25


def test_bank_conflicts_of_a_column_access():
    out = np.zeros(32, np.float32)
    m = gpunb.access_map(column_read[1, 32], out)
    rows = {c.kind: c for c in m.bank_conflicts}
    # tile[t, 0]: 32 words 128 bytes apart, all in bank 0: a 32-way conflict
    assert rows["write"].max_ways == 32 and rows["write"].conflicts == 31
    assert m["tile"].memory == "shared"
    np.testing.assert_array_equal(m["tile"].writes.reshape(32, 32)[:, 0], np.ones(32))


def test_access_map_needs_a_configured_launch():
    with pytest.raises(gpunb.LaunchError, match="configured launch"):
        gpunb.access_map(double, np.zeros(4), np.zeros(4))


@cuda.jit
def histogram(h, x):
    i = cuda.grid(1)
    if i < x.size:
        h[x[i] % 4] += 1


def test_a_racy_launch_is_mapped_and_its_race_listed():
    x = cuda.to_device(np.arange(64, dtype=np.int32))  # device arrays of the CPU target too
    h = cuda.to_device(np.zeros(4, np.int32))
    m = gpunb.access_map(histogram[2, 32], h, x)
    assert len(m.races) == 1 and isinstance(m.races[0], gpunb.RaceError)
    assert m.races[0].array == "h"
    np.testing.assert_array_equal(m["h"].writers, [16, 16, 16, 16])
    assert int(m["x"].reads.sum()) == 64


@cuda.jit
def staged_sums(out, x, prefetch):
    """Sums 32-element chunks of x staged through shared memory by cp.async: with `prefetch`,
    chunk k + 1 is copied while chunk k is summed (two buffers); without, one at a time."""
    s = cuda.shared.array((2, 32), np.float32)
    t = cuda.threadIdx.x
    chunks = x.size // 32
    total = np.float32(0.0)
    if prefetch:
        cuda.cp_async.copy(s[0, t:], x[t:], 4)
        cuda.cp_async.commit_group()
    for k in range(chunks):
        if prefetch:
            if k + 1 < chunks:
                cuda.cp_async.copy(s[(k + 1) % 2, t:], x[(k + 1) * 32 + t:], 4)
            cuda.cp_async.commit_group()
            cuda.cp_async.wait_group(1)
        else:
            cuda.cp_async.copy(s[k % 2, t:], x[k * 32 + t:], 4)
            cuda.cp_async.wait_all()
        cuda.syncthreads()
        total += s[k % 2, (t + 1) % 32]
        cuda.syncthreads()
    out[t] = total


@pytest.mark.slow  # compiles a CPU-target coroutine kernel
def test_async_overlap_counts_reads_made_while_copies_were_in_flight():
    x = np.arange(4 * 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    pipelined = gpunb.access_map(staged_sums[1, 32], out, x, True)
    np.testing.assert_array_equal(out, x.reshape(4, 32).sum(0)[(np.arange(32) + 1) % 32])
    overlap = pipelined.async_overlap
    assert overlap.copied.tolist() == [128] and overlap.shared_reads.tolist() == [128]
    assert overlap.overlapped.tolist() == [96] and overlap.fraction == 0.75  # all but the last
    assert "96 of 128 shared reads (75%) while a copy was in flight" in repr(overlap)
    serial = gpunb.access_map(staged_sums[1, 32], out, x, False).async_overlap
    assert serial.overlapped.tolist() == [0] and serial.fraction == 0.0
    assert gpunb.access_map(double[1, 32], out, x).async_overlap is None


@cuda.jit
def read_while_filling(out, x):
    s = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    cuda.cp_async.copy(s[t:], x[t:], 4)
    cuda.cp_async.commit_group()
    out[t] = s[t]  # before the wait: the copy still owns s[t]
    cuda.cp_async.wait_group(0)


@pytest.mark.slow  # compiles a CPU-target coroutine kernel
def test_an_access_to_a_pending_copy_s_memory_is_the_map_s_race():
    amap = gpunb.access_map(read_while_filling[1, 32], np.zeros(32, np.float32),
                            np.ones(32, np.float32))
    assert len(amap.races) == 1 and isinstance(amap.races[0], gpunb.AsyncCopyError)
    assert "read of s[0] at line" in amap.races[0].message
    assert "while the asynchronous copy issued at line" in amap.races[0].message


@cuda.jit
def scaled_when(out, x, flag, factors):
    i = cuda.grid(1)
    if flag and i < x.size:
        out[i] = x[i] * factors[0]


def test_arrays_are_mapped_beside_bool_and_tuple_parameters():
    # a bool parameter made the signature text unreadable (str(boolean) is 'bool'): the map
    # then held no kernel parameter at all
    x = np.arange(8, dtype=np.float32)
    m = gpunb.access_map(scaled_when[1, 8], np.zeros_like(x), x, True, (2.0,))
    assert {"out", "x"} <= set(m.arrays)
    assert m["x"].reads.tolist() == [1] * 8
    assert m["out"].last_writer.tolist() == list(range(8))
