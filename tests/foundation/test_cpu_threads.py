"""GPUNB_CPU_THREADS and its default: the CPUs the process may run on, not every core."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpunb.foundation import config


def test_explicit_value_wins(monkeypatch):
    monkeypatch.setenv("GPUNB_CPU_THREADS", "3")
    assert config.cpu_threads() == 3
    monkeypatch.setenv("GPUNB_CPU_THREADS", "0")
    assert config.cpu_threads() == 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity API here")
def test_default_follows_the_affinity_mask():
    """A process pinned to one CPU (taskset, a container's cpuset) runs blocks on one thread,
    as numba's NUMBA_NUM_THREADS would."""
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from gpunb.foundation import config; print(config.cpu_threads())")
    env = {k: v for k, v in os.environ.items() if k != "GPUNB_CPU_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "1"


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity API here")
def test_default_is_the_affinity_mask_size(monkeypatch):
    monkeypatch.delenv("GPUNB_CPU_THREADS", raising=False)
    assert config.cpu_threads() == len(os.sched_getaffinity(0))
