"""The error a fused function gets for code gpunb.fuse cannot compile, pointing at its line.

The tracer (trace.py, graph.py, plan.py, arguments.py) raises plain `TypeError("gpunb.fuse: ...")`
where it meets something it cannot fuse; `located` turns one into a FuseError - a gpunb
CompileError, still a TypeError as cupy.fuse raises - that names the cell or file, line and column
of the fused function's code that did it, with a caret, and keeps only the user's frames.
"""

from __future__ import annotations

import os
import traceback
import types

from gpunb.foundation.errors import CompileError, SourceLocation

PREFIX = "gpunb.fuse:"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gpunb/
_NUMPY = os.sep + "numpy" + os.sep


class FuseError(CompileError, TypeError):
    """A fused function uses something gpunb.fuse cannot compile (an unsupported numpy
    function, a data-dependent branch, a dtype); also a TypeError, as cupy.fuse raises."""


def is_report(exc: BaseException) -> bool:
    """Whether `exc` is the tracer's deliberate report about the user's code (not a bug)."""
    return isinstance(exc, TypeError) and str(exc).startswith(PREFIX)


def located(exc: TypeError, caller=None) -> FuseError:
    """A FuseError for one of the tracer's reports: message and hint (split at the first "; "),
    the innermost line of user code in its traceback (else `caller`, the call of the fused
    function), and a traceback of the user's frames only."""
    text = str(exc)
    message, _, hint = text.partition("; ")
    loc = _innermost_user_line(exc.__traceback__) or caller
    error = FuseError(message, loc, hint or None)
    return error.with_traceback(user_frames(exc.__traceback__))


def _is_user_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    return not path.startswith(_PACKAGE + os.sep) and _NUMPY not in path


def _innermost_user_line(tb) -> SourceLocation | None:
    found = None
    for frame in traceback.extract_tb(tb):
        if _is_user_file(frame.filename) and frame.lineno:
            same_line = frame.end_lineno == frame.lineno and frame.end_colno is not None
            found = SourceLocation(frame.filename, frame.lineno, frame.colno or 0,
                                   frame.end_colno if same_line else None)
    return found


def user_frames(tb):
    """The traceback without gpunb's own frames: an unsupported operation is reported at the
    line of the fused function that used it, not inside the tracer."""
    frames = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
            frames.append(tb)
        tb = tb.tb_next
    trimmed = None
    for entry in reversed(frames):
        trimmed = types.TracebackType(trimmed, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return trimmed
