"""`numba.cuda.compiler`: its public functions (compile_ptx, compile, ...) are gpunb.cuda's.

numba's compiler pipeline (run_frontend, CompilerBase, PassManager) is internals: Missing.
"""

from __future__ import annotations

from .missing import Missing, gpunb_attr

_PUBLIC = ("compile_ptx", "compile_ptx_for_current_device", "compile",
           "compile_for_current_device", "compile_all", "declare_device_function")


def __getattr__(name: str):
    if name in _PUBLIC:
        return gpunb_attr(f"numba.cuda.compiler.{name}", f"gpunb.cuda.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    return Missing(f"numba.cuda.compiler.{name}")
