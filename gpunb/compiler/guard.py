"""Turns compiler-internal failures into a CompileError that names the user's function.

A mistake in user code is reported by inference or lowering with a precise CompileError. Anything
else escaping the pipeline (an llvmlite or LLVM failure, an internal bug) must still never reach a
notebook as a raw traceback: it becomes a CompileError pointing at the function, with the
internal error attached as __cause__ for bug reports.
"""

from __future__ import annotations

import contextlib

from gpunb.foundation.errors import GpunbError, SourceLocation


@contextlib.contextmanager
def compile_guard(py_func, what: str = "compiling"):
    try:
        yield
    except GpunbError:
        raise
    except RecursionError:
        from gpunb.foundation.errors import CompileError

        raise CompileError(f"'{py_func.__name__}' is too deeply nested to compile",
                           _where(py_func), hint="split long expressions into statements") \
            from None
    except Exception as exc:  # noqa: BLE001 - the point is to catch everything internal
        from gpunb.foundation.errors import CompileError

        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError(
            f"internal compiler error while {what} '{py_func.__name__}': "
            f"{type(exc).__name__}: {detail[:300]}",
            _where(py_func),
            hint="this is a gpunb bug, not a mistake in your code; please report it with the "
                 "kernel source (simplifying the expression on that line may avoid it)",
        ) from exc


def _where(py_func) -> SourceLocation | None:
    code = getattr(py_func, "__code__", None)
    if code is None:
        return None
    return SourceLocation(code.co_filename, code.co_firstlineno, 0)
