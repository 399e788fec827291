"""The debugger in a notebook: the widget that drives a stopped launch (debug_display.py
shows it).

A launch that stops runs on the debugger's worker thread; the cell that launched it returns
with this widget in its output while the launch waits. Buttons resume it (step into / over /
out, to the next barrier, continue, run to the end), switch the focused thread or block, pause
it while it runs, or abandon it. Each command waits briefly for the next stop; a launch that
runs longer is watched by a thread that refreshes the widget when it stops or ends. Running
another debug launch (the same cell again, or any other) abandons this one first, and the
widget says so: a session left open never hangs the notebook.
"""

from __future__ import annotations

import threading

import ipywidgets as w

from gpunb.debugger.errors import DebuggerError
from gpunb.debugger.session import DebugSession
from gpunb.notebook import debug_view, widgets

# how long a button waits for the next stop before handing the wait to a watcher thread
COMMAND_WAIT_SECONDS = 2.0

_BUTTONS = (("step", "Step into", "arrow-down", "step"),
            ("next", "Step over", "arrow-right", "next"),
            ("out", "Step out", "arrow-up", "step_out"),
            ("sync", "To barrier", "step-forward", "continue_to_barrier"),
            ("continue", "Continue", "play", "continue_"),
            ("finish", "Run to end", "fast-forward", "run_to_end"))


class DebuggerWidget(w.VBox):
    """The controls and views of one DebugSession."""

    def __init__(self, session: DebugSession, static: widgets.StaticCopy | None = None):
        self.session = session
        self.static = static
        self.message = ""
        self.header = w.HTML()
        self.buttons = {}
        for key, label, icon, method in _BUTTONS:
            button = w.Button(description=label, icon=icon, tooltip=label,
                              layout=w.Layout(width="auto"))
            button.add_class(f"gpunb-dbg-{key}")
            button.on_click(lambda _b, m=method: self._command(m))
            self.buttons[key] = button
        self.pause = self._button("Pause", "pause", "gpunb-dbg-pause", self._pause)
        self.quit = self._button("Abandon", "stop", "gpunb-dbg-quit", self._quit)
        self.thread = w.Text(placeholder="x,y,z", description="thread",
                             layout=w.Layout(width="160px"))
        self.block = w.Text(placeholder="x,y,z", description="block",
                            layout=w.Layout(width="160px"))
        self.switch = self._button("Switch", "exchange", "gpunb-dbg-switch", self._switch)
        self.up = self._button("Up", "level-up", "gpunb-dbg-up", lambda _b: self._frame(-1))
        self.down = self._button("Down", "level-down", "gpunb-dbg-down",
                                 lambda _b: self._frame(+1))
        # the listing does not size its box by its lines (render.py): give it the box's width
        self.source = w.HTML(layout=w.Layout(width="100%"))
        self.stack, self.variables = w.HTML(), w.HTML()
        self.name = w.Dropdown(description="variable", layout=w.Layout(width="220px"))
        self.scope = w.ToggleButtons(options=["warp", "block"], value="warp")
        self.across, self.shared, self.barriers, self.status = (w.HTML() for _ in range(4))
        self.name.observe(lambda _c: self._render_across(), names="value")
        self.scope.observe(lambda _c: self._render_across(), names="value")
        tables = w.Tab(children=[w.VBox([w.HBox([self.name, self.scope]), self.across]),
                                 self.shared, self.barriers],
                       titles=["warp / block", "shared memory", "barriers"])
        body = w.HBox([w.Box([self.source], layout=w.Layout(flex="3 1 0", min_width="0")),
                       w.VBox([self.stack, self.variables],
                              layout=w.Layout(flex="2 1 0", min_width="0"))])
        controls = w.HBox([*self.buttons.values(), self.pause, self.quit],
                          layout=w.Layout(flex_flow="row wrap"))
        focus = w.HBox([self.thread, self.block, self.switch, self.up, self.down],
                       layout=w.Layout(flex_flow="row wrap"))
        super().__init__([self.header, controls, focus, body, tables, self.status])
        self.add_class("gpunb-debugger")
        self._lock = threading.Lock()
        session.listeners.append(self._on_event)
        self.refresh()

    def _button(self, label: str, icon: str, css: str, handler) -> w.Button:
        button = w.Button(description=label, icon=icon, tooltip=label,
                          layout=w.Layout(width="auto"))
        button.add_class(css)
        button.on_click(handler)
        return button

    # ---- commands ------------------------------------------------------------------------------

    def _command(self, method: str) -> None:
        self.message = ""
        try:
            event = getattr(self.session, method)(timeout=COMMAND_WAIT_SECONDS)
        except DebuggerError as exc:
            self.message = exc.message
            self.refresh()
            return
        if event is None:  # still running: a watcher refreshes the widget when it stops
            self.refresh()
            threading.Thread(target=self._watch, name="gpunb-debug-watch", daemon=True).start()

    def _watch(self) -> None:
        while not self.session.finished and self.session.state != "stopped":
            self.session.wait(0.5)

    def _pause(self, _button=None) -> None:
        if self.session.state == "running":
            self.session.pause()
            self.message = "pausing at the next line a thread reaches…"
            self.refresh()

    def _quit(self, _button=None) -> None:
        self.session.abort("abandoned from the widget")
        self.refresh()

    def _switch(self, _button=None) -> None:
        self.message = ""
        try:
            self.session.switch(thread=self.thread.value.strip() or None,
                                block=self.block.value.strip() or None)
        except DebuggerError as exc:
            self.message = exc.message + (f" ({exc.hint})" if exc.hint else "")
        self.refresh()

    def _frame(self, delta: int) -> None:
        if self.session.state != "stopped":
            return
        stack = self.session.view().where()
        level = self.session.frame_level
        level = (len(stack) - 1 if level is None else level) + delta
        if 0 <= level < len(stack):
            self.session.frame_level = level
            self.refresh()

    def _on_event(self, session, event) -> None:
        self.refresh()

    # ---- rendering -----------------------------------------------------------------------------

    def refresh(self) -> None:
        with self._lock:
            self._refresh()
        if self.static is not None:
            self.static.update()

    def _refresh(self) -> None:
        session = self.session
        stopped = session.state == "stopped"
        for button in self.buttons.values():
            button.disabled = not stopped
        self.switch.disabled = self.up.disabled = self.down.disabled = not stopped
        self.pause.disabled = session.state != "running"
        self.quit.disabled = session.finished
        hide = self.static.hide_rule() if self.static is not None else ""
        if stopped:
            parts = debug_view.stopped_html(session, self.name.value, self.scope.value)
            self.header.value = debug_view.fragment(parts["head"]) + hide
            self.source.value = debug_view.fragment(parts["source"])
            self.stack.value = debug_view.fragment(parts["stack"])
            self.variables.value = debug_view.fragment(parts["variables"])
            if list(self.name.options) != parts["names"]:
                self.name.options = parts["names"]
            if parts["chosen"] is not None and self.name.value != parts["chosen"]:
                self.name.value = parts["chosen"]
            self.across.value = debug_view.fragment(parts["across"])
            self.shared.value = debug_view.fragment(parts["shared"])
            self.barriers.value = debug_view.fragment(parts["barriers"])
        elif session.finished:
            self.header.value = debug_view.fragment(debug_view.finished_html(session)) + hide
        else:
            self.header.value = debug_view.fragment(
                f"<p>'{session.kernel}' is running… (Pause stops it at the next line a thread "
                "reaches)</p>") + hide
        self.status.value = debug_view.fragment(
            f"<p class='miss'>{debug_view.esc(self.message)}</p>") if self.message else ""

    def _render_across(self) -> None:
        if self.session.state != "stopped" or not self.name.value:
            return
        view = self.session.view()
        threads = view.warp() if self.scope.value == "warp" else view.block_threads()
        self.across.value = debug_view.fragment(debug_view.across_html(
            self.name.value, view.across(self.name.value, threads), self.session.focus))
