"""`kernel[grid, block](args)` through a native launcher (gpunb/jit/launcher.py): bound after
the Python path's first launches, right results for every argument kind, and the Python path
(with its errors) whenever the native one declines: new kinds, a rebound global, a new epoch, a
listener, extensions, another thread, a closure-cell dependency. The `gpu` tests check the same
on a GPU, where the launcher calls cuLaunchKernel itself."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite")
import llvmlite.binding  # noqa: E402,F401 - launchers are built only once llvmlite is loaded

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402
from gpunb.foundation.errors import LaunchError  # noqa: E402

SCALE = 2.0


@cuda.jit
def axpb(out, x, a, b):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + b


@cuda.jit
def scaled(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * SCALE


from launch_support import warm_until_native as _warm  # noqa: E402 - a sibling helper


@pytest.mark.parametrize("a, b", [(2, 3), (2.5, -1.0), (True, 0.5), (np.float32(2), np.int8(-3)),
                                  (np.int64(-4), np.uint16(7)), (np.float64(0.5), np.int32(9))])
def test_results_are_right_through_the_native_launcher(cpu, a, b):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[2, 128]
    _warm(config, out, x, a, b)
    assert config.launcher is not None
    for k in range(3):
        out[:] = 0
        x[0] = k
        config(out, x, a, b)
        expected = (float(a) * x.astype(np.float64) + float(b)).astype(np.float32)
        assert np.array_equal(out, expected)


def test_host_device_arrays_and_new_kinds_on_one_configuration(cpu):
    config = axpb[2, 128]
    x32 = cuda.to_device(np.arange(256, dtype=np.float32))
    out32 = cuda.device_array(256, np.float32)
    _warm(config, out32, x32, np.float32(3), np.float32(1))
    assert config.launcher is not None
    x64 = np.arange(256, dtype=np.float64)
    out64 = np.zeros(256)
    for _ in range(4):  # alternating kinds: each launch right, whichever path takes it
        config(out32, x32, np.float32(3), np.float32(1))
        config(out64, x64, 0.5, 2.0)
        assert np.array_equal(out32.copy_to_host(), np.arange(256, dtype=np.float32) * 3 + 1)
        assert np.array_equal(out64, x64 * 0.5 + 2.0)


def test_a_new_configuration_of_a_native_specialisation_goes_native_at_once(cpu):
    """Loops over sizes make a configuration per grid: once the specialisation has a launcher,
    each new configuration binds one at its first launch."""
    x = np.arange(4096, dtype=np.float32)
    out = np.zeros_like(x)
    _warm(axpb[2, 128], out, x, 2.0, 1.0)
    for blocks in (3, 5, 7):
        config = axpb[blocks, 128]
        config(out, x, 2.0, 1.0)
        assert config.launcher is not None
        out[:] = 0
        config(out, x, 2.0, 1.0)
        n = blocks * 128
        assert np.array_equal(out[:n], 2 * x[:n] + 1) and not out[n:].any()


def test_errors_still_come_from_the_python_path(cpu):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[2, 128]
    _warm(config, out, x, 2, 3)
    with pytest.raises(LaunchError, match="takes 4 argument"):
        config(out, x, 2)
    with pytest.raises(LaunchError, match="does not fit in 64 bits"):
        config(out, x, 2**70, 3)
    with pytest.raises(LaunchError, match="keyword"):
        config(out, x, 2, b=3)
    config(out, x, 2, 3)  # and the launcher still works after them
    assert np.array_equal(out, 2 * x + 3)


def test_kernel_exceptions_come_through_the_native_launcher(cpu):
    @cuda.jit(debug=True, opt=False)
    def checked(out, i):
        if i >= out.size:
            raise ValueError("i is past the end")
        out[i] = 1.0

    out = np.zeros(4, np.float32)
    config = checked[1, 1]
    _warm(config, out, 1)
    assert config.launcher is not None  # the CPU target runs the grid right after packing
    with pytest.raises(ValueError, match="past the end"):
        config(out, 10)
    config(out, 2)
    assert out.tolist() == [0, 1, 1, 0]


def test_a_rebound_global_recompiles(cpu):
    global SCALE
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = scaled[2, 128]
    try:
        _warm(config, out, x)
        assert config.launcher is not None and np.array_equal(out, x * 2)
        SCALE = 3.0
        config(out, x)
        assert np.array_equal(out, x * 3)
        _warm(config, out, x)
        assert np.array_equal(out, x * 3)
        SCALE = 2.0
        config(out, x)
        assert np.array_equal(out, x * 2)
    finally:
        SCALE = 2.0


def test_a_new_epoch_and_a_target_change_rearm_it(cpu):
    from gpunb.cache import invalidate

    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[2, 128]
    _warm(config, out, x, 2.0, 1.0)
    native = config.launcher.call
    assert native((out, x, 2.0, 1.0)) != -1
    invalidate()
    assert native((out, x, 2.0, 1.0)) == -1  # the epoch entry of its watch list moved
    config(out, x, 2.0, 1.0)  # the Python path re-checks and binds again at once
    assert config.launcher.call((out, x, 2.0, 1.0)) != -1
    gpunb.set_target("cpu")  # any target change stops every launcher
    assert config.launcher.call((out, x, 2.0, 1.0)) == -1
    config(out, x, 2.0, 1.0)
    assert np.array_equal(out, 2 * x + 1)


def test_launch_listeners_see_every_launch(cpu):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[2, 128]
    _warm(config, out, x, 2, 3)
    seen = []
    with gpunb.events.subscribe("launch_after", seen.append):
        for _ in range(5):
            config(out, x, 2, 3)
    assert len(seen) == 5
    config(out, x, 2, 3)
    assert len(seen) == 5


def test_kernels_with_extensions_never_go_native(cpu):
    class Double:
        def prepare_args(self, ty, val, stream=None, retr=None):
            return ty, val * 2 if isinstance(val, int) else val

    kernel = cuda.jit(axpb.py_func, extensions=[Double()])
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = kernel[2, 128]
    _warm(config, out, x, 2, 3)
    assert config.launcher is None
    assert np.array_equal(out, 4 * x + 6)


def test_closure_dependencies_stay_on_the_python_path(cpu):
    factor = np.float32(5)

    def with_closure(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * factor

    kernel = cuda.jit(with_closure)
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = kernel[2, 128]
    _warm(config, out, x)
    assert np.array_equal(out, x * 5)
    assert config.launcher is None  # a launcher would decline every launch: none is bound


def test_eight_threads_share_a_configuration_with_a_native_launcher(cpu):
    """The launcher packs into its own thread's buffer only; other threads take the Python
    path with theirs (8 threads x 100 launches, each checking its own result)."""
    config = axpb[2, 128]
    x0 = np.arange(256, dtype=np.float32)
    out0 = np.zeros_like(x0)
    _warm(config, out0, x0, 1.0, 0.0)
    assert config.launcher is not None
    failures = []
    start = threading.Barrier(8)

    def work(k):
        try:
            x = np.arange(256, dtype=np.float32) * (k + 1)
            out = np.zeros_like(x)
            start.wait()
            for j in range(100):
                config(out, x, 1.0, float(j))
                if not np.array_equal(out, x + j):
                    raise AssertionError(f"thread {k}, launch {j}: {out[:3]}")
                if k == 0:  # the launcher's own thread launches natively in between
                    config(out0, x0, 2.0, 0.0)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append((k, repr(exc)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert failures == []
    config(out0, x0, 2.0, 0.0)
    assert np.array_equal(out0, 2 * x0)


def test_a_processs_first_launch_imports_nothing_for_native_launchers():
    """The first launch is the cold-start and disk-hit figure: no launcher, no imports."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, gpunb\nfrom gpunb import cuda\ngpunb.set_target('cpu')\n"
            "@cuda.jit\ndef k(x):\n    x[0] = 1\n"
            "x = np.zeros(1)\nk[1, 1](x)\n"
            "print(sorted(m for m in sys.modules if 'native' in m))\n"
            "k[1, 1](x); k[1, 1](x)\nprint(k[1, 1].launcher is not None)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "True"]


def test_two_threads_owning_different_specialisations_share_a_configuration(cpu):
    """Each thread compiled (and so owns the buffer of) its own specialisation; both launch
    through one configuration, whose launcher each rebinds in turn, with the interpreter
    switching threads as often as it can: every launch runs its own kernel on its own data."""
    import sys

    kernel = cuda.jit(axpb.py_func)
    config = kernel[2, 128]
    failures = []
    start = threading.Barrier(2)

    def work(dtype, a, b):
        try:
            x = np.arange(256, dtype=dtype)
            out = np.zeros_like(x)
            start.wait()
            for j in range(150):
                x[0] = j
                config(out, x, a, b)
                if not np.array_equal(out, (a * x + b).astype(dtype)):
                    raise AssertionError(f"{dtype.__name__} launch {j}: {out[:3]}")
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(repr(exc))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(np.float32, np.float32(2), np.float32(1))),
                   threading.Thread(target=work, args=(np.float64, 3.0, -1.0))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


# ---- on a GPU: the launcher calls cuLaunchKernel itself ----------------------------------------

@pytest.fixture
def gpu():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


@pytest.mark.gpu
def test_gpu_launches_go_native_and_compute_right(gpu):
    from gpunb.backends.cuda import driver

    x = cuda.to_device(np.arange(1000, dtype=np.float32))
    out = cuda.device_array(1000, np.float32)
    config = axpb[4, 256]
    _warm(config, out, x, np.float32(2), np.float32(1))
    assert config.launcher is not None
    for k in range(50):
        assert config.launcher.call((out, x, np.float32(k), np.float32(1))) == 0
    assert driver.last_launch.kernel == "axpb"
    assert np.array_equal(out.copy_to_host(), np.arange(1000, dtype=np.float32) * 49 + 1)
    config(out, x, 3, 0.5)  # Python scalars: another specialisation, then native again
    _warm(config, out, x, 3, 0.5)
    assert np.array_equal(out.copy_to_host(), np.arange(1000, dtype=np.float32) * 3 + 0.5)


@pytest.mark.gpu
def test_gpu_streams_and_host_arrays(gpu):
    stream = cuda.stream()
    x = cuda.to_device(np.arange(256, dtype=np.float32), stream=stream)
    out = cuda.device_array(256, np.float32)
    config = axpb[2, 128, stream]
    _warm(config, out, x, np.float32(2), np.float32(0))
    assert config.launcher is not None
    stream.synchronize()
    assert np.array_equal(out.copy_to_host(), np.arange(256, dtype=np.float32) * 2)
    host_out = np.zeros(256, np.float32)
    host_x = np.arange(256, dtype=np.float32)
    _warm(axpb[2, 128], host_out, host_x, np.float32(3), np.float32(0))  # copied: Python path
    assert np.array_equal(host_out, host_x * 3)


@pytest.mark.gpu
def test_gpu_kernels_that_raise_or_sync_the_grid_stay_on_the_python_path(gpu):
    @cuda.jit(debug=True, opt=False)
    def checked(out, i):
        if i >= out.size:
            raise ValueError("i is past the end")
        out[i] = 1.0

    out = cuda.device_array(4, np.float32)
    config = checked[1, 1]
    _warm(config, out, 1)
    assert config.launcher is None  # a raising kernel's launch waits and reads its record
    with pytest.raises(ValueError, match="past the end"):
        config(out, 10)
