"""The text of a module's file as the module ran: what its GPU functions compile from.

A kernel compiles at its first launch, from its source text: read then, an edit made to the
module's file after the import would be compiled although the module itself still runs the
imported code. So the text of a module's file is kept when a GPU function is made while the
module body runs (its import or reload), and the frontend compiles from that copy; when the
file on disk differs, one StaleSourceWarning says so and how to pick the change up.
"""

from __future__ import annotations

from gpunb.foundation.sources import is_cell


class LoadedText:
    """The text of a module file as it was when the module (last) ran: lines, the file's
    (size, mtime_ns) and content digest then, the module's name, and whether it was read while
    the module body ran (at_import) or later (a function decorated after the import)."""

    __slots__ = ("path", "lines", "size", "mtime_ns", "digest", "module", "at_import", "seen")

    def __init__(self, path: str, data: bytes, size: int, mtime_ns: int, module: str,
                 at_import: bool):
        from importlib.util import decode_source  # the encoding cookie, as the import did

        self.path = path
        self.lines = decode_source(data).splitlines(keepends=True)
        self.size, self.mtime_ns = size, mtime_ns
        self.digest = _digest(data)
        self.module = module
        self.at_import = at_import
        self.seen = (size, mtime_ns)  # the last (size, mtime_ns) whose content was compared

    def stamp(self) -> tuple:
        """(size, mtime_ns, digest) as the module ran: the epoch's baseline for the file."""
        return (self.size, self.mtime_ns, self.digest)

    def on_disk(self) -> tuple[str, str]:
        """("same" | "edited" | "deleted", digest of what is on disk now): a (size, mtime_ns)
        that moved only triggers a re-hash; content decides."""
        import os

        try:
            st = os.stat(self.path)
            if (st.st_size, st.st_mtime_ns) in (self.seen, (self.size, self.mtime_ns)):
                return "same", self.digest
            with open(self.path, "rb") as f:
                now = _digest(f.read())
        except OSError:
            return "deleted", ""
        if now == self.digest:
            self.seen = (st.st_size, st.st_mtime_ns)  # touched or saved unchanged
            return "same", now
        return "edited", now


def _digest(data: bytes) -> str:
    try:  # hashlib.blake2b without loading OpenSSL (~2.5 ms), as cache/encode.py does
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - other Python implementations
        from hashlib import blake2b
    return blake2b(data, digest_size=16).hexdigest()


_loaded_files: dict = {}  # path -> the latest LoadedText of that file
_loaded_code: dict = {}  # id(code) -> (weak reference to the code, its LoadedText)


def remember_module_text(py_func) -> None:
    """Called when a GPU function is made: keep the text of its module's file as it runs now.

    Only for a function defined in its module's own file (not a notebook cell, an exec'd
    string or a file another module's code claims). The file is read once per import of its
    module; a function made later from an imported module (cuda.jit(mod.f) in a later cell)
    shares the text kept at the import, if any."""
    import os
    import sys
    import weakref

    code = getattr(py_func, "__code__", None)
    filename = getattr(code, "co_filename", "")
    if not filename or filename.startswith("<") or is_cell(filename):
        return
    module = getattr(py_func, "__module__", None) or ""
    module_file = getattr(sys.modules.get(module), "__file__", None)
    if not module_file or os.path.abspath(module_file) != os.path.abspath(filename):
        return
    try:
        st = os.stat(filename)
    except OSError:
        return
    at_import = _module_body_running(filename)
    found = _loaded_files.get(filename)
    unchanged = found is not None and (st.st_size, st.st_mtime_ns) == (found.size,
                                                                        found.mtime_ns)
    if found is None or (not unchanged and at_import):
        found = _read_text_of(filename, st, module, at_import)
        if found is None:
            return
        if not at_import and not _made_from(found, code, sys.modules.get(module)):
            _warn_unconfirmed(found, py_func)  # made late, from a file edited since the import
            return
        _loaded_files[filename] = found
    elif not unchanged:  # made late, and the file changed since the text kept: which one is it?
        current = _read_text_of(filename, st, module, False)
        if current is not None and _defines(current, code):
            found = _loaded_files[filename] = current  # the module was reloaded since
    _loaded_code[id(code)] = (weakref.ref(code, _forget_code(id(code))), found)


def _read_text_of(filename: str, st, module: str, at_import: bool) -> LoadedText | None:
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return LoadedText(filename, data, st.st_size, st.st_mtime_ns, module, at_import)


def _made_from(text: LoadedText, code, module) -> bool:
    """Whether `code` can have been compiled from `text`. Asked only of a module that Python's
    own loader compiled from its source (pytest, for one, rewrites its test modules' asserts:
    their code is not the text's)."""
    loader = type(getattr(module, "__loader__", None)).__name__
    if loader != "SourceFileLoader":
        return True
    return _defines(text, code)


def _defines(text: LoadedText, code) -> bool:
    """Whether compiling `text` gives a code object equal to `code` (bytecode, constants, names,
    positions): the text the code was made from."""
    import __future__

    import types

    source = "".join(text.lines)
    for flags in (0, __future__.annotations.compiler_flag):  # the one future flag that matters
        try:
            todo = [compile(source, text.path, "exec", flags=flags, dont_inherit=True)]
        except (SyntaxError, ValueError):
            return False
        while todo:
            for const in todo.pop().co_consts:
                if isinstance(const, types.CodeType):
                    if const == code:
                        return True
                    todo.append(const)
    return False


def _warn_unconfirmed(text: LoadedText, py_func) -> None:
    from gpunb.foundation.user_warnings import StaleSourceWarning, warn_user

    module = text.module
    warn_user(f"{text.path} does not hold the code of '{py_func.__qualname__}' that module "
              f"'{module}' runs (the file was edited after the import?), and gpunb kept no copy "
              "of the text as imported: the GPU function compiles from the file as it is now. "
              f"importlib.reload({module}) makes the module and the file agree",
              StaleSourceWarning, once=("stale", text.path, text.digest))


def _forget_code(key: int):
    def forget(ref) -> None:
        entry = _loaded_code.get(key)
        if entry is not None and entry[0] is ref:
            del _loaded_code[key]
    return forget


def _module_body_running(filename: str) -> bool:
    """Whether the first frame outside gpunb is the body of the module in `filename` (it is
    being imported or reloaded: the file holds the text that runs)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("gpunb"):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_name == "<module>" \
        and frame.f_code.co_filename == filename


def loaded_text(code) -> LoadedText | None:
    """The text `code`'s module file had when the module ran, if gpunb kept it: the function's
    own, else the latest kept for the file (a plain helper of that module)."""
    entry = _loaded_code.get(id(code))
    if entry is not None and entry[0]() is code:
        return entry[1]
    return _loaded_files.get(code.co_filename)


def loaded_text_of(path: str) -> LoadedText | None:
    """The latest text kept for the module file `path`, if any."""
    return _loaded_files.get(path)


def reloaded_since(text: LoadedText) -> bool:
    """Whether `text`'s module ran again (importlib.reload, %autoreload) from a file that holds
    what is on disk now: a function kept with `text` is then an object from before the reload
    (a name bound by `from module import f` keeps it), not a module out of date."""
    latest = _loaded_files.get(text.path)
    return latest is not None and latest is not text and latest.digest != text.digest \
        and latest.on_disk()[0] == "same"


def check_superseded(py_func) -> None:
    """Warn once when `py_func` (a GPU function's Python function) is from before its module
    was reloaded: asked each time its fingerprint is rebuilt, so a kernel that keeps its code
    (nothing it reads changed) still says why an edit to the module does not reach it."""
    code = py_func.__code__
    entry = _loaded_code.get(id(code))
    if entry is None or entry[0]() is not code or not reloaded_since(entry[1]):
        return
    latest = _loaded_files[entry[1].path]
    asked = (id(code), latest.digest)
    if asked not in _still_defined:  # compiling the module's text: once per function and text
        _still_defined[asked] = _defines(latest, code)
    if not _still_defined[asked]:  # the reloaded text changed this very function
        warn_superseded(entry[1], py_func.__qualname__)


_still_defined: dict = {}  # (id(code), text digest) -> whether that text defines the same code


def warn_superseded(text: LoadedText, function: str) -> None:
    """One StaleSourceWarning per function and text: it predates its module's reload."""
    from gpunb.foundation.user_warnings import StaleSourceWarning, warn_user

    module = text.module or "its module"
    name = function.rpartition(".")[2]
    warn_user(f"GPU function '{function}' is the one module '{module}' defined before it was "
              f"reloaded: it compiles the code it was defined with ({text.path} as imported "
              f"then), not the reloaded file. A name bound by `from {module} import {name}` "
              "keeps the old function (%autoreload cannot update GPU functions in place): run "
              f"the import again, or call {module}.{name}", StaleSourceWarning,
              once=("superseded", text.path, function, text.digest))


def warn_stale(text: LoadedText, state: str, now: str, function: str = "") -> None:
    """One StaleSourceWarning per file content: the file changed (or went) since its module
    ran; GPU functions compile from the text as it ran; how to pick the change up."""
    from gpunb.foundation.user_warnings import StaleSourceWarning, warn_user

    module = text.module or "the module"
    who = f"GPU function '{function}' compiles" if function else "its GPU functions compile"
    if state == "deleted":
        message = (f"{text.path} was deleted or moved after module '{module}' was imported; "
                   f"{who} from the text as imported (the code the module runs). Once the file "
                   f"is back, importlib.reload({module}) picks up what it holds")
    else:
        message = (f"{text.path} changed on disk after module '{module}' was imported; {who} "
                   "from the text as imported (the code the module runs). To use the edit: "
                   f"importlib.reload({module}), then launch again")
    warn_user(message, StaleSourceWarning, once=("stale", text.path, now))
