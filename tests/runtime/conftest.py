"""Fixtures for the runtime tests: a simulated CUDA driver, and a clean target decision."""

from __future__ import annotations

import pytest


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
def fresh_target(monkeypatch):
    """A target module with no cached decision and no notice shown yet."""
    from gpunb.foundation import config
    from gpunb.runtime import target

    target.reset()
    monkeypatch.setattr(config, "_process_target", None)
    yield target
    target.reset()
