"""CUDA C/C++ (`cuda.CUSource`, `.cu` files) -> PTX or LTO-IR with NVRTC, from NVIDIA's pip wheel
(nvidia-cuda-nvrtc, loaded by cuda.bindings through cuda-pathfinder) or a CUDA install.

Headers: the CUDA runtime's include directory (cuda_fp16.h, ...) and CCCL's are found with
cuda-pathfinder; a file's own directory and GPUNB_NVRTC_INCLUDE (a path list) are searched too.
Needs no GPU. A source that does not compile raises CompileError with NVRTC's log.
"""

from __future__ import annotations

import functools

from gpunb.foundation import config
from gpunb.foundation.errors import CompileError, ToolchainError

_INSTALL_HINT = "pip install nvidia-cuda-nvrtc (the NVRTC wheel matching cuda-bindings), or " \
                "install the CUDA toolkit"


def _nvrtc():
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - a missing library surfaces in many forms
        raise ToolchainError(f"NVRTC (CUDA's runtime compiler for .cu sources) is not "
                             f"available: {exc}; {_INSTALL_HINT}") from None
    return nvrtc


def version() -> tuple:
    nvrtc = _nvrtc()
    _, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


@functools.cache
def default_include_dirs() -> tuple:
    """The CUDA headers NVRTC compiles with (found by backends/cuda/toolchain.py)."""
    from gpunb.backends.cuda.toolchain import header_directories

    return header_directories()


def compile_source(source: str, name: str, arch: tuple, *, lto: bool = False,
                   include_dirs: tuple = ()) -> tuple:
    """(kind, code) for a CUDA C++ source: ("ptx", text) or, with lto, ("ltoir", bytes).
    Device functions are compiled relocatable (-rdc), to be linked with a kernel."""
    nvrtc = _nvrtc()
    major, minor = arch
    options = [f"-arch={'sm' if lto else 'compute'}_{major}{minor}", "-rdc=true",
               "-default-device", "-std=c++17"]
    if lto:
        options.append("-dlto")
    for directory in (*include_dirs, *config.nvrtc_include_dirs(), *default_include_dirs()):
        options.append(f"-I{directory}")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode("utf-8"), name.encode("utf-8"), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram", name)
    try:
        encoded = [o.encode("utf-8") for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _log(nvrtc, prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"NVRTC could not compile {name} for sm_{major}{minor}:\n{log}",
                               hint="fix the CUDA C++ source; headers are searched in "
                                    f"{', '.join(default_include_dirs()) or 'no directory'} "
                                    "and GPUNB_NVRTC_INCLUDE")
        if lto:
            err, size = nvrtc.nvrtcGetLTOIRSize(prog)
            _check(nvrtc, err, "nvrtcGetLTOIRSize", name)
            buffer = b" " * size
            (err,) = nvrtc.nvrtcGetLTOIR(prog, buffer)
            _check(nvrtc, err, "nvrtcGetLTOIR", name)
            return "ltoir", bytes(buffer)
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, err, "nvrtcGetPTXSize", name)
        buffer = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, buffer)
        _check(nvrtc, err, "nvrtcGetPTX", name)
        return "ptx", buffer.rstrip(b"\0").decode("utf-8")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _log(nvrtc, prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buffer = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buffer)
    return buffer.rstrip(b"\0").decode("utf-8", "replace").strip()


def _check(nvrtc, err, what: str, name: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise ToolchainError(f"NVRTC failed in {what} for {name}: {err.name}")


__all__ = ["compile_source", "default_include_dirs", "version"]
