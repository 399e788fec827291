"""The simulated CUDA driver as fixtures for every test directory (a pytest plugin named in
tests/conftest.py): `fake_cuda` routes gpunb.backends.cuda.driver to tests/runtime's FakeDriver
(device memory is host memory) for one test; `simulated_gpu` also selects the CUDA target."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_RUNTIME = Path(__file__).resolve().parent / "runtime"
if str(_RUNTIME) not in sys.path:
    sys.path.insert(0, str(_RUNTIME))  # fake_cuda_driver, fake_cuda_graphs


@pytest.fixture
def fake_cuda(monkeypatch):
    """Route gpunb.backends.cuda.driver to FakeDriver (device memory is host memory), one test."""
    import gc

    from fake_cuda_driver import FakeDriver

    from gpunb.backends.cuda import driver, launch

    fake = FakeDriver()
    monkeypatch.setattr(launch.driver_calls, "trampolines", None)  # reach the simulated driver
    monkeypatch.setattr(driver, "state", driver.DriverState(cu=fake))
    monkeypatch.setattr(driver, "several_contexts", False)
    driver.last_launch.clear()
    yield fake
    gc.collect()  # simulated handles are released while the simulated driver is in place


@pytest.fixture
def simulated_gpu(fake_cuda):
    """The CUDA target on the simulated driver, back to automatic after the test."""
    import gpunb

    gpunb.set_target("cuda")
    yield fake_cuda
    gpunb.set_target(None)
