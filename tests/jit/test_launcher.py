"""The launch seam (gpunb/jit/launcher.py): a Launcher is frozen, made by Specialization.bind,
launches through one body with the hooks it was given around it, and launches no more once its
dispatcher's launch version moves - which a target change, launch observers, numba extensions
and a failed launch each do."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("llvmlite")
import llvmlite.binding  # noqa: E402,F401 - launchers are built only once llvmlite is loaded

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402
from gpunb.backends.base import DECLINED  # noqa: E402
from gpunb.runtime.typeof import type_key  # noqa: E402


def axpb(out, x, a, b):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + b


class Hooks:
    """LaunchHooks that note each call."""

    def __init__(self):
        self.calls = []

    def enter(self, launcher, args, new):
        self.calls.append(("enter", launcher, new))
        return len(self.calls)

    def exit(self, launcher, args, token, new, declined, error):
        self.calls.append(("exit", token, declined, error))


def _bound(kernel, config, args, native: bool, hooks=None):
    spec, kinds, _ = kernel.specialization_for_launch(args)
    return spec.bind(config, kinds, args, version=kernel.version.value, native=native,
                     hooks=hooks)


@pytest.mark.parametrize("native", [True, False])
def test_a_launcher_runs_its_hooks_around_each_launch(cpu, native):
    kernel = cuda.jit(axpb)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    config = kernel[1, 64]
    config(out, x, 2.0, 1.0)  # compiled, and its plan made where it can be
    config(out, x, 2.0, 1.0)
    hooks = Hooks()
    launcher = _bound(kernel, config, (out, x, 3.0, 0.0), native, hooks)
    assert (launcher.native is not None) is native and launcher.call == launcher.run
    assert launcher.run((out, x, 3.0, 0.0)) == 0
    assert np.array_equal(out, 3 * x)
    assert hooks.calls == [("enter", launcher, False), ("exit", 1, False, "")]
    with pytest.raises(dataclasses.FrozenInstanceError):
        launcher.hooks = None


def test_a_moved_version_stops_a_native_launcher_and_its_hooks_see_the_decline(cpu):
    kernel = cuda.jit(axpb)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    config = kernel[1, 64]
    for _ in range(3):
        config(out, x, 2.0, 1.0)
    hooks = Hooks()
    launcher = _bound(kernel, config, (out, x, 5.0, 0.0), True, hooks)
    kernel.version.bump()
    out[:] = 0
    assert launcher.run((out, x, 5.0, 0.0)) == DECLINED and not out.any()  # nothing launched
    assert hooks.calls[-1] == ("exit", 1, True, "")
    config(out, x, 5.0, 0.0)  # the configuration binds at the version now, and launches
    assert np.array_equal(out, 5 * x) and config.launcher.version == kernel.version.value


def test_an_error_reaches_the_hooks_and_the_caller(cpu):
    kernel = cuda.jit(axpb)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[1, 64](out, x, 2.0, 1.0)
    hooks = Hooks()
    launcher = _bound(kernel, kernel[1, 4096], (out, x, 2.0, 1.0), False, hooks)
    with pytest.raises(gpunb.LaunchError, match="block") as info:
        launcher.run((out, x, 2.0, 1.0))
    assert hooks.calls[-1][:3] == ("exit", 1, False)
    assert hooks.calls[-1][3] == f"{type(info.value).__name__}: {info.value}"


def test_what_moves_the_launch_version(cpu):
    kernel = cuda.jit(axpb)
    other = cuda.jit(axpb)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    for _ in range(3):
        kernel[1, 64](out, x, 2.0, 1.0)

    def moved(action) -> bool:
        before = kernel.version.value
        action()
        return kernel.version.value != before

    assert moved(lambda: gpunb.set_target("cpu"))  # a target change (every dispatcher)
    assert moved(lambda: gpunb.events.record_launches([]).stop())  # launch observers
    assert moved(lambda: gpunb.events.subscribe("launch_after", print).unsubscribe())
    assert not moved(lambda: gpunb.events.subscribe("cache", print).unsubscribe())
    assert moved(lambda: kernel.extensions)  # the list handed out may be changed

    def fail():
        with pytest.raises(gpunb.LaunchError, match="takes 4 arguments"):
            kernel[1, 64](out, x)

    assert moved(fail)  # a failed launch: the next one takes the Python path, which notes
    assert not moved(lambda: other.version.bump())  # that the function works again


def test_the_launchers_of_one_specialisation_share_its_plan(cpu):
    kernel = cuda.jit(axpb)
    x = np.arange(512, dtype=np.float32)
    out = np.zeros_like(x)
    for config in (kernel[2, 256], kernel[4, 128]):
        for _ in range(3):
            config(out, x, 1.0, 0.0)
    first, second = kernel[2, 256].launcher, kernel[4, 128].launcher
    assert first.spec is second.spec and first.native.plan is second.native.plan
    assert first.kinds == second.kinds == tuple(type_key(a) for a in (out, x, 1.0, 0.0))
    assert (first.native.launch.grid, second.native.launch.grid) == ((2, 1, 1), (4, 1, 1))


def test_a_launch_stream_that_is_no_stream_is_refused_on_every_target():
    """kernel[grid, block, 's'] ran on the CPU target (which ignores streams) and failed only on
    a GPU; now both refuse it at kernel[...], at the user's line."""
    from gpunb.foundation.errors import LaunchConfigError

    gpunb.set_target("cpu")
    try:
        @cuda.jit
        def bump(a):
            a[0] += 1

        a = np.zeros(1)
        for stream in (cuda.stream(), None, 0, np.int64(0), cuda.default_stream()):
            bump[1, 1, stream](a)
        assert a[0] == 5
        for stream in ("s", 1.5, True, object()):
            with pytest.raises(LaunchConfigError, match="as the launch's stream") as info:
                bump[1, 1, stream](a)
            assert info.value.loc is not None and info.value.loc.filename == __file__
    finally:
        gpunb.set_target("auto")
