"""Kernels with setmaxnreg are assembled whole-program by ptxas (backends/cuda/whole_program.py):
the driver's relocatable link drops setmaxnreg, a whole-program build keeps it (USETMAXREG in
the SASS); without a usable ptxas the driver links as before, with a PerformanceWarning."""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
import pytest

from gpunb import cuda, int32
from gpunb.backends.cuda import whole_program
from gpunb.backends.cuda.toolchain import find_tool
from gpunb.foundation.errors import PerformanceWarning


@cuda.jit(launch_bounds=(256, 1))
def give_registers(out):
    if cuda.threadIdx.x < 128:
        cuda.setmaxnreg_dec(40)
    else:
        cuda.setmaxnreg_inc(232)
    out[cuda.threadIdx.x] = cuda.threadIdx.x * 3


@cuda.jit
def plain(out):
    out[cuda.threadIdx.x] = cuda.threadIdx.x


def _ptx(fn, launch_bounds=(256, 1)) -> str:
    ptx, _ = cuda.compile_ptx(fn.py_func, (int32[::1],), cc=(9, 0, "a"),
                              launch_bounds=launch_bounds)
    return ptx


def _sass(cubin: bytes) -> str:
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        pytest.skip("nvdisasm not found: pip install nvidia-cuda-nvdisasm")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True,
                              check=True).stdout


def _release():
    ptxas = find_tool("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not found: pip install nvidia-cuda-nvcc")
    return whole_program.ptxas_release(ptxas)


def test_only_setmaxnreg_kernels_need_a_whole_program_build():
    assert whole_program.needs_whole_program(_ptx(give_registers))
    assert not whole_program.needs_whole_program(_ptx(plain))
    # a symbol that merely holds the word is not the instruction
    assert not whole_program.needs_whole_program(_ptx(plain).replace("plain", "setmaxnreg_x"))


def test_a_whole_program_build_keeps_setmaxnreg_where_a_relocatable_one_drops_it():
    from gpunb.backends.cuda import sass

    release = _release()
    ptx = _ptx(give_registers)
    cubin, log = whole_program.assemble(ptx, release)
    assert _sass(cubin).count("USETMAXREG") == 2, log
    relocatable, log = sass.assemble(ptx, "sm_90a", ("-c",))  # what the driver's linker does
    assert "USETMAXREG" not in _sass(relocatable)
    assert "C7504" in log or "setmaxnreg" in log  # ptxas says it ignored them


def test_without_a_usable_ptxas_the_driver_links_and_a_warning_says_what_is_lost():
    release = _release()
    older_driver = (release[0] - 1, 0)  # a ptxas newer than the driver: its cubin would not load
    with pytest.warns(PerformanceWarning, match=r"setmaxnreg.*no ptxas of CUDA \d+\.x or older"):
        assert whole_program.assemble(_ptx(give_registers), older_driver) is None
    with pytest.warns(PerformanceWarning, match="names no .target"):
        assert whole_program.assemble(_ptx(give_registers).replace(".target", "//"),
                                      release) is None
    with pytest.warns(PerformanceWarning, match="ptxas could not assemble it"):
        assert whole_program.assemble(_ptx(give_registers).replace(
            "setmaxnreg.inc.sync.aligned.u32", "setmaxnreg.bogus"), release) is None


def test_setmaxnreg_without_launch_bounds_is_ignored_by_ptxas_and_a_warning_says_why():
    release = _release()
    with pytest.warns(PerformanceWarning, match=r"ptxas ignored this kernel's setmaxnreg: "
                                                r"unable to determine register count at entry.*"
                                                r"launch_bounds=\(384, 1\)"):
        cubin, _ = whole_program.assemble(_ptx(give_registers, launch_bounds=None), release)
    assert "USETMAXREG" not in _sass(cubin)


def test_the_driver_jit_options_become_ptxas_flags():
    assert whole_program.ptxas_options(64, True, False, True) == ("--maxrregcount=64",
                                                                 "-lineinfo")
    assert whole_program.ptxas_options(None, False, True, True) == ("-g", "-O0")
    assert whole_program.ptxas_options(None, False, False, False) == ("-O0",)


@pytest.mark.gpu
def test_a_setmaxnreg_kernel_launches_from_its_whole_program_cubin():
    if cuda.get_current_device().compute_capability != (9, 0):
        pytest.skip("setmaxnreg needs sm_90a (H100, H200)")
    out = cuda.to_device(np.zeros(256, np.int32))
    give_registers[1, 256](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(256) * 3)
    spec, _, _ = give_registers.specialization_for_launch((out,))
    assert _sass(spec.artifact.binary).count("USETMAXREG") == 2  # the cubin launched
