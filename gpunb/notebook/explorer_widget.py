"""The launch-config explorer as ipywidgets: slider, inputs, live occupancy, Apply and Suggest.

Every control writes into the LaunchExplorer and re-renders from it, so the widget state (slider
value, result text) always matches `explorer.row()`, and so does the explorer's static copy
(re-sent on every change, for the saved notebook: see widgets.py).
"""

from __future__ import annotations

import ipywidgets as w

from gpunb.notebook import render

CANDIDATE_ARCHS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100",
                   "sm_120")


def known_archs() -> tuple:
    """The archs the occupancy calculator has rules for (asked, not assumed)."""
    from gpunb.backends.cuda import occupancy

    out = []
    for arch in CANDIDATE_ARCHS:
        try:
            occupancy.limits_for(arch)
        except (KeyError, ValueError):
            continue
        out.append(arch)
    return tuple(out)


class LaunchExplorerWidget(w.VBox):
    def __init__(self, explorer, **kwargs):
        self.explorer = explorer
        limit = int(explorer.resources.get("max_threads_per_block") or 1024)
        self.block = w.IntSlider(value=explorer.block, min=32, max=limit, step=32,
                                 description="block size", continuous_update=True)
        wide = {"description_width": "initial"}
        self.shared = w.BoundedIntText(value=explorer.shared, min=0, max=228 * 1024, step=1024,
                                       description="dynamic shared (B)", style=wide)
        self.n = w.BoundedIntText(value=explorer.n, min=1, max=2**40, description="n")
        archs = known_archs()
        archs = archs if explorer.arch in archs else (explorer.arch, *archs)
        self.arch = w.Dropdown(options=archs, value=explorer.arch, description="arch")
        self.result = w.HTML()
        self.occupancy = w.FloatProgress(value=0, min=0, max=100, description="occupancy")
        self.apply_button = w.Button(description="Apply", button_style="primary",
                                     tooltip="store as kernel.launch_config")
        self.suggest_button = w.Button(description="Suggest")
        self.applied = w.HTML()
        self.table = w.HTML()
        for control in (self.block, self.shared, self.n, self.arch):
            control.observe(self._on_change, names="value")
        self.apply_button.on_click(self._on_apply)
        self.suggest_button.on_click(self._on_suggest)
        super().__init__([w.HBox([self.block, self.arch]), w.HBox([self.shared, self.n]),
                          self.occupancy, self.result,
                          w.HBox([self.apply_button, self.suggest_button]), self.applied,
                          self.table],
                         **kwargs)
        self.add_class("gpunb-launch-explorer")
        self.refresh()

    def _on_change(self, _change) -> None:
        e = self.explorer
        e.block, e.shared, e.n, e.arch = (self.block.value, self.shared.value, self.n.value,
                                          self.arch.value)
        self.refresh()

    def _on_suggest(self, _button) -> None:
        best = self.explorer.suggested_block  # for the chosen arch and shared memory
        if best is None:
            self.applied.value = render.wrap('<span class="bad">no block size can launch with '
                                             "this much shared memory on this arch</span>")
            return
        self.block.value = best

    def _on_apply(self, _button) -> None:
        from gpunb.foundation.errors import GpunbError

        try:
            self.explorer.apply()
        except GpunbError as exc:  # refused: say why, store nothing
            self.applied.value = render.wrap(f'<span class="bad">not applied</span>: '
                                             f"{render.esc(exc.message)}")

    def refresh(self) -> None:
        e = self.explorer
        row = e.row()
        self.occupancy.value = row.occupancy_pct
        self.result.value = render.wrap(e.summary_html())
        self.applied.value = (render.wrap(f"applied: <code>kernel.launch_config = "
                                          f"{render.esc(tuple(e.applied))}</code>")
                              if e.applied else "")
        # the table's HTML also hides the explorer's static copy while this widget shows
        self.table.value = render.wrap(e.resources_html() + e.table_html()) + \
            e.static.hide_rule()
        e.static.update()
