"""Finding Nsight Compute and compute-sanitizer, and running the replay child under them.

Both are found where backends/cuda/toolchain.py finds every CUDA tool (NVIDIA's pip wheels -
nvidia-cuda-sanitizer-api ships compute-sanitizer -, conda, CUDA_PATH / CUDA_HOME, the usual
toolkit and Nsight Compute folders, PATH). Every failure becomes a ReplayError whose message is
one line saying what happened and what to do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

INSTALL_HINT = {
    "ncu": "install Nsight Compute (it comes with the CUDA toolkit, or from "
           "developer.nvidia.com/nsight-compute) and put ncu on PATH or set CUDA_HOME",
    "compute-sanitizer": "pip install nvidia-cuda-sanitizer-api, or install the CUDA toolkit "
                         "and put compute-sanitizer on PATH or set CUDA_HOME",
}


class ReplayError(RuntimeError):
    """A replay that could not run or report; `str()` is the one line the pane shows."""


def find_tool(name: str) -> str | None:
    """Path of `ncu` or `compute-sanitizer`, or None (backends/cuda/toolchain.py looks)."""
    from gpunb.backends.cuda.toolchain import find_tool as find

    return find(name)


def require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        raise ReplayError(f"{name} was not found: {INSTALL_HINT[name]}")
    return path


def replay_command(directory: Path) -> list:
    return [sys.executable, "-m", "gpunb.profiling.replay", str(directory)]


def child_env() -> dict:
    """The notebook's environment, with gpunb importable from the same place in the child."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the gpunb package
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_tool(argv: list, what: str, timeout: float) -> subprocess.CompletedProcess:
    """Run a tool; timeouts and a missing executable become ReplayErrors."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=child_env())
    except subprocess.TimeoutExpired:
        raise ReplayError(f"{what} did not finish within {timeout:.0f} s and was stopped; "
                          "replay fewer or smaller launches, or raise the timeout") from None
    except OSError as exc:
        raise ReplayError(f"{what} could not be started: {exc}") from None


def check_counters(output: str) -> None:
    """Nsight Compute's 'no permission for performance counters' as one actionable line."""
    if "ERR_NVGPUCTRPERM" in output:
        raise ReplayError("ncu: ERR_NVGPUCTRPERM - this user may not read the GPU's performance "
                          "counters; enable them (modprobe nvidia "
                          "NVreg_RestrictProfilingToAdminUsers=0, see "
                          "developer.nvidia.com/ERR_NVGPUCTRPERM) or run as an admin; "
                          "showing timings and static analysis only")


def last_error_line(output: str) -> str:
    for line in reversed(output.strip().splitlines()):
        if "ERROR" in line or "error" in line or "failed" in line:
            return line.strip().lstrip("=").strip()
    lines = output.strip().splitlines()
    return lines[-1].strip() if lines else "no output"
