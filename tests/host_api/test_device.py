"""The CPU target's simulated device: cuda.get_current_device(), current_context(), cuda.gpus
answer with numba-cuda's names and with the limits the CPU target really enforces."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import LaunchError

pytestmark = pytest.mark.usefixtures("cpu_target")


@pytest.fixture
def cpu_target():
    import gpunb

    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def test_compute_capability_follows_gpunb_arch(monkeypatch):
    assert cuda.get_current_device().compute_capability == (9, 0) or \
        cuda.get_current_device().compute_capability[0] >= 5
    monkeypatch.setenv("GPUNB_ARCH", "sm_80")
    assert cuda.get_current_device().compute_capability == (8, 0)
    assert cuda.current_context().device.compute_capability == (8, 0)


def test_attributes_are_the_enforced_limits():
    dev = cuda.get_current_device()
    assert dev.WARP_SIZE == 32
    assert dev.MAX_THREADS_PER_BLOCK == 1024
    assert dev.MULTIPROCESSOR_COUNT >= 1
    assert dev.id == 0 and dev.name and dev.uuid.startswith("GPU-")

    @cuda.jit
    def fill(out):
        out[cuda.grid(1)] = 1

    out = np.zeros(dev.MAX_THREADS_PER_BLOCK, np.int32)
    fill[1, dev.MAX_THREADS_PER_BLOCK](out)  # the reported maximum launches
    assert out.sum() == dev.MAX_THREADS_PER_BLOCK
    with pytest.raises(LaunchError):
        fill[1, dev.MAX_THREADS_PER_BLOCK + 1](np.zeros(2048, np.int32))


def test_unknown_attribute_is_refused_not_invented():
    with pytest.raises(AttributeError, match="ECC_ENABLED"):
        getattr(cuda.get_current_device(), "ECC_ENABLED")  # noqa: B009
    with pytest.raises(AttributeError):
        getattr(cuda.get_current_device(), "not_an_attribute")  # noqa: B009


def test_gpus_and_context():
    assert len(cuda.gpus) == 1
    assert cuda.gpus[0].compute_capability == cuda.get_current_device().compute_capability
    with cuda.gpus[0] as dev:
        assert dev == cuda.get_current_device()
    assert cuda.gpus.current == cuda.get_current_device()
    with pytest.raises(IndexError):
        cuda.gpus[1]
    free, total = cuda.current_context().get_memory_info()
    assert 0 < free <= total
    cuda.current_context().synchronize()
    with pytest.raises(ValueError, match="one device"):
        cuda.current_context(1)


def test_supports_flags():
    dev = cuda.get_current_device()
    assert dev.supports_float16 and dev.supports_bfloat16 and dev.supports_fp8


def test_select_device_zero_is_the_cpu_targets_device():
    """numba-cuda scripts often begin with cuda.select_device(0): on the CPU target that is its
    one device, not a driver error."""
    assert cuda.select_device(0) is cuda.get_current_device()
    assert cuda.select_device(0).id == 0
    with pytest.raises(ValueError, match="one device"):
        cuda.select_device(1)
