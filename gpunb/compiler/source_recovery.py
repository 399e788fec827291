"""The source of a function that `inspect` cannot read: made by exec/eval of a string, or given to
`python -c`.

Candidate texts come from foundation.exec_sources (recorded when the string was compiled) and, for
`python -c`, from the interpreter's command line. A candidate is used only when compiling it gives
a code object equal to the function's own (same bytecode, constants, names and line numbers), so a
wrong association can never compile another body.
"""

from __future__ import annotations
import __future__

import inspect
import linecache
import os
import sys
import types

from gpunb.foundation import exec_sources

# compile() of an exec'd string inherits the caller's future flags; of those only `annotations`
# changes the code, so a text is tried without and with it
_FLAG_SETS = (0, __future__.annotations.compiler_flag)


class RecoveredSource:
    """A function's text recovered from a string: its whole text and the function's block."""

    __slots__ = ("text_lines", "lines", "first_line")

    def __init__(self, text_lines: tuple, lines: list, first_line: int):
        self.text_lines = text_lines  # every line of the string, for error messages
        self.lines = lines  # the function's own lines, as inspect.getsourcelines gives them
        self.first_line = first_line


def recover(py_func) -> RecoveredSource | None:
    """The verified text of `py_func`, or None when no candidate compiles to its code."""
    code = py_func.__code__
    for text in _candidates(code):
        if _defines(text, code):
            text_lines = tuple(text.splitlines(keepends=True))
            first = code.co_firstlineno
            return RecoveredSource(text_lines, inspect.getblock(list(text_lines[first - 1:])),
                                   first)
    return None


def linecache_disagrees(py_func) -> bool:
    """True when `py_func` was exec'd from a string and linecache has other text for its file
    name: `exec(compile(text, "gen.py", "exec"))` in a module's globals makes linecache read the
    *module's* file for "gen.py" (through the module's loader), so inspect would return lines of
    the wrong text. IPython cells register their own text, and agree."""
    found = exec_sources.recorded(py_func.__code__)
    if found is None:
        return False
    text, filename = found
    return "".join(linecache.getlines(filename)) != text


def _candidates(code: types.CodeType):
    found = exec_sources.recorded(code)
    if found is not None:
        yield found[0]
    else:  # an equal code object rebuilt elsewhere (unpickled): texts under its file name
        yield from exec_sources.texts_named(code.co_filename)
    if code.co_filename == "<string>" and sys.argv[:1] == ["-c"]:
        yield from _command_line()


def _command_line():
    """Texts that `python -c` may have run: the argument after `-c`, or glued to it (`-cTEXT`,
    `-Ic TEXT`); the caller's verification discards the rest."""
    argv = getattr(sys, "orig_argv", [])
    for k, arg in enumerate(argv[1:], start=1):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
            glued = arg[arg.index("c") + 1:]
            if glued:
                yield glued
            elif k + 1 < len(argv):
                yield argv[k + 1]


def _defines(text: str, code: types.CodeType) -> bool:
    for flags in _FLAG_SETS:
        try:
            top = compile(text, code.co_filename, "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
        if any(c == code for c in _code_objects(top)):
            return True
    return False


def _code_objects(code: types.CodeType):
    todo = [code]
    while todo:
        for const in todo.pop().co_consts:
            if isinstance(const, types.CodeType):
                yield const
                todo.append(const)


def missing_source_hint(py_func) -> str:
    """What to do when a function's text cannot be had, by where the function came from."""
    filename = py_func.__code__.co_filename
    if filename in ("<stdin>", "<console>"):
        return ("it was read from standard input (the interactive prompt, `python -`), which "
                "keeps no source text: define it in a file or a notebook cell (%%gpukernel), "
                "or exec() a string after `import gpunb`")
    if filename.startswith("<"):
        return ("it was built from a string (exec, eval or compile) whose text gpunb did not "
                "see: import gpunb before the string is executed (gpunb records the text then), "
                "or define the function in a file or a notebook cell")
    if not os.path.exists(filename):
        module = getattr(py_func, "__module__", None) or "its module"
        loaded_from = str(getattr(sys.modules.get(module), "__file__", None) or "")
        if loaded_from.endswith((".pyc", ".pyo")):
            return (f"module '{module}' was imported from compiled bytecode alone "
                    f"({loaded_from}), which holds no source text: gpunb compiles GPU functions "
                    f"from their source, so ship {os.path.basename(filename)} beside it")
        return (f"its file {filename} (module '{module}') is gone - deleted or moved since "
                f"'{module}' was imported: put the file back, or import the module again from "
                "where it is now (importlib.reload after fixing sys.path)")
    return "define GPU functions in a file or a notebook cell (in a notebook, %%gpukernel)"
