"""libgcc_s (the float16 conversion helpers) is loaded at a process's first CPU-target kernel
load without ctypes.util.find_library, which runs `ldconfig -p` in a child process and imports
subprocess, locale and tempfile: ~10-25 ms of every first launch, a disk-cache hit's included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import llvmlite.binding as llvm
    import gpunb
    from gpunb import cuda, float16, float32
    from gpunb.backends.cpu.executor import RUNTIME_HELPERS

    gpunb.set_target("cpu")

    @cuda.jit
    def round_trip(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = float32(float16(x[i]))

    x = np.array([1.0, 1.0001, 65504.0, 1e-8], np.float32)
    out = np.zeros_like(x)
    round_trip[1, 32](out, x)
    print(json.dumps({
        "ok": out.tolist() == x.astype(np.float16).astype(np.float32).tolist(),
        "helpers": [bool(llvm.address_of_symbol(n)) for n in RUNTIME_HELPERS],
        "find_library": "ctypes.util" in sys.modules,
    }))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libgcc_s.so.1 is Linux's name")
def test_first_kernel_load_finds_libgcc_s_without_ldconfig(tmp_path):
    env = dict(os.environ, GPUNB_CACHE="0", GPUNB_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ok"]
    assert all(result["helpers"]), "libgcc_s's float16 helpers do not resolve"
    assert not result["find_library"], "ctypes.util was imported (find_library ran ldconfig)"
