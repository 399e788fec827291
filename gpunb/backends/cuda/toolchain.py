"""Finds NVIDIA's tools, libraries and headers - the one place gpunb looks for a CUDA toolkit.

First cuda-pathfinder, which knows NVIDIA's pip wheels (nvidia-nvvm, nvidia-cuda-nvcc,
nvidia-cuda-nvdisasm, ...), conda environments, CUDA_PATH / CUDA_HOME and the toolkit the dynamic
loader finds libcudart in; then what it does not search: CUDA_PATH / CUDA_HOME as they are now
(cuda-pathfinder reads them once per process), Linux's default toolkit folder, Nsight Compute's
standalone installs, and PATH. Nothing is configured by hand. Missing pieces raise
ToolchainError saying what to install.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil

from gpunb.foundation.errors import ToolchainError

_INSTALL_HINT = {
    "libdevice": "pip install nvidia-nvvm  (or gpunb[cuda]), or install the CUDA toolkit",
    "ptxas": "pip install nvidia-cuda-nvcc  (or gpunb[cuda]), or install the CUDA toolkit",
    "nvdisasm": "pip install nvidia-cuda-nvdisasm  (or gpunb[cuda]), or install the CUDA toolkit",
}
# toolkit folders searched after cuda-pathfinder and the environment's
SYSTEM_ROOTS = ("/usr/local/cuda",)
# where standalone installs put a tool that is not in a toolkit's bin folder
TOOL_GLOBS = {"ncu": ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/nsight-compute*/ncu")}


def cuda_roots() -> tuple:
    """CUDA toolkit folders: CUDA_PATH, CUDA_HOME (cuda-pathfinder's order), SYSTEM_ROOTS."""
    found = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), *SYSTEM_ROOTS]
    return tuple(dict.fromkeys(root for root in found if root and os.path.isdir(root)))


def _pathfinder(what: str, name: str) -> str | None:
    """cuda-pathfinder's answer (None where it has none, or is missing or too old)."""
    try:
        from cuda import pathfinder

        found = getattr(pathfinder, what)(name)
    except Exception:  # noqa: BLE001 - any failure of the finder means "not found there"
        return None
    return str(found) if found else None


@functools.cache
def libdevice_path() -> str:
    """Path of libdevice.10.bc (math functions for the CUDA target)."""
    found = _pathfinder("find_bitcode_lib", "device")
    if found:
        return found
    for root in cuda_roots():
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


def find_tool(name: str) -> str | None:
    """Path of a CUDA tool (ptxas, nvdisasm, ncu, compute-sanitizer, ...), or None."""
    found = _pathfinder("find_nvidia_binary_utility", name)
    if found:
        return found
    for root in cuda_roots():
        for folder in ("bin", name):  # (compute-sanitizer has a folder of its own)
            candidate = os.path.join(root, folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    for pattern in TOOL_GLOBS.get(name, ()):
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]  # the newest version
    return shutil.which(name)


def header_directories(libraries: tuple = ("cudart", "cccl")) -> tuple:
    """Folders holding the CUDA headers of these libraries (NVRTC's include path)."""
    dirs = [_pathfinder("find_nvidia_header_directory", lib) for lib in libraries]
    dirs += [os.path.join(root, "include") for root in cuda_roots()]
    return tuple(dict.fromkeys(d for d in dirs if d and os.path.isdir(d)))


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
