"""Finds NVIDIA's tools and libraries (libdevice, ptxas, nvdisasm) with cuda-pathfinder.

Nothing is configured by hand: the nvidia-nvvm / nvidia-cuda-nvcc / nvidia-cuda-nvdisasm wheels or a
CUDA install are found where they are. Missing pieces raise ToolchainError saying what to install.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil

from gpunb.foundation.errors import ToolchainError

_INSTALL_HINT = {
    "libdevice": "pip install nvidia-nvvm  (or gpunb[cuda]), or install the CUDA toolkit",
    "ptxas": "pip install nvidia-cuda-nvcc  (or gpunb[cuda]), or install the CUDA toolkit",
    "nvdisasm": "pip install nvidia-cuda-nvdisasm  (or gpunb[cuda]), or install the CUDA toolkit",
}


@functools.cache
def libdevice_path() -> str:
    """Path of libdevice.10.bc (math functions for the CUDA target)."""
    try:
        from cuda import pathfinder

        found = pathfinder.find_bitcode_lib("device")
        if found:
            return str(found)
    except Exception:  # noqa: BLE001 - any failure of the finder means "not found here"
        pass
    for root in filter(None, (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                              "/usr/local/cuda")):
        candidate = os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")
        if os.path.exists(candidate):
            return candidate
    raise ToolchainError(f"libdevice was not found; {_INSTALL_HINT['libdevice']}")


@functools.cache
def libdevice_hash() -> str:
    try:
        with open(libdevice_path(), "rb") as f:
            return hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    except ToolchainError:
        return "none"


@functools.cache
def find_tool(name: str) -> str | None:
    """Path of `ptxas` or `nvdisasm`, or None when neither a wheel nor a toolkit has it."""
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_binary_utility(name)
        if found:
            return str(found)
    except Exception:  # noqa: BLE001
        pass
    for root in filter(None, (os.environ.get("CUDA_HOME"), "/usr/local/cuda")):
        candidate = os.path.join(root, "bin", name)
        if os.path.exists(candidate):
            return candidate
    return shutil.which(name)


def require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        raise ToolchainError(f"{name} was not found; {_INSTALL_HINT.get(name, 'install it')}")
    return path


@functools.cache
def llvm_version() -> str:
    import llvmlite
    import llvmlite.binding as llvm

    return f"llvmlite {llvmlite.__version__} / LLVM {'.'.join(map(str, llvm.llvm_version_info))}"
