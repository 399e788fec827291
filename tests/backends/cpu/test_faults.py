"""Kernel code that would crash the process on the CPU target becomes a gpunb error instead.

Deep recursion, huge frames and stores far out of bounds (bounds checks off) run in a child
process: it must exit normally (status 0) having caught gpunb.KernelFaultError, whose message
names the kernel, the line, the block (and the thread where it is known), and it must launch
again afterwards. Local arrays larger than a GPU thread may have are refused at compile time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))

KERNELS = textwrap.dedent('''
    import threading
    import numpy as np
    import gpunb
    from gpunb import cuda
    from gpunb.cuda import float64
    gpunb.set_target("cpu")

    @cuda.jit(device=True)
    def deep(n):
        if n <= 0:
            return 0
        x = deep(n - 1)
        return (x * x + n) % 1000003

    @cuda.jit
    def recurse(o, n):
        o[cuda.grid(1)] = deep(n)

    @cuda.jit(device=True)
    def framey(n):
        a = cuda.local.array(8192, float64)
        a[n % 8192] = n
        if n <= 0:
            return a[0]
        return framey(n - 1) + a[(n * 7) % 8192]

    @cuda.jit
    def big_frames(o, n):
        o[0] = framey(n)

    @cuda.jit(boundscheck=False)
    def far_store(o):
        i = cuda.grid(1)
        if i == 5:
            o[10**9] = 1

    @cuda.jit(boundscheck=False, cpu_mode="coroutine")
    def far_store_coroutine(o):
        i = cuda.grid(1)
        if i == 37:
            o[10**9] = 1
        cuda.syncthreads()

    @cuda.jit
    def add_one(o):
        i = cuda.grid(1)
        if i < o.size:
            o[i] += 1

    def line_of(text):
        import inspect
        return next(i for i, line in enumerate(open(__file__), 1) if text in line)
''')


def _run(case: str, extra_env: dict | None = None) -> str:
    """Run `case` (code after KERNELS) in a child; returns its stdout (status 0 required)."""
    script = KERNELS + textwrap.dedent(case) + textwrap.dedent('''
        x = np.zeros(1 << 16)
        add_one[256, 256](x)  # the process and the pool are fine
        assert (x == 1).all()
        print("next launch ok")
    ''')
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gpunb_fault_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(script)
    try:
        env = dict(os.environ, PYTHONPATH=REPO, GPUNB_NOTICES="0", **(extra_env or {}))
        done = subprocess.run([sys.executable, path], capture_output=True, text=True,
                              timeout=300, env=env)
    finally:
        os.unlink(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "next launch ok" in done.stdout
    assert "stack frame size" not in done.stderr  # LLVM's own warning never reaches the user
    return done.stdout


def test_recursion_a_million_deep_is_a_stack_overflow_error():
    out = _run('''
        try:
            recurse[1, 1](np.zeros(1, np.int64), 10**6)
        except gpunb.KernelFaultError as exc:
            print(exc)
    ''')
    assert "in GPU function 'deep': stack overflow" in out
    assert "kernel 'recurse' (thread (0, 0, 0), block (0, 0, 0))" in out
    assert "abandoned" in out and "turn the recursion into a loop" in out
    assert "line 11" in out or "line 12" in out or "line 13" in out  # deep's body


def test_recursion_deep_in_a_pool_worker():
    out = _run('''
        try:
            recurse[64, 128](np.zeros(64 * 128, np.int64), 10**6)
        except gpunb.KernelFaultError as exc:
            print(exc)
    ''')
    assert "stack overflow" in out and "kernel 'recurse' (thread (" in out


def test_large_frames_in_a_recursion_overflow_cleanly():
    out = _run('''
        try:
            big_frames[1, 1](np.zeros(1), 100000)
        except gpunb.KernelFaultError as exc:
            print(exc)
    ''')
    assert "in GPU function 'framey': stack overflow" in out
    assert "a = cuda.local.array(8192, float64)" in out or "def framey" in out or \
        "a[n % 8192] = n" in out


def test_out_of_bounds_store_without_bounds_checks_names_the_line():
    out = _run('''
        try:
            far_store[1, 32](np.zeros(4, np.int64))
        except gpunb.KernelFaultError as exc:
            print(exc)
    ''')
    assert "in GPU function 'far_store': invalid memory access at address 0x" in out
    assert "past the end of argument 0 (a int64 array of 4 elements: element 1,000,000,000)" in out
    assert "block (0, 0, 0)" in out and "thread not known" in out
    assert "line 58, column 9:\n    o[10**9] = 1" in out or "o[10**9] = 1" in out


def test_out_of_bounds_store_in_a_coroutine_names_the_thread():
    out = _run('''
        try:
            far_store_coroutine[2, 64](np.zeros(4, np.int64))
        except gpunb.KernelFaultError as exc:
            print(exc)
    ''')
    assert "in GPU function 'far_store_coroutine': invalid memory access" in out
    assert "(thread (37, 0, 0), block (0, 0, 0))" in out
    assert "o[10**9] = 1" in out


def test_process_wide_bounds_checks_off_too():
    out = _run('''
        @cuda.jit
        def store(o, stride):
            i = cuda.grid(1)
            o[i * stride] = 1

        try:
            store[1, 32](np.zeros(4), 10**9)
        except gpunb.KernelFaultError as exc:
            print(exc)
    ''', {"GPUNB_BOUNDSCHECK": "0"})
    assert "invalid memory access" in out and "o[i * stride] = 1" in out
    assert "element 1,000,000,000" in out  # thread 1's


def test_a_fault_outside_kernel_code_still_kills_the_process():
    """The guard handles faults of guarded launches only: anything else crashes as before."""
    code = textwrap.dedent('''
        import ctypes, numpy as np, gpunb
        from gpunb import cuda
        gpunb.set_target("cpu")
        @cuda.jit
        def add_one(o):
            o[cuda.grid(1)] += 1
        add_one[1, 4](np.zeros(4))
        ctypes.string_at(0)
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == -11 or done.returncode == 139 or \
        "Segmentation fault" in done.stderr, (done.returncode, done.stderr)


# ---- local arrays larger than a GPU thread may have ----------------------------------------

@pytest.fixture
def cpu():
    import gpunb

    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@pytest.mark.parametrize("elements", [1 << 17, 1 << 20, 1 << 28])
def test_local_arrays_over_cudas_limit_are_compile_errors(cpu, elements):
    import gpunb
    from gpunb import cuda
    from gpunb.cuda import float64

    @cuda.jit
    def big(o):
        a = cuda.local.array(elements, float64)
        a[0] = 1
        o[0] = a[0]

    with pytest.raises(gpunb.CompileError) as info:
        big[1, 1](np.zeros(1))
    message = str(info.value)
    assert "is larger than a GPU thread's local memory (512 KiB per thread, CUDA's limit)" \
        in message
    assert "a = cuda.local.array(elements, float64)" in message and "^" in message


def test_local_array_at_the_limit_compiles_and_runs(cpu):
    from gpunb import cuda
    from gpunb.cuda import float64

    @cuda.jit
    def at_limit(o):
        a = cuda.local.array(1 << 16, float64)  # 512 KiB exactly
        for k in range(a.size):
            a[k] = k
        o[0] = a[a.size - 1]

    o = np.zeros(1)
    at_limit[1, 1](o)
    assert o[0] == (1 << 16) - 1


def test_the_limit_holds_on_the_gpu_target_too():
    from gpunb import cuda
    from gpunb.cuda import float32
    from gpunb.foundation.errors import CompileError

    def body(o):
        a = cuda.local.array((512, 512), float32)  # 1 MiB
        o[0] = a[0, 0]

    with pytest.raises(CompileError, match="512 KiB per thread"):
        cuda.compile_ptx(body, "void(float32[:])")
