"""numba.cuda.libdevicefuncs: every libdevice function's signature, read from libdevice itself.

`functions` maps a libdevice name to (return type, [arg(name, ty, is_ptr), ...]) as numba-cuda's
table does, and `create_signature` gives the signature a kernel calls it with. The table comes from
the bitcode the CUDA target links (so the two cannot disagree, whatever libdevice version is
installed), parsed once per process on first use: importing this module parses nothing.
"""

from __future__ import annotations

import functools

from gpunb.compiler.kernel_api import (
    LibdeviceDeclaration,
    LibdeviceParam,
    libdevice_result,
)
from gpunb.foundation import types as t

arg = LibdeviceParam  # numba-cuda's name for a parameter record

_LLVM_TYPES = {"i16": t.int16, "i32": t.int32, "i64": t.int64, "float": t.float32,
               "double": t.float64, "void": t.void}
_f32, _f64, _i32 = t.float32, t.float64, t.int32

# Opaque pointers do not say what they point to, so every pointer parameter is named here. These
# are outputs: the pointee types, in parameter order; a call returns them after the return value.
OUTPUT_POINTERS = {
    "__nv_sincos": (_f64, _f64), "__nv_sincosf": (_f32, _f32), "__nv_fast_sincosf": (_f32, _f32),
    "__nv_sincospi": (_f64, _f64), "__nv_sincospif": (_f32, _f32),
    "__nv_frexp": (_i32,), "__nv_frexpf": (_i32,), "__nv_modf": (_f64,), "__nv_modff": (_f32,),
    "__nv_remquo": (_i32,), "__nv_remquof": (_i32,),
}
# These read through theirs (a C string, an array of `dim` values), which kernel code cannot
# pass; numba-cuda leaves them out too.
INPUT_POINTERS = {
    "__nv_nan": "it reads a C string; use math.nan",
    "__nv_nanf": "it reads a C string; use math.nan",
    "__nv_norm": "it reads an array through a pointer; use norm3d/norm4d or math.sqrt",
    "__nv_normf": "it reads an array through a pointer; use norm3df/norm4df or math.sqrt",
    "__nv_rnorm": "it reads an array through a pointer; use rnorm3d/rnorm4d",
    "__nv_rnormf": "it reads an array through a pointer; use rnorm3df/rnorm4df",
}


@functools.cache
def _table() -> tuple[dict, dict]:
    """(declarations by symbol, reasons for the functions not offered by symbol)."""
    import llvmlite.binding as llvm

    from gpunb.backends.cuda.toolchain import libdevice_path  # ToolchainError when missing

    with open(libdevice_path(), "rb") as f:
        module = llvm.parse_bitcode(f.read())
    declarations, skipped = {}, {}
    for fn in module.functions:
        if not fn.name.startswith("__nv_") or fn.is_declaration:
            continue
        decl, why = _declaration(fn)
        if decl is None:
            skipped[fn.name] = why
        else:
            declarations[fn.name] = decl
    return dict(sorted(declarations.items())), skipped


def _declaration(fn) -> tuple[LibdeviceDeclaration | None, str]:
    result, _, params_text = str(fn.global_value_type).partition(" (")  # "double (double, ptr)"
    param_types = params_text[:-1].split(", ") if params_text[:-1] else []
    names = [a.name or f"a{k}" for k, a in enumerate(fn.arguments)]
    if fn.name in INPUT_POINTERS:
        return None, INPUT_POINTERS[fn.name]
    pointees = list(OUTPUT_POINTERS.get(fn.name, ()))
    if param_types.count("ptr") != len(pointees):
        return None, "it takes a pointer that gpunb does not know the meaning of"
    params = []
    for name, llvm_type in zip(names, param_types, strict=True):
        if llvm_type == "ptr":
            params.append(LibdeviceParam(name, pointees.pop(0), True))
        elif llvm_type in _LLVM_TYPES:
            params.append(LibdeviceParam(name, _LLVM_TYPES[llvm_type], False))
        else:
            return None, f"it takes an LLVM {llvm_type}, which has no kernel-language type"
    if result not in _LLVM_TYPES:
        return None, f"it returns an LLVM {result}, which has no kernel-language type"
    return LibdeviceDeclaration(fn.name, _LLVM_TYPES[result], tuple(params)), ""


def declarations() -> dict:
    """Every libdevice function a kernel can call, by symbol (`__nv_sin`)."""
    return _table()[0]


def not_offered() -> dict:
    """libdevice functions kernels cannot call, by symbol, with the reason."""
    return _table()[1]


def create_signature(retty: t.Type, args) -> t.Signature:
    """The signature of a libdevice function as kernels call it (numba-cuda's create_signature):
    output pointers become items of the returned tuple, the other arguments stay."""
    return t.Signature(libdevice_result(retty, args), tuple(a.ty for a in args if not a.is_ptr))


@functools.cache
def _functions() -> dict:
    return {name: (d.result, list(d.params)) for name, d in declarations().items()}


def __getattr__(name: str):
    if name == "functions":  # numba-cuda's table: built on first access, not at import
        return _functions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
