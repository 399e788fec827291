"""The preload (gpunb/backends/cuda/preload.py): once cuInit has found a GPU, a thread imports
the compile path and warms LLVM's NVPTX code generator while the driver makes the context.

Each case runs in a fresh process (the preload is once per process), on the runtime tests'
simulated driver presented as cuda.bindings' (no GPU here): the thread's imports and PTX are
real; a gpu-marked case checks it on a real context.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))

PRELUDE = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, os.path.join(ROOT, "tests", "runtime"))
    import numpy as np
    import gpunb
    from gpunb import cuda
    from gpunb.backends.cuda import driver, launch, preload
    from fake_cuda_driver import FakeDriver

    fake = FakeDriver()
    fake.__name__ = "cuda.bindings.driver"  # what preload starts for (the real bindings)
    launch.driver_calls.trampolines = None  # no trampoline into a libcuda that is not there
    driver.state = driver.DriverState(cu=fake)
    gpunb.set_target("cuda")

    def kernel_source():
        @cuda.jit
        def scale(out, x, a):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = x[i] * a
        return scale

    SIG = "void(float32[::1], float32[::1], float32)"
""")


def _child(body: str, **env) -> list[str]:
    code = f"ROOT = {ROOT!r}\n" + PRELUDE + textwrap.dedent(body)
    environment = dict(os.environ, GPUNB_CACHE="0", GPUNB_NOTICES="0", **env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


def test_the_thread_imports_the_first_launchs_modules_and_warms_ptx():
    out = _child("""
        driver.init()
        assert preload.wait(240)
        print(preload.done)
        x = cuda.to_device(np.arange(64, dtype=np.float32))
        y = cuda.device_array(64, np.float32)
        scale = kernel_source()  # decorated: nothing compiled yet
        before = set(sys.modules)
        scale[1, 64](y, x, np.float32(3))  # compiled, loaded, launched (simulated)
        assert fake.launches
        print(sorted(m for m in set(sys.modules) - before
                     if m.startswith(("gpunb.", "llvmlite"))))
    """)
    assert out[-2] == "['imports', 'ptx sm_90']"
    # the first launch compiled without importing any of the compiler itself: MODULES is whole
    assert out[-1] == "[]"


def test_a_compile_racing_the_thread_gives_the_same_ptx():
    body = """
        driver.init()  # the thread starts; the compile below runs at once, beside it
        ptx, _ = cuda.compile_ptx(kernel_source(), SIG)
        preload.wait(240)
        import hashlib
        print(hashlib.sha256(ptx.encode()).hexdigest(), preload.done[:1])
    """
    raced = [_child(body)[-1] for _ in range(3)]
    alone = _child(body, GPUNB_WARMUP="0")[-1]
    assert alone.endswith("[]")
    assert {line.split()[0] for line in raced} == {alone.split()[0]}
    assert all(line.endswith("['imports']") for line in raced)


def test_turned_off_nothing_starts():
    out = _child("""
        driver.init()
        print(preload._thread, preload.done, "llvmlite.binding" in sys.modules)
    """, GPUNB_WARMUP="0")
    assert out[-1] == "None [] False"


def test_a_simulated_driver_is_not_preloaded_for():
    out = _child("""
        fake.__name__ = "fake_cuda_driver"
        driver.init()
        print(preload._thread, preload.done)
    """)
    assert out[-1] == "None []"


def test_without_a_gpu_the_thread_imports_nothing():
    out = _child("""
        driver.state = driver.DriverState()  # the real bindings: cuInit fails without a GPU
        print(driver.is_available())
        preload.wait(60)
        print(preload.done, "llvmlite.binding" in sys.modules)
    """)
    if out[-2] == "True":
        pytest.skip("this machine has a GPU")
    assert out[-1] == "[] False"


def test_a_fork_during_the_preload_waits_for_it_and_the_child_compiles():
    out = _child("""
        driver.init()
        pid = os.fork()
        if pid == 0:
            ptx, _ = cuda.compile_ptx(kernel_source(), SIG)
            os._exit(0 if ".entry" in ptx else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), preload.done)
    """)
    assert out[-1] == "0 ['imports', 'ptx sm_90']"


def test_the_interpreter_exits_cleanly_while_the_thread_runs():
    out = _child("""
        driver.init()
        print("leaving")
    """)
    assert out[-1] == "leaving"


@pytest.mark.gpu
def test_on_a_gpu_the_context_hides_the_preload():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import gpunb
        from gpunb import cuda
        from gpunb.backends.cuda import preload
        gpunb.set_target("cuda")
        x = cuda.to_device(np.ones(32, np.float32))
        assert preload.wait(60)
        print(preload.done)
        arch = "sm_%d%d" % cuda.get_current_device().compute_capability
        print(arch)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, GPUNB_CACHE="0"), timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    done, arch = proc.stdout.strip().splitlines()[-2:]
    assert done == f"['imports', 'ptx {arch}']"
