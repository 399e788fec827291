"""The graph tests' fixtures. The simulated CUDA driver (with its stream capture and graphs), for
the CUDA half of gpunb.graph on machines without a GPU, is tests/simulated_cuda.py's."""

from __future__ import annotations

import pytest


@pytest.fixture
def cpu():
    """The CPU target, for tests that run the same on every machine."""
    import gpunb

    gpunb.set_target("cpu")
    yield "cpu"
    gpunb.set_target(None)


@pytest.fixture
def on_the_gpu():
    """The CUDA target, for the gpu-marked capture tests (pytest.mark.usefixtures)."""
    import gpunb

    gpunb.set_target("cuda")
    yield "cuda"
    gpunb.set_target(None)
