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


# Which modules' tables hold the keys of each prefix (the first prefix that matches a key wins).
# A compile loads only the groups its kernel names: a small kernel that calls cuda.grid never
# imports the bfloat16, complex, numpy-ufunc or reduction tables (about a tenth of a cold
# compile's imports). tests/compiler/test_builtin_groups.py checks that the groups together are
# exactly the whole table, entry for entry.
_GROUPS = (
    ("cuda.bf16.", ("bf16funcs",)),
    ("cuda.fp8.", ("fp8funcs",)),
    ("cuda.fp16.", ("complexfuncs",)),
    ("cuda.atomic.", ("atomics",)),
    ("cuda.cg.", ("groups",)),
    ("cuda.np.", ("pointers",)),
    ("cuda.cp_async.", ("async_copy",)),
    ("cuda.mbarrier.", ("async_copy",)),
    ("cuda.fence_proxy_async", ("async_copy",)),
    ("cuda.tma.", ("tma",)),
    ("cuda.wgmma.", ("wgmma",)),
    ("cuda.setmaxnreg_", ("wgmma",)),
    ("cuda.wmma.", ("tensorcore_wmma",)),
    ("cuda.mma_sync", ("tensorcore_mma",)),
    ("cuda.ldmatrix", ("tensorcore_mma",)),
    ("cuda.stmatrix", ("tensorcore_mma",)),
    ("cuda.inline_ptx", ("inline_ptx",)),
    ("cuda.", ("cuda_intrinsics", "warp", "cache_hints", "vectors")),
    ("cmath.", ("complexfuncs",)),
    ("math.", ("mathfuncs", "ufunc_math")),
    ("operator.", ("operator_funcs",)),
    ("builtins.", ("pybuiltins", "complexfuncs", "printing")),
    ("numpy.", ("mathfuncs", "pybuiltins", "reductions", "ufuncs")),
)
# the whole table's order of assembly: a later module's entry replaces an earlier one's
_ORDER = ("cuda_intrinsics", "atomics", "mathfuncs", "ufunc_math", "pybuiltins", "warp", "groups",
          "complexfuncs", "operator_funcs", "cache_hints", "reductions", "bf16funcs",
          "fp8funcs", "vectors", "pointers", "printing", "ufuncs", "async_copy", "tma", "wgmma",
          "tensorcore_wmma", "tensorcore_mma", "inline_ptx")
_loaded: dict = {}  # group prefix -> its part of the table


def _module_part(name: str, table: dict) -> dict:
    """Module `name`'s entries; ufuncs wraps the scalar entries already in `table`."""
    import importlib

    module = importlib.import_module(f"gpunb.compiler.builtins.{name}")
    if name == "printing":
        return {"builtins.print": module.Print()}
    if name == "ufuncs":  # numpy ufuncs: array forms around the scalar ones
        return module.wrap(table)
    return module.BUILTINS


def _group_of(key: str) -> str | None:
    for prefix, _ in _GROUPS:
        if key.startswith(prefix):
            return prefix
    return None


def _group(prefix: str) -> dict:
    """The entries whose keys belong to group `prefix` (built at its first lookup)."""
    part = _loaded.get(prefix)
    if part is None:
        modules = dict(_GROUPS)[prefix]
        part = {}
        for name in sorted(modules, key=_ORDER.index):
            part.update((k, v) for k, v in _module_part(name, part).items()
                        if _group_of(k) == prefix)
        _loaded[prefix] = part
    return part


def _table() -> dict:
    """The whole table, every group loaded (listings and tests; lookups load one group)."""
    table: dict = {}
    for prefix, _ in _GROUPS:
        table.update(_group(prefix))
    return table


def _lookup(key: str):
    prefix = _group_of(key)
    return None if prefix is None else _group(prefix).get(key)


_PY_BUILTIN_IDS = {id(getattr(_py_builtins, n)): n for n in
                   ("len", "abs", "min", "max", "round", "print", "range", "divmod", "pow",
                    "enumerate", "zip", "sum", "complex", "isinstance", "tuple",
                    "breakpoint")}


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
    if fname == "from_buffer" and type(getattr(obj, "__self__", None)).__module__ == "cffi.api":
        return "cuda.np.ffi_from_buffer"  # cffi's ffi.from_buffer(arr): the data pointer
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
    return _lookup(key)
