"""Device arrays are values: copies and pickles carry the data to new memory, never an address.

HostDeviceArray (the CPU target's) runs for real here, across fork and spawn; DeviceArray runs
against the simulated driver in this process (its memory is host memory, so an alias would show
as a write through the copy). test_array_values_gpu.py repeats both across processes on a GPU.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpunb.foundation.errors import LaunchError
from gpunb.runtime import memory
from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

REPO = Path(__file__).resolve().parents[2]


def host(shape=(3, 4), dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# ---- the CPU target ------------------------------------------------------------------------

@pytest.mark.parametrize("make", [copy.copy, copy.deepcopy,
                                  lambda d: pickle.loads(pickle.dumps(d))])
def test_host_device_array_copies_own_their_memory(make):
    d = memory.to_device(host(), target="cpu")
    c = make(d)
    assert isinstance(c, HostDeviceArray) and c._ptr != d._ptr
    assert c._slots[0] == c._ptr  # what a launch passes is the copy's own address
    np.testing.assert_array_equal(c.copy_to_host(), host())
    c[0, 0] = -1.0
    d[1, 1] = -2.0
    assert d.copy_to_host()[0, 0] == 0.0 and c.copy_to_host()[1, 1] == 5.0


def test_a_copied_view_holds_the_views_elements_only():
    d = memory.to_device(host((6, 8)), target="cpu")
    view = d[1:5:2, ::3]
    for c in (copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        np.testing.assert_array_equal(c.copy_to_host(), host((6, 8))[1:5:2, ::3])
        assert c.shape == view.shape and c._ptr != view._ptr


def test_deepcopy_keeps_shared_references_shared():
    d = memory.to_device(host(), target="cpu")
    pair = copy.deepcopy([d, d])
    assert pair[0] is pair[1] and pair[0]._ptr != d._ptr


INCREMENT = """
from gpunb import cuda


@cuda.jit
def increment(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1
"""


def test_a_kernel_writing_a_deep_copy_leaves_the_original(tmp_path):
    from gpunb import cuda

    namespace: dict = {}
    exec(compile(INCREMENT, str(tmp_path / "inc.py"), "exec"), namespace)  # noqa: S102
    increment = namespace["increment"]
    with cuda_target_cpu():
        d = cuda.to_device(np.zeros(8, np.float32))
        c = copy.deepcopy(d)
        increment[1, 8](c)
        assert d.copy_to_host().tolist() == [0.0] * 8
        assert c.copy_to_host().tolist() == [1.0] * 8


class cuda_target_cpu:
    """gpunb.set_target("cpu") for the block."""

    def __enter__(self):
        import gpunb
        from gpunb.foundation import config

        self.before = config._process_target
        gpunb.set_target("cpu")

    def __exit__(self, *exc):
        from gpunb.foundation import config

        config.set_process_target(self.before)


def _sum_in_child(array) -> float:
    """Launch a kernel on the array in the child: the kernel reads the array's address there."""
    from gpunb import cuda

    @cuda.jit
    def copy_out(out, a):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i]

    out = np.zeros(array.shape, array.dtype)
    copy_out[(array.size + 127) // 128, 128](out, array)
    return float(out.sum())


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_pickled_array_reaches_a_child_with_its_current_data(method):
    """Under fork the child could read its own copy of the parent's memory - as it was at the
    fork; the pickle carries the data as it is when sent."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    d = memory.to_device(np.zeros(1000, np.float64), target="cpu")
    context = multiprocessing.get_context(method)
    with context.Pool(1, initializer=_quiet) as pool:
        # (with a timeout: a child that crashes on a stale address would leave apply waiting)
        pool.apply_async(_sum_in_child, (memory.to_device(np.zeros(3), target="cpu"),)) \
            .get(timeout=120)  # the worker is up
        d.copy_to_device(np.arange(1000, dtype=np.float64))  # after the fork
        total = pool.apply_async(_sum_in_child, (d,)).get(timeout=120)
        assert total == float(np.arange(1000).sum())


def _quiet() -> None:
    os.environ.update(GPUNB_NOTICES="0", GPUNB_TARGET="cpu", GPUNB_CACHE="0")


GLOBAL_KERNEL = """
import pickle, sys
import numpy as np
import gpunb
from gpunb import cuda

gpunb.set_target("cpu")
TABLE = cuda.to_device(np.arange(8, dtype=np.float32) * 10)


@cuda.jit
def gather(out, idx):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = TABLE[idx[i]]


out = np.zeros(4, np.float32)
gather[1, 4](out, np.array([7, 0, 3, 1], np.int64))
assert out.tolist() == [70.0, 0.0, 30.0, 10.0], out
with open(sys.argv[1], "wb") as f:
    pickle.dump(gather, f)
"""

LOAD_AND_LAUNCH = """
import pickle, sys
import numpy as np
import gpunb

gpunb.set_target("cpu")
with open(sys.argv[1], "rb") as f:
    gather = pickle.load(f)
out = np.zeros(4, np.float32)
gather[1, 4](out, np.array([1, 2, 5, 6], np.int64))
print("RESULT", out.tolist())
"""


@pytest.mark.slow
def test_a_kernel_reading_a_global_device_array_travels_with_its_data(tmp_path):
    """Pickled (by value, through cloudpickle), the kernel's global array goes as data: the
    process that unpickles it launches it on a new array holding the same values."""
    pytest.importorskip("cloudpickle")
    env = dict(os.environ, PYTHONPATH=str(REPO), GPUNB_NOTICES="0",
               GPUNB_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "make.py"
    script.write_text(GLOBAL_KERNEL)
    payload = tmp_path / "kernel.pkl"
    subprocess.run([sys.executable, str(script), str(payload)], env=env, check=True,
                   timeout=300)
    loader = tmp_path / "load.py"
    loader.write_text(LOAD_AND_LAUNCH)
    for _ in range(2):  # the second process hits the disk cache: no stale address either
        done = subprocess.run([sys.executable, str(loader), str(payload)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "RESULT [10.0, 20.0, 50.0, 60.0]" in done.stdout


# ---- the CUDA target's DeviceArray, on the simulated driver ---------------------------------

@pytest.mark.parametrize("make", [copy.copy, copy.deepcopy,
                                  lambda d: pickle.loads(pickle.dumps(d))])
def test_device_array_copies_are_new_allocations_with_the_data(fake_cuda, make):
    d = memory.to_device(host(), target="cuda")
    c = make(d)
    assert isinstance(c, DeviceArray) and c._ptr != d._ptr
    assert c.gpu_data is not d.gpu_data and c._ptr in fake_cuda.allocations
    np.testing.assert_array_equal(c.copy_to_host(), host())
    c[0, 0] = -1.0
    assert d.copy_to_host()[0, 0] == 0.0


def test_device_array_copies_keep_fortran_order_and_compact_views(fake_cuda):
    f = memory.to_device(np.asfortranarray(host((4, 5))), target="cuda")
    for c in (copy.deepcopy(f), pickle.loads(pickle.dumps(f))):
        assert c.is_f_contiguous() and c.strides == f.strides
        np.testing.assert_array_equal(c.copy_to_host(), host((4, 5)))
    view = memory.to_device(host((6, 8)), target="cuda")[::2, 1::3]
    for c in (copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert c.is_c_contiguous() and c.alloc_size == view.size * 4
        np.testing.assert_array_equal(c.copy_to_host(), host((6, 8))[::2, 1::3])


def test_a_device_array_is_pickled_as_data_not_as_an_address(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    text = pickle.dumps(d)
    assert d._ptr.to_bytes(8, "little") not in text
    assert np.asarray(host()).tobytes() in text


def test_an_allocation_alone_refuses_to_be_copied(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    with pytest.raises(TypeError, match="pickle the DeviceArray"):
        pickle.dumps(d.gpu_data)
    with pytest.raises(TypeError, match="copy_to_host"):
        copy.copy(d.gpu_data)


def test_a_forked_child_is_told_why_its_parents_array_is_unusable(fake_cuda):
    d = memory.to_device(host(), target="cuda")
    d.gpu_data.pid = os.getpid() + 1  # as a forked child sees its parent's allocation
    for action in (d.copy_to_host, lambda: pickle.dumps(d), lambda: copy.deepcopy(d)):
        with pytest.raises(LaunchError) as info:
            action()
        assert "forked" in str(info.value) and "spawn" in info.value.hint


def test_pickled_arrays_unpickle_on_the_current_device(fake_cuda):
    text = pickle.dumps(memory.to_device(host(), target="cuda"))
    again = pickle.loads(text)
    assert again.device_id == 0 and again.gpu_data.token.alive
    np.testing.assert_array_equal(again.copy_to_host(), host())


def test_the_readme_example_runs_as_written():
    """README's "Device arrays are values" snippet, on the CPU target."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Device arrays are values\n", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.S)
    with cuda_target_cpu():
        exec(compile(snippet, "README.md", "exec"), {})  # noqa: S102
