"""IPython cell hooks: name cells for errors, bump the cache epoch, show errors without internals.

After every cell the cache epoch is bumped, so the next launch of any kernel re-checks its
dependencies (a helper redefined in this cell is noticed). Errors raised by gpunb render as
`message / Cell In[7], line 3 / source / caret / hint`, without compiler frames.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from gpunb.foundation.errors import CudaUnavailableError, GpunbError, is_launch_interrupt


class CellHooks:
    """Everything the extension attaches to one shell; `unregister` undoes it all."""

    def __init__(self, shell):
        self.shell = shell
        self.epochs_bumped = 0
        self.after_cell: list[Callable[[], None]] = []  # pending --show displays, live panels
        self.progress = None
        self.cell_number: int | None = None  # the execution count of the running cell
        self.cell_filename: str | None = None  # the running cell's synthetic filename
        self._previous_exc = None
        self._notices = None  # the NOTICE subscription while registered
        self.panel_feed = None  # panel_feed.PanelFeed, in a Jupyter kernel (start_panel_feed)

    def register(self) -> None:
        self._wrap_compiler_cache()
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        self._previous_exc = (getattr(self.shell, "custom_exceptions", ()),
                              getattr(self.shell, "CustomTB", None))
        # every gpunb error (compile, launch, toolchain, no GPU) renders without internal frames,
        # and a plain Python error raised by a %%gpukernel cell's code starts at the cell's line
        # (not at the `run_cell_magic(...)` call IPython made of the cell); any other error is
        # shown exactly as IPython shows it
        self.shell.set_custom_exc((Exception, KeyboardInterrupt), show_error)
        # one-line notices (the CPU-target fallback) are plain output, not a red stderr box
        from gpunb.foundation.events import EventKind, subscribe

        self._notices = subscribe(EventKind.NOTICE, show_notice)

    def _wrap_compiler_cache(self) -> None:
        """Learn each cell's synthetic filename and number where IPython makes them.

        IPython (8 and 9 differ in when `execution_count` advances) passes the cell's own number
        to `compile.cache`, so that call is the one reliable place to pair them.
        """
        compiler = self.shell.compile
        original = compiler.cache

        def cache(transformed_code, number=0, raw_code=None):
            name = original(transformed_code, number, raw_code)
            from gpunb.foundation.sources import register_cell

            register_cell(name, number)
            self.cell_number = number
            self.cell_filename = name
            return name

        cache.gpunb_original = original
        compiler.cache = cache

    def _unwrap_compiler_cache(self) -> None:
        cache = getattr(self.shell.compile, "cache", None)
        if getattr(cache, "gpunb_original", None) is not None:
            del self.shell.compile.cache  # the instance attribute; the class method shows again

    def start_panel_feed(self) -> None:
        """Collect what the side panel shows from gpunb's events (in a Jupyter kernel)."""
        from gpunb.notebook.panel_feed import PanelFeed

        if self.panel_feed is None:
            self.panel_feed = PanelFeed().start()

    def unregister(self) -> None:
        self._unwrap_compiler_cache()
        if self.panel_feed is not None:
            self.panel_feed.stop()
            self.panel_feed = None
        if self._notices is not None:
            self._notices.unsubscribe()
            self._notices = None
        for name, fn in (("pre_run_cell", self.pre_run_cell),
                         ("post_run_cell", self.post_run_cell)):
            try:
                self.shell.events.unregister(name, fn)
            except ValueError:
                pass
        if self._previous_exc is not None:
            excs, handler = self._previous_exc
            self.shell.custom_exceptions = excs
            if handler is not None:
                self.shell.CustomTB = handler
        if self.progress is not None:
            self.progress.stop()

    # ---- the two events -----------------------------------------------------------------------

    def pre_run_cell(self, info) -> None:
        from gpunb.notebook.progress import CompileWatcher

        if self.progress is None:
            self.progress = CompileWatcher()
        self.progress.start()

    def post_run_cell(self, result) -> None:
        if self.progress is not None:
            self.progress.stop()
        self.epochs_bumped += bump_cache_epoch()
        pending, self.after_cell = self.after_cell, []
        for action in pending:
            try:
                keep = action()
            except Exception as exc:  # noqa: BLE001 - a broken panel must not break the cell
                print(f"gpunb: {exc}", file=sys.stderr)
                keep = False
            if keep:
                self.after_cell.append(action)
        publish_to_panel(self.shell, self.panel_feed, self.cell_filename, self.cell_number)


def show_notice(notice) -> None:
    """A gpunb notice as one plain line of the cell's output (stdout)."""
    print(notice.text, file=sys.stdout, flush=True)


def publish_to_panel(shell, feed, cell_filename: str | None, cell_number: int | None) -> None:
    """After a cell: its cache events, and the kernels, failures and profiles `feed` (a
    panel_feed.PanelFeed, None outside a Jupyter kernel) heard of while it ran."""
    from gpunb.notebook import comm, panel_feed

    panel_feed.note_cell(cell_filename, cell_number, _execute_request(shell))
    comm.publish_new_events()
    if feed is None:
        return
    kernels, profiles = feed.take(cell_number)
    if kernels:
        comm.publish({"type": "kernels", "kernels": kernels})
    for profile in profiles:
        comm.publish_profile(profile)


def _execute_request(shell) -> dict | None:
    """The running cell's execute_request (its metadata holds JupyterLab's cellId), or None."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent("shell")
    except Exception:  # noqa: BLE001 - an older or different kernel: no cell ids, no jumps
        return None
    return parent if isinstance(parent, dict) else None


def bump_cache_epoch() -> int:
    """Tell the cache a cell ran (its names may have changed): every kernel re-checks what it
    reads at its next launch. Returns the number of epochs started (1)."""
    import gpunb.cache

    gpunb.cache.invalidate()
    return 1


def current_cell_number(shell) -> int | None:
    """The execution count of the cell now running (as IPython shows it: `In [N]`)."""
    from gpunb.notebook import hooks_for

    hooks = hooks_for(shell)
    if hooks is not None and hooks.cell_number is not None:
        return hooks.cell_number
    return shell.execution_count


def user_frames(tb) -> list[str]:
    """`launched from Cell In[8], line 3: ...` lines for the user's own frames in a traceback."""
    import linecache

    from gpunb.foundation.errors import describe_filename
    from gpunb.foundation.sources import is_cell

    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        name = code.co_filename
        text = linecache.getline(name, tb.tb_lineno).strip()
        if is_cell(name) and not text.startswith("get_ipython()"):  # not a magic's call line
            out.append(f"  from {describe_filename(name)}, line {tb.tb_lineno}: {text}")
        tb = tb.tb_next
    return out


CELL_FILE_ATTR = "__gpunb_cell_file__"  # set by %%gpukernel on errors its cell's code raised


def show_error(shell, etype, value, tb, tb_offset=None) -> list[str]:
    """IPython custom-exception handler for every exception of a cell (see CellHooks.register)."""
    if isinstance(value, GpunbError) or is_launch_interrupt(value):
        # a stopped launch's KeyboardInterrupt is gpunb's message too: the launcher's frames
        # between the user's line and the kernel say nothing to the user
        return show_gpunb_error(shell, etype, value, tb, tb_offset)
    cell_file = getattr(value, CELL_FILE_ATTR, None)
    if cell_file is None:
        # a SyntaxError met while IPython parsed the cell (no user code ran) shows as IPython
        # shows it without the extension: the cell's line and a caret, no IPython frames
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset,
                            running_compiled_code=not _raised_by_ipython(tb))
        return []
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename != cell_file:
        start = start.tb_next
    stb = shell.InteractiveTB.structured_traceback(etype, value, start or tb, tb_offset=0)
    shell._showtraceback(etype, value, stb)
    return stb


def _raised_by_ipython(tb) -> bool:
    """Whether every frame of a traceback is IPython's own (the cell was being parsed)."""
    import os

    import IPython

    package = os.path.dirname(IPython.__file__) + os.sep
    frames = 0
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(package):
            return False
        frames += 1
        tb = tb.tb_next
    return frames > 0


def show_gpunb_error(shell, etype, value, tb, tb_offset=None) -> list[str]:
    """IPython custom-exception handler: the rendered error, the user's frames, nothing else."""
    red, reset = ("\x1b[0;31m", "\x1b[0m") if shell.colors.lower() != "nocolor" else ("", "")
    rendered = value.render() if hasattr(value, "render") else str(value)
    lines = [f"{red}{etype.__name__}{reset}: {rendered}"]
    if isinstance(value, CudaUnavailableError):
        lines.append("  hint: without a GPU, run kernels on the CPU target: "
                     "%%gpukernel --target auto (or cpu), or gpunb.set_target(\"cpu\")")
    frames = user_frames(tb)
    if frames:  # set apart from the hint above, so they do not read as part of it
        lines.append("")
        lines.append("raised while running:")
        lines.extend(frames)
    shell._showtraceback(etype, value, lines)
    return lines
