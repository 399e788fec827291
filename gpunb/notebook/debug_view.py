"""The debugger's views as HTML: a stopped launch (source, variables, warp and block tables,
shared memory, barriers) and one step of a trace. Static HTML (render.py), so a saved or
converted notebook shows the state the user left; the widgets (debug_widget.py) re-render it.
"""

from __future__ import annotations

import linecache

from gpunb.notebook import render
from gpunb.notebook.render import esc

# the debugger's own rules, on top of render.STYLE (theme variables with fallbacks)
STYLE = """
.gpunb .gl.dbg-here{background:color-mix(in srgb,var(--jp-warn-color1,#c05621) 24%,transparent);
  font-weight:600}
.gpunb .gl.dbg-others{border-left:3px solid var(--jp-brand-color2,#9ab)}
.gpunb table.gpunb-table tr.dbg-focus td{font-weight:600}
.gpunb table.gpunb-table td.dbg-differs{
  background:color-mix(in srgb,var(--jp-brand-color1,#2196f3) 18%,transparent)}
.gpunb table.gpunb-table tr.dbg-diverged td{
  background:color-mix(in srgb,var(--jp-warn-color1,#c05621) 16%,transparent)}
.gpunb .dbg-head{margin:2px 0 6px 0;white-space:pre-wrap}
.gpunb table.gpunb-dbg-vars td:nth-child(-n+2),.gpunb table.gpunb-dbg-vars th{
  white-space:nowrap}
.gpunb .dbg-error{color:var(--jp-error-color1,#c53030);font-weight:600;white-space:pre-wrap}
"""


def fragment(body: str) -> str:
    return render.wrap(f"<style>{STYLE}</style>{body}")


def source_html(filename: str, line: int, other_lines=(), context: int = 8) -> str:
    """The source around `line`, that line marked; `other_lines` are where other threads are."""
    first = max(1, line - context)
    last = line + context
    lines = [linecache.getline(filename, n).rstrip("\n") for n in range(first, last + 1)]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        return '<p class="muted">(source not available)</p>'
    code = "\n".join(lines)
    attrs = {n: f'data-l="{n}"' for n in range(first, first + len(lines))}
    block = render.code_block(code, "python", first_line=first, line_attrs=attrs,
                              css_class="gpunb-dbg-source")
    block = block.replace('class="gl mapped"', 'class="gl"')  # numbered, not clickable links
    block = block.replace(f'class="gl" data-l="{line}"', f'class="gl dbg-here" data-l="{line}"',
                          1)
    for other in set(other_lines) - {line}:
        block = block.replace(f'class="gl" data-l="{other}"',
                              f'class="gl dbg-others" data-l="{other}"', 1)
    return block


def variables_html(variables) -> str:
    if not variables:
        return '<p class="muted">(no variable holds a value yet)</p>'
    rows = "".join(f"<tr><td>{esc(v.name)}</td><td>{esc(v.type)}</td>"
                   f"<td><pre style='margin:0'>{esc(_value_text(v.value))}</pre></td></tr>"
                   for v in variables)
    return ('<table class="gpunb-table gpunb-dbg-vars"><tr><th>variable</th><th>numba type</th>'
            f"<th>value</th></tr>{rows}</table>")


def _value_text(value) -> str:
    from gpunb.debugger.values import format_value

    return format_value(value)


def across_html(name: str, rows, focus_index: int) -> str:
    """A warp or block table of one variable: lanes with another value are tinted, lanes
    elsewhere in the code (diverged) are marked."""
    from gpunb.debugger.values import short_value

    if not rows:
        return '<p class="muted">(the focused thread is not in the running block)</p>'
    out = []
    for row in rows:
        state = row.state
        cls = []
        if row.diverged:
            cls.append("dbg-diverged")
        if state.global_index == focus_index:
            cls.append("dbg-focus")
        value = "—" if row.value is None else short_value(row.value)
        value_cls = ' class="dbg-differs"' if row.differs and row.value is not None else ""
        out.append(f'<tr class="{" ".join(cls)}" data-lane="{state.lane}">'
                   f"<td>{state.lane}</td><td>{esc(state.thread)}</td>"
                   f"<td{value_cls}>{esc(value)}</td><td>{esc(state.where())}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("lane", "thread", esc(name), "where"))
    return f'<table class="gpunb-table gpunb-dbg-across"><tr>{head}</tr>{"".join(out)}</table>'


def shared_html(arrays) -> str:
    if not arrays:
        return '<p class="muted">(the focused thread holds no shared array)</p>'
    parts = []
    for name, value in arrays:
        values = value.numpy()
        parts.append(f"<div><b>{esc(name)}</b> <span class='muted'>{esc(value.type_name)} "
                     f"shape {esc(value.shape)}</span>{_grid(values)}</div>")
    return "".join(parts)


def _grid(values, limit: int = 256) -> str:
    """An array's first elements as a small table: rows of 16 for 1-d arrays, the first
    32 x 32 of a 2-d one (higher dimensions folded into the columns)."""
    if values is None:
        return ""
    if values.ndim <= 1:
        flat = values.reshape(-1)[:limit]
        rows = [(k, flat[k:k + 16]) for k in range(0, len(flat), 16)]
    else:
        folded = values.reshape(values.shape[0], -1)
        rows = [(k, folded[k, :32]) for k in range(min(32, folded.shape[0]))]
    body = "".join(f"<tr><th>{k}</th>{''.join(f'<td>{esc(_short(x))}</td>' for x in r)}</tr>"
                   for k, r in rows)
    more = f"<p class='muted'>… {values.size - limit} more</p>" \
        if values.ndim <= 1 and values.size > limit else ""
    return f'<table class="gpunb-table gpunb-dbg-shared">{body}</table>{more}'


def _short(x) -> str:
    from gpunb.debugger.values import format_value

    return format_value(x)


def barriers_html(waits) -> str:
    if not waits:
        return '<p class="muted">(no thread of this block waits at a barrier)</p>'
    rows = [(f"{what} (line {line})" if line else what, count) for what, line, count in waits]
    return render.table(["where", "threads"], rows)


def stack_html(stack, level: int | None) -> str:
    current = len(stack) - 1 if level is None else level
    items = [f"<li{' class=hit' if k == current else ''}>{esc(frame.describe())}</li>"
             for k, frame in enumerate(stack)]
    return f"<ol class='gpunb-dbg-stack'>{''.join(items)}</ol>"


def stopped_html(session, variable: str | None = None, scope: str = "warp") -> dict:
    """Every part of a stopped session's view as HTML, by part name."""
    view = session.view()
    state = view.focus_state()
    site = session.tables.site(state.site or session.stop.site)
    note = view.focus_note()
    others = {st.line for st in view.block_threads() if st.line and st.status != "not started"}
    threads = view.warp() if scope == "warp" else view.block_threads()
    # the names the tables offer: the focused thread's, or (one that has not started) those of
    # the thread that stopped
    named = view.variables()
    stopped = view.group.index_of(session.stop.global_index)
    if not named and stopped is not None:
        named = view.group.variables(view.thread(stopped))
    names = [v.name for v in named]
    chosen = variable if variable in names else (names[0] if names else None)
    return {
        "head": f'<div class="dbg-head">{esc(view.headline())}</div>'
                + (f'<p class="miss">{esc(note)}</p>' if note else "")
                + f"<p>focus: thread <b>{esc(state.thread)}</b> of block "
                  f"<b>{esc(state.block)}</b> — {esc(state.where())}</p>",
        "source": source_html(site.filename, site.line, others) if site.line else
        '<p class="muted">(no source line)</p>',
        "stack": stack_html(view.where(), session.frame_level),
        "variables": variables_html(view.variables()),
        "across": across_html(chosen, view.across(chosen, threads), session.focus)
        if chosen else '<p class="muted">(no variable)</p>',
        "shared": shared_html(view.shared_arrays()),
        "barriers": barriers_html(view.barrier_waits()),
        "names": names,
        "chosen": chosen,
    }


def finished_html(session) -> str:
    """The end of a session: finished, failed (the error) or abandoned."""
    if session.state == "finished":
        return f"<p class='hit'>the launch of '{esc(session.kernel)}' finished</p>"
    error = session.error
    message = getattr(error, "message", None) or str(error)
    title = "abandoned" if session.state == "aborted" else "failed"
    return (f"<p class='dbg-error'>the launch of '{esc(session.kernel)}' {title}: "
            f"{esc(type(error).__name__)}: {esc(message)}</p>")


def error_html(error) -> str:
    """A launch's error as a line of HTML ("" for none)."""
    if error is None:
        return ""
    message = getattr(error, "message", None) or str(error)
    return (f"<p class='dbg-error'>the launch failed: {esc(type(error).__name__)}: "
            f"{esc(message)}</p>")


def trace_step_html(trace, index: int) -> dict:
    """A trace step: source with the line, the thread's variables then, and where it is."""
    if not len(trace):
        return {"head": "<p class='muted'>(the trace recorded no step)</p>", "source": "",
                "variables": ""}
    step = trace.steps[max(0, min(index, len(trace) - 1))]
    what = "ends" if step.exited else f"reaches line {step.line}"
    head = (f"<p>step <b>{step.index + 1}</b> of {len(trace)}: thread <b>{esc(step.thread)}</b> "
            f"of block <b>{esc(step.block)}</b> {what}</p>")
    if trace.truncated:
        head += "<p class='miss'>the trace was truncated (trace_bytes)</p>"
    return {"head": head,
            "source": source_html(step.filename, step.line) if step.line else "",
            "variables": variables_html(trace.variables(step))}
