"""The parity harness's import hook (tools/numba_cuda_suite/hook.py) where numba-cuda is also
installed: its wheel's start-up finder (`_numba_cuda_redirector`, from a .pth file) redirects
numba.cuda imports to numba-cuda and recursed into itself for upstream helper modules
(RecursionError importing test_complex's complex_usecases on the GPU machine). Run in a child
process: the hook rewrites sys.meta_path and drops numba.cuda modules."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent('''
    import importlib, importlib.abc, sys, types

    # numba-cuda's redirector, as its wheel's .pth installs it: for a numba.cuda name it asks
    # every finder on sys.meta_path again (itself included) with a rewritten path
    class NumbaCudaFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if "numba.cuda" in name:
                for finder in sys.meta_path:
                    spec = finder.find_spec(name, list(path or []), target)
                    if spec is not None:
                        return spec
            return None

    NumbaCudaFinder.__module__ = "_numba_cuda_redirector"
    sys.meta_path.insert(0, NumbaCudaFinder())

    from numba_cuda_suite import hook
    hook.install()
    assert not any(type(f).__module__ == "_numba_cuda_redirector" for f in sys.meta_path)
    sys.meta_path.insert(1, NumbaCudaFinder())  # even if one comes back after install()
    module = importlib.import_module("numba.cuda.tests.cudapy.helper_usecases")
    print(module.VALUE)
''')


def test_upstream_helper_modules_import_beside_numba_cudas_redirector(tmp_path):
    cudapy = tmp_path / "tests" / "cudapy"
    cudapy.mkdir(parents=True)
    (tmp_path / "tests" / "__init__.py").write_text("")
    (cudapy / "__init__.py").write_text("")
    (cudapy / "helper_usecases.py").write_text("VALUE = 'helper imported'\n")
    env = dict(os.environ, NUMBA_CUDA_SUITE_TESTS=str(tmp_path / "tests"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tools"), str(ROOT)]))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("helper imported")


PACKAGES_CHILD = textwrap.dedent('''
    import importlib
    from numba_cuda_suite import hook
    hook.install()
    for name in ("cudadrv", "doc_examples", "doc_examples.ffi"):
        module = importlib.import_module(f"numba.cuda.tests.{name}.test_probe")
        print(name, module.VALUE)
''')


def test_cudadrv_and_doc_example_tests_import_from_the_checkout(tmp_path):
    """`--subdir cudadrv|doc_examples`: their test modules load from the upstream tree without
    running the packages' __init__ (which imports numba-cuda's own test loader)."""
    tests = tmp_path / "tests"
    for sub in ("cudadrv", "doc_examples", "doc_examples/ffi"):
        (tests / sub).mkdir(parents=True)
        (tests / sub / "__init__.py").write_text("from numba.cuda.tests import load_testsuite\n")
        (tests / sub / "test_probe.py").write_text(f"VALUE = {sub!r}\n")
    env = dict(os.environ, NUMBA_CUDA_SUITE_TESTS=str(tests),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tools"), str(ROOT)]))
    done = subprocess.run([sys.executable, "-c", PACKAGES_CHILD], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-4:-1] == ["cudadrv cudadrv", "doc_examples doc_examples",
                                              "doc_examples.ffi doc_examples/ffi"]
