"""A progress line for compiles longer than one second, naming the stage the compiler is in.

A watcher thread samples the cell's thread stack every 50 ms while a cell runs: a frame of the
dispatcher's slow path means a compile is under way, and the innermost known compiler function
names the stage. Sampling needs no cooperation from the compiler, so every kernel gets it.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from dataclasses import dataclass

# (file suffix, function name) -> stage label; the innermost match on the stack wins
STAGES: dict = {
    ("compiler/frontend.py", "load_source"): "parse",
    ("compiler/infer/__init__.py", "infer_function"): "types",
    ("compiler/pipeline.py", "infer_kernel"): "types",
    ("compiler/pipeline.py", "lower_kernel"): "LLVM",
    ("compiler/lower/module.py", "lower_kernel"): "LLVM",
    ("backends/cuda/target.py", "emit_ptx"): "PTX",
    ("backends/cpu/target.py", "emit_object"): "host code",
    ("backends/cuda/modules.py", "link_ptx"): "driver link",
    ("backends/cuda/modules.py", "load_module"): "driver link",
    ("backends/cuda/sass.py", "assemble"): "ptxas",
    ("backends/cuda/sass.py", "disassemble"): "SASS",
}
# frames that mean "a compile is running"; their `dispatcher` local names the kernel
ROOTS: dict = {("jit/specialize.py", "build_specialization"): "compile",
               ("jit/specialize.py", "ptx_for"): "PTX for inspection",
               ("notebook/report.py", "build"): "PTX for inspection"}
STAGE_ORDER = ("parse", "types", "LLVM", "PTX", "host code", "driver link", "ptxas", "SASS")
THRESHOLD_S = 1.0
INTERVAL_S = 0.05


@dataclass(slots=True)
class CompileSighting:
    """One compile seen on the stack: which kernel, since when, in which stage now."""

    kernel: str
    started: float
    stage: str
    root: object  # the root frame; a new frame object means a new compile
    stages_seen: list


def _match(table: dict, code) -> str | None:
    filename = code.co_filename.replace("\\", "/")
    for (suffix, name), label in table.items():
        if code.co_name == name and filename.endswith(suffix):
            return label
    return None


def sample(frame) -> tuple | None:
    """(root frame, stage) for the outermost compile on this stack, or None."""
    stage = None
    root = None
    while frame is not None:
        code = frame.f_code
        if stage is None:
            stage = _match(STAGES, code)
        if _match(ROOTS, code) is not None:
            root = frame
        frame = frame.f_back
    if root is None:
        return None
    return root, stage or "starting"


def kernel_name(root) -> str:
    """The kernel a compile root frame works on (read once per compile: f_locals is not free)."""
    dispatcher = root.f_locals.get("dispatcher")
    return getattr(dispatcher, "__name__", None) or "kernel"


class CompileWatcher:
    """Samples one thread while a cell runs; shows a progress view after THRESHOLD_S."""

    def __init__(self, threshold_s: float = THRESHOLD_S, interval_s: float = INTERVAL_S):
        self.threshold_s = threshold_s
        self.interval_s = interval_s
        self.shown: list[str] = []  # final lines of every progress view shown (for tests)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._target_id: int | None = None

    def start(self, thread_id: int | None = None) -> None:
        self.stop()
        self._stop = threading.Event()
        self._target_id = thread_id or threading.get_ident()
        context = contextvars.copy_context()  # display() from the watcher goes to this cell
        self._thread = threading.Thread(target=context.run, args=(self._run,), daemon=True,
                                        name="gpunb-compile-watcher")
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2.0)
            self._thread = None

    def _run(self) -> None:
        current: CompileSighting | None = None
        view = None
        while not self._stop.wait(self.interval_s):
            frame = sys._current_frames().get(self._target_id)
            seen = sample(frame) if frame is not None else None
            del frame
            if seen is None or (current is not None and seen[0] is not current.root):
                if current is not None and view is not None:
                    self.shown.append(view.finish(time.perf_counter() - current.started))
                current, view = None, None
            if seen is None:
                continue
            root, stage = seen
            if current is None:
                current = CompileSighting(kernel_name(root), time.perf_counter(), stage, root,
                                          [stage])
            elif stage != current.stage:
                current.stage = stage
                current.stages_seen.append(stage)
            elapsed = time.perf_counter() - current.started
            if elapsed >= self.threshold_s:
                if view is None:
                    view = make_view(current.kernel)
                view.update(stage, elapsed, current.stages_seen)
        if current is not None and view is not None:
            self.shown.append(view.finish(time.perf_counter() - current.started))


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
    """In a kernel: an HTML widget with the stage pills, updated in place, kept as a record."""

    def __init__(self, kernel: str):
        import ipywidgets as w
        from IPython.display import display

        self.kernel = kernel
        self.html = w.HTML()
        display(self.html)

    def update(self, stage: str, elapsed: float, seen: list) -> None:
        from gpunb.notebook import render

        stages = [(s, s == stage) for s in STAGE_ORDER if s in seen or s == stage]
        self.html.value = render.wrap(f"<div>{render.esc(_line(self.kernel, stage, elapsed))}"
                                      f"</div>{render.pills(stages)}")

    def finish(self, elapsed: float) -> str:
        from gpunb.notebook import render

        line = f"gpunb: compiled {self.kernel} in {elapsed:.1f} s"
        self.html.value = render.wrap(f'<div class="muted">{render.esc(line)}</div>')
        return line
