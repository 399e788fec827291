"""The graph tests' fixtures: the simulated CUDA driver of tests/runtime (with its stream capture
and graphs), for the CUDA half of gpunb.graph on machines without a GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_RUNTIME = Path(__file__).resolve().parents[1] / "runtime"
if str(_RUNTIME) not in sys.path:
    sys.path.insert(0, str(_RUNTIME))  # fake_cuda_driver, fake_cuda_graphs
_spec = importlib.util.spec_from_file_location("runtime_test_fixtures", _RUNTIME / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

fake_cuda = _fixtures.fake_cuda  # the same fixture as tests/runtime's


@pytest.fixture
def simulated_gpu(fake_cuda):
    """The CUDA target on the simulated driver."""
    import gpunb

    gpunb.set_target("cuda")
    yield fake_cuda
    gpunb.set_target(None)


@pytest.fixture
def cpu():
    """The CPU target, for tests that run the same on every machine."""
    import gpunb

    gpunb.set_target("cpu")
    yield "cpu"
    gpunb.set_target(None)
