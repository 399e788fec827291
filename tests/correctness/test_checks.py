"""The CPU target's checks beyond the corpus: what RaceError and WarpMaskError carry, clean
idioms that must never be reported, activemask, bounds-check defaults and opt-outs, and the
%%gpukernel --racecheck option."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import WarpMaskError


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def test_race_error_names_both_sides():
    @cuda.jit(racecheck=True)
    def shift(out):
        s = cuda.shared.array(32, np.float32)
        i = cuda.threadIdx.x
        s[i] = i
        out[i] = s[(i + 1) % 32]

    with pytest.raises(gpunb.RaceError) as info:
        shift[1, 32](np.zeros(32, np.float32))
    err = info.value
    assert isinstance(err, gpunb.LaunchError)
    assert err.array == "s" and err.index == (0,)
    kinds = sorted(a[0] for a in err.accesses)
    assert kinds == ["read", "write"]
    lines = {a[1] for a in err.accesses}
    assert len(lines) == 2 and err.loc.line in lines
    assert {a[2] for a in err.accesses} == {(0, 0, 0), (31, 0, 0)}
    assert "shared memory" in str(err) and "syncthreads" in str(err)


def test_global_race_names_argument_element_and_blocks():
    @cuda.jit(racecheck=True)
    def last(out):
        out[3] = cuda.blockIdx.x

    with pytest.raises(gpunb.RaceError) as info:
        last[2, 1](np.zeros(8, np.int32))
    assert info.value.index == (3,)
    assert {a[3] for a in info.value.accesses} == {(0, 0, 0), (1, 0, 0)}
    assert "different blocks" in str(info.value)


def test_clean_idioms_are_never_reported():
    @cuda.jit(racecheck=True)
    def reduce_then_atomic(total, x):
        s = cuda.shared.array(128, np.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i]
        cuda.syncthreads()
        step = 64
        while step > 32:
            if t < step:
                s[t] += s[t + step]
            cuda.syncthreads()
            step //= 2
        if t < 32:  # the last warp: registers and shuffles, no shared memory
            v = s[t] + s[t + 32]
            for offset in (16, 8, 4, 2, 1):
                v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            if t == 0:
                cuda.atomic.add(total, 0, v)

    x = np.arange(512, dtype=np.float32)
    total = np.zeros(1, np.float32)
    reduce_then_atomic[4, 128](total, x)
    assert total[0] == x.sum()

    @cuda.jit(racecheck=True)
    def warp_exchange(out):
        s = cuda.shared.array(32, np.int32)
        lane = cuda.laneid
        s[lane] = lane * 10
        cuda.syncwarp()
        out[lane] = s[31 - lane]

    out = np.zeros(32, np.int32)
    warp_exchange[1, 32](out)
    np.testing.assert_array_equal(out, np.arange(32)[::-1] * 10)


def test_racecheck_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUNB_RACECHECK", "1")

    @cuda.jit
    def blocks_collide(out):
        out[0] = cuda.blockIdx.x

    with pytest.raises(gpunb.RaceError):
        blocks_collide[2, 1](np.zeros(1, np.int32))


def test_activemask_returns_the_converged_lanes():
    @cuda.jit
    def masks(out):
        t = cuda.threadIdx.x
        if cuda.laneid % 2 == 0:
            out[t] = cuda.activemask()
        else:
            out[t] = cuda.activemask()

    out = np.zeros(32, np.uint32)
    masks[1, 32](out)
    assert out[0] == 0x55555555 and out[1] == 0xAAAAAAAA
    out48 = np.zeros(48, np.uint32)
    masks[1, 48](out48)  # the second warp has 16 lanes
    assert out48[32] == 0x5555 and out48[33] == 0xAAAA


def test_partial_masks_that_are_right_pass():
    @cuda.jit
    def halves(out):
        lane = cuda.laneid
        if lane < 16:
            out[lane] = cuda.shfl_sync(0x0000FFFF, lane, 3)
        else:
            out[lane] = cuda.shfl_sync(0xFFFF0000, lane, 17)

    out = np.zeros(32, np.int32)
    halves[1, 32](out)
    np.testing.assert_array_equal(out, [3] * 16 + [17] * 16)


def test_warp_mask_error_names_line_and_lanes():
    @cuda.jit
    def vote(out):
        lane = cuda.laneid
        if lane < 16:
            out[lane] = cuda.ballot_sync(0xFFFFFFFF, True)

    with pytest.raises(WarpMaskError, match=r"names lanes 16-31") as info:
        vote[1, 32](np.zeros(32, np.uint32))
    assert isinstance(info.value, gpunb.LaunchError)
    assert "ballot_sync(0xFFFFFFFF, True)" in str(info.value)


def test_bounds_checks_are_on_by_default_and_can_be_turned_off():
    def body(out, x):
        i = cuda.grid(1)
        out[i] = x[i + 8]

    checked = cuda.jit(body)
    expected = r"index 32 is out of bounds for 'x' with extent 32 \(thread \(24, 0, 0\)"
    with pytest.raises(IndexError, match=expected):
        checked[1, 32](np.zeros(32, np.float32), np.zeros(32, np.float32))
    unchecked = cuda.jit(boundscheck=False)(body)
    x = np.zeros(64, np.float32)  # the view below reads inside this buffer
    out = np.zeros(32, np.float32)
    unchecked[1, 32](out, x[:32])
    np.testing.assert_array_equal(out, x[8:40])
    with pytest.raises(IndexError):
        cuda.jit(boundscheck=True)(body)[1, 32](out, x[:32])


def test_integer_division_by_zero_gives_zero_as_numba_cuda():
    @cuda.jit
    def divide(out, a, b):
        out[0] = a // b
        out[1] = a % b

    out = np.ones(2, np.int64)
    divide[1, 1](out, 7, 0)
    np.testing.assert_array_equal(out, [0, 0])


def test_gpukernel_racecheck_option():
    from gpunb.notebook.options import parse_kernel_options

    opts = parse_kernel_options("--racecheck --target cpu")
    assert opts.racecheck and opts.jit_options() == {"target": "cpu", "racecheck": True}


def test_a_truncated_log_says_so(monkeypatch):
    monkeypatch.setenv("GPUNB_RECORD_LIMIT", "10")

    @cuda.jit(racecheck=True)
    def copy(out, x):
        i = cuda.grid(1)
        out[i] = x[i]

    with pytest.warns(UserWarning, match="only the first 10 memory accesses of 64"):
        copy[1, 32](np.zeros(32, np.float32), np.ones(32, np.float32))
    m = gpunb.access_map(copy[1, 32], np.zeros(32, np.float32), np.ones(32, np.float32))
    assert m.truncated and int(m["x"].reads.sum()) + int(m["out"].writes.sum()) == 10


def test_local_arrays_of_threads_in_different_blocks_are_not_races():
    # a recording launch runs each thread as a coroutine whose frame (holding its local arrays)
    # is heap memory that the next block's threads reuse: never shared, never a race
    @cuda.jit(racecheck=True)
    def private(out, n, clash):
        buf = cuda.local.array(8, np.float32)
        t = cuda.threadIdx.x
        for i in range(n):
            buf[i] = t + i
        cuda.syncthreads()
        total = np.float32(0.0)
        for i in range(n):
            total += buf[i]
        out[0 if clash else cuda.grid(1)] = total

    out = np.zeros(64, np.float32)
    private[2, 32](out, 8, False)
    np.testing.assert_array_equal(out, np.tile(np.arange(32) * 8 + 28, 2).astype(np.float32))
    assert gpunb.access_map(private[2, 32], out, 8, False).races == ()
    with pytest.raises(gpunb.RaceError, match=r"data race on out.* \(global memory\)"):
        private[2, 32](out, 8, True)  # the global array is still checked


def test_an_unsigned_index_past_the_end_is_reported_as_written():
    # numba wraps signed indices only; the check un-wrapped every index that looked negative as
    # an i64, so uint32(0) - uint32(1) (uint64 2**64 - 1) was reported as 'index -9'
    @cuda.jit
    def before_first(a):
        i = np.uint32(cuda.grid(1))
        a[i - np.uint32(1)] = 1

    @cuda.jit
    def atomic_before_first(a):
        i = np.uint64(cuda.grid(1))
        cuda.atomic.add(a, i - np.uint64(1), 1.0)

    @cuda.jit
    def negative(a):
        a[cuda.grid(1) - 40] = 1

    for kernel, index in ((before_first, 2**64 - 1), (atomic_before_first, 2**64 - 1),
                          (negative, -40)):
        with pytest.raises(gpunb.KernelIndexError, match=f"index {index} is out of bounds "
                                                         r"for 'a' with extent 8 \(thread \(0,"):
            kernel[1, 4](np.zeros(8))


def test_the_bounds_error_readme_names_is_gpunbs():
    # README says an out-of-range index raises KernelIndexError: `except gpunb.KernelIndexError`
    # was an AttributeError (the class lived in backends/cpu/executor.py only)
    @cuda.jit
    def one_past(a):
        a[cuda.grid(1) + 1] = 1

    with pytest.raises(gpunb.KernelIndexError) as info:
        one_past[1, 8](np.zeros(8))
    assert isinstance(info.value, (IndexError, gpunb.LaunchError))
    assert "KernelIndexError" in gpunb.__all__


def test_a_race_through_two_names_of_one_array_names_both():
    # `shift[2, 32](x, x)`: both sides said only 'line 14', the read's name (src) was not
    # shown, and the hint asked for a barrier where the fix is a separate output array
    @cuda.jit(racecheck=True)
    def shift(dst, src):
        i = cuda.grid(1)
        if i + 1 < src.size:
            dst[i] = src[i + 1]

    x = np.arange(64.0)
    with pytest.raises(gpunb.RaceError) as info:
        shift[2, 32](x, x)
    text = str(info.value)
    assert "a write through dst at line" in text and "a read through src at line" in text
    assert "dst and src are one memory here" in info.value.hint
    shift[2, 32](np.zeros(64), x)  # separate arrays: clean
