"""Every architecture gpunb writes PTX for (foundation/arch.py's table, read by
gpunb/backends/cuda/target.py) gets a PTX ISA version LLVM's NVPTX backend accepts for it: asking
for a lower one is an LLVM ERROR that aborts the whole process (sm_103, sm_110, sm_121 and sm_88
did, in the notebook and on such a GPU), so the check runs in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_every_known_arch_and_suffix_writes_ptx_without_aborting(tmp_path):
    code = textwrap.dedent("""
        import numpy as np
        from gpunb import cuda
        from gpunb.foundation.arch import PTX_ISA_FOR_ARCH

        def scale(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = 2 * x[i]

        for key in sorted(PTX_ISA_FOR_ARCH):
            major, minor = divmod(key, 10)
            suffixes = [""] + (["a"] if major >= 9 else []) + (["f"] if major >= 10 else [])
            for suffix in suffixes:
                cc = (major, minor, suffix) if suffix else (major, minor)
                ptx, _ = cuda.compile_ptx(scale, "void(float32[::1], float32[::1])", cc=cc)
                assert f".target sm_{key}{suffix}" in ptx, (cc, ptx[:200])
                print("ok", cc)
    """)
    env = dict(os.environ, GPUNB_TARGET="cpu", GPUNB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", ""))
                                          if p))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "LLVM ERROR" not in done.stderr and "not a recognized processor" not in done.stderr
    assert "ok (12, 1)" in done.stdout and "ok (11, 0, 'f')" in done.stdout


def test_compile_ptx_refuses_an_arch_llvm_does_not_know():
    import pytest

    from gpunb import cuda
    from gpunb.foundation.errors import JitOptionError

    def k(o):
        o[0] = 1

    with pytest.raises(JitOptionError, match=r"cc=\(9, 9\) is not a compute capability") as info:
        cuda.compile_ptx(k, "void(float64[::1])", cc=(9, 9))
    assert "sm_121" in info.value.hint
