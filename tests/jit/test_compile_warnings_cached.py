"""A disk-cache hit stands for a compile: the warnings the compile emitted (numba-cuda's print()
of more than 32 items, ...) are emitted again in the new process, not lost with the compile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import numpy as np
from gpunb import cuda

@cuda.jit(target="cpu")
def print_too_many(r):
    print(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
          r[11], r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20],
          r[21], r[22], r[23], r[24], r[25], r[26], r[27], r[28], r[29], r[30],
          r[31], r[32])

print_too_many[1, 1](np.arange(33))
print("cache:", print_too_many.cache_info()[0]["event"] if print_too_many.cache_info() else "")
"""


def test_a_disk_hit_warns_as_the_compile_did(tmp_path):
    script = tmp_path / "too_many.py"
    script.write_text(PROGRAM)
    env = dict(os.environ, GPUNB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    assert "miss" in runs[0].stdout.splitlines()[-1]
    assert "hit (disk)" in runs[1].stdout.splitlines()[-1]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert " ".join(["%lld"] * 33) in run.stdout
        assert "CUDA print() cannot print more than 32 items" in run.stderr
