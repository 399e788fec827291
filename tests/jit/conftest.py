"""Fixtures shared by the launch-path tests of the jit layer."""

from __future__ import annotations

import pytest

import gpunb


@pytest.fixture
def cpu():
    """The CPU target for one test, back to automatic after it."""
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)
