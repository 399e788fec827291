"""The inspector as ipywidgets: a Tab of HTML views plus a linked source-line / PTX-line picker.

The picker widgets are the selection model: choosing a source line highlights its PTX and SASS
lines; typing a PTX line selects the source line that produced it. Their values live in the
widget state, so a saved notebook (and a test) can read which lines are linked.
"""

from __future__ import annotations

import ipywidgets as w

from gpunb.jit.report import TAB_TITLES, TABS
from gpunb.notebook import render


class InspectorWidget(w.VBox):
    """Header, link controls, tabs; every HTML child re-renders from the Inspector's state."""

    def __init__(self, inspector, **kwargs):
        self.inspector = inspector
        r = inspector.report
        # the header also hides the inspector's static copy while this widget is on the page
        self.header = w.HTML(render.wrap(inspector.header_html()) + inspector.static.hide_rule())
        self.views = {tab: w.HTML() for tab in TABS}
        self.tabs = w.Tab(children=[self.views[t] for t in TABS],
                          titles=[TAB_TITLES[t] for t in TABS],
                          selected_index=TABS.index(inspector.tab))
        lines = r.source.splitlines()
        options = [("—", None)] + [
            (f"{n}: {lines[n - r.first_line].strip()[:48]}", n) for n in inspector.mapped_lines]
        self.link = w.Dropdown(options=options, value=None, description="source line")
        self.ptx_line = w.BoundedIntText(value=0, min=0, max=max(len(r.ptx.splitlines()), 1),
                                         description="PTX line",
                                         tooltip="a PTX line number: selects its source line "
                                                 "(0: none)")
        self.ptx_line.add_class("gpunb-ptx-line")
        self._following = False  # True while the box is set to follow the selection
        self.summary = w.HTML()
        self.line_map = w.Textarea(value=_map_text(r.line_map), disabled=True,
                                   description="line map", layout=w.Layout(display="none"))
        self.link.observe(self._on_link, names="value")
        self.ptx_line.observe(self._on_ptx_line, names="value")
        controls = w.HBox([self.link, self.ptx_line])
        super().__init__([self.header, controls, self.summary, self.tabs, self.line_map],
                         **kwargs)
        self.add_class("gpunb-inspector")
        self.refresh()

    def refresh(self) -> None:
        for tab, view in self.views.items():
            view.value = render.wrap(self.inspector.tab_html(tab))
        self.summary.value = render.wrap(self.inspector.link_summary_html())

    def _on_link(self, change) -> None:
        if self.inspector.selected_line != change["new"]:
            self.inspector.select_line(change["new"])

    def follow_selection(self, ptx_lines: list[int]) -> None:
        """Show the selection's first PTX line in the box (0 when none), unless the box already
        holds one of its lines (the user typed or clicked that PTX line)."""
        if self.ptx_line.value in ptx_lines:
            return
        self._following = True
        try:
            self.ptx_line.value = ptx_lines[0] if ptx_lines else 0
        finally:
            self._following = False

    def _on_ptx_line(self, change) -> None:
        if change["new"] and not self._following:
            line = self.inspector.select_ptx_line(change["new"])
            if line is not None and self.tabs.selected_index == 0:
                self.tabs.selected_index = 3


def _map_text(line_map: dict) -> str:
    """The line map as `python_line: ptx lines` rows, kept in the model for saved notebooks."""
    return "\n".join(f"{src}: {' '.join(map(str, ptx))}" for src, ptx in sorted(line_map.items()))


def build_inspector_widget(inspector) -> InspectorWidget:
    return InspectorWidget(inspector)
