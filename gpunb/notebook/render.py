"""HTML building blocks shared by every gpunb view: escaping, highlighting, tables, one stylesheet.

Static HTML is what nbconvert and GitHub show, so every view renders through these helpers and
never relies on JavaScript. Pygments highlights when installed; otherwise code is escaped text.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence

_ids = itertools.count(1)

# Listings and split views do not size their container by their longest line (contain:
# inline-size): in a narrow output (a widget tab is a flex item) they scroll, and the split view's
# panes stack, instead of widening the output past the window.
# Every colour is a JupyterLab theme variable (--jp-*), so views follow the light and dark themes;
# the fallback after each comma is for pages without JupyterLab's stylesheet (nbconvert, GitHub).
# Code colours use the editor's own token variables (--jp-mirror-editor-*), matching the theme.
_SEL = "color-mix(in srgb,var(--jp-brand-color1,#2196f3) 20%,transparent)"
_HOVER = "color-mix(in srgb,var(--jp-brand-color1,#2196f3) 14%,transparent)"
# outcome colours: the theme's colour pulled 30% towards its strongest text colour (black in a
# light theme, white in a dark one), so each keeps a 4.5:1 contrast in both themes
HIT = "color-mix(in srgb,var(--jp-success-color0,#1b5e20) 70%,var(--jp-ui-font-color0,#000))"
MISS = "color-mix(in srgb,var(--jp-warn-color0,#e65100) 70%,var(--jp-ui-font-color0,#000))"
BAD = "color-mix(in srgb,var(--jp-error-color0,#b71c1c) 70%,var(--jp-ui-font-color0,#000))"
# secondary text (line numbers, notes) that keeps 4.5:1 on a code listing's background and on a
# highlighted line, in both themes (--jp-ui-font-color3 and 2 do not: 2.5:1 and 4.2:1)
MUTED = "color-mix(in srgb,var(--jp-ui-font-color1,#222) 75%,transparent)"
STYLE = """
.gpunb{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  color:var(--jp-ui-font-color1,#222);max-width:100%}
.gpunb pre,.gpunb code{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.gpunb .gpunb-code{position:relative;margin:0;padding:4px 0;max-height:420px;overflow:auto;
  color:var(--jp-content-font-color1,#222);
  background:var(--jp-cell-editor-background,#f7f7f7);
  border:1px solid var(--jp-border-color2,#ddd);line-height:1.35;
  width:100%;box-sizing:border-box;contain:inline-size}
.gpunb .gl{display:block;padding:0 6px;white-space:pre}
.gpunb .gl .ln{display:inline-block;width:4.5em;color:MUTED;user-select:none}
.gpunb .gl .note{margin-left:2em;color:MUTED;font-style:italic;user-select:none}
.gpunb .gl.mapped{border-left:3px solid var(--jp-brand-color2,#9ab);cursor:pointer}
.gpunb .gl.sel,.gpunb .gl.pin{background:SEL}
.gpunb .gl.hit-search{outline:1px dashed var(--jp-warn-color1,#c05621)}
.gpunb .gpunb-split{display:flex;flex-wrap:wrap;gap:8px;width:100%;contain:inline-size}
.gpunb .gpunb-split>div{flex:1 1 320px;min-width:0}
.gpunb .gpunb-tools{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:2px 0;
  font-size:12px;color:var(--jp-ui-font-color2,#777)}
.gpunb .gpunb-tools input,.gpunb .gpunb-tools button{font-size:12px;
  color:var(--jp-ui-font-color1,#222);background:var(--jp-layout-color1,#fff);
  border:1px solid var(--jp-border-color1,#bbb);border-radius:3px;padding:1px 6px}
.gpunb .gpunb-tools input[type=search]{width:9em}
.gpunb .gpunb-scroll{overflow-x:auto;max-width:100%}
.gpunb table.gpunb-table{border-collapse:collapse;margin:4px 0;table-layout:auto;width:auto}
.gpunb table.gpunb-table th,.gpunb table.gpunb-table td{
  border:1px solid var(--jp-border-color2,#ddd);padding:2px 8px;text-align:left;
  vertical-align:top;overflow-wrap:break-word;word-break:normal}
.gpunb table.gpunb-table th{background:var(--jp-layout-color2,#f0f0f0);
  color:var(--jp-ui-font-color0,#000);white-space:nowrap}
.gpunb table.gpunb-table td{max-width:32em}
.gpunb table.gpunb-table tr.best td{background:HOVER;font-weight:600}
.gpunb .strip{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0}
.gpunb .pill{border:1px solid var(--jp-border-color1,#bbb);border-radius:10px;padding:1px 8px;
  background:var(--jp-layout-color2,#fafafa);color:var(--jp-ui-font-color1,#222)}
.gpunb .pill.on{background:var(--jp-brand-color0,#0d47a1);color:#fff;
  border-color:var(--jp-brand-color0,#0d47a1)}
.gpunb .hit{color:HIT;font-weight:600;white-space:nowrap}
.gpunb .miss{color:MISS;font-weight:600;white-space:nowrap}
.gpunb .bad{color:BAD;font-weight:600;white-space:nowrap}
.gpunb .muted{color:var(--jp-ui-font-color2,#777)}
.gpunb details>summary{cursor:pointer;font-weight:600}
.gpunb .gpunb-bar{display:inline-block;height:.8em;background:var(--jp-brand-color1,#2b6cb0);
  vertical-align:middle}
.gpunb .k,.gpunb .kd,.gpunb .kn,.gpunb .kc,.gpunb .kr{
  color:var(--jp-mirror-editor-keyword-color,#008000);font-weight:600}
.gpunb .kt,.gpunb .nb,.gpunb .bp{color:var(--jp-mirror-editor-builtin-color,#008000)}
.gpunb .nf,.gpunb .nc,.gpunb .nl{color:var(--jp-mirror-editor-def-color,#00f)}
.gpunb .nv,.gpunb .vg,.gpunb .vi{color:var(--jp-mirror-editor-variable-2-color,#05a)}
.gpunb .s,.gpunb .s1,.gpunb .s2,.gpunb .sa,.gpunb .sd{
  color:var(--jp-mirror-editor-string-color,#ba2121)}
.gpunb .m,.gpunb .mi,.gpunb .mf,.gpunb .mh,.gpunb .il{
  color:var(--jp-mirror-editor-number-color,#080)}
.gpunb .c,.gpunb .c1,.gpunb .cm,.gpunb .cp,.gpunb .ch{
  color:var(--jp-mirror-editor-comment-color,#408080);font-style:italic}
.gpunb .o,.gpunb .ow{color:var(--jp-mirror-editor-operator-color,#aa22ff)}
.gpunb .p{color:var(--jp-mirror-editor-punctuation-color,#05a)}
.gpunb .na,.gpunb .nd{color:var(--jp-mirror-editor-attribute-color,#7d9029)}
""".replace("SEL", _SEL).replace("HOVER", _HOVER).replace("HIT", HIT).replace(
    "MISS", MISS).replace("BAD", BAD).replace("MUTED", MUTED)


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
    # token classes (coloured by STYLE from the theme's variables), not inline colours
    formatter = HtmlFormatter(nowrap=True)
    out = highlight(code, lexer, formatter).splitlines()
    # pygments keeps one output line per input line with nowrap=True; fall back if it did not
    return out if len(out) == len(lines) else [esc(line) for line in lines]


def _lexer(language: str, get_lexer_by_name):
    from pygments.util import ClassNotFound

    if language in ("ptx", "sass"):  # pygments has none; nasm's marks most of them as errors
        from gpunb.notebook.lexers import assembly_lexer

        return assembly_lexer(language)
    names = {"python": ("python",), "llvm": ("llvm",), "text": ("text",)}.get(
        language, (language,))
    for name in names:
        try:
            from gpunb.notebook.lexers import without_errors

            return without_errors(get_lexer_by_name(name, stripnl=False, stripall=False,
                                                    ensurenl=False))
        except ClassNotFound:
            continue
    return None


def code_block(code: str, language: str, *, first_line: int = 1,
               line_attrs: dict[int, str] | None = None, line_class: str = "",
               selected: Iterable[int] = (), css_class: str = "",
               notes: dict[int, str] | None = None, pre_attrs: str = "") -> str:
    """A numbered code listing; lines in `line_attrs` get those attributes and `line_class`;
    `notes` puts a muted remark after a line (e.g. its instruction count); `pre_attrs` are the
    listing's own attributes (a scroll handler)."""
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
        note = f'<span class="note">{esc(notes[number])}</span>' \
            if notes and notes.get(number) else ""
        rows.append(f'<span class="{" ".join(classes)}" {attrs}><span class="ln">{number}'
                    f"</span>{line_html or ' '}{note}</span>")
    return f'<pre class="gpunb-code {css_class}" {pre_attrs}>{"".join(rows)}</pre>'


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], raw_html: bool = False) -> str:
    """An HTML table; cells are escaped unless `raw_html` (then the caller escaped them)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f"<td>{c if raw_html else esc(c)}</td>" for c in row)
        body.append(f"<tr>{cells}</tr>")
    # JupyterLab lays output tables out fixed (headers broke mid-word: "launche s"): the table
    # sizes its columns by content, headers stay whole, and a narrow output scrolls it
    return (f'<div class="gpunb-scroll"><table class="gpunb-table"><tr>{head}</tr>'
            f'{"".join(body)}</table></div>')


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
