"""The debugger's errors: a request it cannot meet, and a launch the user abandoned."""

from __future__ import annotations

from gpunb.foundation.errors import LaunchError


class DebuggerError(LaunchError):
    """A debugger request that cannot be met: a line without code, a thread outside the launch,
    a command for a session that is not stopped, breakpoints on a target other than the CPU."""


class DebugQuit(DebuggerError):
    """The launch was abandoned from the debugger (quit, a re-run cell, an interrupt): its
    threads ended early, so what its outputs hold is undefined."""
