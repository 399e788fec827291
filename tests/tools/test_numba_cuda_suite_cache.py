"""The parity harness gives each upstream test an empty gpunb cache of its own (numba's cache
tests start from an empty __pycache__ in a fresh copy of their module; gpunb's cache is keyed by
content, so a kernel an earlier test or run compiled from the same text was a hit where the test
counted a miss: test_caching's test_cache_reuse). Runs the harness on two tiny upstream files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[2]

UPSTREAM_TEST = textwrap.dedent('''
    import os
    import numpy as np
    from numba import cuda


    def _first_launch_counts():
        @cuda.jit(cache=True)
        def add_one(x):
            x[0] += 1

        x = np.zeros(1)
        add_one[1, 1](x)
        st = add_one.stats
        return sum(st.cache_hits.values()), sum(st.cache_misses.values())


    def test_first():
        assert _first_launch_counts() == (0, 1)
        assert os.environ["GPUNB_CACHE_DIR"].startswith(os.environ["NUMBA_CUDA_SUITE_CACHE"])


    def test_second_compiles_the_same_text_into_an_empty_cache():
        assert _first_launch_counts() == (0, 1)
''')


def test_each_upstream_test_starts_with_an_empty_gpunb_cache(tmp_path):
    cudapy = tmp_path / "numba" / "cuda" / "tests" / "cudapy"
    cudapy.mkdir(parents=True)
    (cudapy / "test_cache_isolation.py").write_text(UPSTREAM_TEST)
    out = tmp_path / "out"
    user_cache = tmp_path / "user-cache"  # the user's cache: the harness must not touch it
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUNB_CACHE_DIR=str(user_cache))
    done = subprocess.run(
        [sys.executable, "-m", "tools.numba_cuda_suite", "run", "--jobs", "1", "--src",
         str(tmp_path), "--out", str(out), "test_cache_isolation.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tests = json.loads((out / "results.json").read_text())["tests"]
    assert {k.split("::")[-1]: v["status"] for k, v in tests.items()} == {
        "test_first": "passed",
        "test_second_compiles_the_same_text_into_an_empty_cache": "passed"}, tests
    assert not user_cache.exists()
    assert not any((out / "gpunb-cache").glob("test-*"))  # each test's directory is removed
