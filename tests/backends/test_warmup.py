"""The warm-up thread of a process's first compile (gpunb/backends/warmup.py): it loads LLVM's
library (and on a GPU starts the driver's linker) once, never for a process that compiles
nothing, and the compile's results are the same with and without it. Each case runs in a fresh
process: the warm-up is once per process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import gpunb
    from gpunb import cuda
    from gpunb.backends import warmup

    gpunb.set_target(sys.argv[1])
    if sys.argv[1] == "cuda":
        cuda.current_context()

    @cuda.jit
    def scale(out, x, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a

    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    before = list(warmup.done)
    scale[1, 64](out, x, np.float32(3))
    assert np.array_equal(out, x * 3), out
    for _ in range(200):  # the thread is a daemon: give it the time its work takes
        if len(warmup.done) >= len(warmup._started):
            break
        time.sleep(0.05)
    scale[1, 64](out, x, np.float32(2))  # a second compile starts nothing new
    print(before, sorted(warmup._started), sorted(warmup.done))
""")


def _run(target: str, **env) -> str:
    environment = dict(os.environ, GPUNB_CACHE="0", **env)
    proc = subprocess.run([sys.executable, "-c", CHILD, target], capture_output=True, text=True,
                          env=environment, timeout=600, cwd=os.getcwd())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_the_first_compile_loads_llvms_library_meanwhile():
    assert _run("cpu") == "[] ['library'] ['library']"


def test_turned_off_it_does_nothing():
    assert _run("cpu", GPUNB_WARMUP="0") == "[] [] []"


def test_a_process_that_compiles_nothing_starts_nothing():
    code = ("import gpunb; from gpunb import cuda; from gpunb.backends import warmup\n"
            "@cuda.jit\ndef k(x):\n    x[0] = 1\n"
            "print(warmup._started, warmup.done)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "{} []"


@pytest.mark.gpu
def test_on_a_gpu_the_first_compile_also_starts_the_driver_linker():
    assert _run("cuda") == "[] ['library', 'linker'] ['library', 'linker']"
