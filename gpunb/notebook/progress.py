"""A progress line for compiles longer than one second, naming the stage the compiler is in.

The watcher subscribes to gpunb's compile events (`gpunb.events`: compile started, stage started,
compile finished) from the cell's thread while a cell runs; a small thread checks every 50 ms
whether the running compile has passed the threshold and shows or updates the view. Every
compile publishes those events, so every kernel gets a progress line without the compiler
knowing about notebooks.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from dataclasses import dataclass, field

from gpunb.foundation.events import CompileEvent, EventKind, Stage, subscribe

STAGE_ORDER = tuple(stage.value for stage in Stage)
THRESHOLD_S = 1.0
INTERVAL_S = 0.05
_KINDS = (EventKind.COMPILE_STARTED, EventKind.STAGE_STARTED, EventKind.COMPILE_FINISHED)


@dataclass(slots=True)
class CompileSighting:
    """The compile under way in the watched thread: which kernel, since when, which stage."""

    kernel: str
    started: float
    stage: str = "starting"
    stages_seen: list = field(default_factory=list)
    depth: int = 1  # nested compiles (a compile that starts another) count as one


class CompileWatcher:
    """Watches one thread's compiles while a cell runs; shows a progress view after
    `threshold_s`. `start()` and `stop()` bracket the cell."""

    def __init__(self, threshold_s: float = THRESHOLD_S, interval_s: float = INTERVAL_S):
        self.threshold_s = threshold_s
        self.interval_s = interval_s
        self.shown: list[str] = []  # final lines of every progress view shown (for tests)
        self._lock = threading.Lock()
        self._current: CompileSighting | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._target_id: int | None = None
        self._subscription = None

    def start(self, thread_id: int | None = None) -> None:
        """Watch compiles in `thread_id` (default: this thread) until stop()."""
        self.stop()
        self._stop = threading.Event()
        self._target_id = thread_id or threading.get_ident()
        self._subscription = subscribe(_KINDS, self._on_event)
        context = contextvars.copy_context()  # display() from the watcher goes to this cell
        self._thread = threading.Thread(target=context.run, args=(self._run,), daemon=True,
                                        name="gpunb-compile-watcher")
        self._thread.start()

    def stop(self) -> None:
        if self._subscription is not None:
            self._subscription.unsubscribe()
            self._subscription = None
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2.0)
            self._thread = None

    def _on_event(self, event: CompileEvent) -> None:
        """Runs in the compiling thread: note what is compiling, and nothing else."""
        if threading.get_ident() != self._target_id:
            return
        with self._lock:
            current = self._current
            if event.kind is EventKind.COMPILE_STARTED:
                if current is None:
                    self._current = CompileSighting(event.kernel, time.perf_counter())
                else:
                    current.depth += 1
            elif current is None:
                return
            elif event.kind is EventKind.STAGE_STARTED and event.stage is not None:
                current.stage = event.stage.value
                if current.stage not in current.stages_seen:
                    current.stages_seen.append(current.stage)
            elif event.kind is EventKind.COMPILE_FINISHED:
                current.depth -= 1
                if current.depth == 0:
                    self._current = None

    def _run(self) -> None:
        """The watcher thread: show a view once a compile passes the threshold, update its
        stage, and finish it when the compile ends (or the cell does)."""
        shown_for: CompileSighting | None = None
        view = None
        while not self._stop.wait(self.interval_s):
            with self._lock:
                current = self._current
                snapshot = (current.stage, list(current.stages_seen)) if current else None
            if shown_for is not None and current is not shown_for:
                self.shown.append(view.finish(time.perf_counter() - shown_for.started))
                shown_for, view = None, None
            if current is None:
                continue
            elapsed = time.perf_counter() - current.started
            if elapsed >= self.threshold_s:
                if view is None:
                    shown_for, view = current, make_view(current.kernel)
                view.update(snapshot[0], elapsed, snapshot[1])
        if view is not None:
            self.shown.append(view.finish(time.perf_counter() - shown_for.started))


def make_view(kernel: str):
    from gpunb.notebook.widgets import in_kernel, widgets_available

    if in_kernel() and widgets_available():
        return _WidgetView(kernel)
    return _TextView(kernel)


def _line(kernel: str, stage: str, elapsed: float) -> str:
    return f"gpunb: compiling {kernel}: {stage} ({elapsed:.1f} s)"


class _TextView:
    """Terminal IPython: one line to stderr when the compile turns slow, one when it ends."""

    def __init__(self, kernel: str):
        self.kernel = kernel
        self.announced = False

    def update(self, stage: str, elapsed: float, seen: list) -> None:
        if not self.announced:
            print(_line(self.kernel, stage, elapsed) + " ...", file=sys.stderr, flush=True)
            self.announced = True

    def finish(self, elapsed: float) -> str:
        line = f"gpunb: compiled {self.kernel} in {elapsed:.1f} s"
        print(line, file=sys.stderr, flush=True)
        return line


class _WidgetView:
    """In a kernel: an HTML widget with the stage pills, updated in place, kept as a record (with
    its static copy, for a saved notebook: widgets.show_live)."""

    def __init__(self, kernel: str):
        import ipywidgets as w

        from gpunb.notebook.widgets import StaticCopy, show_live

        self.kernel = kernel
        self._text = ""
        self._html = ""
        self.static = StaticCopy(lambda: {"text/plain": self._text, "text/html": self._html})
        self.html = w.HTML()
        show_live(self.static, lambda: self.html)

    def _set(self, text: str, html: str) -> None:
        from gpunb.notebook import render

        self._text, self._html = text, render.wrap(html)
        self.html.value = self._html + self.static.hide_rule()
        self.static.update()

    def update(self, stage: str, elapsed: float, seen: list) -> None:
        from gpunb.notebook import render

        stages = [(s, s == stage) for s in STAGE_ORDER if s in seen or s == stage]
        text = _line(self.kernel, stage, elapsed)
        self._set(text, f"<div>{render.esc(text)}</div>{render.pills(stages)}")

    def finish(self, elapsed: float) -> str:
        from gpunb.notebook import render

        line = f"gpunb: compiled {self.kernel} in {elapsed:.1f} s"
        self._set(line, f'<div class="muted">{render.esc(line)}</div>')
        return line
