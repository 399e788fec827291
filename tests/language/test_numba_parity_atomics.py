"""Atomics ported from numba-cuda's test_atomics: return values (the old value), NaN handling of
max/min (the stored value wins when either side is NaN) versus nanmax/nanmin (NaN is a missing
value), inc/dec wrapping, bit operations and compare-and-swap, on every available target."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda


def _returns_old(op, value):
    @cuda.jit
    def kernel(x):
        x[1] = op(x, 0, value)

    return kernel


@pytest.mark.parametrize("name,initial,value,final", [
    ("add", 10.0, 1.0, 11.0),
    ("max", 10.0, 1.0, 10.0), ("max", 1.0, 10.0, 10.0),
    ("max", np.nan, 1.0, np.nan), ("max", 10.0, np.nan, 10.0),
    ("min", 10.0, 11.0, 10.0), ("min", 11.0, 10.0, 10.0),
    ("min", np.nan, 11.0, np.nan), ("min", 11.0, np.nan, 11.0),
    ("nanmax", np.nan, 1.0, 1.0), ("nanmax", 10.0, np.nan, 10.0), ("nanmax", 1.0, 10.0, 10.0),
    ("nanmin", np.nan, 11.0, 11.0), ("nanmin", 11.0, np.nan, 11.0), ("nanmin", 11.0, 1.0, 1.0),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atomic_returns_old_and_nan_rules(target, name, initial, value, final, dtype):
    op = getattr(cuda.atomic, name)
    x = np.array([initial, 0], dtype)
    _returns_old(op, value)[1, 1](x)
    np.testing.assert_equal(x, np.array([final, initial], dtype))


@cuda.jit
def atomic_extremes(res, vals):
    i = cuda.grid(1)
    if i < vals.size:
        cuda.atomic.max(res, 0, vals[i])
        cuda.atomic.min(res, 1, vals[i])
        cuda.atomic.nanmax(res, 2, vals[i])
        cuda.atomic.nanmin(res, 3, vals[i])


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64, np.float32,
                                   np.float64])
def test_atomic_extremes_over_many_threads(target, dtype):
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 65535, size=256).astype(dtype)
    if np.dtype(dtype).kind == "f":
        vals[1::2] = np.nan
    res = np.array([0, 65535, 0, 65535], dtype)
    atomic_extremes[4, 64](res, vals)
    finite = vals[::2] if np.dtype(dtype).kind == "f" else vals
    # max/min skip NaN values when the stored value is a number (the comparison fails)
    assert res.tolist() == [finite.max(), finite.min(), np.nanmax(vals), np.nanmin(vals)]


@cuda.jit
def atomic_bits_and_wrap(out, res):
    i = cuda.threadIdx.x
    res[0, i] = cuda.atomic.inc(out, 0, 3)
    res[1, i] = cuda.atomic.dec(out, 1, 3)
    res[2, i] = cuda.atomic.and_(out, 2, ~np.uint32(1 << i))
    res[3, i] = cuda.atomic.or_(out, 3, np.uint32(1 << i))
    res[4, i] = cuda.atomic.xor(out, 4, np.uint32(1))


def test_inc_dec_wrap_and_bit_ops(target):
    out = np.array([0, 0, 0xFF, 0, 0], np.uint32)
    res = np.zeros((5, 8), np.uint32)
    atomic_bits_and_wrap[1, 8](out, res)
    # inc: old >= 3 -> 0 else old + 1; dec: old == 0 or old > 3 -> 3 else old - 1
    assert out.tolist() == [0, 0, 0, 0xFF, 0]
    assert sorted(res[0]) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert sorted(res[1]) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert sorted(res[4]) == [0, 0, 0, 0, 1, 1, 1, 1]


@cuda.jit
def atomic_cas_first_wins(out, old):
    i = cuda.threadIdx.x
    old[i] = cuda.atomic.compare_and_swap(out, 0, i + 1)
    cuda.atomic.cas(out, 1, 0, i + 1)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_compare_and_swap_returns_old(target, dtype):
    out = np.zeros(2, dtype)
    old = np.full(4, 99, dtype)
    atomic_cas_first_wins[1, 4](out, old)
    winner = int(out[0])
    assert out[1] == winner and sorted(old.tolist()) == [0] + [winner] * 3


@cuda.jit
def atomic_add_2d(out):
    cuda.atomic.add(out, (1, 1), 1.5)
    cuda.atomic.add(out, (0, -1), 1)


def test_atomic_tuple_and_negative_index(target):
    out = np.zeros((2, 2))
    atomic_add_2d[1, 4](out)
    assert out.tolist() == [[0, 4], [0, 6]]


def test_atomic_extremes_ptx(ptxas):
    for sig in ("void(float32[::1], float32[::1])", "void(float64[::1], float64[::1])",
                "void(int64[::1], int64[::1])"):
        ptxas(cuda.compile_ptx(atomic_extremes, sig)[0])
