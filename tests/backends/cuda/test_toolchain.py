"""The one CUDA toolkit finder (gpunb/backends/cuda/toolchain.py): after cuda-pathfinder (NVIDIA's
wheels, conda, the toolkit the loader knows) it searches CUDA_PATH / CUDA_HOME as they are now,
the usual toolkit folders, Nsight Compute's install folders and PATH, for every tool gpunb runs
(ptxas, nvdisasm, ncu, compute-sanitizer) and for NVRTC's headers."""

from __future__ import annotations

import os
import stat

import pytest

from gpunb.backends.cuda import toolchain


def _tool(folder, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def no_pathfinder(monkeypatch, tmp_path):
    """Nothing installed where cuda-pathfinder or the system would find it."""
    monkeypatch.setattr(toolchain, "_pathfinder", lambda what, name: None)
    monkeypatch.setattr(toolchain, "SYSTEM_ROOTS", ())
    monkeypatch.setattr(toolchain, "TOOL_GLOBS", {})
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def test_tools_are_found_under_the_toolkit_named_now(no_pathfinder, monkeypatch, tmp_path):
    home = tmp_path / "cuda"
    ptxas = _tool(home / "bin", "ptxas")
    sanitizer = _tool(home / "compute-sanitizer", "compute-sanitizer")
    assert toolchain.find_tool("ptxas") is None
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert toolchain.find_tool("ptxas") == ptxas
    assert toolchain.find_tool("compute-sanitizer") == sanitizer
    other = tmp_path / "other"
    preferred = _tool(other / "bin", "ptxas")
    monkeypatch.setenv("CUDA_PATH", str(other))  # CUDA_PATH first, as cuda-pathfinder reads them
    assert toolchain.find_tool("ptxas") == preferred


def test_nsight_installs_then_path(no_pathfinder, monkeypatch, tmp_path):
    newest = _tool(tmp_path / "nsight-compute" / "2025.3", "ncu")
    _tool(tmp_path / "nsight-compute" / "2024.1", "ncu")
    monkeypatch.setattr(toolchain, "TOOL_GLOBS", {"ncu": (str(tmp_path / "nsight-compute/*/ncu"),)})
    assert toolchain.find_tool("ncu") == newest
    on_path = _tool(tmp_path / "path", "nvdisasm")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert toolchain.find_tool("nvdisasm") == on_path


def test_headers_and_what_pathfinder_finds_first(monkeypatch, tmp_path):
    home = tmp_path / "cuda"
    (home / "include").mkdir(parents=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(toolchain, "SYSTEM_ROOTS", ())
    wheel = tmp_path / "wheel"
    (wheel / "include").mkdir(parents=True)
    found = {"find_nvidia_header_directory": str(wheel / "include"),
             "find_nvidia_binary_utility": str(wheel / "bin" / "ptxas")}
    monkeypatch.setattr(toolchain, "_pathfinder", lambda what, name: found.get(what))
    assert toolchain.header_directories(("cudart",)) == (str(wheel / "include"),
                                                         str(home / "include"))
    assert toolchain.find_tool("ptxas") == found["find_nvidia_binary_utility"]


def test_the_real_pathfinder_is_asked_safely():
    assert toolchain._pathfinder("find_nvidia_binary_utility", "no-such-tool") is None
    path = toolchain.find_tool("ptxas")  # the nvidia-cuda-nvcc wheel, where installed
    assert path is None or os.path.isfile(path)
