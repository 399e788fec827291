"""What the CPU target checks and reports keeps working in work-group mode, the same as with
coroutines: bounds checks, debug raises (with the thread and block), raises that end one thread,
print order, atomics, lane ids, and the kernels that must stay coroutines (grid sync)."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda, int32
from gpunb.foundation.errors import LaunchError

TPB = 32


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def overrun(out, x):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    s[tid] = tid
    cuda.syncthreads()
    out[cuda.grid(1)] = s[TPB - 1 - tid] + x[0]  # out is one element short


def debug_raise(out):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    s[tid] = tid
    cuda.syncthreads()
    if s[tid] == 5 and cuda.blockIdx.x == 1:
        raise ValueError("thread five of block one")
    out[cuda.grid(1)] = s[tid]


def raise_ends_one_thread(out):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    s[tid] = 1
    cuda.syncthreads()
    if tid == 3:
        raise ValueError("only this thread stops")
    out[cuda.grid(1)] = s[TPB - 1 - tid]


def raise_before_barrier(out):
    tid = cuda.threadIdx.x
    if tid == 3:
        raise ValueError("stops before the barrier")
    cuda.syncthreads()
    out[tid] = 1


def printing(out):
    s = cuda.shared.array(4, int32)
    tid = cuda.threadIdx.x
    s[tid] = tid * 10
    cuda.syncthreads()
    print("block", cuda.blockIdx.x, "thread", tid, "sees", s[3 - tid])
    out[0] = 0


def counting(counter, x):
    s = cuda.shared.array(TPB, int32)
    tid = cuda.threadIdx.x
    s[tid] = x[cuda.grid(1)]
    cuda.syncthreads()
    if s[TPB - 1 - tid] % 2 == 0:
        cuda.atomic.add(counter, 0, 1)
    cuda.atomic.max(counter, 1, s[tid])


def lanes(out):
    i = cuda.grid(1)
    out[i, 0] = cuda.laneid
    out[i, 1] = cuda.activemask()
    out[i, 2] = cuda.lanemask_lt()


def lane_masks(out):
    i = cuda.grid(1)
    out[i, 0] = cuda.laneid
    out[i, 1] = cuda.lanemask_lt()


def grid_synced(out, staged):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    staged[i] = i
    g.sync()
    out[i] = staged[out.size - 1 - i]


def compile_both(fn, **options):
    return cuda.jit(**options)(fn), cuda.jit(cpu_mode="coroutine", **options)(fn)


def test_bounds_error_names_the_same_thread_in_both_modes():
    messages = []
    for kernel in compile_both(overrun, boundscheck=True):
        with pytest.raises(LaunchError) as info:
            kernel[2, TPB](np.zeros(2 * TPB - 1, np.int32), np.zeros(1, np.int32))
        messages.append(str(info.value))
        assert type(info.value).__name__ == "KernelIndexError"
    assert messages[0] == messages[1]
    assert f"thread ({TPB - 1}, 0, 0), block (1, 0, 0)" in messages[0]
    assert "index 63" in messages[0]


def test_debug_raise_reports_thread_and_block_in_both_modes():
    found = []
    kernels = compile_both(debug_raise, debug=True)
    for kernel in kernels:
        with pytest.raises(ValueError) as info:
            kernel[2, TPB](np.zeros(2 * TPB, np.int32))
        found.append(str(info.value))
    assert kernels[0].cpu_mode() == "workgroup"
    assert found[0] == found[1]
    assert "thread five of block one" in found[0]
    assert "(5, 0, 0)" in found[0] and "(1, 0, 0)" in found[0]


def test_raise_without_debug_ends_only_that_thread():
    outs = []
    kernels = compile_both(raise_ends_one_thread)
    for kernel in kernels:
        out = np.full(TPB, -1, np.int32)
        kernel[1, TPB](out)
        outs.append(out)
    assert kernels[0].cpu_mode() == "workgroup"
    expected = np.ones(TPB, np.int32)
    expected[3] = -1
    np.testing.assert_array_equal(outs[0], expected)
    np.testing.assert_array_equal(outs[1], expected)


def test_raise_before_a_barrier_keeps_coroutines():
    kernel, _ = compile_both(raise_before_barrier)
    out = np.zeros(TPB, np.int32)
    kernel[1, TPB](out)
    assert kernel.cpu_mode().startswith("coroutine: a raise")
    assert out[3] == 0 and out[4] == 1


def test_print_order_and_values_match(capfd):
    texts = []
    for kernel in compile_both(printing):
        kernel[2, 4](np.zeros(1, np.int32))
        texts.append(capfd.readouterr().out)
    assert texts[0] == texts[1]
    assert texts[0].splitlines()[:2] == ["block 0 thread 0 sees 30", "block 0 thread 1 sees 20"]
    assert len(texts[0].splitlines()) == 8


def test_atomics_in_both_modes():
    x = np.arange(TPB * 4, dtype=np.int32)
    results = []
    for kernel in compile_both(counting):
        counter = np.zeros(2, np.int32)
        kernel[4, TPB](counter, x)
        results.append(counter)
    np.testing.assert_array_equal(results[0], [TPB * 2, TPB * 4 - 1])
    np.testing.assert_array_equal(results[0], results[1])


def test_lane_ids_and_masks_without_warp_barriers():
    results = []
    kernels = compile_both(lanes)
    for kernel in kernels:
        out = np.zeros((48, 3), np.uint32)
        kernel[1, 48](out)
        results.append(out)
    # activemask() names the lanes converged at that point, which only a warp's coroutines
    # know: a kernel calling it keeps coroutines (laneid and the lane masks alone do not)
    assert kernels[0].cpu_mode().startswith("coroutine: a warp collective")
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0][:, 0], np.arange(48) % 32)
    assert results[0][40, 1] == 0xFFFF and results[0][3, 2] == 0b111


def test_lane_ids_and_lane_masks_run_as_work_group_loops():
    results = []
    kernels = compile_both(lane_masks)
    for kernel in kernels:
        out = np.zeros((48, 2), np.uint32)
        kernel[1, 48](out)
        results.append(out)
    assert kernels[0].cpu_mode() == "workgroup"
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0][:, 0], np.arange(48) % 32)
    np.testing.assert_array_equal(results[0][:, 1], (1 << (np.arange(48) % 32)) - 1)


def test_grid_sync_keeps_coroutines():
    kernel = cuda.jit(grid_synced)
    out = np.zeros(64, np.int64)
    kernel[2, 32](out, np.zeros(64, np.int64))
    np.testing.assert_array_equal(out, np.arange(64)[::-1])
    assert "grid" in kernel.cpu_mode()


def test_static_shared_memory_past_48_kib_is_refused_as_on_a_gpu():
    """A CUDA kernel may declare at most 48 KiB of shared memory statically (a GPU's loader
    refuses more): the CPU target says so too, so a kernel it runs also loads on a GPU."""
    from gpunb import float32

    @cuda.jit
    def too_big(out):
        s = cuda.shared.array(12800, float32)  # 51200 bytes
        s[cuda.threadIdx.x] = 1.0
        cuda.syncthreads()
        out[0] = s[0]

    @cuda.jit
    def at_the_limit(out):
        s = cuda.shared.array(12288, float32)  # 49152 bytes: allowed
        s[cuda.threadIdx.x] = 2.0
        cuda.syncthreads()
        out[0] = s[0]

    out = np.zeros(1, np.float32)
    with pytest.raises(LaunchError) as info:
        too_big[1, 32](out)
    text = str(info.value)
    assert "51200 bytes of static shared memory" in text and "at most 49152" in text
    assert "cuda.shared.array(0, dtype)" in text  # the hint: dynamic shared memory
    at_the_limit[1, 32](out)
    assert out[0] == 2.0
