"""On the GPU: CUPTI/CUDA-event device timings, other libraries' kernels, --ncu hot lines and
compute-sanitizer findings at the kernel's source lines. Run on the device machine."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import profiling_kernels as pk
import pytest

import gpunb
from gpunb.jit.launch_hooks import Recording

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _cuda():
    gpunb.set_target("cuda")
    yield
    gpunb.set_target(None)


def _line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _saxpy_data(n: int):
    from gpunb import cuda

    x = cuda.to_device(np.ones(n, np.float32))
    y = cuda.to_device(np.full(n, 2.0, np.float32))
    return x, y, cuda.device_array(n, np.float32)


def _event_gbps(n: int, x, y, out, iters: int = 20) -> float:
    """saxpy GB/s from CUDA events around each of `iters` single launches (their median): the
    same quantity a profile reports per kernel. (Events around a whole loop of launches read a
    few per cent faster on an H200: consecutive kernels overlap there, a kernel's tail with the
    next one's head.)"""
    from gpunb.backends.cuda import driver

    cu, check = driver.cuda_driver(), driver.check
    blocks = (n + 255) // 256
    pairs = [(check(cu.cuEventCreate(0), "e"), check(cu.cuEventCreate(0), "e"))
             for _ in range(iters)]
    for _ in range(3):  # warm-up: the first launches may run before the GPU's clocks have risen
        pk.saxpy[blocks, 256](out, x, y, np.float32(2.0))
    for start, end in pairs:
        check(cu.cuEventRecord(start, 0), "r")
        pk.saxpy[blocks, 256](out, x, y, np.float32(2.0))
        check(cu.cuEventRecord(end, 0), "r")
    check(cu.cuEventSynchronize(pairs[-1][1]), "s")
    ms = float(np.median([check(cu.cuEventElapsedTime(s, e), "t") for s, e in pairs]))
    for start, end in pairs:
        check(cu.cuEventDestroy(start), "d")
        check(cu.cuEventDestroy(end), "d")
    return 12.0 * n / (ms * 1e-3) / 1e9


def test_saxpy_achieved_bandwidth_matches_an_event_timed_measurement():
    n = 64 << 20
    x, y, out = _saxpy_data(n)
    measured = _event_gbps(n, x, y, out)
    with gpunb.profile() as prof:
        for _ in range(20):
            pk.saxpy[(n + 255) // 256, 256](out, x, y, np.float32(2.0))
    assert np.allclose(out.copy_to_host()[:16], 4.0)
    [row] = prof.summary()
    record = prof.launches[-1]
    assert record.timing == "device" and prof.timer in ("cupti", "cuda events")
    assert record.bytes == 12 * n and record.flops == 2 * n
    assert record.registers > 0 and record.occupancy.limiter in \
        ("warps", "blocks", "registers", "shared_memory")
    assert 0 < record.pct_of_peak < 110 and prof.peak_gbps > 500
    assert row.achieved_gbps == pytest.approx(measured, rel=0.05), (row, measured, prof.notes)


def test_cupti_lists_a_cupy_kernel_beside_gpunbs():
    cp = pytest.importorskip("cupy")
    x, y, out = _saxpy_data(1 << 16)
    a = cp.arange(1 << 16, dtype=cp.float32)
    with gpunb.profile() as prof:
        pk.saxpy[256, 256](out, x, y, np.float32(2.0))
        (a * 3).sum()
    assert prof.timer == "cupti", prof.notes
    others = [r for r in prof.launches if r.source == "other"]
    assert others and all(r.time_ms > 0 and r.grid[0] >= 1 for r in others)
    assert [r.kernel for r in prof.launches if r.source == "gpunb"] == ["saxpy"]


def test_ncu_gives_dram_throughput_and_a_hot_line_in_the_tiled_matmul():
    from gpunb import cuda
    from gpunb.profiling.api import ncu_snapshot
    from gpunb.profiling.ncu import top_lines
    from gpunb.profiling.session import ProfileSession
    from gpunb.profiling.snapshot import Snapshot

    n = 512
    a = cuda.to_device(np.random.default_rng(1).random((n, n), dtype=np.float32))
    c = cuda.device_array((n, n), np.float32)
    snapshot = Snapshot()
    with ProfileSession(snapshot=snapshot):
        pk.matmul[(n // 16, n // 16), (16, 16)](a, a, c)
    report = ncu_snapshot(snapshot, timeout=200, keep=True)
    assert not report.error, report.error
    [kernel] = report.kernels
    assert kernel.metric("DRAM Throughput") is not None and kernel.dram_gbps is not None
    assert kernel.stalls
    source = Path(pk.__file__).resolve()
    lines = {line for (file, line) in kernel.hot_lines if Path(file).name == source.name}
    first = inspect.getsourcelines(pk.matmul.py_func)[1]  # the decorator: the prologue's line
    last = _line_of(pk.matmul, "C[y, x] = tmp")
    assert lines and all(first <= line <= last for line in lines), kernel.hot_lines
    (hottest, _), = top_lines(kernel, 1)
    assert hottest[1] == _line_of(pk.matmul, "tmp += sA[ty, j] * sB[j, tx]"), kernel.hot_lines


def test_memcheck_finds_the_out_of_bounds_read_at_its_line():
    from gpunb import cuda

    x = cuda.to_device(np.ones(256, np.float32))
    out = cuda.device_array(256, np.float32)
    # the live launch reads 16 KiB past a 1 KiB allocation: mapped memory of the pool, so it
    # does not fault here; under memcheck (the replay) the same read is reported
    report = gpunb.sanitize(lambda: pk.read_past_end[1, 256](out, x), "memcheck")
    assert not report.error, report.error
    line = _line_of(pk.read_past_end, "out[i] = x[i + 4096]")
    assert any(f.line == line and "read" in f.what for f in report.findings), report.text()


def test_racecheck_finds_the_shared_memory_race_at_both_lines():
    from gpunb import cuda

    out = cuda.device_array(64, np.float32)
    report = gpunb.sanitize(lambda: pk.shared_race[1, 64](out), "racecheck")
    assert not report.error, report.error
    write = _line_of(pk.shared_race, "s[t] = t")
    read = _line_of(pk.shared_race, "out[t] = s[(t + 1) % 64]")
    assert any({f.line, f.other_line} == {write, read} for f in report.findings), report.text()


def test_a_clean_kernel_is_clean_under_memcheck():
    x, y, out = _saxpy_data(1 << 12)
    report = gpunb.sanitize(lambda: pk.saxpy[16, 256](out, x, y, np.float32(2.0)), "memcheck")
    assert report.clean, report.text()


def test_records_read_late_hold_the_blocks_launches_only():
    """CUPTI is flushed when the records are read: launches after the block, unprofiled or in
    another profile read first, do not leak into it."""
    n = 1 << 20
    x, y, out = _saxpy_data(n)
    blocks = (n + 255) // 256
    with gpunb.profile() as first:
        for _ in range(5):
            pk.saxpy[blocks, 256](out, x, y, np.float32(2.0))
    for _ in range(3):  # outside any profile
        pk.saxpy[blocks, 256](out, x, y, np.float32(2.0))
    with gpunb.profile() as second:
        pk.saxpy[blocks, 256](out, x, y, np.float32(2.0))
    assert first.timer == second.timer == "cupti", first.notes
    [late] = second.launches
    records = first.launches
    assert len(records) == 5 and all(r.source == "gpunb" and r.time_ms > 0 for r in records)
    starts = [r.start_ns for r in records]
    assert starts == sorted(starts) and starts[-1] < late.start_ns


def test_the_roofline_roofs_are_measured_on_the_device():
    from gpunb.backends.cuda import driver
    from gpunb.profiling.peaks import _datasheet_fp32

    x, y, out = _saxpy_data(1 << 16)
    with gpunb.profile() as prof:
        pk.saxpy[256, 256](out, x, y, np.float32(2.0))
    assert prof.peak_source["gbps"].startswith("measured")
    assert prof.peak_source["gflops"].startswith("measured"), prof.notes
    datasheet = _datasheet_fp32(driver.current_device())
    assert 0.5 * datasheet < prof.peak_gflops < 1.1 * datasheet, (prof.peak_gflops, datasheet)
    assert "(measured)" in prof.text() and "FLOP/s (measured)" in prof._repr_html_()


def test_a_cpu_target_kernel_in_a_gpu_profile_is_timed_on_the_host():
    from gpunb import cuda

    @cuda.jit(target="cpu")
    def add_one(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + 1

    x, y, out = _saxpy_data(1 << 12)
    host_x = np.arange(8, dtype=np.float32)
    host_out = np.zeros_like(host_x)
    with gpunb.profile() as prof:
        pk.saxpy[16, 256](out, x, y, np.float32(2.0))
        add_one[2, 4](host_out, host_x)
    gpu, cpu = prof.launches[:2]
    assert (gpu.kernel, gpu.target, gpu.timing) == ("saxpy", "cuda", "device") and gpu.time_ms
    assert (cpu.kernel, cpu.target, cpu.timing, cpu.timer) == ("add_one", "cpu", "host",
                                                               "host clock")
    assert cpu.time_ms > 0 and cpu.bytes == 2 * 8 * 4
    np.testing.assert_array_equal(host_out, host_x + 1)


def test_native_launches_in_a_profile_are_each_timed_by_cupti():
    """Inside a block the configuration keeps a native launcher (one whose hooks record); every
    one of its launches is a record with its own device time and the issue's fields."""
    pytest.importorskip("llvmlite")
    n = 1 << 16
    x, y, out = _saxpy_data(n)
    config = pk.saxpy[n // 256, 256]
    for _ in range(4):  # the configuration gets its native launcher (jit/launcher.py)
        config(out, x, y, np.float32(1.0))
    assert config.launcher is not None
    with gpunb.profile() as prof:
        for k in range(50):
            config(out, x, y, np.float32(k))
        recording = config.launcher
    assert recording.native is not None and isinstance(recording.hooks, Recording), recording
    np.testing.assert_array_equal(out.copy_to_host(), np.full(n, 49 + 2.0, np.float32))
    assert prof.timer == "cupti", prof.notes
    records = [r for r in prof.launches if r.source == "gpunb"]
    assert len(records) == 50
    for r in records:
        assert (r.kernel, r.grid, r.block, r.target, r.timing) == \
            ("saxpy", (n // 256, 1, 1), (256, 1, 1), "cuda", "device")
        assert r.time_ms and 0 < r.time_ms < 10 and r.bytes == 12 * n and r.flops == 2 * n
        assert r.registers and r.occupancy is not None and r.defined_at.endswith(":8")
    starts = [r.start_ns for r in records]
    assert starts == sorted(starts) and len(set(starts)) == 50


def test_back_to_back_blocks_keep_the_native_plan_and_cupti_times_every_launch():
    """A profiled loop: each block binds a recording launcher on the configuration's one native
    plan, and CUPTI times each of its launches, in its own profile only; a block whose
    predecessor's records were read (CUPTI flushed, a new activity buffer asked for) too."""
    pytest.importorskip("llvmlite")
    n = 1 << 16
    x, y, out = _saxpy_data(n)
    config = pk.saxpy[n // 256, 256]
    for _ in range(4):
        config(out, x, y, np.float32(1.0))
    plan = config.launcher.native.plan
    profiles, plans = [], set()
    for block in range(6):
        with gpunb.profile() as prof:
            for k in range(10):
                config(out, x, y, np.float32(block * 10 + k))
            assert isinstance(config.launcher.hooks, Recording)
            plans.add(config.launcher.native.plan)
        config(out, x, y, np.float32(0.0))  # between blocks: unrecorded, a plain launcher
        assert config.launcher.hooks is None and config.launcher.native.plan is plan
        profiles.append(prof)
        if block % 2:
            assert len(prof.launches) == 10  # read now: the next block follows a flush
    assert plans == {plan}
    np.testing.assert_array_equal(out.copy_to_host(), np.full(n, 2.0, np.float32))
    last_end = 0
    for prof in profiles:
        assert prof.timer == "cupti", prof.notes
        records = [r for r in prof.launches if r.source == "gpunb"]
        assert len(records) == 10 and all(r.time_ms and r.time_ms > 0 for r in records)
        starts = [r.start_ns for r in records]
        assert starts == sorted(starts) and len(set(starts)) == 10 and starts[0] > last_end
        last_end = starts[-1]


def test_a_kernel_with_bool_and_record_parameters_is_sanitized():
    x = np.arange(256.0)
    out = np.zeros(256)
    recs = np.zeros(256, np.dtype([("x", np.float32), ("n", np.int32)]))
    report = gpunb.sanitize(lambda: pk.scale_when[1, 256](out, x, True, recs), "memcheck")
    assert not report.error, report.error
    assert report.clean, report.text()
