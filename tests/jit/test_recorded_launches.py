"""Launch recorders (`gpunb.events.record_launches`, what `gpunb.profile()` uses): launches keep
their native part while one records (its hooks record them), every launch is one entry with the
right site, shapes and times, failures are recorded with their error, and nothing is recorded
once it stops. The `gpu` test checks the same where the machine code calls cuLaunchKernel."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("llvmlite")
import llvmlite.binding  # noqa: E402,F401 - launchers are built only once llvmlite is loaded

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402
from gpunb.foundation import events  # noqa: E402
from gpunb.foundation.events import EventKind, launch_event  # noqa: E402
from gpunb.jit.launch_hooks import Recording  # noqa: E402
from gpunb.runtime import native_pack  # noqa: E402
from gpunb.runtime.packing import ArgPacker  # noqa: E402


@cuda.jit
def axpb(out, x, a, b):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + b


from launch_support import warm_until_native as _warm  # noqa: E402 - a sibling helper


@pytest.fixture
def python_packs(monkeypatch):
    """The kernels whose arguments were packed in Python (the real packing runs): a launch
    through a native part packs in machine code."""
    calls = []
    real = ArgPacker.pack

    def counting(self, args, argtypes):
        calls.append(self.kernel)
        return real(self, args, argtypes)

    monkeypatch.setattr(ArgPacker, "pack", counting)
    return calls


def _records(config) -> bool:
    """Whether the configuration's launcher is a native one whose hooks record."""
    launcher = config.launcher
    return launcher is not None and launcher.native is not None and \
        isinstance(launcher.hooks, Recording)


def test_a_recorder_keeps_the_native_launcher_and_sees_every_launch(cpu, python_packs):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[2, 128]
    _warm(config, out, x, np.float32(2), 3)
    python_packs.clear()
    log: list = []
    with events.record_launches(log) as recorder:
        assert events.launch_observers == (recorder,) and events.launch_subscribers == ()
        for k in range(10):
            config(out, x, np.float32(k), 3)
        assert _records(config)
    assert np.array_equal(out, 9 * x + 3)
    # the recorder's start stopped the plain launcher; the declined launch bound a recording
    # one at once and launched through it: none was packed in Python
    assert python_packs == []
    assert len(log) == 10
    site, shapes, start, end, error = log[-1]
    assert (site.kernel, site.grid, site.block, site.stream, site.shared_bytes, site.target) == \
        ("axpb", 2, 128, 0, 0, "cpu")
    assert site.types == ("float32[::1]", "float32[::1]", "float32", "int64")
    assert shapes == ((256,), (256,)) and site.shape_at == (0, 1)  # the arrays' shapes
    assert error == "" and end > start
    assert [entry[2] for entry in log] == sorted(entry[2] for entry in log)
    spec = site.specialization
    assert spec is axpb.specializations[("cpu", spec.argtypes)]
    assert all(entry[0].specialization is spec for entry in log)
    event = launch_event(log[-1])  # what a LAUNCH_AFTER subscriber would have received
    assert (event.kind, event.kernel, event.shapes, event.error) == \
        (EventKind.LAUNCH_AFTER, "axpb", ((256,), (256,), (), ()), "")
    assert event.ms == pytest.approx((end - start) / 1e6) and event.start_ns == start
    assert events.launch_observers == () and events.launch_recorders == ()
    config(out, x, np.float32(1), 0)  # stopped: not recorded, and the plain launcher is back
    config(out, x, np.float32(1), 0)
    assert len(log) == 10 and np.array_equal(out, x)
    assert config.launcher.hooks is None and python_packs == []


def test_a_moved_version_binds_at_once_and_a_new_kind_still_takes_the_python_path(
        cpu, python_packs):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[1, 64]
    _warm(config, out, x, np.float32(2), 1)
    python_packs.clear()
    plan = config.launcher.native.plan
    axpb.version.bump()  # what a profile's start or end does
    config(out, x, np.float32(3), 1)
    assert python_packs == [] and np.array_equal(out, 3 * x + 1)
    assert config.launcher.native.plan is plan  # bound again, on the plan made before
    kinds = config.launcher.kinds
    config(out, x.astype(np.float64), np.float32(3), 1)  # new kinds: the Python path decides
    assert config.launcher.kinds != kinds and np.array_equal(out, 3 * x + 1)
    with pytest.raises(gpunb.LaunchError, match="takes 4 argument"):
        config(out, x, 2)
    config(out, x, np.float32(4), 0)
    assert np.array_equal(out, 4 * x)


def test_two_recorders_and_a_subscriber_each_see_their_launches(cpu):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[1, 64]
    _warm(config, out, x, 1.0, 0.0)
    outer: list = []
    inner: list = []
    seen: list = []
    with events.record_launches(outer):
        config(out, x, 1.0, 0.0)
        with events.record_launches(inner):
            for _ in range(3):
                config(out, x, 1.0, 0.0)
            with events.subscribe("launch_after", seen.append):  # the Python path meanwhile
                config(out, x, 2.0, 0.0)
            config(out, x, 1.0, 0.0)
        config(out, x, 1.0, 0.0)
    assert (len(outer), len(inner), len(seen)) == (7, 5, 1)
    assert inner == outer[1:6]  # the same entries, shared
    assert seen[0].shapes == ((64,), (64,), (), ())


def test_configurations_sharing_a_launcher_record_into_the_current_recorder_only(cpu):
    # two configurations of one specialisation share its native launcher; arming it for one
    # must neither revive the other's launcher of an earlier recorder nor its plain one
    x = np.arange(512, dtype=np.float32)
    out = np.zeros_like(x)
    wide, narrow, third = axpb[2, 256], axpb[4, 128], axpb[8, 64]
    for config in (wide, narrow, third):
        _warm(config, out, x, 1.0, 0.0)
    for round_ in range(3):
        log: list = []
        with events.record_launches(log):
            for k in range(4):
                wide(out, x, float(k), 0.0)
                narrow(out, x, float(k), 1.0)
            third(out, x, 2.0, 0.0)  # bound plainly before: must not launch unrecorded
        assert [(entry[0].grid, entry[0].block) for entry in log] == \
            [(2, 256), (4, 128)] * 4 + [(8, 64)], round_
        assert np.array_equal(out, 2 * x)
    wide(out, x, 1.0, 0.0)
    narrow(out, x, 1.0, 0.0)
    assert len(log) == 9  # after the last block: nothing recorded


@pytest.fixture
def plans(monkeypatch):
    """Each native plan made (runtime/native_pack.NativePlan, which runs)."""
    made = []
    real = native_pack.NativePlan

    def counting(*args):
        plan = real(*args)
        made.append(plan)
        return plan

    monkeypatch.setattr(native_pack, "NativePlan", counting)
    return made


def test_consecutive_blocks_bind_on_one_plan_and_record_each_launch_once(
        cpu, plans, python_packs):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[1, 64]
    _warm(config, out, x, np.float32(1), 0.0)
    python_packs.clear()
    plan = config.launcher.native.plan
    logs = []
    for block in range(4):
        log: list = []
        with events.record_launches(log):
            for k in range(3):
                config(out, x, np.float32(block), float(k))
            assert _records(config) and config.launcher.native.plan is plan
            assert np.array_equal(out, block * x + 2)
        logs.append(log)
        config(out, x, np.float32(1), 0.0)  # after the block: a plain launcher, unrecorded
        assert config.launcher.hooks is None and config.launcher.native.plan is plan
    # one plan (made while warming up), bound again at each change; nothing packed in Python
    assert len(plans) == 1 and python_packs == []
    assert [len(log) for log in logs] == [3, 3, 3, 3]
    starts = [entry[2] for log in logs for entry in log]
    assert starts == sorted(set(starts))  # each launch once, in its own block's log
    assert all(entry[0].grid == 1 and entry[4] == "" for log in logs for entry in log)


def test_each_change_of_observers_binds_the_launcher_that_applies(cpu):
    # a subscriber: the Python path, which publishes; a recorder: a recording native launcher;
    # neither: a plain one; a version bump (a failed launch, extensions) binds again too
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    config = axpb[1, 64]
    _warm(config, out, x, np.float32(1), 0.0)
    seen: list = []
    with events.subscribe("launch_after", seen.append):
        config(out, x, np.float32(2), 0.0)  # the Python path, published
        config(out, x, np.float32(2), 0.0)
        assert config.launcher is None  # the native one would only decline: dropped
    log: list = []
    with events.record_launches(log):
        config(out, x, np.float32(3), 0.0)
        config(out, x, np.float32(4), 0.0)
        assert _records(config)
    config(out, x, np.float32(5), 0.0)
    assert len(seen) == 2 and len(log) == 2 and np.array_equal(out, 5 * x)
    assert config.launcher.hooks is None
    before = config.launcher
    axpb.version.bump()
    with events.record_launches(log):
        config(out, x, np.float32(6), 0.0)
    assert len(log) == 3 and config.launcher is not before


def _launch_and_time(config, done: threading.Event, spans: list, errors: list) -> None:
    """Launch `config` until `done`, noting each launch's (start, end) on the host clock."""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    try:
        _warm(config, out, x, np.float32(1), 0.0)
        k = 0
        while not done.is_set():
            started = time.perf_counter_ns()
            config(out, x, np.float32(k), 0.0)
            spans.append((started, time.perf_counter_ns()))
            k += 1
        assert np.array_equal(out, (k - 1) * x)
    except BaseException as exc:  # noqa: BLE001 - the test reports it
        errors.append(exc)


def _blocks(count: int, blocks: list) -> None:
    """Start and stop `count` recorders, noting each one's times and log."""
    for n in range(count):
        log: list = []
        entering = time.perf_counter_ns()
        recorder = events.record_launches(log)
        entered = time.perf_counter_ns()
        while time.perf_counter_ns() < entered + 400_000 * (n % 4):
            pass  # the launching threads get turns (the switch interval is short); with four
            # threads taking turns, a launch that binds a launcher (the first of a
            # configuration after a block's start or end) can take a hundred us or more
        leaving = time.perf_counter_ns()
        recorder.stop()
        blocks.append((entering, entered, leaving, time.perf_counter_ns(), log))


def test_blocks_starting_and_ending_while_other_threads_launch(cpu):
    # a launch is recorded by every block it overlaps, at most once, and by no other; one that
    # runs entirely inside a block always is. Two threads launch (one configuration each: the
    # first through its native launcher, the second, not the specialisation's owner, through
    # the Python path) while two others start and stop blocks, overlapping
    configs = (axpb[1, 64], axpb[2, 32])
    done = threading.Event()
    spans: dict = {config.grid: [] for config in configs}
    errors: list = []
    blocks: list = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    launchers = [threading.Thread(target=_launch_and_time,
                                  args=(config, done, spans[config.grid], errors))
                 for config in configs]
    try:
        for thread in launchers:
            thread.start()
        deadline = time.monotonic() + 30
        while min(map(len, spans.values())) < 5 and time.monotonic() < deadline and not errors:
            time.sleep(0.001)
        togglers = [threading.Thread(target=_blocks, args=(150, blocks)) for _ in range(2)]
        for thread in togglers:
            thread.start()
        for thread in togglers:
            thread.join()
    finally:
        done.set()
        for thread in launchers:
            thread.join()
        sys.setswitchinterval(interval)
    assert errors == []
    inside = 0
    for entering, entered, leaving, left, log in blocks:
        for grid, launched in spans.items():
            mine = [entry for entry in log if entry[0].grid == grid]
            starts = [entry[2] for entry in mine]
            assert len(set(starts)) == len(starts)  # never twice in one profile
            outside = [(start - entering, end - entering, left - entering)
                       for _, _, start, end, _ in mine if start > left or end < entering]
            assert outside == [], grid  # (ns from the block's start: launch, block's end)
            for start, end in launched:  # each launch wholly inside the block is in its log
                if entered < start and end < leaving:
                    inside += 1
                    assert any(start <= entry[2] <= entry[3] <= end for entry in mine)
    assert inside > 0 and len(blocks) == 300


def test_a_kernel_raising_through_a_recording_launcher_is_recorded_with_its_error(cpu):
    @cuda.jit(debug=True, opt=False)
    def checked(out, i):
        if i >= out.size:
            raise ValueError("i is past the end")
        out[i] = 1.0

    out = np.zeros(4, np.float32)
    config = checked[1, 1]
    _warm(config, out, 1)
    log: list = []
    with events.record_launches(log):
        config(out, 2)  # declined by the plain launcher: binds a recording one
        config(out, 0)
        with pytest.raises(ValueError, match="past the end"):
            config(out, 10)
        config(out, 3)
    assert out.tolist() == [1, 1, 1, 1]
    errors = [entry[4] for entry in log]
    assert errors[:2] == ["", ""] and errors[3] == ""
    assert errors[2].startswith("KernelValueError") and "i is past the end" in errors[2]


def test_a_failed_launch_on_the_python_path_is_recorded(cpu):
    x = np.arange(8, dtype=np.float32)
    log: list = []
    with events.record_launches(log):
        with pytest.raises(gpunb.LaunchError, match="block"):
            axpb[1, 4096](np.zeros_like(x), x, 1.0, 0.0)
    assert len(log) == 1 and log[0][4].startswith("LaunchError")
    assert log[0][0].block == 4096 and log[0][0].shape_at is None  # every argument's shape
    assert launch_event(log[0]).shapes == ((8,), (8,), (), ())


def test_record_launches_wants_a_list():
    with pytest.raises(TypeError, match="expected a list"):
        events.record_launches(print)
    recorder = events.record_launches([])
    recorder.stop()
    recorder.stop()  # twice is fine
    assert not recorder.active and events.launch_recorders == ()


@pytest.fixture
def gpu():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


@pytest.mark.gpu
def test_gpu_recorded_launches_go_native_and_compute_right(gpu, python_packs):
    from gpunb.backends.cuda import driver

    x = cuda.to_device(np.arange(1000, dtype=np.float32))
    out = cuda.device_array(1000, np.float32)
    config = axpb[4, 256]
    _warm(config, out, x, np.float32(2), np.float32(1))
    python_packs.clear()
    log: list = []
    with events.record_launches(log):
        for k in range(50):
            config(out, x, np.float32(k), np.float32(1))
        assert _records(config)
    assert python_packs == []
    assert driver.last_launch.kernel == "axpb"
    assert np.array_equal(out.copy_to_host(), np.arange(1000, dtype=np.float32) * 49 + 1)
    assert len(log) == 50 and all(entry[4] == "" for entry in log)
    assert {launch_event(entry).shapes for entry in log} == {((1000,), (1000,), (), ())}
    assert {(entry[0].grid, entry[0].block, entry[0].target) for entry in log} == \
        {(4, 256, "cuda")}
