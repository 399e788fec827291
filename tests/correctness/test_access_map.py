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
