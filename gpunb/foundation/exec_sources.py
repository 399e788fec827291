"""Remembers the text of code compiled from strings (exec, eval, compile) for the frontend.

gpunb compiles a GPU function from its source, and `inspect` cannot find the source of a function
made by `exec(text)`. CPython raises the `compile` audit event with the exact text and filename of
every compiled string, then the `exec` event with the code object made from it; one audit hook
(installed at `import gpunb`, and cheap for every other event) maps each function code object
nested in that code to the text. Entries are keyed by the code object's identity and die with it.
The frontend verifies a text (compiling it must give an equal code object) before using it.
"""

from __future__ import annotations

import os
import sys
import types
import weakref
from _thread import _local  # threading.local without importing threading (import gpunb is cheap)

_pending = _local()  # .last: (source, filename) of this thread's latest compile event
# id(code) -> (_CodeRef, source, filename). Not a WeakKeyDictionary: code objects compare by
# content, so equal code exec'd twice would share one entry, and the first one's death would drop
# the entry of the one still alive.
_sources: dict = {}
_installed = False


class _CodeRef(weakref.ref):
    """A weak reference to a code object that knows its key in `_sources`."""

    __slots__ = ("key",)


def install() -> None:
    """Add the audit hook, once per process (audit hooks cannot be removed)."""
    global _installed
    if not _installed:
        _installed = True
        sys.addaudithook(_audit)


def recorded(code: types.CodeType) -> tuple[str, str] | None:
    """(text, filename) that `code` was compiled from, when an exec'd string made it."""
    entry = _sources.get(id(code))
    if entry is None or entry[0]() is not code:
        return None
    return _text(entry[1]), entry[2]


def _text(source: str | bytes) -> str:
    if isinstance(source, bytes):
        from importlib.util import decode_source  # honours a coding cookie, as compile() does

        return decode_source(source)
    return source


def texts_named(filename: str):
    """The distinct recorded texts compiled under `filename` whose code is still alive: the
    candidates for an equal code object made elsewhere (a function unpickled by value has a new
    code object, equal to the exec'd one). The caller verifies a candidate before using it."""
    seen: set = set()
    for ref, source, name in list(_sources.values()):
        if name == filename and ref() is not None and id(source) not in seen:
            seen.add(id(source))
            yield _text(source)


def remember(code: types.CodeType, source: str, filename: str) -> None:
    """Record `source` as the text `code` (and the code nested in it) came from: an unpickled GPU
    function carries its text, since the process that unpickles it (a Dask worker, a fresh
    kernel) may have no file, cell or string to read it from. The frontend verifies the text."""
    _record_tree(code, source, filename, include_top=True)


def _audit(event: str, args: tuple) -> None:
    # runs for every audit event in the process (sys._getframe, open, imports...): two string
    # comparisons and out for all but these two
    if event == "compile":
        _on_compile(args)
    elif event == "exec":
        _on_exec(args)


def _on_compile(args: tuple) -> None:
    try:
        source, filename = args
        if isinstance(source, (str, bytes)) and isinstance(filename, str) and (
                filename.startswith("<") or not os.path.isfile(filename)):
            _pending.last = (source, filename)  # a file's text stays readable: not kept
        else:
            _pending.last = None
    except Exception:  # noqa: BLE001 - an audit hook must never break the code it watches
        pass


def _on_exec(args: tuple) -> None:
    try:
        last = getattr(_pending, "last", None)
        if last is None:
            return
        _pending.last = None
        code = args[0]
        source, filename = last
        if type(code) is not types.CodeType or code.co_filename != filename:
            return  # not the code of the latest compile (exec of an older code object)
        _record_tree(code, source, filename, include_top=False)
    except Exception:  # noqa: BLE001 - see _on_compile
        pass


def _record_tree(code: types.CodeType, source, filename: str, include_top: bool) -> None:
    todo = [code]
    if include_top:
        _record(code, source, filename)
    while todo:
        for const in todo.pop().co_consts:
            if type(const) is types.CodeType:
                _record(const, source, filename)
                todo.append(const)


def _record(code: types.CodeType, source, filename: str) -> None:
    ref = _CodeRef(code, _forget)
    ref.key = id(code)
    _sources[ref.key] = (ref, source, filename)


def _forget(ref: _CodeRef) -> None:
    """Drop the entry of a code object that died (unless its id now names a newer one)."""
    try:
        entry = _sources.get(ref.key)
        if entry is not None and entry[0] is ref:
            del _sources[ref.key]
    except Exception:  # noqa: BLE001 - may run during interpreter shutdown
        pass
