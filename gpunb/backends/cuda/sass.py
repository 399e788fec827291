"""ptxas and nvdisasm on PTX we produced: SASS text and resource usage, when the tools are found."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile

from gpunb.backends.cuda.toolchain import find_tool, require_tool
from gpunb.foundation.artifact import KernelArtifact, ResourceUsage
from gpunb.foundation.errors import ToolchainError


def assemble(ptx: str, arch: str, extra: tuple = (), ptxas: str | None = None) -> tuple[bytes, str]:
    """PTX -> cubin with ptxas (whole-program); returns (cubin, ptxas -v output). Raises
    ToolchainError."""
    ptxas = ptxas or require_tool("ptxas")
    with tempfile.TemporaryDirectory(prefix="gpunb-") as tmp:
        src, out = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([ptxas, f"-arch={arch}", "-v", *extra, src, "-o", out],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError(f"ptxas rejected the PTX for {arch}:\n{proc.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read(), proc.stderr


_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_LMEM = re.compile(r"(\d+) bytes stack frame")
_CMEM = re.compile(r"(\d+) bytes cmem\[[1-9]\d*\]")  # user constants; bank 0 holds params


def ptxas_resources(artifact: KernelArtifact) -> ResourceUsage:
    """Registers and memory per thread/block as ptxas reports them for the artifact's PTX."""
    if find_tool("ptxas") is None:
        return artifact.resources
    from gpunb.backends.cuda.cubin import user_constant_bytes

    cubin, log = assemble(artifact.ptx, artifact.arch)

    def first(rx, default=0):
        m = rx.search(log)
        return int(m.group(1)) if m else default

    return ResourceUsage(registers=first(_REGS), shared_bytes=first(_SMEM),
                         local_bytes=first(_LMEM),
                         const_bytes=max(first(_CMEM), user_constant_bytes(cubin)),
                         max_threads_per_block=1024)


def _nvdisasm() -> str:
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        raise ToolchainError("nvdisasm was not found; pip install nvidia-cuda-nvdisasm "
                             "(or gpunb[cuda]) to see SASS")
    return nvdisasm


@functools.lru_cache(maxsize=8)
def _lineinfo_cubin(ptx: str, arch: str) -> bytes:
    """ptxas -lineinfo on inspected PTX, kept for the second nvdisasm pass (live registers)."""
    return assemble(ptx, arch, ("-lineinfo",))[0]


def _cubin(artifact: KernelArtifact) -> bytes:
    return artifact.binary if artifact.target == "cuda" and artifact.binary else \
        _lineinfo_cubin(artifact.ptx, artifact.arch)


_ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")


def live_registers(artifact: KernelArtifact) -> dict[int, int]:
    """Instruction address -> general-purpose registers live there (nvdisasm's life ranges,
    `-lrm count`: the "#" of its GPR column), for per-line register figures."""
    nvdisasm = _nvdisasm()
    with tempfile.TemporaryDirectory(prefix="gpunb-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(_cubin(artifact))
        proc = subprocess.run([nvdisasm, "-lrm", "count", "-c", path], capture_output=True,
                              text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"nvdisasm (life ranges) failed: {proc.stderr.strip()}")
    return parse_live_registers(proc.stdout)


def parse_live_registers(text: str) -> dict[int, int]:
    """`/*00a0*/ IMAD ... ;   // |   4   |        |   1    |` -> {0xa0: 4} (blank: 0)."""
    out = {}
    for line in text.splitlines():
        m = _ADDRESS.search(line)
        if m is None or "// |" not in line:
            continue
        columns = line.split("// |", 1)[1].split("|")
        gpr = columns[0].strip() if columns else ""
        out[int(m.group(1), 16)] = int(gpr) if gpr.isdigit() else 0
    return out


def disassemble(artifact: KernelArtifact) -> str:
    """SASS of the artifact (its cubin, or ptxas on its PTX), via nvdisasm."""
    nvdisasm = _nvdisasm()
    cubin = _cubin(artifact)
    with tempfile.TemporaryDirectory(prefix="gpunb-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        proc = subprocess.run([nvdisasm, "-g", "-c", path], capture_output=True, text=True)
        if proc.returncode != 0:
            proc = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError(f"nvdisasm failed: {proc.stderr.strip()}")
        return proc.stdout
