"""When to offer a live ipywidgets view next to the static HTML, and how to attach it.

A widget view only helps where a Jupyter kernel with a frontend can talk back; in terminal IPython
(or without ipywidgets) the views fall back to their HTML and plain-text forms.
"""

from __future__ import annotations

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
