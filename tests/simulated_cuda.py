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


def simulate_cuda(monkeypatch, cache_dir) -> object:
    """Route gpunb.backends.cuda.driver to a new FakeDriver until `monkeypatch` is undone; the
    kernel cache lives in `cache_dir` meanwhile. Why: the simulated device is an sm_90 with
    driver 13.0, like the H200/H100 test machines, so its stand-in "cubins" had the keys of real
    ones - in the session's cache, a later real test of the same kernel source (the graph
    tests' `inc`) loaded one and failed with CUDA_ERROR_INVALID_IMAGE, by test order."""
    from fake_cuda_driver import FakeDriver

    from gpunb.backends.cuda import driver, launch

    fake = FakeDriver()
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(cache_dir))  # a KernelCache of its own (memory too)
    monkeypatch.setattr(launch.driver_calls, "trampolines", None)  # reach the simulated driver
    monkeypatch.setattr(driver, "state", driver.DriverState(cu=fake))
    monkeypatch.setattr(driver, "several_contexts", False)
    driver.last_launch.clear()
    return fake


@pytest.fixture
def fake_cuda(monkeypatch, tmp_path):
    """Route gpunb.backends.cuda.driver to FakeDriver (device memory is host memory), one test."""
    import gc

    fake = simulate_cuda(monkeypatch, tmp_path / "simulated-kernel-cache")
    yield fake
    gc.collect()  # simulated handles are released while the simulated driver is in place


@pytest.fixture
def simulated_gpu(fake_cuda):
    """The CUDA target on the simulated driver, back to automatic after the test."""
    import gpunb

    gpunb.set_target("cuda")
    yield fake_cuda
    gpunb.set_target(None)
