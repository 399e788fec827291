"""A profile's two charts as inline SVG: the roofline (log-log) and the launch timeline.

Static markup (no JavaScript) that reads in JupyterLab's light and dark themes and in nbconvert:
every colour is a JupyterLab CSS variable with a fallback (SVG presentation attributes do not
take var(), so colours go in style attributes), text is `currentColor` of a container whose
colour is the theme's font colour. Axes are labelled, with a tick and a value per decade.
"""

from __future__ import annotations

import html
import math

FONT = "var(--jp-ui-font-color1,#1a1a1a)"
MUTED = "var(--jp-ui-font-color2,#555)"
GRID = "var(--jp-border-color2,#ddd)"
AXIS = "var(--jp-border-color1,#999)"
ROOF = "var(--jp-warn-color1,#c05621)"
# text in the roof's colour, pulled towards the theme's strongest text colour for contrast
ROOF_TEXT = "color-mix(in srgb,var(--jp-warn-color0,#c05621) 70%,var(--jp-ui-font-color0,#000))"
POINT = "var(--jp-brand-color1,#2b6cb0)"
OTHER = "var(--jp-ui-font-color3,#888)"
TENSOR = "var(--jp-accent-color1,#6b46c1)"


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _svg(css_class: str, width: int, height: int, body: str, label: str) -> str:
    return (f'<svg class="{css_class}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(label)}" '
            f'xmlns="http://www.w3.org/2000/svg" style="color:{FONT};'
            f'font-family:var(--jp-ui-font-family,sans-serif);font-size:11px;overflow:visible">'
            f"{body}</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start", css_class: str = "",
          colour: str = "currentColor", extra: str = "") -> str:
    cls = f' class="{css_class}"' if css_class else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{cls} '
            f'style="fill:{colour}"{extra}>{_esc(text)}</text>')


def plural(count: int, word: str) -> str:
    """`1 launch`, `3 launches`, `1 kernel`, `2 kernels`."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{count} {word}s"


def flop_rate(gflops: float) -> str:
    """A compute roof as one reads it: 5.57 GFLOP/s, 312 GFLOP/s, 59.8 TFLOP/s, 800 TFLOP/s."""
    if gflops >= 1000:
        return f"{gflops / 1000:.3g} TFLOP/s"
    return f"{gflops:.3g} GFLOP/s"


def byte_rate(gbps: float) -> str:
    """7.44 GB/s, 3021 GB/s (no exponents)."""
    return f"{gbps:.0f} GB/s" if gbps >= 100 else f"{gbps:.3g} GB/s"


def decade_label(exponent: int) -> str:
    """10**exponent as an axis reads it: 0.001, 0.1, 1, 10, 1k, 100k, 1M, 10G."""
    if exponent < 0:
        return f"{10.0 ** exponent:.{-exponent}f}"
    for power, suffix in ((9, "G"), (6, "M"), (3, "k")):
        if exponent >= power:
            return f"{10 ** (exponent - power)}{suffix}"
    return str(10 ** exponent)


def _decades(low: float, high: float, least: int = 2) -> tuple[int, int]:
    """Whole decades around [low, high] (values > 0), at least `least` of them."""
    a, b = math.floor(math.log10(low)), math.ceil(math.log10(high))
    while b - a < least:  # widen on alternate sides, so the data stays in the middle
        if (b - a) % 2:
            a -= 1
        else:
            b += 1
    return a, b


class _LogAxes:
    """Where a (flop/byte, GFLOP/s) point falls in the plot area."""

    def __init__(self, box: tuple, xs: tuple[int, int], ys: tuple[int, int]):
        self.left, self.top, self.right, self.bottom = box
        self.xs, self.ys = xs, ys

    def x(self, value: float) -> float:
        a, b = self.xs
        return self.left + (math.log10(value) - a) / (b - a) * (self.right - self.left)

    def y(self, value: float) -> float:
        a, b = self.ys
        v = min(max(math.log10(value), a), b)
        return self.bottom - (v - a) / (b - a) * (self.bottom - self.top)

    def grid(self) -> str:
        out = []
        for e in range(self.xs[0], self.xs[1] + 1):
            x = self.x(10.0 ** e)
            out.append(f'<line x1="{x:.1f}" y1="{self.top}" x2="{x:.1f}" y2="{self.bottom}" '
                       f'style="stroke:{GRID}"/>')
            out.append(_text(x, self.bottom + 14, decade_label(e), "middle", "gpunb-tick"))
        for e in range(self.ys[0], self.ys[1] + 1):
            y = self.y(10.0 ** e)
            out.append(f'<line x1="{self.left}" y1="{y:.1f}" x2="{self.right}" y2="{y:.1f}" '
                       f'style="stroke:{GRID}"/>')
            # the lowest value sits above its line, clear of the x axis's first value
            lift = -2 if e == self.ys[0] else 4
            out.append(_text(self.left - 5, y + lift, decade_label(e), "end", "gpunb-tick"))
        out.append(f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
                   f'height="{self.bottom - self.top}" style="fill:none;stroke:{AXIS}"/>')
        return "".join(out)


def roofline_points(profile) -> list[tuple[str, float, float]]:
    """(kernel, flop/byte, GFLOP/s) of each kernel's p50 launch that has countable flops."""
    by_kernel: dict = {}
    for record in profile.launches:
        if record.arithmetic_intensity and record.gflops:
            by_kernel.setdefault(record.kernel, []).append(record)
    points = []
    for kernel, records in by_kernel.items():
        records.sort(key=lambda r: r.time_ms)
        middle = records[len(records) // 2]
        points.append((kernel, middle.arithmetic_intensity, middle.gflops))
    return points


def _labels(points: list, axes: _LogAxes) -> str:
    """A dot and the kernel's name per point; names kept apart vertically and inside the plot."""
    out, taken = [], []
    for kernel, ai, gf in sorted(points, key=lambda p: -p[2]):
        x, y = axes.x(ai), axes.y(gf)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" class="gpunb-point" '
                   f'style="fill:{POINT};stroke:var(--jp-layout-color1,#fff)">'
                   f"<title>{_esc(kernel)}: {ai:.3g} flop/B, {gf:.3g} GFLOP/s</title></circle>")
        name = kernel if len(kernel) <= 18 else kernel[:17] + "…"
        right = x + 7 + 6.2 * len(name) < axes.right
        ly = y + 4
        while any(abs(ly - t) < 12 for t in taken):
            ly += 12
        ly = min(ly, axes.bottom - 3)
        taken.append(ly)
        out.append(_text(x + 7 if right else x - 7, ly, name, "start" if right else "end",
                         "gpunb-point-label"))
    return "".join(out)


def _tensor_roof(axes: _LogAxes, bw: float, ridge: float, top: float, tensor: float | None,
                 xs: tuple[int, int]) -> str:
    """The tensor-core roof (dashed): the bandwidth slope on from the FP32 ridge up to its own
    ridge, then flat; labelled below the line at the right."""
    if not tensor or tensor <= top:
        return ""
    points = [(ridge, top), (tensor / bw, tensor), (10.0 ** xs[1], tensor)]
    path = " ".join(f"{axes.x(a):.1f},{axes.y(g):.1f}" for a, g in points)
    return (f'<polyline points="{path}" class="gpunb-tensor-roof" style="fill:none;'
            f'stroke:{TENSOR};stroke-width:2;stroke-dasharray:4 2"/>'
            + _text(axes.right - 2, axes.y(tensor) + 12, f"{flop_rate(tensor)} tensor cores",
                    "end", "gpunb-roof-label"))


def roofline_svg(profile, width: int = 380, height: int = 250) -> str:
    """The roofline: each kernel's p50 launch at (flop/byte, GFLOP/s) under the bandwidth and
    FP32 roofs, log axes with a value per decade; or one line saying why there is none."""
    points = roofline_points(profile)
    if not points or not profile.peak_gbps:
        why = "no kernel with countable flops (loops make the count unknown)" \
            if profile.peak_gbps else "no measured bandwidth"
        return f'<div class="gpunb-roofline muted">roofline: {_esc(why)}</div>'
    bw = profile.peak_gbps
    top = profile.peak_gflops or max(g for _, _, g in points) * 4
    tensor = getattr(profile, "peak_tensor_gflops", None)
    ridge = top / bw
    intensities = [a for _, a, _ in points] + [ridge] + ([tensor / bw] if tensor else [])
    xs = _decades(min(intensities) / 3, max(intensities) * 3, 3)
    highest = max([top, tensor or 0.0] + [g for _, _, g in points])
    ys = _decades(min(g for _, _, g in points) / 3, highest * 1.5, 3)
    axes = _LogAxes((48, 22, width - 10, height - 36), xs, ys)
    low_x = 10.0 ** xs[0]
    roof = [(low_x, bw * low_x), (ridge, top), (10.0 ** xs[1], top)]
    if bw * low_x < 10.0 ** ys[0]:  # the slope enters the plot above its left edge
        roof[0] = (10.0 ** ys[0] / bw, 10.0 ** ys[0])
    path = " ".join(f"{axes.x(a):.1f},{axes.y(g):.1f}" for a, g in roof)
    compute = f"{flop_rate(top)} FP32" if profile.peak_gflops else "no FP32 peak"
    body = (axes.grid()
            + f'<polyline points="{path}" class="gpunb-roof" '
              f'style="fill:none;stroke:{ROOF};stroke-width:2"/>'
            + _tensor_roof(axes, bw, ridge, top, tensor, xs)
            + _text(axes.right - 2, axes.y(top) - 4, compute, "end", "gpunb-roof-label")
            + _text(axes.left + 4, 13, "GFLOP/s", "start", "gpunb-axis-label", MUTED)
            + _text(width - 10, 13, f"memory roof {byte_rate(bw)}", "end", "gpunb-roof-label",
                    ROOF_TEXT)
            + _labels(points, axes)
            + _text((axes.left + axes.right) / 2, height - 6,
                    "arithmetic intensity (flop/byte)", "middle", "gpunb-axis-label", MUTED))
    return _svg("gpunb-roofline", width, height, body,
                f"roofline: {plural(len(points), 'kernel')} under {byte_rate(bw)} and {compute}")


def duration(ms: float) -> str:
    """A time as a person reads it: 0.25 ms, 12 ms, 1.5 s."""
    if ms >= 1000:
        return f"{ms / 1000:.3g} s"
    return f"{ms:.3g} ms" if ms >= 0.01 else f"{ms * 1000:.3g} µs"


def _time_ticks(span_ms: float) -> list[float]:
    """Two to six round times (ms) from 0 across `span_ms`."""
    step = 10.0 ** math.floor(math.log10(span_ms / 3)) if span_ms > 0 else 1.0
    for factor in (1, 2, 5, 10):
        if span_ms / (step * factor) <= 5:
            step *= factor
            break
    count = int(span_ms / step + 1e-9)
    return [k * step for k in range(count + 1)]


def timeline_svg(profile, width: int = 420) -> str:
    """One row per kernel, a bar per launch at its start (device or host clock), a time axis."""
    records = [r for r in profile.launches if r.start_ns is not None and r.time_ms]
    if not records:
        return '<div class="gpunb-timeline muted">timeline: launch start times not recorded ' \
               "(CUDA events time durations only)</div>"
    kernels = list(dict.fromkeys(r.kernel for r in records))
    left, right, top = 118, width - 10, 20
    height = top + 18 * len(kernels) + 30
    t0 = min(r.start_ns for r in records)
    span = max(max(r.start_ns + r.time_ms * 1e6 for r in records) - t0, 1.0)
    scale = (right - left) / span
    bars = []
    for r in records:
        x = left + (r.start_ns - t0) * scale
        w = max(r.time_ms * 1e6 * scale, 1.5)
        y = top + 18 * kernels.index(r.kernel) + 3
        colour = POINT if r.source == "gpunb" else OTHER
        bars.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="12" '
                    f'style="fill:{colour}"><title>{_esc(r.kernel)} {r.time_ms:.4f} ms'
                    f"</title></rect>")
    labels = "".join(_text(left - 6, top + 18 * i + 13, k if len(k) <= 17 else k[:16] + "…",
                           "end", "gpunb-timeline-label") for i, k in enumerate(kernels))
    axis_y = top + 18 * len(kernels) + 4
    ticks = []
    for t in _time_ticks(span / 1e6):
        x = left + t * 1e6 * scale
        ticks.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" '
                     f'style="stroke:{AXIS}"/>')
        near_edge = x > width - 28  # a value at the right end ends there, inside the chart
        ticks.append(_text(x, axis_y + 15, "0" if t == 0 else duration(t),
                           "end" if near_edge else "middle", "gpunb-tick"))
    axis = (f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" '
            f'style="stroke:{AXIS}"/>' + "".join(ticks))
    title = _text(2, 12, f"launch timeline: {duration(span / 1e6)} from the first launch",
                  "start", "gpunb-axis-label", MUTED)
    return _svg("gpunb-timeline", width, height, title + labels + "".join(bars) + axis,
                f"timeline of {plural(len(records), 'launch')} over {duration(span / 1e6)}")
