"""Source text -> parsed, located Python AST for one GPU function (files and notebook cells alike).

`inspect.getsource` reads through `linecache`, where IPython registers every cell's text, so the
same code serves `.py` files and notebook cells. Functions made from strings (exec, `python -c`)
have no file: their text is recovered and verified by source_recovery. Line numbers in the tree are
the file's (or cell's, or string's) own.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from gpunb.compiler import source_recovery
from gpunb.compiler.folding import fold_constants
from gpunb.foundation import loaded_sources
from gpunb.foundation.errors import CompileError, SourceLocation
from gpunb.foundation.memo import RecentlyUsed
from gpunb.foundation.records import record


@record
class KernelSource:
    """The located AST of one Python function that will become GPU code."""

    name: str
    qualname: str
    filename: str
    first_line: int
    tree: ast.FunctionDef  # decorators removed; lines/cols are those of the file or cell
    module: str  # the defining module's __name__ ("__main__" for notebooks)
    # every line of the string a function was exec'd from (linecache has no such text), else None
    text_lines: tuple | None = None

    def loc(self, node: ast.AST) -> SourceLocation:
        line = getattr(node, "lineno", self.first_line)
        return SourceLocation(self.filename, line, getattr(node, "col_offset", 0),
                              getattr(node, "end_col_offset", None),
                              self.line_text(line) if self.text_lines is not None else None)

    def line_text(self, line: int) -> str:
        """Line `line` (1-based) of the file, cell or string the function was defined in."""
        if self.text_lines is None:
            return linecache.getline(self.filename, line)
        return self.text_lines[line - 1] if 0 < line <= len(self.text_lines) else ""


# id(code) -> (code, source). Not keyed by the code object itself: code objects compare equal
# across files (co_filename is not compared), so two notebook cells with the same text at the same
# line would share one entry and errors would name the wrong cell. The code is kept alive so that
# its id is not reused while the entry exists.
_source_cache = RecentlyUsed(4096)  # id(code) -> (code, KernelSource)


def load_source(py_func) -> KernelSource:
    """Parse `py_func`'s source; cached per code object (a redefinition has a new code object)."""
    code = py_func.__code__
    cached = _source_cache.get(id(code))
    if cached is not None and cached[0] is code:
        return cached[1]
    filename = code.co_filename
    text_lines = None
    try:
        if source_recovery.linecache_disagrees(py_func):
            raise OSError("linecache holds another text under its file name")
        lines, first_line, text_lines = _source_block(py_func)
    except (OSError, TypeError) as exc:
        recovered = source_recovery.recover(py_func)
        if recovered is None:
            raise CompileError(
                f"cannot read the source of {py_func.__qualname__!r} ({exc})",
                SourceLocation(filename, code.co_firstlineno, 0),
                hint=source_recovery.missing_source_hint(py_func),
            ) from None
        lines, first_line, text_lines = (recovered.lines, recovered.first_line,
                                         recovered.text_lines)
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _indent_of(lines, dedented)
    try:
        module = ast.parse(dedented)
    except SyntaxError as exc:
        module = _lambda_in_a_call(dedented) if py_func.__name__ == "<lambda>" else None
        if module is None:
            raise CompileError(f"syntax error: {exc.msg}",
                               _at(filename, first_line + (exc.lineno or 1) - 1,
                                   (exc.offset or 1) - 1 + indent, text_lines)) from None
        indent -= 2  # the "_(" put before the first line
    tree = next((n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if tree is None and py_func.__name__ == "<lambda>":
        tree = _lambda_as_def(module, code, first_line, indent)
    if tree is None:
        raise CompileError(f"the source of {py_func.__qualname__!r} is not a def",
                           _at(filename, first_line, 0, text_lines),
                           hint="lambdas cannot be GPU functions; write a def")
    if isinstance(tree, ast.AsyncFunctionDef):
        raise CompileError("async functions cannot be GPU functions",
                           _at(filename, first_line, 0, text_lines))
    ast.increment_lineno(tree, first_line - 1)
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    tree.decorator_list = []
    fold_constants(tree)  # what CPython's compiler folds, numba sees as one constant
    source = KernelSource(py_func.__name__, py_func.__qualname__, filename, first_line, tree,
                          getattr(py_func, "__module__", None) or "__main__", text_lines)
    _source_cache[id(code)] = (code, source)
    return source


def source_lines(py_func) -> tuple:
    """(lines, first line number) of a function's source, as inspect.getsourcelines gives them,
    from the text its module was imported from (see _source_block)."""
    lines, first_line, _ = _source_block(py_func)
    return lines, first_line


def _source_block(py_func) -> tuple:
    """(lines, first line number, the whole text when it is not what linecache holds, else None).

    A function of a module whose text gpunb kept when the module ran (foundation/loaded_sources.py)
    compiles from that text: an edit made to the file since is not what the module runs, and
    one StaleSourceWarning says how to pick it up. Other functions read linecache (files and
    notebook cells alike; an edited file is read again, as inspect does).

    The block ends at the last line any of the function's code (nested functions included)
    covers, accepted only when the next line of code is indented no deeper than the `def`.
    inspect's own way tokenizes the source, and compiling tokenize's patterns costs
    milliseconds on a process's first kernel (a disk-cache hit's budget is 10 ms); anything
    unusual falls back to it.
    """
    code = py_func.__code__
    kept = loaded_sources.loaded_text(code)
    text_lines = None
    if kept is not None:
        state, now = kept.on_disk()
        if state != "same" and loaded_sources.reloaded_since(kept):
            loaded_sources.check_superseded(py_func)  # an object from before a reload
            text_lines = tuple(kept.lines)
        elif state != "same":
            loaded_sources.warn_stale(kept, state, now, py_func.__qualname__)
            text_lines = tuple(kept.lines)  # errors show the compiled text, not the file's
        lines = kept.lines
    else:
        linecache.checkcache(code.co_filename)
        lines = linecache.getlines(code.co_filename, getattr(py_func, "__globals__", None))
    start = code.co_firstlineno - 1
    end = _last_line(code)
    if not lines or not 0 <= start < end <= len(lines) or not lines[start].lstrip().startswith(
            ("def ", "@", "async def ")):
        return (*_inspect_block(py_func, kept), text_lines)
    indent = len(lines[start]) - len(lines[start].lstrip())
    for line in lines[end:]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            if len(line) - len(line.lstrip()) > indent:  # the block goes on: let inspect decide
                return (*_inspect_block(py_func, kept), text_lines)
            break
    return lines[start:end], start + 1, text_lines


def _inspect_block(py_func, kept) -> tuple:
    """inspect's answer: from the kept text when there is one (inspect would read the file)."""
    if kept is None:
        return inspect.getsourcelines(py_func)
    start = py_func.__code__.co_firstlineno - 1
    if not 0 <= start < len(kept.lines):
        raise OSError(f"line {start + 1} is past the end of {kept.path} as imported")
    return inspect.getblock(kept.lines[start:]), start + 1


def _last_line(code) -> int:
    """The last source line covered by `code` or by any code object nested in it."""
    last = code.co_firstlineno
    for _, end_line, _, _ in code.co_positions():
        if end_line is not None and end_line > last:
            last = end_line
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_line(const))
    return last


def _lambda_in_a_call(text: str) -> ast.Module | None:
    """A lambda's lines that are the middle of a call (`f(\n    lambda: x, y=2)`): read as the
    arguments of one, so the lambda among them parses."""
    try:
        return ast.parse("_(" + text.rstrip().rstrip(",").rstrip("(") + "\n)")
    except SyntaxError:
        return None


def _lambda_as_def(module: ast.Module, code, first_line: int,
                   indent: int) -> ast.FunctionDef | None:
    """A lambda's source (its whole line) holds the lambda: `def <lambda>(args): return body`.
    Among several lambdas on the lines, the one whose parameters and body position match the
    code object's; None when that is not decidable (the caller then asks for a def)."""
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    lambdas = [n for n in ast.walk(module) if isinstance(n, ast.Lambda)
               and tuple(a.arg for a in n.args.args + n.args.kwonlyargs) == params]
    if len(lambdas) > 1:  # the body's first position is among the code's instruction positions
        positions = {(line - first_line + 1, col - indent)
                     for line, _, col, _ in code.co_positions()
                     if line is not None and col is not None}
        lambdas = [n for n in lambdas if (n.body.lineno, n.body.col_offset) in positions]
    if len(lambdas) != 1:
        return None
    node = lambdas[0]
    body = ast.Return(value=node.body)
    ast.copy_location(body, node.body)
    tree = ast.FunctionDef(name="<lambda>", args=node.args, body=[body], decorator_list=[],
                           returns=None)
    return ast.fix_missing_locations(ast.copy_location(tree, node))


def _at(filename: str, line: int, col: int, text_lines: tuple | None) -> SourceLocation:
    """A location; in a recovered string, with the line's text (linecache does not have it)."""
    text = None
    if text_lines is not None and 0 < line <= len(text_lines):
        text = text_lines[line - 1]
    return SourceLocation(filename, line, col, None, text)


def _indent_of(lines: list[str], dedented: str) -> int:
    first = next((ln for ln in lines if ln.strip()), "")
    first_dedented = next((ln for ln in dedented.splitlines() if ln.strip()), "")
    return len(first) - len(first.lstrip()) - (len(first_dedented) - len(first_dedented.lstrip()))
