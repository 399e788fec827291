"""cuda.atomic.*: every operation on every supported dtype, under contention from many blocks
(which run in parallel on the CPU target), with the old values returned; indices of 1-3 dims;
atomics on shared memory; PTX atom instructions."""

import re

import numpy as np
import pytest

from gpunb import cuda, int32

BLOCKS, TPB = 16, 64
N = BLOCKS * TPB
SLOTS = 4

# ---- kernels --------------------------------------------------------------------------------


@cuda.jit
def arith_atomics(acc, olds, vals):
    # rows of acc: 0 add, 1 sub, 2 max, 3 min, 4 exch, 5 cas-loop increment
    i = cuda.grid(1)
    slot = i % SLOTS
    v = vals[i]
    olds[0, i] = cuda.atomic.add(acc, (0, slot), v)
    olds[1, i] = cuda.atomic.sub(acc, (1, slot), v)
    olds[2, i] = cuda.atomic.max(acc, (2, slot), v)
    olds[3, i] = cuda.atomic.min(acc, (3, slot), v)
    olds[4, i] = cuda.atomic.exch(acc, (4, slot), v)
    # compare-and-swap retry loop: an atomic increment built from cas
    old = acc[5, slot]
    while True:
        seen = cuda.atomic.cas(acc, (5, slot), old, old + 1)
        if seen == old:
            break
        old = seen
    olds[5, i] = old


@cuda.jit
def bit_atomics(acc, olds):
    i = cuda.grid(1)
    mask = 1 << (i % 32)
    olds[0, i] = cuda.atomic.and_(acc, 0, ~mask)
    olds[1, i] = cuda.atomic.or_(acc, 1, mask)
    olds[2, i] = cuda.atomic.xor(acc, 2, mask)


@cuda.jit
def inc_dec(acc, olds, limit):
    i = cuda.grid(1)
    olds[0, i] = cuda.atomic.inc(acc, 0, limit)
    olds[1, i] = cuda.atomic.dec(acc, 1, limit)


@cuda.jit
def flat_cas(acc, out):
    i = cuda.grid(1)
    # only the thread that sees 0 wins; everyone reads the winner's id + 1
    out[i] = cuda.atomic.compare_and_swap(acc, 0, i + 1)


@cuda.jit
def multi_dim_index(a1, a2, a3, m3):
    i = cuda.grid(1)
    cuda.atomic.add(a1, i % 3, 1)
    cuda.atomic.add(a2, (i % 2, i % 3), 1)
    idx = (i % 2, i % 3, i % 4)
    cuda.atomic.add(a3, idx, 1)
    cuda.atomic.max(m3, (1, 2, 3), i)


@cuda.jit
def shared_histogram(hist, x):
    local = cuda.shared.array(16, int32)
    tid = cuda.threadIdx.x
    if tid < 16:
        local[tid] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(local, x[i] % 16, 1)
    cuda.syncthreads()
    if tid < 16:
        cuda.atomic.add(hist, tid, local[tid])


# ---- tests ----------------------------------------------------------------------------------

ARITH_DTYPES = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]


def _values(dtype, rng):
    if np.issubdtype(dtype, np.floating):
        return rng.integers(-1000, 1000, N).astype(dtype)  # integral: float sums stay exact
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.integers(1, 1000, N).astype(dtype)
    return rng.integers(-1000, 1000, N).astype(dtype)


@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=lambda d: np.dtype(d).name)
def test_arith_atomics_under_contention(target, dtype):
    rng = np.random.default_rng(np.dtype(dtype).num)
    vals = _values(dtype, rng)
    init = np.array([0, 5000000, 0, 500, 7, 0], dtype=dtype)
    acc = np.repeat(init[:, None], SLOTS, axis=1)
    olds = np.zeros((6, N), dtype)
    arith_atomics[BLOCKS, TPB](acc, olds, vals)
    for slot in range(SLOTS):
        v = vals[slot::SLOTS]
        with np.errstate(over="ignore"):
            assert acc[0, slot] == v.sum(dtype=dtype)
            assert acc[1, slot] == dtype(init[1] - v.sum(dtype=dtype))
        assert acc[2, slot] == max(init[2], v.max())
        assert acc[3, slot] == min(init[3], v.min())
        # exch: the final value and the returned olds are the initial value and every value
        got = np.sort(np.append(olds[4, slot::SLOTS], acc[4, slot]))
        np.testing.assert_array_equal(got, np.sort(np.append(v, init[4])))
        assert acc[5, slot] == v.size
        # the cas loop saw every count exactly once
        np.testing.assert_array_equal(np.sort(olds[5, slot::SLOTS]), np.arange(v.size))
        # add returned the running totals: sorted by the order the adds happened in (when
        # all values are positive, increasing olds), each old is the sum of those before it
        olds_add = olds[0, slot::SLOTS]
        if np.all(v > 0):
            order = np.argsort(olds_add, kind="stable")
            np.testing.assert_array_equal(olds_add[order][1:], np.cumsum(v[order])[:-1])


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_bitwise_atomics(target, dtype):
    bits = 32
    all_ones = (1 << bits) - 1
    acc = np.array([all_ones, 0, 0], dtype=np.uint64).astype(dtype)
    olds = np.zeros((3, N), dtype)
    bit_atomics[BLOCKS, TPB](acc, olds)
    assert int(acc[0]) & all_ones == 0  # every bit cleared
    assert int(acc[1]) & all_ones == all_ones  # every bit set
    assert int(acc[2]) == 0  # each bit toggled N/32 (an even number of) times
    assert len(set(olds[1].tolist())) > 1


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("limit", [5, 1000, 5000])
def test_inc_dec(target, dtype, limit):
    acc = np.zeros(2, dtype)
    olds = np.zeros((2, N), dtype)
    inc_dec[BLOCKS, TPB](acc, olds, dtype(limit))
    assert acc[0] == N % (limit + 1)
    assert acc[1] == (-N) % (limit + 1)
    # inc never returns more than the limit; each old value appears as often as the wrap says
    assert olds[0].max() == min(limit, N - 1)


def test_inc_dec_signed_is_a_compile_error():
    import gpunb

    with pytest.raises(gpunb.CompileError) as info:
        cuda.compile_ptx(inc_dec, "void(int32[::1], int32[:, ::1], int32)")
    assert "inc" in str(info.value) and "unsigned" in str(info.value)


def test_compare_and_swap_flat(target):
    acc = np.zeros(1, np.int64)
    out = np.zeros(N, np.int64)
    flat_cas[BLOCKS, TPB](acc, out)
    winner = acc[0]
    assert 1 <= winner <= N
    assert (out == 0).sum() == 1  # exactly one thread saw the initial value
    assert out[winner - 1] == 0
    assert set(out[out != 0].tolist()) == {winner}


def test_multi_dim_indices(target):
    a1 = np.zeros(3, np.int32)
    a2 = np.zeros((2, 3), np.float64)
    a3 = np.zeros((2, 3, 4), np.int64)
    m3 = np.zeros((2, 3, 4), np.int64)
    multi_dim_index[BLOCKS, TPB](a1, a2, a3, m3)
    i = np.arange(N)
    np.testing.assert_array_equal(a1, np.bincount(i % 3))
    exp2 = np.zeros((2, 3))
    np.add.at(exp2, (i % 2, i % 3), 1)
    np.testing.assert_array_equal(a2, exp2)
    exp3 = np.zeros((2, 3, 4), np.int64)
    np.add.at(exp3, (i % 2, i % 3, i % 4), 1)
    np.testing.assert_array_equal(a3, exp3)
    assert m3[1, 2, 3] == N - 1 and m3.sum() == N - 1


def test_shared_memory_histogram(target):
    x = np.random.default_rng(3).integers(0, 10**6, 10_000)
    hist = np.zeros(16, np.int32)
    shared_histogram[(x.size + 127) // 128, 128](hist, x)
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))


PTX_CASES = [
    (arith_atomics, "void(int32[:, ::1], int32[:, ::1], int32[::1])", "atom.global.add.u32"),
    (arith_atomics, "void(uint64[:, ::1], uint64[:, ::1], uint64[::1])", "atom.global.max.u64"),
    (arith_atomics, "void(float32[:, ::1], float32[:, ::1], float32[::1])", "atom.global.add.f32"),
    (arith_atomics, "void(float64[:, ::1], float64[:, ::1], float64[::1])", "atom.global.add.f64"),
    (arith_atomics, "void(int64[:, ::1], int64[:, ::1], int64[::1])", "atom.global.cas.b64"),
    (bit_atomics, "void(uint32[::1], uint32[:, ::1])", "atom.global.xor.b32"),
    (bit_atomics, "void(int64[::1], int64[:, ::1])", "atom.global.or.b64"),
    (inc_dec, "void(uint32[::1], uint32[:, ::1], uint32)", "atom.global.inc.u32"),
    (inc_dec, "void(uint64[::1], uint64[:, ::1], uint64)", "atom"),
    (flat_cas, "void(int64[::1], int64[::1])", "atom.global.cas.b64"),
    (multi_dim_index, "void(int32[::1], float64[:, ::1], int64[:, :, ::1], int64[:, :, :])",
     "atom.global.max.s64"),
    (shared_histogram, "void(int32[::1], int64[::1])", "atom.shared.add.u32"),
]


@pytest.mark.parametrize("kernel,sig,needle", PTX_CASES,
                         ids=[f"{k.__name__}-{s}" for k, s, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig, needle):
    ptx = check_ptx(kernel, sig)
    normalised = re.sub(r"\.(relaxed|acquire|release|acq_rel|sys|gpu|cta)(?=\.)", "", ptx)
    assert needle in normalised or needle.replace(".global", "") in normalised, needle
