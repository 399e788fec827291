"""The kernel inspector: Source | Types | LLVM | PTX | SASS tabs, line linking, a resources strip.

`Inspector` holds a KernelReport (what `kernel.inspect()` returns, jit/report.py) and a selection
(a Python source line); the ipywidgets view, the static HTML (nbconvert, GitHub) and the plain
text (terminal IPython) all render from that state, so what a test reads from the model is what a
person sees. `%load_ext gpunb` registers `show_report` with IPython, so a KernelReport
displayed in a notebook shows as this inspector.
"""

from __future__ import annotations

from gpunb.jit.report import TAB_TITLES, TABS, KernelReport
from gpunb.notebook import codeviews, render
from gpunb.notebook.asmview import tidy_ptx, tidy_sass


def inspector_for(dispatcher, signature=None, arch: str | None = None,
                  tab: str = "ptx") -> Inspector:
    """The inspector for a kernel, compiled for `signature` if needed; `arch` (sm_XX) chooses
    the PTX/SASS architecture (default: the kernel's inspection arch, else the GPU's)."""
    from gpunb.jit.options import JitOptionError, check_gpu_function, user_location

    check_gpu_function(dispatcher, "inspector_for")
    if tab not in TABS:
        raise JitOptionError(f"inspector_for: tab={tab!r} is not one of {', '.join(TABS)}",
                             user_location(), hint="e.g. tab='sass'")
    return Inspector(dispatcher.inspect(signature, arch), tab=tab)


def show_report(report: KernelReport) -> None:
    """IPython's display of a KernelReport after `%load_ext gpunb`: the inspector (widget and
    its static copy where a frontend can show a widget, else static HTML and text)."""
    Inspector(report)._ipython_display_()


class Inspector:
    """One kernel specialisation, viewable as a widget, static HTML or text."""

    def __init__(self, report: KernelReport, tab: str = "ptx"):
        self.report = report
        self.tab = tab if tab in TABS else "ptx"
        self.selected_line: int | None = None
        self.text_tabs: tuple = ()  # tabs printed in full by the plain-text form (--show)
        self._widget = None
        self._uid = render.new_id("gpunb-insp")
        from gpunb.notebook.widgets import StaticCopy

        # the static form shown beside the widget, re-sent on every change (widgets.py)
        self.static = StaticCopy(self._repr_mimebundle_)
        from gpunb.notebook.diffview import remember

        remember(report)  # the earlier version for diff_view after a redefinition

    # ---- the selection model ------------------------------------------------------------------

    @property
    def mapped_lines(self) -> list[int]:
        """Source lines of this kernel that produced PTX (the ones that can be selected)."""
        return self.report.mapped_lines

    def select_line(self, line: int | None) -> list[int]:
        """Pin a source line; returns the PTX lines it produced (highlighted in every view)."""
        self.selected_line = line
        if self._widget is not None and (line is None or line in self.mapped_lines):
            self._widget.link.value = line
            self._widget.follow_selection(self.highlighted_ptx)
        self._refresh()
        return self.highlighted_ptx

    def select_ptx_line(self, ptx_line: int) -> int | None:
        """Pin the source line that produced a PTX line (the reverse link); returns it."""
        line = self.report.ptx_to_source().get(ptx_line)
        self.select_line(line)
        return line

    @property
    def highlighted_ptx(self) -> list[int]:
        return list(self.report.line_map.get(self.selected_line, [])) \
            if self.selected_line is not None else []

    @property
    def highlighted_sass(self) -> list[int]:
        return list(self.report.sass_map.get(self.selected_line, [])) \
            if self.selected_line is not None else []

    # ---- rendering ----------------------------------------------------------------------------

    def header_html(self) -> str:
        r = self.report
        where = f"runs on {r.target}" + (f", PTX/SASS for {r.arch}" if r.arch else "")
        cache = ""
        if r.cache:
            css = "hit" if r.cache.startswith("hit") else "miss"
            why = f' title="{render.esc(r.cache_why)}"' if r.cache_why else ""
            cache = (f'<div>cache: <span class="{css}"{why}>{render.esc(r.cache)}</span>'
                     f' <span class="muted">(compiled in {r.compile_ms:.0f} ms)</span></div>')
        return (f"<div><b>{render.esc(r.name)}</b> <code>{render.esc(r.signature)}</code> "
                f'<span class="muted">({render.esc(where)})</span></div>'
                + cache + resources_strip(r.resources))

    def tab_html(self, tab: str, uid: str | None = None) -> str:
        """One tab's HTML; `uid` names its split view's DOM ids (the widget's and the static
        copy's differ, as both can be in one page)."""
        r = self.report
        uid = uid or self._uid
        if tab in r.problems and not r.section(tab):
            return f'<pre class="gpunb-code">{render.esc(r.problems[tab])}</pre>'
        if tab == "source":
            return render.code_block(r.source, "python", first_line=r.first_line,
                                     line_attrs={n: "" for n in self.mapped_lines},
                                     selected=[self.selected_line] if self.selected_line else [])
        if tab == "types":
            return render.code_block(r.types, "text")
        if tab == "llvm":
            return render.code_block(r.llvm_ir, "llvm")
        if tab == "ptx":
            return codeviews.split_view(f"{uid}-ptx", r.source, r.first_line, tidy_ptx(r.ptx),
                                        "ptx", _own(r.line_map, r.source_lines),
                                        self.selected_line)
        return codeviews.split_view(f"{uid}-sass", r.source, r.first_line, tidy_sass(r.sass),
                                    "sass",
                                    _own(r.sass_map, r.source_lines), self.selected_line,
                                    notes={line: r.sass_note(line) for line in r.sass_counts})

    def link_summary_html(self) -> str:
        if self.selected_line is None:
            return ('<span class="muted">click a source line in the PTX/SASS tabs (or pick one '
                    "here) to see the code it produced</span>")
        ptx = self.highlighted_ptx
        sass = self.report.sass_note(self.selected_line) or "no SASS"
        return (f"line {self.selected_line} → {len(ptx)} PTX line(s); SASS: {sass}"
                + codeviews.excerpt(tidy_ptx(self.report.ptx), ptx, "ptx"))

    def _repr_html_(self) -> str:
        """Static HTML: every tab as an open/closed section; hover linking still works."""
        uid = f"{self._uid}-static"
        sections = []
        for tab in TABS:
            opened = " open" if tab == self.tab else ""
            sections.append(f"<details{opened}><summary>{TAB_TITLES[tab]}</summary>"
                            f"{self.tab_html(tab, uid)}</details>")
        return render.wrap(self.header_html() + "".join(sections), uid)

    def text(self, tabs: tuple | None = None) -> str:
        """The report as text (`--show` in a terminal), its listings named and laid out as the
        HTML tabs show them (asmview.py)."""
        import dataclasses

        r = self.report
        shown = dataclasses.replace(r, ptx=tidy_ptx(r.ptx), sass=tidy_sass(r.sass))
        return shown.text(self.text_tabs if tabs is None else tabs)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The static forms (HTML and text); the live widget comes with `_ipython_display_`."""
        return {"text/plain": self.text(), "text/html": self._repr_html_()}

    def _ipython_display_(self) -> None:
        """In a notebook: the static copy, then the widget (widgets.show_live); elsewhere the
        static forms."""
        from gpunb.notebook.widgets import show_live

        show_live(self.static, self.widget)

    # ---- the live widget ----------------------------------------------------------------------

    def widget(self):
        """The ipywidgets view (built once); None when ipywidgets is not installed."""
        if self._widget is None:
            from gpunb.notebook.inspector_widget import build_inspector_widget

            self._widget = build_inspector_widget(self)
        return self._widget

    def _refresh(self) -> None:
        if self._widget is not None:
            self._widget.refresh()
        self.static.update()


def resources_strip(resources: dict) -> str:
    labels = (("registers", "registers/thread", ""), ("shared_bytes", "shared", " B"),
              ("local_bytes", "local", " B"), ("const_bytes", "const", " B"),
              ("max_threads_per_block", "max threads/block", ""))
    items = [(f"{label}: {resources[key]}{unit}", key == "registers")
             for key, label, unit in labels if key in resources]
    return render.pills(items) if items else ""


def _own(mapping: dict, lines: range) -> dict:
    """Only the mappings of this kernel's own lines (inlined callees from other cells drop out)."""
    return {line: targets for line, targets in mapping.items() if line in lines}
