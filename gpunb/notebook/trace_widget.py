"""Record and replay in a notebook: scrub back and forth through a traced launch.

A slider (with play, previous and next) moves through the steps of a Trace - every line the
traced threads ran, in the order the CPU target ran them - and shows the line and that thread's
variables at that moment; a thread menu narrows the steps to one thread.
"""

from __future__ import annotations

import ipywidgets as w

from gpunb.debugger.trace import Trace
from gpunb.notebook import debug_view, widgets


class TraceWidget(w.VBox):
    def __init__(self, trace: Trace, error=None, static: widgets.StaticCopy | None = None):
        self.trace = trace
        self.error = error
        self.static = static
        self.position = 0  # index into the trace's steps
        options = [("every traced thread", -1)] + [
            (_thread_label(trace, g), g) for g in trace.threads()]
        self.thread = w.Dropdown(options=options, value=-1, description="thread")
        self.slider = w.IntSlider(min=0, max=max(0, len(trace) - 1), value=0,
                                  description="step", continuous_update=True,
                                  layout=w.Layout(width="420px"))
        self.play = w.Play(min=0, max=self.slider.max, interval=500, description="play")
        w.jslink((self.play, "value"), (self.slider, "value"))
        self.previous = w.Button(description="◀", tooltip="previous step",
                                 layout=w.Layout(width="40px"))
        self.next = w.Button(description="▶", tooltip="next step", layout=w.Layout(width="40px"))
        self.previous.add_class("gpunb-trace-prev")
        self.next.add_class("gpunb-trace-next")
        self.previous.on_click(lambda _b: self._move(-1))
        self.next.on_click(lambda _b: self._move(+1))
        self.header, self.variables = w.HTML(), w.HTML()
        self.source = w.HTML(layout=w.Layout(width="100%"))  # (as in debug_widget.py)
        self.slider.observe(lambda _c: self.refresh(), names="value")
        self.thread.observe(self._on_thread, names="value")
        body = w.HBox([w.Box([self.source], layout=w.Layout(flex="3 1 0", min_width="0")),
                       w.Box([self.variables], layout=w.Layout(flex="2 1 0", min_width="0"))])
        super().__init__([w.HBox([self.thread, self.play, self.previous, self.slider,
                                  self.next]), self.header, body])
        self.add_class("gpunb-trace")
        self.refresh()

    def steps(self) -> list[int]:
        """The trace indices the slider moves through (one thread's, or all)."""
        if self.thread.value == -1:
            return list(range(len(self.trace)))
        return [s.index for s in self.trace.of_thread(self.thread.value)]

    def _on_thread(self, _change) -> None:
        count = len(self.steps())
        self.slider.value = 0
        self.slider.max = self.play.max = max(0, count - 1)
        self.refresh()

    def _move(self, delta: int) -> None:
        self.slider.value = max(0, min(self.slider.max, self.slider.value + delta))

    def refresh(self) -> None:
        steps = self.steps()
        self.position = steps[self.slider.value] if steps else 0
        parts = debug_view.trace_step_html(self.trace, self.position)
        head = parts["head"] + debug_view.error_html(self.error)
        hide = self.static.hide_rule() if self.static is not None else ""
        self.header.value = debug_view.fragment(head) + hide
        self.source.value = debug_view.fragment(parts["source"])
        self.variables.value = debug_view.fragment(parts["variables"])
        if self.static is not None:
            self.static.update()


def _thread_label(trace: Trace, global_index: int) -> str:
    from gpunb.debugger.request import unlinear

    block, tid = divmod(global_index, trace.per_block)
    return f"thread {unlinear(tid, trace.block)} of block {unlinear(block, trace.grid)}"
