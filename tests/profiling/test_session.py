"""gpunb.profile() on the CPU target: records, summary, JSON, HTML, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from profiling_kernels import matmul, saxpy

import gpunb
from gpunb.foundation import events


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _saxpy_block(n=4096, launches=3):
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    with gpunb.profile() as prof:
        for _ in range(launches):
            saxpy[(n + 255) // 256, 256](out, x, x, np.float32(2.0))
    return prof, out, x


def test_every_launch_is_a_record_with_the_issue_fields():
    prof, out, x = _saxpy_block()
    np.testing.assert_allclose(out, 3 * x)  # profiling does not change results
    assert len(prof.launches) == 3 and events.launch_subscribers == ()
    r = prof.launches[-1]
    assert (r.kernel, r.grid, r.block, r.target) == ("saxpy", (16, 1, 1), (256, 1, 1), "cpu")
    assert r.defined_at.endswith("profiling_kernels.py:8")
    assert (r.timing, r.timer) == ("host", "host clock") and r.time_ms > 0
    assert r.bytes == 12 * 4096 and r.flops == 2 * 4096
    assert r.achieved_gbps == pytest.approx(r.bytes / (r.time_ms * 1e-3) / 1e9)
    assert prof.peak_gbps > 0
    assert r.pct_of_peak == pytest.approx(r.achieved_gbps / prof.peak_gbps * 100)
    assert r.occupancy is None and r.registers is None  # GPU facts: not on the CPU target
    assert r.cache is not None and r.cache.function == "saxpy"
    assert r.shared_bytes == 0 and r.source == "gpunb"


def test_summary_json_and_last_profile():
    prof, _, _ = _saxpy_block(launches=4)
    [row] = prof.summary()
    assert (row.kernel, row.launches) == ("saxpy", 4)
    times = sorted(r.time_ms for r in prof.launches if not r.compiled)
    assert row.min_ms == times[0] and row.max_ms == times[-1]
    data = json.loads(prof.to_json())
    assert data["timing"] == "host" and len(data["launches"]) == 4
    assert data["launches"][0]["bytes"] == 12 * 4096
    assert data["launches"][0]["cache"]["function"] == "saxpy"
    assert data["summary"][0]["launches"] == 4
    assert gpunb.last_profile().launches == prof.launches


def test_text_and_html_say_host_timings_and_show_table_roofline_timeline():
    prof, _, _ = _saxpy_block()
    assert "host timings (CPU target)" in prof.text()
    html = prof._repr_html_()
    assert "<table" in html and "saxpy" in html and "host timings" in html
    assert 'class="gpunb-roofline"' in html and 'class="gpunb-timeline"' in html
    timeline = html[html.index('<svg class="gpunb-timeline"'):]
    assert timeline.count("<rect") == 3  # one timeline bar per launch


def test_kernel_with_loops_has_no_flops_but_bytes():
    a = np.ones((32, 32), np.float32)
    c = np.zeros_like(a)
    with gpunb.profile() as prof:
        matmul[(2, 2), (16, 16)](a, a, c)
    r = prof.launches[0]
    assert r.flops is None and r.bytes == 3 * 32 * 32 * 4
    np.testing.assert_allclose(c, a @ a)


def test_no_launches_is_a_note_not_an_error():
    with gpunb.profile() as prof:
        pass
    assert prof.launches == [] and prof.notes == ["no kernel launches were recorded"]
    assert "no kernel launches" in prof.text()


def test_to_pandas_says_what_to_install_or_gives_a_frame():
    prof, _, _ = _saxpy_block()
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            prof.to_pandas()
    else:
        frame = prof.to_pandas()
        assert list(frame["kernel"]) == ["saxpy"] * 3 and "occupancy_limiter" in frame


def test_unknown_timer_is_a_clear_error():
    with pytest.raises(ValueError, match="expected auto, cupti, events or host"):
        with gpunb.profile(timer="wallclock"):
            pass


def test_records_are_made_when_first_read_and_stay_the_blocks():
    x = np.arange(1024, dtype=np.float32)
    out = np.zeros_like(x)
    with gpunb.profile() as prof:
        saxpy[4, 256](out, x, x, np.float32(2.0))
    assert prof._recording is not None  # nothing built when the block ended
    saxpy[4, 256](out, x, x, np.float32(2.0))  # after the block: not recorded
    assert len(prof.launches) == 1 and prof._recording is None
    assert gpunb.last_profile().launches is prof.launches  # one build, shared


def test_a_profiled_loop_gives_each_block_its_launches_and_binds_one_profile_each():
    x = np.arange(1024, dtype=np.float32)
    out = np.zeros_like(x)
    config = saxpy[4, 256]
    profiles = []
    for block in range(5):
        with gpunb.profile() as prof:
            assert prof.launches == []  # empty inside the block
            for k in range(block + 1):
                config(out, x, x, np.float32(k))
        config(out, x, x, np.float32(1.0))  # between blocks: not recorded
        assert gpunb.last_profile() is prof
        profiles.append(prof)
    np.testing.assert_allclose(out, 2 * x)
    assert [len(p.launches) for p in profiles] == [1, 2, 3, 4, 5]
    starts = [r.start_ns for p in profiles for r in p.launches]
    assert starts == sorted(set(starts))  # each launch once, in its own block's profile
    assert all(r.kernel == "saxpy" and r.time_ms > 0 for p in profiles for r in p.launches)


def test_roofs_are_measured_and_labelled():
    prof, _, _ = _saxpy_block()
    assert prof.peak_source["gbps"].startswith("measured")
    assert prof.peak_source["gflops"] == "measured: gpunb FP32 FMA kernel on the CPU target"
    assert prof.peak_gflops > 0
    assert "GFLOP/s (measured)" in prof.text()
    html = prof._repr_html_()
    assert "roofs:" in html and "GB/s (measured), " in html and "GFLOP/s (measured)" in html
    data = json.loads(prof.to_json())
    assert data["peak_source"]["gflops"].startswith("measured") and data["peak_gflops"] > 0


def test_launch_events_are_immutable_tuples_made_only_for_subscribed_kinds():
    x = np.arange(256, dtype=np.float32)
    seen = []
    with events.subscribe("launch_after", seen.append):
        saxpy[1, 256](np.zeros_like(x), x, x, np.float32(2.0))
    [after] = seen
    assert after.kind == "launch_after" and after.start_ns > 0 and after.args == ()
    with pytest.raises(AttributeError):
        after.ms = 1.0


def test_launches_through_the_native_launcher_are_records_with_every_field():
    pytest.importorskip("llvmlite")
    n = 2048
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    config = saxpy[n // 256, 256]
    for _ in range(4):  # the configuration gets its native launcher (jit/launcher.py)
        config(out, x, x, np.float32(1.0))
    assert config.launcher is not None
    with gpunb.profile() as prof:
        for k in range(20):
            config(out, x, x, np.float32(k))
        assert events.launch_recorders and events.launch_subscribers == ()
    np.testing.assert_allclose(out, 20 * x)
    assert len(prof.launches) == 20 and events.launch_observers == ()
    for r in prof.launches:
        assert (r.kernel, r.grid, r.block, r.target, r.timing) == \
            ("saxpy", (8, 1, 1), (256, 1, 1), "cpu", "host")
        assert r.defined_at.endswith("profiling_kernels.py:8") and r.error == ""
        assert r.bytes == 12 * n and r.flops == 2 * n and r.time_ms > 0
        assert r.achieved_gbps == pytest.approx(r.bytes / (r.time_ms * 1e-3) / 1e9)
        assert r.cache is not None and r.cache.function == "saxpy" and not r.compiled
    starts = [r.start_ns for r in prof.launches]
    assert starts == sorted(starts) and len(set(starts)) == 20
    [row] = prof.summary()
    assert (row.kernel, row.launches) == ("saxpy", 20)


def test_the_peak_kernel_is_gpunb_s_own_and_shows_nowhere(monkeypatch):
    """Measuring the FP32 roof compiles and launches gpunb_fp32_peak: no compile or cache event
    of it reaches a subscriber (the progress line, the panel) or the cache's log (%gpucache)."""
    import gpunb.cache
    from gpunb.profiling import peaks

    monkeypatch.setattr(peaks, "_measured", {})
    monkeypatch.setattr(peaks, "_kernel", None)
    seen = []
    kinds = ("compile_started", "compile_finished", "cache")
    with events.subscribe(kinds, seen.append):
        found = peaks.device_peaks("cpu")
        prof, _, _ = _saxpy_block(launches=1)  # a user kernel in the same process still shows
    assert found.gflops and found.source["gflops"].startswith("measured")
    names = {getattr(e, "kernel", None) or getattr(e, "function", None) for e in seen}
    assert "gpunb_fp32_peak" not in names
    assert not [e for e in gpunb.cache.events() if e.function == "gpunb_fp32_peak"]
    assert not events.in_internal_work()
