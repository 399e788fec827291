"""Fixtures shared by the launch-path tests of the jit layer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import gpunb


@pytest.fixture
def cpu():
    """The CPU target for one test, back to automatic after it."""
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


_RUNTIME = Path(__file__).resolve().parents[1] / "runtime"
if str(_RUNTIME) not in sys.path:
    sys.path.insert(0, str(_RUNTIME))  # fake_cuda_driver, fake_cuda_graphs
_spec = importlib.util.spec_from_file_location("runtime_test_fixtures_jit",
                                               _RUNTIME / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

fake_cuda = _fixtures.fake_cuda  # the same fixture as tests/runtime's


@pytest.fixture
def simulated_gpu(fake_cuda):
    """The CUDA target on the simulated driver (device memory is host memory)."""
    gpunb.set_target("cuda")
    yield fake_cuda
    gpunb.set_target(None)
