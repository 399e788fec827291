"""Side-by-side Source | PTX (or SASS) listings whose lines are linked through the line map.

Linking is CSS only (`:has()` + `:hover`, one rule pair per mapped source line, scoped to the
view's id), so it works in JupyterLab, in nbconvert's HTML and in any page without scripts; the
pinned selection (`sel` class) comes from the widget's Python-side selection model.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpunb.notebook import render

HOVER = "#d6ecff"


def link_rules(dom_id: str, source_lines: Iterable[int]) -> str:
    """CSS: hovering source line L highlights its target lines, and hovering a target line L's."""
    rules = []
    for line in source_lines:
        a = f'[data-l="{line}"]'
        rules.append(f"#{dom_id}:has(.s{a}:hover) .t{a},#{dom_id}:has(.t{a}:hover) .s{a}")
    if not rules:
        return ""
    return "<style>" + ",".join(rules) + f"{{background:{HOVER}}}</style>"


def split_view(dom_id: str, source: str, first_line: int, target_text: str, language: str,
               mapping: dict, selected_source: int | None = None) -> str:
    """Source (left) and target code (right); `mapping` is python line -> [target lines]."""
    # an inlined callee's instruction is listed under its own line and its call line: the
    # reverse link goes to the most specific (fewest targets) of them
    inverse = {t: s for s, targets in sorted(mapping.items(), key=lambda i: -len(i[1]))
               for t in targets}
    selected_targets = mapping.get(selected_source, []) if selected_source is not None else []
    left = render.code_block(source, "python", first_line=first_line, line_class="s",
                             line_attrs={line: f'data-l="{line}"' for line in mapping},
                             selected=[selected_source] if selected_source else [])
    right = render.code_block(target_text, language, line_class="t",
                              line_attrs={t: f'data-l="{s}"' for t, s in inverse.items()},
                              selected=selected_targets)
    return (f'<div id="{dom_id}" class="gpunb-split"><div>{left}</div><div>{right}</div></div>'
            + link_rules(dom_id, mapping))


def excerpt(target_text: str, lines: list[int], language: str) -> str:
    """Only the given target lines (e.g. the PTX of one source line), in order, numbered."""
    all_lines = target_text.splitlines()
    picked = [n for n in sorted(set(lines)) if 1 <= n <= len(all_lines)]
    if not picked:
        return '<span class="muted">no code for this line</span>'
    rows = []
    highlighted = render.highlight_lines(target_text, language)
    for n in picked:
        rows.append(f'<span class="gl sel"><span class="ln">{n}</span>{highlighted[n - 1]}'
                    f"</span>")
    return f'<pre class="gpunb-code">{"".join(rows)}</pre>'
