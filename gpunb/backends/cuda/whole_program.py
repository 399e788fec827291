"""PTX that needs ptxas's whole-program mode: kernels that use setmaxnreg.

The driver's JIT linker (modules.link_ptx) compiles PTX as a relocatable unit, and ptxas then
drops setmaxnreg ("C7504: 'setmaxnreg' ignored to maintain compatibility across compilation
units"; nvJitLink does the same): a warp-specialised kernel whose producer warpgroup gives its
registers to the consumers keeps the kernel-wide cap (168 registers at 384 threads), and
consumers that need more spill and have their wgmma serialised. Measured on an H200: a GEMM with
128 x 320 tiles (160 accumulator registers per consumer thread) ran at 48 TFLOP/s linked by the
driver and at 643 assembled whole-program (benchmarks/RESULTS.md, seventh session).

Such a kernel is a single PTX module (foreign code goes through linker.py), so ptxas - the
CUDA toolkit's or the nvidia-cuda-nvcc wheel's, found by cuda-pathfinder - assembles it as a
whole program here. Without a usable ptxas (none found, one of a newer major version than the
driver, which could not load its cubin, or one that rejects the PTX) the driver's linker builds
it as before and a PerformanceWarning says what was lost.
"""

from __future__ import annotations

import functools
import re
import subprocess
import warnings

from gpunb.foundation.errors import PerformanceWarning, ToolchainError

_TARGET = re.compile(r"^\.target\s+(sm_\d+[af]?)", re.MULTILINE)
_INSTRUCTION = re.compile(r"^\s*setmaxnreg\.", re.MULTILINE)
_RELEASE = re.compile(r"release (\d+)\.(\d+)")
_IGNORED = re.compile(r"'setmaxnreg' ignored[;,]?\s*(.*)")


def needs_whole_program(ptx: str) -> bool:
    """Whether the driver's relocatable build would lose something of this PTX (a setmaxnreg
    instruction; a symbol that merely contains the word does not count)."""
    return "setmaxnreg" in ptx and _INSTRUCTION.search(ptx) is not None


@functools.cache
def ptxas_release(ptxas: str) -> tuple | None:
    """(major, minor) of a ptxas binary's CUDA release, or None when it does not say."""
    try:
        proc = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _RELEASE.search(proc.stdout)
    return (int(found.group(1)), int(found.group(2))) if found else None


def usable_ptxas(driver_release: tuple) -> str | None:
    """A ptxas whose cubins this driver loads (its major release at most the driver's: CUDA's
    minor-version compatibility), or None."""
    from gpunb.backends.cuda.toolchain import find_tool

    ptxas = find_tool("ptxas")
    if ptxas is None:
        return None
    release = ptxas_release(ptxas)
    if release is None or release[0] > driver_release[0]:
        return None
    return ptxas


def ptxas_options(max_registers: int | None, lineinfo: bool, debug: bool, opt: bool) -> tuple:
    """The driver JIT options of modules.link_ptx as ptxas flags."""
    extra = []
    if max_registers:
        extra.append(f"--maxrregcount={int(max_registers)}")
    if lineinfo:
        extra.append("-lineinfo")
    if debug:
        extra += ["-g", "-O0"]
    elif not opt:
        extra.append("-O0")
    return tuple(extra)


def assemble(ptx: str, driver_release: tuple, *, max_registers: int | None = None,
             lineinfo: bool = False, debug: bool = False, opt: bool = True) -> tuple | None:
    """(cubin, ptxas's log) of the PTX assembled whole-program for its `.target`, or None (with
    a PerformanceWarning) when no usable ptxas does it: the caller links it with the driver."""
    from gpunb.backends.cuda import sass

    found = _TARGET.search(ptx)
    if found is None:
        warn_lost("its PTX names no .target architecture for ptxas")
        return None
    ptxas = usable_ptxas(driver_release)
    if ptxas is None:
        warn_lost(f"no ptxas of CUDA {driver_release[0]}.x or older was found (pip install "
                  "'gpunb[cuda]' brings one)")
        return None
    try:
        cubin, log = sass.assemble(ptx, found.group(1), ptxas_options(
            max_registers, lineinfo, debug, opt), ptxas=ptxas)
    except ToolchainError as exc:
        warn_lost(f"ptxas could not assemble it ({str(exc).splitlines()[-1].strip()})")
        return None
    ignored = _IGNORED.search(log)
    if ignored:  # e.g. C7508: no launch bounds, so no register count at entry to start from
        warnings.warn(PerformanceWarning(
            f"ptxas ignored this kernel's setmaxnreg: {ignored.group(1).strip()}; give the "
            "kernel its block size, e.g. @cuda.jit(launch_bounds=(384, 1)) for 384 threads "
            "and one block per SM"), stacklevel=4)
    return cubin, log


def warn_lost(why: str) -> None:
    """The PerformanceWarning of a setmaxnreg kernel the driver's linker builds, saying why."""
    warnings.warn(PerformanceWarning(
        f"this kernel uses setmaxnreg, which only a whole-program ptxas build honours, and {why}:"
        " the driver's linker builds it and drops setmaxnreg (every warp keeps the kernel-wide "
        "register cap; a warpgroup that needs more spills)"), stacklevel=4)
