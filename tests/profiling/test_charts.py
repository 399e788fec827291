"""The profile's HTML: roofline and timeline SVG (log axes, ticks, labelled points, theme
colours), table headers that stay whole, plurals, and the CPU target's occupancy cell."""

from __future__ import annotations

import re

import pytest

from gpunb.profiling import charts, view
from gpunb.profiling.records import LaunchRecord, Occupancy, Profile


def _record(kernel="saxpy", ms=0.5, nbytes=12_000_000, flops=2_000_000, start=0, target="cuda",
            occupancy=None, compiled=False):
    gbps = nbytes / (ms * 1e-3) / 1e9 if nbytes else None
    return LaunchRecord(kernel, "Cell In[3], line 2", (16, 1, 1), (256, 1, 1), 0, 12, target,
                        "device" if target == "cuda" else "host", "cupti", ms, nbytes, flops,
                        gbps, None, occupancy, compiled=compiled, start_ns=start)


def _profile(records, gbps=3000.0, gflops=60000.0):
    return Profile(records, timer="cupti", peak_gbps=gbps, peak_gflops=gflops,
                   device="NVIDIA H100", peak_source={"gbps": "measured: copy",
                                                      "gflops": "measured: fma"})


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


@pytest.mark.parametrize("exponent, text", [(-3, "0.001"), (-1, "0.1"), (0, "1"), (2, "100"),
                                            (3, "1k"), (5, "100k"), (6, "1M"), (10, "10G")])
def test_decade_labels(exponent, text):
    assert charts.decade_label(exponent) == text


def test_the_roofline_has_log_axes_ticks_and_a_label_per_kernel():
    records = [_record("saxpy", ms=0.01 * k, start=k * 10**6) for k in (1, 2, 3)]
    records += [_record("matmul_tiled", ms=2.0, nbytes=4_000_000, flops=8_000_000_000,
                        start=5 * 10**6)]
    svg = charts.roofline_svg(_profile(records))
    texts = _texts(svg)
    # one labelled dot per kernel (its p50 launch), named on the chart
    assert svg.count("<circle") == 2
    assert "saxpy" in texts and "matmul_tiled" in texts
    # a value per decade on both axes, and what each axis is
    ticks = re.findall(r'class="gpunb-tick"[^>]*>([^<]*)<', svg)
    assert {"0.1", "1", "10", "100"} <= set(ticks), ticks
    assert "arithmetic intensity (flop/byte)" in texts and "GFLOP/s" in texts
    assert any("GB/s" in t for t in texts) and any("FLOP/s FP32" in t for t in texts)
    # points sit inside the plot area, under the title line
    frame = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    left, top, w, h = map(float, frame.groups())
    for cx, cy in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg):
        assert left <= float(cx) <= left + w and top <= float(cy) <= top + h


def test_the_p50_launch_places_the_point():
    """matmul's three launches: its point is the middle one's GFLOP/s, not the fastest's."""
    records = [_record("matmul", ms=ms, flops=10**9) for ms in (1.0, 2.0, 4.0)]
    (point,) = charts.roofline_points(_profile(records))
    assert point[2] == pytest.approx(10**9 / 2e-3 / 1e9)


def test_chart_colours_are_theme_variables_with_fallbacks():
    records = [_record(start=0), _record(start=10**6)]
    for svg in (charts.roofline_svg(_profile(records)), charts.timeline_svg(_profile(records))):
        # no fixed colours in presentation attributes, which would stay black in the dark theme
        assert not re.search(r'\s(fill|stroke)="#', svg), svg
        assert "currentColor" in svg and "var(--jp-ui-font-color1," in svg
        assert re.search(r"var\(--jp-[a-z0-9-]+,#[0-9a-f]{3,6}\)", svg)


def test_the_timeline_has_a_time_axis_with_round_values():
    records = [_record("saxpy", ms=0.2, start=k * 2 * 10**6) for k in range(5)]
    svg = charts.timeline_svg(_profile(records))
    ticks = re.findall(r'class="gpunb-tick"[^>]*>([^<]*)<', svg)
    assert ticks[0] == "0" and 2 <= len(ticks) <= 6, ticks
    assert all(t == "0" or t.endswith(" ms") for t in ticks), ticks
    assert svg.count("<rect") == 5


@pytest.mark.parametrize("ms, text", [(0.004, "4 µs"), (0.25, "0.25 ms"), (97.2, "97.2 ms"),
                                      (1510.0, "1.51 s")])
def test_durations_read_without_exponents(ms, text):
    assert charts.duration(ms) == text


def test_one_launch_is_singular():
    profile = _profile([_record()])
    assert view.profile_text(profile).startswith("gpunb profile: 1 launch;")
    assert "1 launch of saxpy" in profile._repr_html_()
    assert "1 launches" not in profile._repr_html_()
    assert view.plural(2, "launch") == "2 launches" and view.plural(1, "kernel") == "1 kernel"


def test_headers_stay_whole_and_the_table_scrolls_instead():
    """JupyterLab lays output tables out fixed, which broke headers mid-word ("launche s"):
    the table sets its own layout, headers do not wrap, a narrow output scrolls it."""
    html = view.profile_html(_profile([_record()]))
    table = re.search(r'<div style="overflow-x:auto[^>]*><table[^>]*>', html).group(0)
    assert "table-layout:auto" in table
    headers = re.findall(r"<th ([^>]*)>", html)
    assert len(headers) == len(view.HTML_HEADERS)
    assert all("white-space:nowrap" in h for h in headers)


def test_occupancy_says_why_it_is_empty_on_the_cpu_target():
    cpu = _profile([_record(target="cpu")])
    assert view.summary_rows(cpu)[0][-1] == "n/a (CPU target)"
    assert "n/a (CPU target)" in cpu.text()
    assert 'title="occupancy is a GPU figure' in cpu._repr_html_()
    gpu = _profile([_record(occupancy=Occupancy(0.75, 48, 64, "registers", "sm_90"))])
    assert view.summary_rows(gpu)[0][-1] == "75% (registers)"


def test_a_tensor_core_roof_is_drawn_dashed_and_labelled_above_the_fp32_one():
    profile = _profile([_record("gemm", ms=1.0, nbytes=10**8, flops=10**12)], gbps=3000.0,
                       gflops=60000.0)
    profile._peak_tensor_gflops = 800000.0
    svg = charts.roofline_svg(profile)
    assert 'class="gpunb-tensor-roof"' in svg and "stroke-dasharray" in svg
    assert "800 TFLOP/s tensor cores" in _texts(svg) and "60 TFLOP/s FP32" in _texts(svg)
    ticks = re.findall(r'class="gpunb-tick"[^>]*>([^<]*)<', svg)
    assert "1M" in ticks  # the y axis reaches above the tensor roof
    assert "FP16 tensor cores 800 TFLOP/s (measured)" in profile._repr_html_()


def test_every_chart_text_lies_inside_its_svg():
    """A rough box per text (0.62 em per character at 11 px): none crosses the drawing's edge,
    whatever the span of the timeline (the last tick's value at the right end included)."""
    for span_ms in (0.3, 1.0, 9.0, 100.0, 1510.0):
        records = [_record("saxpy", ms=span_ms / 4, start=int(k * span_ms / 4 * 1e6))
                   for k in range(4)]
        for svg in (charts.roofline_svg(_profile(records)), charts.timeline_svg(_profile(records))):
            width = float(re.search(r'width="(\d+)"', svg).group(1))
            for x, anchor, text in re.findall(
                    r'<text x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)"[^>]*>([^<]*)<', svg):
                w = 11 * 0.62 * len(text)
                left = {"start": 0, "middle": w / 2, "end": w}[anchor]
                assert float(x) - left >= -1 and float(x) - left + w <= width + 1, (span_ms, text)
