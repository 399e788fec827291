"""HTML building blocks shared by every gpunb view: escaping, highlighting, tables, one stylesheet.

Static HTML is what nbconvert and GitHub show, so every view renders through these helpers and
never relies on JavaScript. Pygments highlights when installed; otherwise code is escaped text.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence

_ids = itertools.count(1)

STYLE = """
.gpunb{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  color:var(--jp-ui-font-color1,#222)}
.gpunb pre,.gpunb code{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.gpunb .gpunb-code{margin:0;padding:4px 0;max-height:420px;overflow:auto;
  background:var(--jp-cell-editor-background,#f7f7f7);border:1px solid #ddd;line-height:1.35}
.gpunb .gl{display:block;padding:0 6px;white-space:pre}
.gpunb .gl .ln{display:inline-block;width:4.5em;color:#999;user-select:none}
.gpunb .gl.mapped{border-left:3px solid #9ab}
.gpunb .gl.sel{background:#ffe9a8}
.gpunb .gpunb-split{display:flex;gap:8px}
.gpunb .gpunb-split>div{flex:1;min-width:0}
.gpunb table.gpunb-table{border-collapse:collapse;margin:4px 0}
.gpunb table.gpunb-table th,.gpunb table.gpunb-table td{border:1px solid #ddd;padding:2px 8px;
  text-align:left;vertical-align:top}
.gpunb table.gpunb-table th{background:#f0f0f0}
.gpunb .strip{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0}
.gpunb .pill{border:1px solid #bbb;border-radius:10px;padding:1px 8px;background:#fafafa}
.gpunb .pill.on{background:#2b6cb0;color:#fff;border-color:#2b6cb0}
.gpunb .hit{color:#2f855a;font-weight:600}.gpunb .miss{color:#c05621;font-weight:600}
.gpunb .muted{color:#777}
.gpunb details>summary{cursor:pointer;font-weight:600}
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def new_id(prefix: str = "gpunb") -> str:
    """A document-unique id, so per-view CSS rules never leak into another view."""
    return f"{prefix}-{next(_ids)}"


def style_tag() -> str:
    return f"<style>{STYLE}</style>"


def wrap(body: str, dom_id: str | None = None) -> str:
    """A self-contained fragment: the stylesheet plus the body in a `.gpunb` container."""
    id_attr = f' id="{dom_id}"' if dom_id else ""
    return f'{style_tag()}<div class="gpunb"{id_attr}>{body}</div>'


def highlight_lines(code: str, language: str) -> list[str]:
    """Each line of `code` as HTML (pygments spans when available, escaped text otherwise)."""
    lines = code.splitlines()
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
    except ImportError:
        return [esc(line) for line in lines]
    lexer = _lexer(language, get_lexer_by_name)
    if lexer is None:
        return [esc(line) for line in lines]
    formatter = HtmlFormatter(nowrap=True, noclasses=True, style="default")
    out = highlight(code, lexer, formatter).splitlines()
    # pygments keeps one output line per input line with nowrap=True; fall back if it did not
    return out if len(out) == len(lines) else [esc(line) for line in lines]


def _lexer(language: str, get_lexer_by_name):
    from pygments.util import ClassNotFound

    names = {"python": ("python",), "llvm": ("llvm",), "ptx": ("ptx", "nasm"),
             "sass": ("nasm",), "text": ("text",)}.get(language, (language,))
    for name in names:
        try:
            return get_lexer_by_name(name, stripnl=False, stripall=False, ensurenl=False)
        except ClassNotFound:
            continue
    return None


def code_block(code: str, language: str, *, first_line: int = 1,
               line_attrs: dict[int, str] | None = None, line_class: str = "",
               selected: Iterable[int] = (), css_class: str = "") -> str:
    """A numbered code listing; lines in `line_attrs` get those attributes and `line_class`."""
    selected = set(selected)
    line_attrs = line_attrs or {}
    rows = []
    for offset, line_html in enumerate(highlight_lines(code, language)):
        number = first_line + offset
        classes = ["gl"]
        if number in line_attrs:
            classes.append("mapped")
            if line_class:
                classes.append(line_class)
        if number in selected:
            classes.append("sel")
        attrs = line_attrs.get(number, "")
        rows.append(f'<span class="{" ".join(classes)}" {attrs}><span class="ln">{number}'
                    f"</span>{line_html or ' '}</span>")
    return f'<pre class="gpunb-code {css_class}">{"".join(rows)}</pre>'


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], raw_html: bool = False) -> str:
    """An HTML table; cells are escaped unless `raw_html` (then the caller escaped them)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f"<td>{c if raw_html else esc(c)}</td>" for c in row)
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="gpunb-table"><tr>{head}</tr>{"".join(body)}</table>'


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The same table as aligned plain text, for terminal IPython and logs."""
    rows = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    lines.extend(fmt.format(*row) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def pills(items: Iterable[tuple[str, bool]]) -> str:
    return '<div class="strip">' + "".join(
        f'<span class="pill{" on" if on else ""}">{esc(label)}</span>' for label, on in items
    ) + "</div>"
