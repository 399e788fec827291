"""Run a `%%gpukernel` cell: every top-level def becomes a GPU function, the rest runs as Python.

The body is compiled under a unique filename registered in `linecache` (so `inspect.getsource`,
and thus the compiler's frontend, reads the defs) and in `gpunb.foundation.sources` (so errors say
`Cell In[7], line 3`). The magic line becomes a comment on line 1, so line numbers are the cell's.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
from collections.abc import Callable
from dataclasses import dataclass, field

from gpunb.foundation.errors import CompileError, SourceLocation

WRAP_NAME = "__gpunb_gpukernel_wrap__"  # bound in the user namespace only while a cell runs


@dataclass(slots=True)
class CellResult:
    """What a cell defined (name -> GPU function, in order) and the value of its last expression."""

    filename: str
    functions: dict = field(default_factory=dict)
    value: object = None


def cell_filename(body: str, execution_count: int | None) -> str:
    """A unique, stable name for this cell's text: same text and count -> same name."""
    digest = hashlib.sha1(body.encode("utf-8")).hexdigest()[:12]
    return f"<gpukernel-cell-{execution_count if execution_count is not None else 0}-{digest}>"


def cell_filename_of(body: str, magic_line: str, execution_count: int | None,
                     magic: str = "gpukernel") -> str:
    """The filename run_cell compiles this cell body under."""
    return cell_filename(cell_text(body, magic_line, magic), execution_count)


def cell_text(body: str, magic_line: str, magic: str = "gpukernel") -> str:
    """The cell as compiled: the magic line kept as a comment on line 1, so lines match."""
    return f"# %%{magic} {magic_line}".rstrip() + "\n" + body


def register_source(filename: str, text: str, execution_count: int | None,
                    ipython_compiler=None) -> None:
    """Make `text` readable through linecache under `filename`, labelled `Cell In[N]`.

    With IPython's compiler (`shell.compile`), IPython's own tracebacks label the cell's frames
    `Cell In[N], line L` too (it names only files in its `_filename_map`).
    """
    from gpunb.foundation.sources import register_cell

    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # mtime None: linecache.checkcache never drops an entry that has no file behind it
    linecache.cache[filename] = (len(text), None, lines, filename)
    register_cell(filename, execution_count)
    filename_map = getattr(ipython_compiler, "_filename_map", None)
    if isinstance(filename_map, dict) and execution_count is not None:
        filename_map[filename] = execution_count


def parse_cell(text: str, filename: str, magic: str = "gpukernel") -> ast.Module:
    """Parse the cell; a syntax error becomes a CompileError with the cell's line and a caret."""
    try:
        return ast.parse(text, filename=filename)
    except SyntaxError as exc:
        loc = SourceLocation(filename, exc.lineno or 1, max((exc.offset or 1) - 1, 0))
        raise CompileError(f"syntax error: {exc.msg}", loc,
                           hint=f"%%{magic} cells are Python; fix the syntax and run the cell "
                                "again") from None


def mark_gpu_functions(module: ast.Module) -> list[str]:
    """Add the wrapping decorator to every top-level def (outermost, on the def's own line)."""
    names = []
    for node in module.body:
        if isinstance(node, ast.AsyncFunctionDef):
            raise CompileError("async functions cannot be GPU functions",
                               SourceLocation("", node.lineno, node.col_offset))
        if isinstance(node, ast.FunctionDef):
            anchor = node.decorator_list[0] if node.decorator_list else node
            wrap = ast.copy_location(ast.Name(id=WRAP_NAME, ctx=ast.Load()), anchor)
            node.decorator_list.insert(0, wrap)
            names.append(node.name)
    ast.fix_missing_locations(module)
    return names


def run_cell(body: str, magic_line: str, user_ns: dict, wrap: Callable | None,
             execution_count: int | None, magic: str = "gpukernel",
             ipython_compiler=None) -> CellResult:
    """Compile and run a cell-magic body in `user_ns`; `wrap(func)` makes each top-level def a
    GPU function (None: run the body as plain Python, as %%gpuprofile does)."""
    __tracebackhide__ = True  # noqa: F841 - IPython hides this frame: the user's cell is the story
    text = cell_text(body, magic_line, magic)
    filename = cell_filename(text, execution_count)
    register_source(filename, text, execution_count, ipython_compiler)
    module = parse_cell(text, filename, magic)
    if wrap is None:
        wrap = _identity
    try:
        mark_gpu_functions(module)
    except CompileError as exc:
        raise CompileError(exc.message, SourceLocation(filename, exc.loc.line, exc.loc.col),
                           hint="write a plain def") from None
    result = CellResult(filename)
    last = module.body.pop() if module.body and isinstance(module.body[-1], ast.Expr) else None

    def record(func):
        made = wrap(func)
        if made is func:
            return func
        result.functions[func.__name__] = made
        return made

    had_wrap = WRAP_NAME in user_ns
    user_ns[WRAP_NAME] = record
    try:
        exec(compile(module, filename, "exec"), user_ns)  # noqa: S102 - running the user's cell
        if last is not None:
            expr = ast.Expression(last.value)
            result.value = eval(compile(expr, filename, "eval"), user_ns)  # noqa: S307
    finally:
        if not had_wrap:
            user_ns.pop(WRAP_NAME, None)
    return result


def _identity(func):
    return func
