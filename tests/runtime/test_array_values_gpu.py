"""Device arrays as values on a real GPU: copies are new allocations, pickles carry the data
across spawn, and a forked child is told why its parent's arrays are unusable (no crash).

Needs a CUDA GPU (`gpu` marker); test_array_values.py covers the same on the CPU target and the
simulated driver.
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path, text: str, *args) -> str:
    script = tmp_path / "script.py"
    script.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(REPO), GPUNB_TARGET="cuda", GPUNB_NOTICES="0",
               GPUNB_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_kernel_writing_a_copy_leaves_the_original():
    from gpunb import cuda

    @cuda.jit
    def increment(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    d = cuda.to_device(np.zeros(256, np.float32))
    for make in (copy.copy, copy.deepcopy, lambda x: pickle.loads(pickle.dumps(x))):
        c = make(d)
        assert c.device_ctypes_pointer.value != d.device_ctypes_pointer.value
        increment[1, 256](c)
        assert d.copy_to_host().sum() == 0 and c.copy_to_host().sum() == 256


SPAWN = """
import multiprocessing, sys
import numpy as np
from gpunb import cuda


def total(array):
    out = cuda.device_array(1, np.float64)

    @cuda.jit
    def add_up(out, a):
        if cuda.grid(1) == 0:
            s = 0.0
            for i in range(a.size):
                s += a[i]
            out[0] = s

    add_up[1, 1](out, array)
    return float(out.copy_to_host()[0])


if __name__ == "__main__":
    d = cuda.to_device(np.arange(1000, dtype=np.float64))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print("RESULT", pool.apply_async(total, (d,)).get(timeout=240))
"""


def test_a_pickled_device_array_reaches_a_spawned_worker_with_its_data(tmp_path):
    assert f"RESULT {float(np.arange(1000).sum())}" in _run(tmp_path, SPAWN)


FORK = """
import os, pickle
import numpy as np
from gpunb import cuda
from gpunb.foundation.errors import LaunchError

d = cuda.to_device(np.arange(8, dtype=np.float32))
pid = os.fork()
if pid == 0:
    code = 3
    try:
        d.copy_to_host()
    except LaunchError as exc:
        code = 0 if "forked" in str(exc) and "spawn" in exc.hint else 4
    try:
        pickle.dumps(d)
        code = 5
    except LaunchError:
        pass
    os._exit(code)
_, status = os.waitpid(pid, 0)
print("CHILD", os.waitstatus_to_exitcode(status))
print("PARENT", d.copy_to_host().tolist())
"""


def test_a_forked_child_gets_a_clear_error_for_its_parents_array(tmp_path):
    out = _run(tmp_path, FORK)
    assert "CHILD 0" in out and "PARENT [0.0, 1.0" in out


GLOBAL_KERNEL = """
import pickle, sys
import numpy as np
from gpunb import cuda

TABLE = cuda.to_device(np.arange(8, dtype=np.float32) * 10)


@cuda.jit
def gather(out, idx):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = TABLE[idx[i]]


if sys.argv[1] == "make":
    with open(sys.argv[2], "wb") as f:
        pickle.dump(gather, f)
else:
    with open(sys.argv[2], "rb") as f:
        gather = pickle.load(f)
    out = cuda.device_array(4, np.float32)
    gather[1, 4](out, cuda.to_device(np.array([1, 2, 5, 6], np.int64)))
    print("RESULT", out.copy_to_host().tolist())
"""


def test_a_kernel_reading_a_global_device_array_unpickles_in_a_new_process(tmp_path):
    pytest.importorskip("cloudpickle")
    payload = tmp_path / "kernel.pkl"
    _run(tmp_path, GLOBAL_KERNEL, "make", payload)
    for _ in range(2):  # a fresh compile, then a disk hit: neither uses the maker's address
        assert "RESULT [10.0, 20.0, 50.0, 60.0]" in _run(tmp_path, GLOBAL_KERNEL, "load",
                                                          payload)
