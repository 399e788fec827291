"""The inspector's SASS of tensor-core kernels: HMMA, LDSM and LDGSTS (cp.async) instructions
attributed to the source lines of the mma / ldmatrix / copy calls that made them."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from benchmarks import tensorcore_kernels as tk
from gpunb import cuda
from gpunb.foundation.artifact import KernelArtifact
from gpunb.jit.report import sass_line_map

pytestmark = pytest.mark.slow  # GEMM kernels compiled (and run on the CPU target)

SIG = "void(float32[:, ::1], float16[:, ::1], float16[:, ::1])"


def _sass_by_line(kernel, sig):
    from gpunb.backends.cuda import sass
    from gpunb.backends.cuda.toolchain import find_tool

    if find_tool("ptxas") is None or find_tool("nvdisasm") is None:
        pytest.skip("needs ptxas and nvdisasm (pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm)")
    ptx, _ = cuda.compile_ptx(kernel, sig, cc=(9, 0), lineinfo=True)
    artifact = KernelArtifact(name="k", symbol="k", target="cuda", arch="sm_90", signature="",
                              param_slots=(), binary=b"", ptx=ptx)
    text = sass.disassemble(artifact)
    lines = text.splitlines()
    source = inspect.getsourcefile(tk)
    src = open(source).read().splitlines()
    out = {}
    for line, indices in sass_line_map(text, source).items():
        for op in ("HMMA", "LDSM", "LDGSTS"):
            if any(op in lines[i] for i in indices):
                out.setdefault(op, set()).add(src[line - 1].strip().split("(")[0])
    return out


def test_mma_gemm_sass_lines():
    found = _sass_by_line(tk.make_mma_gemm(np.float16), SIG)
    assert found["HMMA"] == {"d = cuda.mma_sync"}
    assert found["LDSM"] == {"frag = cuda.ldmatrix"}
    assert found["LDGSTS"] == {"cuda.inline_ptx"}  # cp.async, written in inline PTX


def test_wmma_gemm_sass_lines():
    found = _sass_by_line(tk.make_wmma_gemm(np.float16), SIG)
    assert found["HMMA"] == {"wmma.mma_sync"}
