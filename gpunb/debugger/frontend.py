"""Which front end drives a launch that stops: the terminal's by default, a widget in notebooks.

A front end is a callable taking a new DebugSession: it starts it and drives it (or hands it to
the user) and, when it lets the launch finish, raises the launch's error as a plain launch
would (`session.result()`). The notebook extension installs its widget front end when it loads
(`use(...)`) and restores the previous one when it unloads: an explicit call, never an import's
side effect.
"""

from __future__ import annotations

_current = None


def use(frontend) -> object:
    """Make `frontend` (None: the terminal's) drive stopping launches; returns the previous."""
    global _current
    previous, _current = _current, frontend
    return previous


def current():
    if _current is not None:
        return _current
    from gpunb.debugger.terminal import run_in_terminal

    return run_in_terminal
