"""HTML for access maps: each array as a grid of cells coloured by the thread that touched them.

Static HTML (no widget state) so nbconvert and GitHub show it too. A cell's colour is the thread
that wrote it last (or, never written, read it first); its tooltip lists reads, writes and threads.
"""

from __future__ import annotations

import html

import numpy as np

MAX_CELLS = 4096  # larger arrays show their first rows only


def _colour(thread: int) -> str:
    if thread < 0:
        return "#f4f4f4"
    hue = (thread * 47) % 360  # neighbouring threads get clearly different hues
    light = 55 + (thread // 8) % 3 * 10
    return f"hsl({hue},70%,{light}%)"


def array_html(acc) -> str:
    shape = acc.shape if len(acc.shape) >= 1 else (1,)
    rows = 1 if len(shape) == 1 else int(np.prod(shape[:-1]))
    cols = shape[-1]
    owner = np.where(acc.last_writer.reshape(-1) >= 0, acc.last_writer.reshape(-1),
                     acc.first_reader.reshape(-1))
    reads, writes = acc.reads.reshape(-1), acc.writes.reshape(-1)
    shown = max(1, min(rows, MAX_CELLS // max(cols, 1)))
    cells = []
    for r in range(shown):
        row = []
        for c in range(cols):
            k = r * cols + c
            t = int(owner[k])
            tip = (f"[{k}] reads {reads[k]}, writes {writes[k]}; "
                   f"last writer {acc.last_writer.reshape(-1)[k]}, "
                   f"first reader {acc.first_reader.reshape(-1)[k]}")
            label = "" if t < 0 else str(t)
            border = "2px solid #c00" if acc.writers.reshape(-1)[k] > 1 else "1px solid #ccc"
            row.append(f'<td title="{html.escape(tip)}" style="background:{_colour(t)};'
                       f'border:{border};width:2.2em;height:1.6em;text-align:center;'
                       f'font-size:10px">{label}</td>')
        cells.append("<tr>" + "".join(row) + "</tr>")
    more = "" if shown == rows else f"<div>... {rows - shown} more rows</div>"
    title = html.escape(repr(acc))
    return (f"<div><div style='font-family:monospace;font-size:12px'>{title}</div>"
            f"<table style='border-collapse:collapse'>{''.join(cells)}</table>{more}"
            "<div style='font-size:11px;color:#666'>cell: element, colour and number: the "
            "thread that wrote it last (else read it first); red border: several writers"
            "</div></div>")


def map_html(amap) -> str:
    parts = [f"<h4 style='margin:4px 0'>access map: {html.escape(amap.kernel)}"
             f"[{amap.grid}, {amap.block}]</h4>"]
    if amap.races:
        parts.append(f"<pre style='color:#a00'>{html.escape(amap.races[0].message)}</pre>")
    for acc in amap.arrays.values():
        parts.append(array_html(acc))
    rows = [f"<tr><td>{c.line}</td><td>{html.escape(c.array)}</td><td>{c.kind}</td>"
            f"<td>{c.requests}</td><td>{c.sectors_per_request:.1f}</td>"
            f"<td>{c.efficiency:.0%}</td></tr>" for c in amap.coalescing]
    if rows:
        parts.append("<table><tr><th>line</th><th>array</th><th>kind</th><th>requests</th>"
                     "<th>sectors/request</th><th>efficiency</th></tr>" + "".join(rows)
                     + "</table>")
    rows = [f"<tr><td>{c.line}</td><td>{html.escape(c.array)}</td><td>{c.kind}</td>"
            f"<td>{c.requests}</td><td>{c.conflicts}</td><td>{c.max_ways}</td></tr>"
            for c in amap.bank_conflicts]
    if rows:
        parts.append("<table><tr><th>line</th><th>shared array</th><th>kind</th>"
                     "<th>requests</th><th>bank conflicts</th><th>worst ways</th></tr>"
                     + "".join(rows) + "</table>")
    return "<div>" + "".join(parts) + "</div>"
