"""Showing the debugger in a notebook: the front end of stopping launches, and the views of a
session or a trace (their widgets where a widget can show, with a static copy a saved notebook
keeps; the static HTML alone elsewhere)."""

from __future__ import annotations

from gpunb.debugger.session import DebugSession, Finished
from gpunb.notebook import widgets
from gpunb.notebook.debug_view import (
    error_html,
    esc,
    finished_html,
    fragment,
    stopped_html,
    trace_step_html,
)


def session_bundle(session) -> dict:
    """A session's state as HTML and text (what a saved notebook shows)."""
    if session.state == "stopped":
        parts = stopped_html(session)
        body = "".join(parts[k] for k in ("head", "source", "stack", "variables", "across",
                                           "shared", "barriers"))
        text = session.view().headline()
    else:
        body = finished_html(session) if session.finished else \
            f"<p>'{esc(session.kernel)}' is running…</p>"
        text = f"debug session of '{session.kernel}': {session.state}"
    return {"text/html": fragment(body), "text/plain": text}


def show_session(session) -> None:
    """Display the debugger widget (and its static copy) for a session."""
    static = widgets.StaticCopy(lambda: session_bundle(session))

    def factory():
        from gpunb.notebook.debug_widget import DebuggerWidget

        return DebuggerWidget(session, static)

    widgets.show_live(static, factory)


def trace_bundle(trace, error, position: int) -> dict:
    parts = trace_step_html(trace, position)
    body = parts["head"] + error_html(error) + parts["source"] + parts["variables"]
    return {"text/html": fragment(body), "text/plain": repr(trace)}


def show_trace(trace, error=None) -> None:
    """Display the trace viewer (and its static copy, at the step the viewer shows)."""
    holder: dict = {}
    static = widgets.StaticCopy(lambda: trace_bundle(
        trace, error, holder["widget"].position if "widget" in holder else 0))

    def factory():
        from gpunb.notebook.trace_widget import TraceWidget

        holder["widget"] = TraceWidget(trace, error, static)
        return holder["widget"]

    widgets.show_live(static, factory)


def notebook_frontend(session: DebugSession) -> None:
    """The front end in a notebook: run the launch until it stops (an interrupt pauses it at
    the next line; a second one abandons it), then show the widget and let the cell go on; a
    launch that never stops returns (or raises) as a plain launch."""
    event = _until_first_event(session)
    if isinstance(event, Finished):
        if session.trace is not None:
            show_trace(session.trace, session.error)
        session.result()
        return
    show_session(session)


def _until_first_event(session: DebugSession):
    event = session.start(0.25)
    interrupts = 0
    while event is None:
        try:
            event = session.wait(0.25)
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts > 1:
                session.abort("interrupted")
                return Finished(session.state, session.error)
            session.pause(interrupt=True)
    return event
