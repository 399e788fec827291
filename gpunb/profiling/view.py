"""How a Profile reads: a text table for terminals, static HTML for notebooks and nbconvert.

The HTML is self-contained (inline SVG, no JavaScript): a table per kernel, the roofline and
the launch timeline (charts.py), and, after an `--ncu` replay, the hardware metrics and the
kernel's source with per-line heat.
"""

from __future__ import annotations

import html

from gpunb.profiling.charts import byte_rate, flop_rate, plural, roofline_svg, timeline_svg

# the columns of KernelSummary.row(), in its order
SUMMARY_HEADERS = ("kernel", "launches", "compiling", "p50 ms", "min ms", "max ms",
                   "total ms", "GB/s", "% of peak", "GFLOP/s", "occupancy")
# the HTML table's narrower columns (a notebook output is ~700 px wide): compiling launches in
# the launches cell, min and max in one
HTML_HEADERS = ("kernel", "launches", "p50 ms", "min–max ms", "total ms", "GB/s", "% of peak",
                "GFLOP/s", "occupancy")
# what a header means, shown on hover in the HTML table
HEADER_TIPS = {
    "launches": "launches recorded; (N compiling): launches that compiled (or loaded from the "
                "cache) their code, whose times are left out of p50/min/max when others were "
                "timed",
    "p50 ms": "median launch time", "GB/s": "bytes moved to and from global memory per second, "
    "at the p50 launch", "% of peak": "GB/s against the measured copy bandwidth",
    "GFLOP/s": "counted floating-point operations per second, at the p50 launch",
    "occupancy": "theoretical occupancy at the launch's block size, and what limits it"}
CPU_OCCUPANCY = "n/a (CPU target)"
CPU_OCCUPANCY_TIP = ("occupancy is a GPU figure (resident warps per SM); the CPU target runs a "
                     "block's threads as loops on the host")


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
    return f"gpunb profile: {plural(len(profile.launches), 'launch')}; " \
           f"{timing_label(profile)}" + (f"; {peaks}" if peaks else "")


def summary_rows(profile) -> list[list[str]]:
    """KernelSummary.row() of each kernel, the occupancy cell saying why it is empty on the
    CPU target."""
    cpu_only = {k for k in profile.kernels()
                if all(r.target == "cpu" for r in profile.launches if r.kernel == k)}
    rows = []
    for summary in profile.summary():
        row = [str(c) for c in summary.row()]
        if not row[-1] and summary.kernel in cpu_only:
            row[-1] = CPU_OCCUPANCY
        rows.append(row)
    return rows


def html_rows(rows: list[list[str]]) -> list[list[str]]:
    """summary_rows in HTML_HEADERS' columns."""
    out = []
    for kernel, launches, compiling, p50, low, high, total, gbps, pct, gflops, occ in rows:
        count = f"{launches} ({compiling} compiling)" if compiling not in ("0", "") else launches
        spread = f"{low}–{high}" if low or high else ""
        out.append([kernel, count, p50, spread, total, gbps, pct, gflops, occ])
    return out


def profile_text(profile) -> str:
    parts = [_header(profile)]
    parts += [f"note: {n}" for n in profile.notes]
    if profile.launches:
        parts.append(_text_table(SUMMARY_HEADERS, summary_rows(profile)))
    if profile.ncu is not None:
        parts.append(profile.ncu.text())
    if profile.sanitizer is not None:
        parts.append(profile.sanitizer.text())
    return "\n".join(parts)


# inline styles: nbconvert and GitHub show the table without gpunb's stylesheet; colours are
# JupyterLab's theme variables (light and dark) with a fallback. table-layout:auto overrides
# JupyterLab's fixed layout for output tables, which breaks headers mid-word ("launche s").
_TABLE = ('style="border-collapse:collapse;margin:4px 0;table-layout:auto;width:auto;'
          'color:var(--jp-ui-font-color1,#1a1a1a)"')
_TH = ('style="border:1px solid var(--jp-border-color2,#ccc);padding:2px 6px;'
       'white-space:nowrap;text-align:{align};background:var(--jp-layout-color2,#f0f0f0);'
       'color:var(--jp-ui-font-color0,#000)"')
_TD = ('style="border:1px solid var(--jp-border-color2,#ccc);padding:2px 6px;'
       'white-space:nowrap;text-align:{align}"')


def _html_table(headers, rows) -> str:
    align = ["left" if k == 0 else "right" for k in range(len(headers))]
    head = "".join(
        f'<th {_TH.format(align=a)}' + (f' title="{_esc(HEADER_TIPS[h])}"' if h in HEADER_TIPS
                                         else "") + f">{_esc(h)}</th>"
        for h, a in zip(headers, align, strict=True))
    body = []
    for row in rows:
        cells = []
        for c, a in zip(row, align, strict=True):
            tip = f' title="{_esc(CPU_OCCUPANCY_TIP)}"' if c == CPU_OCCUPANCY else ""
            cells.append(f"<td {_TD.format(align=a)}{tip}>{_esc(c)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div style="overflow-x:auto;max-width:100%"><table class="gpunb-table" {_TABLE}>'
            f"<tr>{head}</tr>{''.join(body)}</table></div>")


def _html_header(profile) -> str:
    kernels = profile.kernels()
    what = f"{plural(len(profile.launches), 'launch')}"
    if kernels:
        names = ", ".join(kernels[:3]) + (", ..." if len(kernels) > 3 else "")
        what += f" of {names}"
    lines = [f'<div style="font-weight:600">gpunb profile: {_esc(what)}</div>',
             f'<div class="gpunb-muted" style="color:var(--jp-ui-font-color2,#555)">'
             f"{_esc(timing_label(profile))}</div>"]
    if profile.peak_gbps or profile.peak_gflops:
        roofs: list[str] = []
        if profile.peak_gbps:
            roofs.append(f"copy {byte_rate(profile.peak_gbps)} "
                         f"({_how(profile, 'gbps') or 'measured'})")
        if profile.peak_gflops:
            roofs.append(f"FP32 {flop_rate(profile.peak_gflops)} "
                         f"({_how(profile, 'gflops') or 'datasheet'})")
        if getattr(profile, "peak_tensor_gflops", None):
            roofs.append(f"FP16 tensor cores {flop_rate(profile.peak_tensor_gflops)} "
                         f"({_how(profile, 'tensor_gflops') or 'measured'})")
        device = f" on {profile.device}" if profile.device else ""
        lines.append(f'<div style="color:var(--jp-ui-font-color2,#555)">roofs: '
                     f"{_esc(', '.join(roofs))}{_esc(device)}</div>")
    return "".join(lines)


def profile_html(profile) -> str:
    parts = [_html_header(profile)]
    parts += [f'<div class="gpunb-note">note: {_esc(n)}</div>' for n in profile.notes]
    if profile.launches:
        parts.append(_html_table(HTML_HEADERS, html_rows(summary_rows(profile))))
        parts.append('<div style="display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start">'
                     + roofline_svg(profile) + timeline_svg(profile) + "</div>")
    if profile.ncu is not None:
        parts.append(profile.ncu.html(profile.sources))
    if profile.sanitizer is not None:
        parts.append(profile.sanitizer.html())
    return (f'<div class="gpunb gpunb-profile" style="color:var(--jp-ui-font-color1,#1a1a1a);'
            f'font-family:var(--jp-ui-font-family,sans-serif);max-width:100%">'
            f'{"".join(parts)}</div>')


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
                   f'<span style="color:var(--jp-ui-font-color2,#666)">{number:4d} {share}</span>  '
                   f"{_esc(lines[number - 1])}</span>")
    return f'<pre class="gpunb-code gpunb-heat">{chr(10).join(out)}</pre>'
