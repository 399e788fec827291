"""numba-cuda's pre_launch_callbacks on a launch configuration and its small-grid
PerformanceWarning (opt-in in gpunb: GPUNB_LOW_OCCUPANCY_WARNINGS=1)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import PerformanceWarning


@cuda.jit
def bump(arr):
    arr[0] += 1


def test_callbacks_run_before_each_launch_of_their_configuration(target):
    config = bump[1, 1]
    seen = []
    config.pre_launch_callbacks.append(lambda kernel, cfg: seen.append((kernel, cfg)))
    a = np.zeros(1)
    for _ in range(4):  # past the point where a configuration gets a native launcher
        config(a)
    assert a[0] == 4 and len(seen) == 4
    kernel, cfg = seen[0]
    assert cfg is config and cfg.griddim == (1, 1, 1)
    assert str(kernel.signature) == "void(float64[::1])"
    fresh = bump[1, 1]  # a new configuration: without the callbacks
    assert fresh is not config
    fresh(a)
    assert len(seen) == 4 and a[0] == 5


def test_a_configuration_with_callbacks_does_not_pickle():
    config = bump[5, 8]
    pickle.dumps(config)
    config.pre_launch_callbacks.append(lambda kernel, cfg: None)
    with pytest.raises(pickle.PicklingError, match="pre-launch callbacks"):
        pickle.dumps(config)


def test_small_grids_warn_when_asked(monkeypatch):
    monkeypatch.setenv("GPUNB_LOW_OCCUPANCY_WARNINGS", "1")
    with pytest.warns(PerformanceWarning, match="Grid size 4 will likely result in GPU "
                                                "under-utilization due to low occupancy"):
        bump[(2, 2), 32]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bump[128, 32]  # enough blocks
        monkeypatch.setenv("GPUNB_LOW_OCCUPANCY_WARNINGS", "0")
        bump[3, 32]  # off (gpunb's default)
