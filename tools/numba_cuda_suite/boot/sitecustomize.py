"""Installs the parity harness's import hook in every Python process of a suite run.

The runner puts this directory first on PYTHONPATH, so subprocesses that tests start
(multiprocessing spawn, run_in_subprocess) see `numba.cuda` as gpunb too. Without the runner's
environment variable it does nothing; either way it then runs the sitecustomize it shadows.
"""

import importlib.machinery
import importlib.util
import os
import sys

if os.environ.get("NUMBA_CUDA_SUITE_TESTS"):
    from numba_cuda_suite import hook

    hook.install()


def _run_shadowed() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    others = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


_run_shadowed()
