"""CPU-target specifics: divergent barriers reported (not hung) with the barrier's line, bounds
checking with debug=True / GPUNB_BOUNDSCHECK naming kernel, array, index, thread, block and line,
threads that exit before a barrier, parallel blocks, target selection, host inspection output."""

import inspect

import numpy as np
import pytest

import gpunb
from gpunb import cuda, float32

TPB = 64


def _line_of(func, needle: str) -> int:
    lines, first = inspect.getsourcelines(getattr(func, "py_func", func))
    return first + next(i for i, text in enumerate(lines) if needle in text)


# ---- divergent barriers ---------------------------------------------------------------------

@cuda.jit
def divergent_barrier(out):
    tid = cuda.threadIdx.x
    if tid < 16:
        cuda.syncthreads()  # only a quarter of the block gets here
    out[tid] = tid
    cuda.syncthreads()  # ... while the others wait here


@cuda.jit
def barriers_in_both_branches(out):
    tid = cuda.threadIdx.x
    if tid % 2 == 0:
        cuda.syncthreads()  # even threads wait here
    else:
        cuda.syncthreads()  # odd threads wait here: a different barrier
    out[tid] = tid


@cuda.jit
def divergent_in_loop(out, n):
    tid = cuda.threadIdx.x
    for k in range(n):
        if tid != 5 or k < 2:
            cuda.syncthreads_count(tid > k)  # thread 5 stops arriving in round 2
    out[tid] = tid
    cuda.syncthreads()


@pytest.mark.parametrize("kernel,needle,args", [
    (divergent_barrier, "only a quarter", ()),
    (barriers_in_both_branches, "even threads wait here", ()),
    (divergent_in_loop, "thread 5 stops", (4,)),
], ids=["if", "both-branches", "loop"])
def test_divergent_barrier_is_reported_not_hung(target, run_with_timeout, kernel, needle, args):
    if target != "cpu":
        pytest.skip("a divergent barrier deadlocks (or is undefined) on a GPU")
    out = np.zeros(TPB, np.int64)
    with pytest.raises(gpunb.LaunchError) as info:
        run_with_timeout(lambda: kernel[2, TPB](out, *args), 60)
    err = info.value
    line = _line_of(kernel, needle)
    assert err.loc is not None and err.loc.line == line, str(err)
    assert f"line {line}" in str(err)
    assert "syncthreads" in str(err) and kernel.__name__ in str(err)
    assert err.hint


@cuda.jit
def exit_before_barrier(out, x):
    # threads past the end leave early: the barrier waits only for the threads still running
    s = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.size:
        return
    s[tid] = x[i]
    cuda.syncthreads()
    n = min(TPB, x.size - cuda.blockIdx.x * TPB)
    out[i] = s[n - 1 - tid]


def test_threads_exiting_before_a_barrier(target, run_with_timeout):
    # the pattern of numba's early-return fast_matmul: GPUs release a barrier once every thread
    # still running has arrived, and so does the CPU target
    x = np.arange(150, dtype=np.float32)
    out = np.zeros_like(x)
    run_with_timeout(lambda: exit_before_barrier[3, TPB](out, x), 60)
    expected = np.concatenate([x[:64][::-1], x[64:128][::-1], x[128:][::-1]])
    np.testing.assert_array_equal(out, expected)


# ---- bounds checking ------------------------------------------------------------------------

@cuda.jit(debug=True)
def off_by_one(out, values):
    i = cuda.grid(1)
    out[i] = values[i + 1] * 2  # reads one past the end in the last thread


@cuda.jit(debug=True)
def bad_2d(grid2d):
    i, j = cuda.grid(2)
    grid2d[i, j - 1] = 1.0  # j - 1 == -1 wraps around like Python; -9 is out of bounds
    grid2d[i, j - 9] = 2.0


@cuda.jit(debug=True)
def bad_store(out):
    out[cuda.grid(1) * 3] = 1


@cuda.jit(debug=True)
def bad_atomic(out):
    cuda.atomic.add(out, cuda.grid(1) + 4, 1)


def test_boundscheck_read(target):
    if target != "cpu":
        pytest.skip("bounds checking is a CPU-target feature")
    values = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(IndexError) as info:
        off_by_one[2, 32](out, values)
    err = info.value
    assert isinstance(err, gpunb.LaunchError)
    text = str(err)
    line = _line_of(off_by_one, "reads one past the end")
    assert "off_by_one" in text and "'values'" in text and "index 64" in text, text
    assert "extent 64" in text
    assert "thread (31, 0, 0)" in text and "block (1, 0, 0)" in text, text
    assert err.loc.line == line and f"line {line}" in text


def test_boundscheck_2d_axis_and_negative(target):
    if target != "cpu":
        pytest.skip("bounds checking is a CPU-target feature")
    g = np.zeros((4, 8), np.float64)
    with pytest.raises(IndexError) as info:
        bad_2d[(1, 1), (4, 8)](g)
    text = str(info.value)
    assert "'grid2d'" in text and "index -9" in text and "axis 1" in text, text
    assert info.value.loc.line == _line_of(bad_2d, "grid2d[i, j - 9]")
    assert "thread (" in text and ", 0, 0)" in text and "block (0, 0, 0)" in text


@pytest.mark.parametrize("kernel,needle", [(bad_store, "out[cuda.grid(1) * 3]"),
                                           (bad_atomic, "cuda.atomic.add")])
def test_boundscheck_stores_and_atomics(target, kernel, needle):
    if target != "cpu":
        pytest.skip("bounds checking is a CPU-target feature")
    out = np.zeros(8, np.int64)
    with pytest.raises(IndexError) as info:
        kernel[1, 8](out)
    assert "'out'" in str(info.value)
    assert info.value.loc.line == _line_of(kernel, needle)


def test_boundscheck_passes_valid_kernels(target):
    values = np.arange(65, dtype=np.float32)
    out = np.zeros(64, np.float32)
    off_by_one[2, 32](out, values)
    np.testing.assert_array_equal(out, values[1:] * 2)


def test_boundscheck_environment_variable(run_script):
    proc = run_script("""
        import os
        os.environ["GPUNB_BOUNDSCHECK"] = "1"
        import numpy as np, gpunb
        from gpunb import cuda
        gpunb.set_target("cpu")

        @cuda.jit
        def k(out):
            out[cuda.grid(1) + 1] = 1

        try:
            k[1, 4](np.zeros(4, np.int64))
        except IndexError as exc:
            print("IndexError", "'out'" in str(exc), "index 4" in str(exc))
    """)
    assert proc.stdout.strip() == "IndexError True True", proc.stdout + proc.stderr[-2000:]


# ---- parallel blocks, target selection, inspection -------------------------------------------

@cuda.jit
def block_sums(out, x):
    s = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    s[tid] = x[cuda.grid(1)]
    cuda.syncthreads()
    if tid == 0:
        acc = 0.0
        for k in range(TPB):
            acc += s[k]
        out[cuda.blockIdx.x] = acc
        cuda.atomic.add(out, out.size - 1, 1.0)


@pytest.mark.parametrize("threads", ["1", "2", "7"])
def test_blocks_in_parallel_host_threads(target, monkeypatch, threads):
    monkeypatch.setenv("GPUNB_CPU_THREADS", threads)
    blocks = 97
    x = np.arange(blocks * TPB, dtype=np.float32) % 17
    out = np.zeros(blocks + 1, np.float32)
    block_sums[blocks, TPB](out, x)
    np.testing.assert_array_equal(out[:-1], x.reshape(blocks, TPB).sum(axis=1))
    assert out[-1] == blocks


@cuda.jit(target="cpu")
def pinned_to_cpu(out):
    out[cuda.grid(1)] = cuda.grid(1)


def test_jit_target_cpu_option():
    out = np.zeros(8, np.int64)
    pinned_to_cpu[2, 4](out)
    np.testing.assert_array_equal(out, np.arange(8))
    assert all(t == "cpu" for t, _ in pinned_to_cpu.specializations)


def test_set_target_cpu_process_wide():
    gpunb.set_target("cpu")
    try:
        out = np.zeros(8, np.int64)
        pinned_to_cpu[1, 8](out)
        assert out.tolist() == list(range(8))
    finally:
        gpunb.set_target(None)


def test_environment_target_cpu(run_script):
    proc = run_script("""
        import os
        os.environ["GPUNB_TARGET"] = "cpu"
        import numpy as np
        from gpunb import cuda

        @cuda.jit
        def k(out):
            out[cuda.grid(1)] = 7

        out = np.zeros(4, np.int64)
        k[1, 4](out)
        print(out.tolist(), [t for t, _ in k.specializations])
    """)
    assert proc.stdout.strip() == "[7, 7, 7, 7] ['cpu']", proc.stdout + proc.stderr[-2000:]


def test_inspect_llvm_and_asm_for_cpu(target):
    if target != "cpu":
        pytest.skip("host IR and assembly are CPU-target outputs")
    x = np.ones(TPB, np.float32)
    block_sums[1, TPB](np.zeros(2, np.float32), x)
    sig = block_sums.signatures[0]
    llvm_ir = block_sums.inspect_host_llvm(sig)
    asm = block_sums.inspect_host_asm(sig)
    import llvmlite.binding as llvm

    assert llvm.get_process_triple().split("-")[0] in llvm_ir
    assert "nvptx" not in llvm_ir
    assert asm.strip() and ".entry" not in asm  # host assembly, not PTX
    # numba-cuda's inspect_llvm / inspect_asm: what a GPU runs, also on the CPU target
    assert "nvptx" in block_sums.inspect_llvm(sig) and ".entry" in block_sums.inspect_asm(sig)
    spec = block_sums.specializations[("cpu", sig)]
    assert spec.artifact.uses_barriers  # syncthreads
    assert block_sums.cpu_mode(sig) == "workgroup"  # top-level barriers: work-group loops
    pinned_to_cpu[1, 1](np.zeros(1, np.int64))
    plain = next(iter(pinned_to_cpu.specializations.values()))
    assert not plain.artifact.uses_barriers  # no barrier: a plain loop over threads
    assert plain.artifact.cpu_mode == "workgroup"


def test_freed_kernels_do_not_break_later_compiles(run_script):
    # regression: MCJIT freed the shared host target machine with the first collected kernel
    proc = run_script("""
        import gc
        import numpy as np, gpunb
        from gpunb import cuda
        gpunb.set_target("cpu")

        def make(k):
            @cuda.jit
            def fill(out):
                out[cuda.grid(1)] = k
            return fill

        for k in range(4):
            out = np.zeros(4, np.int64)
            make(k)[1, 4](out)
            gc.collect()
            assert out.tolist() == [k] * 4
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_float64_to_float16_rounds_once(run_script):
    # LLVM lowers double -> half to a libgcc call on x86; unresolved, the kernel jumped to
    # address 0 (a segfault). A fresh process: the conversion must work without help from an
    # earlier import, and round like numpy (directly, not through float32: the last value is a
    # float32 tie that rounds the other way)
    proc = run_script("""
        import numpy as np
        import gpunb
        from gpunb import cuda
        from numpy import float16
        gpunb.set_target("cpu")

        @cuda.jit
        def to_half(out, x):
            i = cuda.grid(1)
            if i < x.size:
                out[i] = float16(x[i])

        x = np.array([0.1, -2.5e-8, 7e4, 1e5, np.nan, 1 + 2.0**-11 + 2.0**-40])
        out = np.zeros(x.size, np.float16)
        to_half[1, 32](out, x)
        np.testing.assert_array_equal(out, x.astype(np.float16))
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


PTX_CASES = [
    (exit_before_barrier, "void(float32[::1], float32[::1])"),
    (block_sums, "void(float32[::1], float32[::1])"),
    (off_by_one, "void(float32[::1], float32[::1])"),
    (bad_2d, "void(float64[:, ::1])"),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[k.__name__ for k, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    check_ptx(kernel, sig)
