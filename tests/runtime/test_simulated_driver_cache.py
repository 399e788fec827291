"""The simulated CUDA driver (tests/simulated_cuda.py) keeps its stand-in cubins out of the
session's kernel cache: its device has the arch and driver version of the real test GPUs, so an
entry it left there was loaded by a later real test of the same kernel source
(CUDA_ERROR_INVALID_IMAGE on the H200, tests/graphs run in one process)."""

from __future__ import annotations

import numpy as np
import pytest
from simulated_cuda import simulate_cuda

import gpunb
from gpunb import cache, cuda


def simulated_only_kernel(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def _entries_of(name: str) -> list:
    found = cache.default_cache()
    on_disk = [e for e in found.disk.entries() if e.function.rpartition(".")[2] == name]
    in_memory = [key for key, (_artifact, body) in found.memory.items.items()
                 if str(body.get("function", "")).rpartition(".")[2] == name]
    return on_disk + in_memory


def test_kernels_built_on_the_simulated_driver_leave_no_entry_in_the_sessions_cache(tmp_path):
    session_dir = cache.cache_dir()
    with pytest.MonkeyPatch.context() as patch:
        fake = simulate_cuda(patch, tmp_path / "simulated")
        gpunb.set_target("cuda")
        try:
            kernel = cuda.jit(simulated_only_kernel)
            kernel[1, 8](cuda.to_device(np.zeros(8, np.float32)))
            assert fake.launches  # it ran on the simulated driver
            assert _entries_of("simulated_only_kernel")  # and was cached, in its own directory
        finally:
            gpunb.set_target(None)
    assert cache.cache_dir() == session_dir
    assert _entries_of("simulated_only_kernel") == []
