"""Seed 000's scenario: a grid-sync kernel compiled with cache=True in one process, loaded from
the disk cache in the next, must still launch cooperatively and give the right result.

numba lost the grid-sync lowering of a cached kernel; in gpunb the cached artifact carries the
launch facts (cooperative, shared memory, barrier sites), so a disk hit needs no compiler state.
Runs on the CPU target in CI and on the GPU with the `gpu` marker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

KERNEL = textwrap.dedent("""
    from gpunb import cuda

    @cuda.jit(cache=True)
    def two_phase(data, out):
        # phase 1 writes data, a grid-wide barrier, phase 2 reads what other blocks wrote
        g = cuda.cg.this_grid()
        i = cuda.grid(1)
        n = data.size
        if i < n:
            data[i] = i + 1
        g.sync()
        if i < n:
            out[i] = data[n - 1 - i] * 2
""")

RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    import coop_kernels
    from gpunb import cuda

    n = 4 * 128
    data = cuda.to_device(np.zeros(n, np.int64))
    out = cuda.to_device(np.zeros(n, np.int64))
    coop_kernels.two_phase[4, 128](data, out)
    (info,) = coop_kernels.two_phase.cache_info()
    spec = next(iter(coop_kernels.two_phase.specializations.values()))
    print(json.dumps({"out": out.copy_to_host().tolist(), "kind": info["event"].kind,
                      "source": info["event"].source, "cooperative": spec.artifact.cooperative,
                      "max_blocks": coop_kernels.two_phase.max_cooperative_grid_blocks(128)}))
""")


def _run(tmp_path: Path, target: str) -> dict:
    env = dict(os.environ, GPUNB_CACHE_DIR=str(tmp_path / "cache"), GPUNB_TARGET=target,
               GPUNB_NOTICES="0", PYTHONPATH=os.pathsep.join(
                   filter(None, (str(tmp_path), str(REPO), os.environ.get("PYTHONPATH")))))
    env.pop("GPUNB_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _scenario(tmp_path: Path, target: str) -> None:
    (tmp_path / "coop_kernels.py").write_text(KERNEL)
    n = 4 * 128
    expected = [(n - i) * 2 for i in range(n)]
    first = _run(tmp_path, target)
    assert first["kind"] == "miss" and first["out"] == expected and first["cooperative"]
    second = _run(tmp_path, target)
    assert (second["kind"], second["source"]) == ("hit", "disk")
    assert second["cooperative"] and second["out"] == expected
    assert second["max_blocks"] >= 4


def test_cached_grid_sync_kernel_in_a_new_process_cpu(tmp_path):
    _scenario(tmp_path, "cpu")


@pytest.mark.gpu
def test_cached_grid_sync_kernel_in_a_new_process_gpu(tmp_path):
    _scenario(tmp_path, "cuda")


def _synced_kernel():
    from gpunb import cuda

    @cuda.jit
    def synced(out):
        g = cuda.cg.this_grid()
        out[cuda.grid(1)] = 1
        g.sync()

    return synced


@pytest.mark.gpu
def test_too_large_cooperative_grid_is_refused_before_launch():
    import numpy as np

    import gpunb
    from gpunb import cuda
    from gpunb.foundation.errors import LaunchError

    synced = _synced_kernel()
    gpunb.set_target("cuda")
    try:
        out = cuda.device_array(1 << 20, np.int32)
        synced[1, 128](out)
        limit = synced.max_cooperative_grid_blocks(128)
        assert limit >= 132  # at least one block per SM on an H100
        with pytest.raises(LaunchError, match="cannot be resident") as info:
            synced[limit + 1, 128](out)
        assert "max_cooperative_grid_blocks(128)" in str(info.value)
        synced[limit, 128](out)  # the largest allowed grid still launches
        cuda.synchronize()
    finally:
        gpunb.set_target(None)


def test_max_cooperative_grid_blocks_on_the_cpu_target():
    import numpy as np

    import gpunb
    from gpunb.backends.cpu.executor import MAX_COOPERATIVE_THREADS

    synced = _synced_kernel()
    gpunb.set_target("cpu")
    try:
        synced[2, 32](np.zeros(64, np.int32))
        assert synced.max_cooperative_grid_blocks(256) == MAX_COOPERATIVE_THREADS // 256
        assert synced.max_cooperative_grid_blocks((16, 16)) == MAX_COOPERATIVE_THREADS // 256
    finally:
        gpunb.set_target(None)
