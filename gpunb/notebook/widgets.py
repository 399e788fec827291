"""When to offer a live ipywidgets view next to the static HTML, and how to attach it.

A widget view only helps where a Jupyter kernel with a frontend can talk back; in terminal IPython
(or without ipywidgets) the views fall back to their HTML and plain-text forms.

In a notebook a live view is shown as two outputs (`show_live`): first its static copy (HTML and
text, an output of its own with a display id), then the widget. The widget carries a CSS rule that
hides the static copy, so wherever the widget renders (JupyterLab, Notebook 7, a saved widget state
rendered by nbconvert's widget loader) one view shows. Where it cannot render - nbconvert's page
offline, GitHub, a notebook reopened without a kernel or saved state - the static copy shows:
nbconvert picks one format per output and, with saved widget state, always the widget's, so the
static HTML must not live in the widget's output. Every change of the live view re-sends the
static copy (`update_display`), so a saved or converted notebook shows the state the user left.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def in_kernel() -> bool:
    """True inside a Jupyter kernel (ipykernel), where widgets have a frontend to talk to."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def widget_bundle(factory: Callable) -> dict:
    """{widget-view mime: ...} for the widget `factory()` builds, or {} where it cannot show."""
    if not (in_kernel() and widgets_available()):
        return {}
    widget = factory()
    if widget is None:
        return {}
    data = widget._repr_mimebundle_() or {}
    if isinstance(data, tuple):  # (data, metadata) form
        data = data[0]
    return {WIDGET_MIME: data[WIDGET_MIME]} if WIDGET_MIME in data else {}


class StaticCopy:
    """The static form of one live view, kept as an output of its own (see the module doc).

    `bundle()` gives {"text/plain": ..., "text/html": ...} of the view's current state.
    """

    def __init__(self, bundle: Callable[[], dict]):
        self._bundle = bundle
        self.key = "gpunb-static-" + uuid.uuid4().hex[:16]  # unique across kernel restarts
        self.shown = False

    def hide_rule(self) -> str:
        """A <style> for the widget's HTML: while the widget is on the page, its static copy
        (and the output area around it, in JupyterLab and the classic notebook) is hidden."""
        k = self.key
        return (f"<style>.{k},.jp-OutputArea-child:has(.{k}),.output_area:has(.{k})"
                "{display:none}</style>")

    def data(self) -> dict:
        data = dict(self._bundle())
        data["text/html"] = f'<div class="{self.key}">{data.get("text/html", "")}</div>'
        return data

    def show(self) -> None:
        from IPython.display import display

        display(self.data(), raw=True, display_id=self.key)
        self.shown = True

    def update(self) -> None:
        """Re-send the static copy after a change of the live view (no-op until shown)."""
        if self.shown:
            from IPython.display import update_display

            update_display(self.data(), raw=True, display_id=self.key)


def show_live(static: StaticCopy, factory: Callable) -> None:
    """Display a view: its static copy and its widget where a widget can show, else the static
    HTML and text as one output (terminal IPython shows the text)."""
    from IPython.display import display

    bundle = widget_bundle(factory)
    if not bundle:
        display(static._bundle(), raw=True)
        return
    static.show()
    # the widget's own output has no HTML (nbconvert would show it beside the static copy where
    # the widget cannot render) and no text (the widget's repr is not for people)
    display({**bundle, "text/plain": ""}, raw=True)
