"""How a Profile reads: a text table for terminals, static HTML for notebooks and nbconvert.

The HTML is self-contained (inline SVG, no JavaScript): a table per kernel, a roofline
(arithmetic intensity against GFLOP/s under the device's bandwidth and FP32 roofs, each labelled
measured or datasheet), a launch timeline, and, after an `--ncu` replay, the hardware metrics and
the kernel's source with per-line heat.
"""

from __future__ import annotations

import html
import math

# the columns of KernelSummary.row(), in its order
SUMMARY_HEADERS = ("kernel", "launches", "compiling launches", "p50 ms", "min ms", "max ms",
                   "total ms", "GB/s", "% of peak", "GFLOP/s", "occupancy")


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _text_table(headers, rows) -> str:
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def timing_label(profile) -> str:
    if profile.timing == "host":
        return "host timings (CPU target): wall-clock time of each launch on this machine"
    if profile.timer == "cupti":
        return "device timings from CUPTI activity records"
    if profile.timer == "cuda events":
        return "device timings from CUDA events (fallback)"
    return "no timings"


def _how(profile, key: str) -> str:
    """'measured' or 'datasheet' (the first word of peak_source[key]), '' when unknown."""
    return (profile.peak_source or {}).get(key, "").split(":")[0]


def peaks_label(profile) -> str:
    """The roofs and how each was found: '3021 GB/s copy (measured), 59 TFLOP/s FP32
    (measured)'."""
    parts = []
    if profile.peak_gbps:
        parts.append(f"copy bandwidth {profile.peak_gbps:.1f} GB/s "
                     f"({_how(profile, 'gbps') or 'measured'})")
    if profile.peak_gflops:
        parts.append(f"FP32 {profile.peak_gflops:.0f} GFLOP/s "
                     f"({_how(profile, 'gflops') or 'datasheet'})")
    if getattr(profile, "peak_tensor_gflops", None):
        parts.append(f"FP16 tensor cores {profile.peak_tensor_gflops:.0f} GFLOP/s "
                     f"({_how(profile, 'tensor_gflops') or 'measured'})")
    return ", ".join(parts) + (f" on {profile.device}" if parts and profile.device else "")


def _header(profile) -> str:
    peaks = peaks_label(profile)
    return f"gpunb profile: {len(profile.launches)} launches; {timing_label(profile)}" + \
        (f"; {peaks}" if peaks else "")


def profile_text(profile) -> str:
    parts = [_header(profile)]
    parts += [f"note: {n}" for n in profile.notes]
    if profile.launches:
        parts.append(_text_table(SUMMARY_HEADERS, [s.row() for s in profile.summary()]))
    if profile.ncu is not None:
        parts.append(profile.ncu.text())
    if profile.sanitizer is not None:
        parts.append(profile.sanitizer.text())
    return "\n".join(parts)


_CELL = 'style="border:1px solid #ccc;padding:2px 8px;text-align:left"'


def _html_table(headers, rows) -> str:
    # inline styles: nbconvert and GitHub show the table readable without gpunb's stylesheet
    head = "".join(f"<th {_CELL}>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td {_CELL}>{_esc(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f'<table class="gpunb-table" style="border-collapse:collapse;margin:4px 0">' \
           f"<tr>{head}</tr>{body}</table>"


def profile_html(profile) -> str:
    parts = [f"<div><b>{_esc(_header(profile))}</b></div>"]
    parts += [f'<div class="gpunb-note">{_esc(n)}</div>' for n in profile.notes]
    if profile.launches:
        parts.append(_html_table(SUMMARY_HEADERS, [s.row() for s in profile.summary()]))
        parts.append('<div style="display:flex;gap:16px;flex-wrap:wrap">'
                     + roofline_svg(profile) + timeline_svg(profile) + "</div>")
    if profile.ncu is not None:
        parts.append(profile.ncu.html(profile.sources))
    if profile.sanitizer is not None:
        parts.append(profile.sanitizer.html())
    return f'<div class="gpunb gpunb-profile">{"".join(parts)}</div>'


def roofline_svg(profile, width: int = 360, height: int = 220) -> str:
    """Log-log roofline: each kernel's p50 launch at (flops/byte, GFLOP/s) under the roofs."""
    points = []
    for record in profile.launches:
        ai, gf = record.arithmetic_intensity, record.gflops
        if ai and gf:
            points.append((record.kernel, ai, gf))
    if not points or not profile.peak_gbps:
        why = "no kernel with countable flops" if profile.peak_gbps else "no measured bandwidth"
        return f'<div class="gpunb-roofline muted">roofline: {_esc(why)}</div>'
    bw = profile.peak_gbps
    tensor = getattr(profile, "peak_tensor_gflops", None)
    top = profile.peak_gflops or max(g for _, _, g in points) * 4
    highest = max(top, tensor or 0, max(g for _, _, g in points))
    compute = f"{top:.0f} GFLOP/s ({_how(profile, 'gflops') or 'datasheet'})" \
        if profile.peak_gflops else "no FP32 peak"
    if tensor:
        compute += f", tensor cores {tensor:.0f} GFLOP/s"
    x0, x1 = -3.0, 4.0
    y1 = math.log10(highest * 2)
    y0 = y1 - 6

    def sx(ai):
        return 40 + (math.log10(ai) - x0) / (x1 - x0) * (width - 50)

    def sy(gf):
        return height - 25 - (math.log10(max(gf, 10 ** y0)) - y0) / (y1 - y0) * (height - 35)

    ridge = top / bw
    roof = [(10 ** x0, bw * 10 ** x0), (ridge, top), (10 ** x1, top)]
    path = " ".join(f"{sx(a):.1f},{sy(g):.1f}" for a, g in roof)
    if tensor:  # the tensor-core roof: the same bandwidth slope up to its own ridge
        tensor_roof = [(tensor / bw, tensor), (10 ** x1, tensor)]
        path_t = " ".join(f"{sx(a):.1f},{sy(g):.1f}" for a, g in [(ridge, top)] + tensor_roof
                          if a >= ridge)
        roof_t = (f'<polyline class="gpunb-tensor-roof" points="{path_t}" fill="none" '
                  'stroke="#6b46c1" stroke-width="2" stroke-dasharray="4 2"/>')
    else:
        roof_t = ""
    dots = "".join(f'<circle cx="{sx(a):.1f}" cy="{sy(g):.1f}" r="4" fill="#2b6cb0">'
                   f"<title>{_esc(k)}: {a:.3g} flop/B, {g:.3g} GFLOP/s</title></circle>"
                   for k, a, g in points)
    return (f'<svg class="gpunb-roofline" width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg"><polyline points="{path}" fill="none" '
            f'stroke="#c05621" stroke-width="2"/>{roof_t}{dots}'
            f'<text x="40" y="12" font-size="11">roofs: {bw:.0f} GB/s '
            f'({_esc(_how(profile, "gbps") or "measured")}), {_esc(compute)}</text>'
            f'<text x="40" y="{height - 5}" font-size="11">flop/byte (log)</text></svg>')


def timeline_svg(profile, width: int = 420, height: int = 0) -> str:
    """One row per kernel, a bar per launch at its start time (device or host clock)."""
    records = [r for r in profile.launches if r.start_ns is not None and r.time_ms]
    if not records:
        return '<div class="gpunb-timeline muted">timeline: launch start times not recorded ' \
               "(CUDA events time durations only)</div>"
    kernels = list(dict.fromkeys(r.kernel for r in records))
    height = height or 20 + 18 * len(kernels)
    t0 = min(r.start_ns for r in records)
    t1 = max(r.start_ns + r.time_ms * 1e6 for r in records)
    span = max(t1 - t0, 1.0)
    bars = []
    for r in records:
        x = 120 + (r.start_ns - t0) / span * (width - 130)
        w = max(r.time_ms * 1e6 / span * (width - 130), 1.0)
        y = 14 + 18 * kernels.index(r.kernel)
        color = "#2b6cb0" if r.source == "gpunb" else "#718096"
        bars.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="12" fill="{color}">'
                    f"<title>{_esc(r.kernel)} {r.time_ms:.4f} ms</title></rect>")
    labels = "".join(f'<text x="2" y="{24 + 18 * i}" font-size="11">{_esc(k[:18])}</text>'
                     for i, k in enumerate(kernels))
    return (f'<svg class="gpunb-timeline" width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg">{labels}{"".join(bars)}'
            f'<text x="120" y="10" font-size="10">timeline, {span / 1e6:.3f} ms</text></svg>')


def heat_html(source: str, heat: dict, first: int = 1, last: int | None = None) -> str:
    """Source lines with a background proportional to their share of `heat` ({line: value})."""
    lines = source.splitlines()
    last = last or len(lines)
    top = max(heat.values()) if heat else 0
    out = []
    for number in range(max(first, 1), min(last, len(lines)) + 1):
        value = heat.get(number, 0)
        alpha = value / top * 0.6 if top else 0
        share = f"{value / sum(heat.values()) * 100:5.1f}%" if value else "      "
        out.append(f'<span style="background:rgba(229,62,62,{alpha:.2f})">'
                   f'<span style="color:#888">{number:4d} {share}</span>  '
                   f"{_esc(lines[number - 1])}</span>")
    return f'<pre class="gpunb-code gpunb-heat">{chr(10).join(out)}</pre>'
