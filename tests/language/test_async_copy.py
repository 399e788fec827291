"""cp.async and mbarriers: the same results on every target, the CPU target's completion rules
(a copy lands at its wait; a phase completes with its arrivals and bytes), misuse reported at
the line, bad input refused at compile time, PTX accepted by ptxas for sm_80 and sm_90a."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import AsyncCopyError, CompileError, cuda, float16, float32, int32, uint64
from gpunb.cuda import wmma


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@cuda.jit
def staged_copy(out, x, nbytes_kind):
    s = cuda.shared.array(512, float32, alignment=128)
    t = cuda.threadIdx.x
    if nbytes_kind == 16:
        cuda.cp_async.copy(s[t * 4:], x[t * 4:], 16, cache="cg")
    elif nbytes_kind == 8:
        cuda.cp_async.copy(s[t * 4:], x[t * 4:], 8)
        cuda.cp_async.copy(s[t * 4 + 2:], x[t * 4 + 2:], 8)
    else:
        for k in range(4):
            cuda.cp_async.copy(s[t * 4 + k:], x[t * 4 + k:], 4)
    cuda.cp_async.commit_group()
    cuda.cp_async.wait_group(0)
    cuda.syncthreads()
    for k in range(4):
        out[t * 4 + k] = s[(t * 4 + k + 5) % 512]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_copies_of_each_size_land_at_the_wait(target, nbytes):
    x = np.arange(512, dtype=np.float32) * 1.5
    out = np.zeros(512, np.float32)
    staged_copy[1, 128](out, x, nbytes)
    np.testing.assert_array_equal(out, x[(np.arange(512) + 5) % 512])


@cuda.jit
def zero_filled(out, x, keep):
    s = cuda.shared.array(256, int32, alignment=128)
    t = cuda.threadIdx.x
    cuda.cp_async.copy(s[t * 4:], x[t * 4:], 16, src_bytes=keep)
    cuda.cp_async.wait_all()
    for k in range(4):
        out[t * 4 + k] = s[t * 4 + k]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_src_bytes_zero_fills_the_rest(target):
    x = np.arange(1, 257, dtype=np.int32)
    out = np.full(256, -1, np.int32)
    zero_filled[1, 64](out, x, 8)
    expected = x.reshape(64, 4).copy()
    expected[:, 2:] = 0
    np.testing.assert_array_equal(out, expected.reshape(-1))


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_the_access_map_counts_a_copys_reads_of_its_source(cpu):
    """cp.async reads global memory for the thread that issues it (src_bytes of them: the rest
    is zero-filled, nothing read); the map counts them as that thread's reads."""
    x = np.arange(1, 257, dtype=np.int32)
    out = np.zeros(256, np.int32)
    amap = gpunb.access_map(zero_filled[1, 64], out, x, 8)
    np.testing.assert_array_equal(amap.global_reads, np.full(64, 2))
    reads = amap.arrays["x"].reads.reshape(64, 4)
    np.testing.assert_array_equal(reads[:, :2], 1)
    np.testing.assert_array_equal(reads[:, 2:], 0)


@cuda.jit
def two_groups(first, second, x):
    s = cuda.shared.array(128, float32, alignment=128)
    t = cuda.threadIdx.x
    cuda.cp_async.copy(s[t * 4:], x[t * 4:], 16)
    cuda.cp_async.commit_group()
    cuda.cp_async.copy(s[64 + t * 4:], x[64 + t * 4:], 16)
    cuda.cp_async.commit_group()
    cuda.cp_async.wait_group(1)  # the first group is complete; the second may not be
    for k in range(4):
        first[t * 4 + k] = s[t * 4 + k]
        second[t * 4 + k] = s[64 + t * 4 + k]
    cuda.cp_async.wait_group(0)


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_wait_group_completes_older_groups_only(cpu):
    x = np.arange(1, 129, dtype=np.float32)
    first, second = np.zeros(64, np.float32), np.full(64, -1, np.float32)
    two_groups[1, 16](first, second, x)
    np.testing.assert_array_equal(first, x[:64])
    # the CPU target completes a copy at the latest moment allowed: the second group's
    # destination still holds the zeroed shared memory when it is read too early
    np.testing.assert_array_equal(second, np.zeros(64, np.float32))


@cuda.jit(racecheck=True)
def read_before_wait(out, x):
    s = cuda.shared.array(128, float32, alignment=128)
    t = cuda.threadIdx.x
    cuda.cp_async.copy(s[t * 4:], x[t * 4:], 16)
    cuda.cp_async.commit_group()
    out[t] = s[t * 4]
    cuda.cp_async.wait_group(0)


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_racecheck_names_a_read_before_the_wait(cpu):
    with pytest.raises(AsyncCopyError, match=r"read of s\[0\] .* asynchronous copy issued at "
                                             r"line \d+") as info:
        read_before_wait[1, 32](np.zeros(32, np.float32), np.ones(128, np.float32))
    assert "out[t] = s[t * 4]" in str(info.value)


@cuda.jit(racecheck=True)
def other_threads_without_barrier(out, x):
    s = cuda.shared.array(128, float32, alignment=128)
    t = cuda.threadIdx.x
    cuda.cp_async.copy(s[t * 4:], x[t * 4:], 16)
    cuda.cp_async.wait_all()
    out[t] = s[(t * 4 + 4) % 128]  # another thread's copy: needs a syncthreads first


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_racecheck_names_another_threads_copy_read_without_a_barrier(cpu):
    with pytest.raises(gpunb.LaunchError, match="cp_async|asynchronous|data race"):
        other_threads_without_barrier[1, 32](np.zeros(32, np.float32), np.ones(128, np.float32))


@cuda.jit(racecheck=True)
def fragment_before_wait(out, a):
    s = cuda.shared.array((16, 16), float16)
    lane = cuda.threadIdx.x
    cuda.cp_async.copy(s[lane // 2, (lane % 2) * 8:], a[lane // 2, (lane % 2) * 8:], 16)
    cuda.cp_async.commit_group()
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, float32)
    wmma.fill_fragment(acc, 0.0)
    wmma.load_matrix_sync(fa, s[:, :])
    wmma.load_matrix_sync(fb, a[0:16, 0:16])
    wmma.mma_sync(acc, fa, fb, acc)
    wmma.store_matrix_sync(out[0:16, 0:16], acc, wmma.mem_row_major)
    cuda.cp_async.wait_all()


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_fragment_loaded_before_the_wait_is_named_by_its_tile(cpu):
    """A WMMA load's accesses are the tile's: the report names the shared array `s` and points
    at the tile argument, not at the fragment `fa`."""
    a = np.ones((16, 16), np.float16)
    with pytest.raises(AsyncCopyError, match=r"read of s\[\d+\] .* asynchronous copy") as info:
        fragment_before_wait[1, 32](np.zeros((16, 16), np.float32), a)
    text = str(info.value)
    assert "read of fa" not in text
    line = next(k for k in text.splitlines() if "wmma.load_matrix_sync(fa, s[:, :])" in k)
    caret = text.splitlines()[text.splitlines().index(line) + 1]
    assert caret.index("^") == line.index("s[:, :]")


@cuda.jit
def misaligned(out, x, offset):
    s = cuda.shared.array(64, float32, alignment=128)
    cuda.cp_async.copy(s[offset:], x[0:], 16)
    cuda.cp_async.wait_all()
    out[0] = s[offset]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_misaligned_copy_is_reported_at_its_line(cpu):
    with pytest.raises(AsyncCopyError, match="not aligned to the copy's 16 bytes") as info:
        misaligned[1, 1](np.zeros(1, np.float32), np.ones(64, np.float32), 1)
    assert "cuda.cp_async.copy(s[offset:]" in str(info.value)


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_view_shorter_than_the_copy_is_reported(cpu):
    with pytest.raises(AsyncCopyError, match="holds 8 bytes, the copy moves 16"):
        misaligned[1, 1](np.zeros(1, np.float32), np.ones(64, np.float32), 62)


@cuda.jit
def into_global_through_a_local(out, x):
    s = cuda.shared.array(64, float32, alignment=128)
    staging = out[4:]  # a view of global memory the compiler does not follow
    cuda.cp_async.copy(staging, x, 16)
    cuda.cp_async.wait_all()
    out[0] = s[0]


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_global_destination_is_named_at_run_time_in_plain_words(cpu):
    """A destination the compiler cannot prove global: the CPU target says what is wrong
    (no shared offset of a global address, which means nothing)."""
    with pytest.raises(AsyncCopyError, match="the destination is not in shared memory") as info:
        into_global_through_a_local[1, 1](np.zeros(64, np.float32), np.ones(64, np.float32))
    assert "offset" not in str(info.value) and "cuda.shared.array" in info.value.hint


# ---- mbarriers --------------------------------------------------------------------------------


@cuda.jit
def phases(out, rounds):
    bars = cuda.shared.array(2, uint64)
    s = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 64)
    cuda.syncthreads()
    total = 0
    for r in range(rounds):
        s[t] = t * (r + 1)
        cuda.mbarrier.arrive(bars, 0)
        cuda.mbarrier.wait(bars, 0, r % 2)  # phase r has parity r % 2
        total += s[63 - t]
        cuda.syncthreads()
    out[t] = total


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_mbarrier_phases_alternate_parity(target):
    out = np.zeros(64, np.int32)
    phases[1, 64](out, 5)
    np.testing.assert_array_equal(out, (63 - np.arange(64)) * 15)


@cuda.jit
def tokens_and_counts(out):
    bars = cuda.shared.array(2, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 32)  # 16 threads arriving twice each
        cuda.mbarrier.init(bars, 1, 1)
    cuda.syncthreads()
    token = cuda.mbarrier.arrive(bars, 0, 2)
    ok = cuda.mbarrier.try_wait(bars, 0, token)
    while not ok:
        ok = cuda.mbarrier.try_wait(bars, 0, token)
    if t == 0:
        cuda.mbarrier.expect_tx(bars, 1, 0)
        cuda.mbarrier.arrive(bars, 1)
    done = cuda.mbarrier.try_wait_parity(bars, 1, 0)
    while not done:
        done = cuda.mbarrier.try_wait_parity(bars, 1, 0)
    out[t] = 1


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_arrive_counts_tokens_and_try_wait(target):
    out = np.zeros(16, np.int32)
    tokens_and_counts[1, 16](out)
    assert out.sum() == 16


@cuda.jit
def wrong_parity(out):
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 32)
    cuda.syncthreads()
    cuda.mbarrier.arrive(bars, 0)
    cuda.mbarrier.wait(bars, 0, 0)  # phase 0 completes here
    cuda.mbarrier.wait(bars, 0, 1)  # phase 1: nobody arrives on it any more
    out[t] = 1


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_a_phase_that_never_completes_is_named_not_a_hang(cpu):
    with pytest.raises(AsyncCopyError, match="parity 1, which never completes.*0 of 32 "
                                             "arrivals pending|parity 1, which never completes"):
        wrong_parity[1, 32](np.zeros(32, np.int32))


@cuda.jit
def too_few_arrivals(out):
    bars = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        cuda.mbarrier.init(bars, 0, 64)     # 64 expected, 32 threads arrive
    cuda.syncthreads()
    cuda.mbarrier.arrive(bars, 0)
    cuda.mbarrier.wait(bars, 0, 0)
    out[t] = 1


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_the_hint_of_a_phase_that_never_completes_says_what_is_missing(cpu):
    """The hint was always 'wait for the parity of the phase...', even when the parity was
    right and arrivals (or transaction bytes) were what never came."""
    with pytest.raises(AsyncCopyError, match="32 of 64 arrivals pending") as info:
        too_few_arrivals[1, 32](np.zeros(32, np.int32))
    assert "32 of the 64 arrivals never came" in info.value.hint
    assert "init the mbarrier with the number of threads" in info.value.hint
    with pytest.raises(AsyncCopyError, match="parity 1, which never completes") as info:
        wrong_parity[1, 32](np.zeros(32, np.int32))
    assert "no thread arrived in this phase" in info.value.hint


@cuda.jit
def uninitialised(out):
    bars = cuda.shared.array(1, uint64)
    cuda.mbarrier.arrive(bars, 0)
    out[0] = 1


@cuda.jit
def overarrival(out):
    bars = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        cuda.mbarrier.init(bars, 0, 1)
    cuda.syncthreads()
    cuda.mbarrier.arrive(bars, 0, 2)
    out[0] = 1


@pytest.mark.slow  # compiles CPU-target kernels (coroutines)
def test_mbarrier_misuse_is_reported(cpu):
    with pytest.raises(AsyncCopyError, match="used before cuda.mbarrier.init"):
        uninitialised[1, 1](np.zeros(1, np.int32))
    with pytest.raises(AsyncCopyError, match="more arrivals than the phase expects"):
        overarrival[1, 1](np.zeros(1, np.int32))


# ---- compile-time errors and PTX --------------------------------------------------------------


def _compile_error(fn, sig, cc=(9, 0)):
    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(fn, sig, cc=cc)
    return str(info.value)


def test_bad_copy_sizes_and_modes_are_compile_errors():
    def twelve(x):
        s = cuda.shared.array(16, float32)
        cuda.cp_async.copy(s, x, 12)

    def cg_eight(x):
        s = cuda.shared.array(16, float32)
        cuda.cp_async.copy(s, x, 8, cache="cg")

    def mixed(x):
        s = cuda.shared.array(16, float32)
        cuda.cp_async.copy(s, x, 16)

    assert "must be one of 4, 8, 16, got 12" in _compile_error(twelve, "void(float32[:])")
    assert "cache='cg' copies 16 bytes only" in _compile_error(cg_eight, "void(float32[:])")
    assert "one element size" in _compile_error(mixed, "void(float64[:])")


def test_a_group_count_out_of_range_names_the_range_not_every_number():
    """wait_group(-1) said 'must be one of 0, 1, 2, ..., 255' (all 256 numbers)."""
    def minus_one(x):
        s = cuda.shared.array(16, float32)
        cuda.cp_async.copy(s, x, 16)
        cuda.cp_async.wait_group(-1)

    message = _compile_error(minus_one, "void(float32[:])")
    assert "must be an integer from 0 to 255, got -1" in message
    assert "0, 1, 2" not in message


def test_a_copy_into_a_kernel_argument_is_a_compile_error():
    """cp.async copies global memory into shared memory; a kernel's array arguments are global
    memory, so a destination that is one (or a view of one) can never be right: a CompileError
    at the call on every target, before anything runs."""
    def whole(out, x):
        cuda.cp_async.copy(out, x, 16)

    def view(out, x):
        t = cuda.threadIdx.x
        cuda.cp_async.copy(out[t * 4:], x[t * 4:], 16)

    def row(out, x):
        cuda.cp_async.copy(out[1][4:], x[0], 16)

    for fn, sig, shown in ((whole, "void(float32[::1], float32[::1])", "out"),
                           (view, "void(float32[::1], float32[::1])", "out[t * 4:]"),
                           (row, "void(float32[:, ::1], float32[:, ::1])", "out[1][4:]")):
        message = _compile_error(fn, sig, cc=(8, 0))
        assert f"dst {shown} is in global memory (the kernel argument 'out')" in message, message
        assert "cuda.shared.array" in message
    gpunb.set_target("cpu")
    try:
        with pytest.raises(CompileError, match="is in global memory"):
            cuda.jit(view)[1, 1](np.zeros(64, np.float32), np.ones(64, np.float32))
    finally:
        gpunb.set_target(None)


def test_a_device_function_may_copy_into_the_shared_array_it_is_given():
    """A device function's parameter may be a shared array its caller passes: not refused."""
    @cuda.jit(device=True)
    def stage(dst, src):
        cuda.cp_async.copy(dst, src, 16)

    def kernel(out, x):
        s = cuda.shared.array(64, float32, alignment=128)
        stage(s[0:], x[0:])
        cuda.cp_async.wait_all()
        out[0] = s[0]

    ptx, _ = cuda.compile_ptx(kernel, "void(float32[::1], float32[::1])", cc=(8, 0))
    assert "cp.async" in ptx


def test_mbarriers_must_be_uint64_arrays():
    def floats(out):
        bars = cuda.shared.array(2, float32)
        cuda.mbarrier.init(bars, 0, 1)

    message = _compile_error(floats, "void(float32[:])")
    assert "1-d uint64 array of mbarriers" in message and "cuda.mbarrier.init(bars, 0, 1)" \
        in message


def test_features_above_the_architecture_name_what_they_need():
    def copy(x):
        s = cuda.shared.array(16, float32)
        cuda.cp_async.copy(s, x, 16)

    def try_wait(x):
        bars = cuda.shared.array(1, uint64)
        cuda.mbarrier.try_wait_parity(bars, 0, 0)

    assert "needs sm_80" in _compile_error(copy, "void(float32[:])", cc=(7, 5))
    assert "needs sm_90" in _compile_error(try_wait, "void(float32[:])", cc=(8, 0))


@pytest.mark.parametrize("cc, arch", [((8, 0), "sm_80"), ((9, 0), "sm_90")])
def test_ptx_is_accepted_by_ptxas(ptxas, cc, arch):
    ptx, _ = cuda.compile_ptx(staged_copy.py_func, "void(float32[:], float32[:], int64)", cc=cc)
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    ptxas(ptx, arch)
    ptx, _ = cuda.compile_ptx(phases.py_func, "void(int32[:], int64)", cc=cc)
    assert "mbarrier.init.shared.b64" in ptx and "mbarrier.arrive" in ptx
    ptxas(ptx, arch)
    ptx, _ = cuda.compile_ptx(tokens_and_counts.py_func, "void(int32[:])", cc=(9, 0))
    assert "mbarrier.try_wait" in ptx and "expect_tx" in ptx
    ptxas(ptx, "sm_90")
