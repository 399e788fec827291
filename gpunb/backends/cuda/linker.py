"""Linking a kernel's PTX with foreign code (declare_device's link=, cuda.jit(link=...)).

Every item becomes a linker input: CUDA C++ goes through NVRTC first (PTX, or LTO-IR when LTO is
asked for), PTX / cubin / fatbin / object / archive / LTO-IR are added as they are. Without LTO-IR
the driver's linker (cuLink*, needs the GPU) links, as for kernels without foreign code; with it,
nvJitLink does (-lto; it needs no GPU, so `link_offline` also checks links on a machine without
one). gpunb's own code is PTX from LLVM: LTO optimises across the LTO-IR inputs, and the kernel's
PTX is linked with them.
"""

from __future__ import annotations

import ctypes
import re

from gpunb.foundation.errors import ToolchainError

_NVJITLINK_KINDS = {"ptx": "PTX", "cubin": "CUBIN", "fatbin": "FATBIN", "o": "OBJECT",
                    "a": "LIBRARY", "ltoir": "LTOIR"}
_CULINK_KINDS = {"ptx": "CU_JIT_INPUT_PTX", "cubin": "CU_JIT_INPUT_CUBIN",
                 "fatbin": "CU_JIT_INPUT_FATBINARY", "o": "CU_JIT_INPUT_OBJECT",
                 "a": "CU_JIT_INPUT_LIBRARY"}


class ForeignLinkError(ToolchainError):
    """The linker rejected the kernel together with its foreign code (the log says why)."""


def prepare_inputs(items: tuple, arch: tuple, lto: bool) -> list:
    """(kind, data bytes, name) per item, CUDA C++ compiled by NVRTC."""
    from gpunb.backends.cuda import nvrtc

    prepared = []
    for item in items:
        kind, name = item.kind, item.name
        if kind == "cu":
            path = getattr(item, "path", None)
            includes = (_dirname(path),) if path else ()
            kind, code = nvrtc.compile_source(item.data if isinstance(item.data, str)
                                              else item.data_bytes().decode("utf-8"),
                                              f"{name}.cu" if not name.endswith(".cu") else name,
                                              arch, lto=lto, include_dirs=includes)
            data = code.encode("utf-8") if isinstance(code, str) else code
        else:
            data = item.data_bytes()
        prepared.append((kind, data, name))
    return prepared


def _dirname(path: str) -> str:
    import os

    return os.path.dirname(path)


def needs_nvjitlink(inputs: list, lto: bool) -> bool:
    return lto or any(kind == "ltoir" for kind, _, _ in inputs)


def link_with_driver(ptx: str, inputs: list, arch, *, max_registers=None, lineinfo=False,
                     debug=False, opt=True) -> tuple:
    """cuLink: the kernel's PTX and the inputs -> (cubin, info log). Needs the GPU."""
    from gpunb.backends.cuda import driver, modules

    driver.ensure_context()
    cu = driver.cuda_driver()
    info_log = bytearray(modules.LOG_BUFFER_BYTES)
    error_log = bytearray(modules.LOG_BUFFER_BYTES)
    options = modules._jit_options(cu, arch, info_log, error_log, max_registers, lineinfo,
                                   debug, opt)
    keys, values = list(options), list(options.values())
    state = driver.check(cu.cuLinkCreate(len(keys), keys, values), "cuLinkCreate")
    try:
        kernel = ptx.encode("utf-8") + b"\0"
        all_inputs = [("ptx", kernel, "kernel.ptx")] + [
            (kind, data + b"\0" if kind == "ptx" else data, name) for kind, data, name in inputs]
        for kind, data, name in all_inputs:
            input_type = getattr(cu.CUjitInputType, _CULINK_KINDS[kind])
            result = cu.cuLinkAddData(state, input_type, data, len(data), name.encode(), 0, [],
                                      [])
            if result[0]:
                raise _driver_error(result[0], f"cuLinkAddData({name})", error_log)
        result = cu.cuLinkComplete(state)
        if result[0]:
            raise _driver_error(result[0], "cuLinkComplete", error_log)
        _, address, size = result
        cubin = ctypes.string_at(int(address), int(size))
    finally:
        cu.cuLinkDestroy(state)
    return cubin, modules._log_text(info_log)


def _driver_error(err, what: str, error_log: bytearray) -> ForeignLinkError:
    from gpunb.backends.cuda import driver, modules

    log = modules._log_text(error_log) or "(the driver wrote no error log)"
    name = driver.driver_error(err, what).name
    return ForeignLinkError(f"the CUDA driver could not link the kernel with its foreign code "
                            f"({what}: {name}):\n{log}\nhint: check that every function a "
                            "kernel calls through cuda.declare_device is defined (extern \"C\") "
                            "in the code passed as link=")


def link_offline(ptx: str, inputs: list, arch: tuple, *, lto: bool = False,
                 max_registers=None, lineinfo=False, debug=False, opt=True,
                 verbose: bool = False) -> tuple:
    """nvJitLink: the kernel's PTX and the inputs -> (cubin, info log); no GPU needed.

    PTX made for the architecture-specific target (`.target sm_90a`: wgmma, setmaxnreg) is
    linked for that target of `arch`: ptxas refuses it for plain sm_90. `verbose`: the info
    log also has ptxas's register and spill counts and its performance notes."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError as exc:
        raise ToolchainError(f"nvJitLink is needed to link LTO-IR: {exc}; pip install "
                             "nvidia-nvjitlink, or install the CUDA toolkit") from None
    major, minor = arch
    suffix = "a" if re.search(rf"^\.target\s+sm_{major}{minor}a\b", ptx, re.M) else ""
    options = [f"-arch=sm_{major}{minor}{suffix}"]
    if verbose:
        options.append("-verbose")
    if lto and any(kind == "ltoir" for kind, _, _ in inputs):  # -lto needs an LTO-IR input
        options.append("-lto")
    if max_registers:
        options.append(f"-maxrregcount={int(max_registers)}")
    if lineinfo:
        options.append("-lineinfo")
    if debug:
        options.append("-g")
    if not opt or debug:
        options.append("-O0")
    try:
        handle = nvjitlink.create(len(options), options)
    except Exception as exc:  # noqa: BLE001 - a missing library or a bad option
        raise ToolchainError(f"nvJitLink could not start: {exc}; pip install nvidia-nvjitlink") \
            from None
    try:
        all_inputs = [("ptx", ptx.encode("utf-8"), "kernel.ptx"), *inputs]
        try:
            for kind, data, name in all_inputs:
                nvjitlink.add_data(handle, getattr(nvjitlink.InputType, _NVJITLINK_KINDS[kind]),
                                   data, len(data), name)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            raise ForeignLinkError(f"nvJitLink could not link the kernel with its foreign code "
                                   f"for sm_{major}{minor}{suffix} ({exc}):\n"
                                   f"{_jitlink_log(handle)}") from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        info = _jitlink_log(handle, info=True)
    finally:
        nvjitlink.destroy(handle)
    return bytes(cubin), info


def _jitlink_log(handle, info: bool = False) -> str:
    from cuda.bindings import nvjitlink

    size = (nvjitlink.get_info_log_size if info else nvjitlink.get_error_log_size)(handle)
    if size <= 1:
        return ""
    buffer = bytearray(size)
    (nvjitlink.get_info_log if info else nvjitlink.get_error_log)(handle, buffer)
    return bytes(buffer).rstrip(b"\0").decode("utf-8", "replace").strip()


__all__ = ["ForeignLinkError", "link_offline", "link_with_driver", "needs_nvjitlink",
           "prepare_inputs"]
