"""Fixtures for the runtime tests: a clean target decision (the simulated CUDA driver's
fixtures are tests/simulated_cuda.py's)."""

from __future__ import annotations

import pytest


@pytest.fixture
def fresh_target(monkeypatch):
    """A target module with no cached decision and no notice shown yet."""
    from gpunb.foundation import config
    from gpunb.runtime import target

    target.reset()
    monkeypatch.setattr(config, "_process_target", None)
    yield target
    target.reset()
