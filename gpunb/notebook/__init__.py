"""gpunb's IPython extension: magics, cell hooks, inspector widgets and the labextension comm.

`%load_ext gpunb` must stay fast (no CUDA, no llvmlite, no ipywidgets): this module imports only
the magics and hooks, which import nothing heavy at module level. Widgets load on first display.
"""

from __future__ import annotations

_loaded: dict = {}
# the jit layer's inspection record, displayed by IPython as the inspector (registered by name,
# so %load_ext imports nothing for it)
_REPORT_TYPE = ("gpunb.jit.report", "KernelReport")
# debugger objects, displayed as their widgets (gpunb.debug(...) and gpunb.trace(...) results)
_SESSION_TYPE = ("gpunb.debugger.session", "DebugSession")
_TRACE_TYPE = ("gpunb.debugger.trace", "Trace")


def load_ipython_extension(ipython) -> None:
    """Register %%gpukernel, %gpucache, %gpuinfo, %%gpuprofile and the cell hooks on `ipython`."""
    from gpunb.notebook.hooks import CellHooks
    from gpunb.notebook.magics import GpuMagics

    if id(ipython) in _loaded:
        return
    hooks = CellHooks(ipython)
    hooks.register()
    ipython.register_magics(GpuMagics(ipython, hooks))
    _ensure_cuda_name(ipython)
    _register_displays(ipython)
    _loaded[id(ipython)] = hooks
    _connect_panel(ipython, hooks)
    _use_debugger_widget(ipython)


def _connect_panel(ipython, hooks) -> None:
    """Let the JupyterLab side panel open comms (page reloads), tell an open one we are here and
    collect what it shows from events (only in a Jupyter kernel: terminal IPython imports
    nothing for it)."""
    if getattr(ipython, "kernel", None) is None:
        return
    from gpunb.notebook import comm

    hooks.start_panel_feed()
    if comm.register_target():
        comm.publish({"type": "hello", "version": comm.VERSION})
    from gpunb.foundation import config

    if config.notices_enabled():  # no silent absence: say how to get the panel
        from gpunb.foundation.events import notify
        from gpunb.notebook.labext import panel_notice

        line = panel_notice()
        if line:
            notify(line, "panel")


def _use_debugger_widget(ipython) -> None:
    """In a Jupyter kernel, launches that stop in the debugger show its widget (elsewhere the
    terminal's pdb-style prompt stays). Nothing is imported for it until a launch stops."""
    if getattr(ipython, "kernel", None) is None:
        return
    from gpunb.debugger import frontend

    _debugger_frontends[id(ipython)] = frontend.use(_debugger_widget_frontend)


_debugger_frontends: dict = {}  # shell -> the front end before %load_ext


def _debugger_widget_frontend(session) -> None:
    from gpunb.notebook.widgets import widgets_available

    if not widgets_available():
        from gpunb.debugger.terminal import run_in_terminal

        run_in_terminal(session)
        return
    from gpunb.notebook.debug_display import notebook_frontend

    notebook_frontend(session)


def unload_ipython_extension(ipython) -> None:
    """Remove the hooks (magics stay registered, as IPython offers no way to drop them)."""
    hooks = _loaded.pop(id(ipython), None)
    if id(ipython) in _debugger_frontends:
        from gpunb.debugger import frontend

        frontend.use(_debugger_frontends.pop(id(ipython)))
    if hooks is not None:
        hooks.unregister()
        formatter = _display_formatter(ipython)
        if formatter is not None:
            for kind in (_REPORT_TYPE, _SESSION_TYPE, _TRACE_TYPE):
                formatter.pop(".".join(kind), None)


def hooks_for(ipython):
    """The CellHooks of a shell that loaded the extension, or None."""
    return _loaded.get(id(ipython))


def _display_formatter(ipython):
    display_formatter = getattr(ipython, "display_formatter", None)
    return getattr(display_formatter, "ipython_display_formatter", None)


def _register_displays(ipython) -> None:
    """`kernel.inspect()` returns a KernelReport (plain jit-level data); in this shell it shows
    as the inspector widget (static HTML and text where widgets cannot show)."""
    formatter = _display_formatter(ipython)
    if formatter is None:
        return

    def show_report(report):
        from gpunb.notebook.inspector import show_report

        show_report(report)

    formatter.for_type_by_name(*_REPORT_TYPE, show_report)

    def show_session(session):
        from gpunb.notebook.debug_display import show_session

        show_session(session)

    def show_trace(trace):
        from gpunb.notebook.debug_display import show_trace

        show_trace(trace)

    formatter.for_type_by_name(*_SESSION_TYPE, show_session)
    formatter.for_type_by_name(*_TRACE_TYPE, show_trace)


def _ensure_cuda_name(ipython) -> None:
    """Kernel code says `cuda.grid(1)`; bind `cuda` to gpunb's module unless the user has one.

    The module object is created lazily by `gpunb.__getattr__`, and importing gpunb.cuda imports
    no driver, so this keeps `%load_ext` cheap.
    """
    import importlib

    if "cuda" not in ipython.user_ns:
        ipython.user_ns["cuda"] = importlib.import_module("gpunb.cuda")
    # `gpunb.notebook.launch_explorer(...)`, `gpunb.cache.explain(k)` right after %load_ext
    ipython.user_ns.setdefault("gpunb", importlib.import_module("gpunb"))


def __getattr__(name: str):
    """Lazy public helpers, so `%load_ext gpunb` never imports the widget modules."""
    if name == "inspector_for":
        from gpunb.notebook.inspector import inspector_for

        return inspector_for
    if name == "launch_explorer":
        from gpunb.notebook.explorer import launch_explorer

        return launch_explorer
    if name == "diff_view":
        from gpunb.notebook.diffview import diff_view

        return diff_view
    raise AttributeError(f"module 'gpunb.notebook' has no attribute {name!r}")


def tensorcore_layout(shape: str = "m16n8k16", dtype: str = "float16", api: str = "mma",
                      trans: bool = False, num: int = 4):
    """Which lane holds which element of A, B and C of mma.sync (api="mma"), WMMA (api="wmma")
    or ldmatrix (shape="ldmatrix"): an HTML view, `.text()`, or `.widget()` with dropdowns."""
    from gpunb.notebook.layout_view import tensorcore_layout as draw

    return draw(shape, dtype, api, trans, num)
