"""The builtin table: typing and lowering of every intrinsic, math function and Python builtin.

Tables live next to their lowering (cuda_intrinsics, atomics, mathfuncs, pybuiltins) and are
assembled here once, explicitly - nothing registers itself as a side effect of an import.
"""

from __future__ import annotations

import builtins as _py_builtins

import numpy as np

from gpunb.compiler.kernel_api import intrinsic_name


class Builtin:
    """A callable (or, with is_value, an attribute value) of the kernel language."""

    is_value = False
    name = "?"

    def type_call(self, inf, node, argtypes: list, kwtypes: dict):
        raise inf.error(node, f"{self.name} cannot be called like this")

    def lower_call(self, low, node, call):
        raise low.error(node, f"{self.name} has no lowering")

    def type_value(self, inf, node):
        raise inf.error(node, f"{self.name} is not a value")

    def lower_value(self, low, node, ty):
        raise low.error(node, f"{self.name} is not a value")


_TABLE: dict | None = None


def _table() -> dict:
    global _TABLE
    if _TABLE is None:
        from gpunb.compiler.builtins import (
            atomics,
            bf16funcs,
            cache_hints,
            complexfuncs,
            cuda_intrinsics,
            groups,
            mathfuncs,
            operator_funcs,
            printing,
            pybuiltins,
            reductions,
            ufuncs,
            warp,
        )

        table: dict = {}
        for part in (cuda_intrinsics.BUILTINS, atomics.BUILTINS, mathfuncs.BUILTINS,
                     pybuiltins.BUILTINS, warp.BUILTINS, groups.BUILTINS,
                     complexfuncs.BUILTINS, operator_funcs.BUILTINS, cache_hints.BUILTINS,
                    reductions.BUILTINS, bf16funcs.BUILTINS):
            table.update(part)
        table["builtins.print"] = printing.Print()
        table.update(ufuncs.wrap(table))  # numpy ufuncs: array forms around the scalar ones
        _TABLE = table
    return _TABLE


_PY_BUILTIN_IDS = {id(getattr(_py_builtins, n)): n for n in
                   ("len", "abs", "min", "max", "round", "print", "range", "divmod", "pow",
                    "enumerate", "zip", "sum", "complex")}


def builtin_key(obj) -> str | None:
    """The table key of a Python object that names a builtin, or None."""
    name = intrinsic_name(obj)
    if name is not None:
        return name
    py = _PY_BUILTIN_IDS.get(id(obj))
    if py is not None:
        return "builtins." + py
    if isinstance(obj, np.ufunc):
        return "numpy." + obj.__name__
    module = getattr(obj, "__module__", None)
    fname = getattr(obj, "__name__", None)
    if module in ("math", "cmath") and fname:
        return f"{module}.{fname}"
    if module in ("operator", "_operator") and fname:
        return "operator." + fname
    if module and module.startswith("numpy") and fname and callable(obj):
        return "numpy." + fname
    return None


def find_builtin(obj) -> Builtin | None:
    if isinstance(obj, Builtin):
        return obj
    try:
        key = builtin_key(obj)
    except Exception:  # noqa: BLE001 - exotic objects with odd __getattr__
        return None
    if key is None:
        return None
    if key.startswith("cuda.libdevice."):  # the stub carries its declaration (from the bitcode)
        from gpunb.compiler.builtins.libdevice import builtin_for

        return builtin_for(obj)
    return _table().get(key)
