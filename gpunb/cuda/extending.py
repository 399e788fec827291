"""numba.cuda.extending under gpunb: `overload`, `register_jitable`, `overload_method` and
`overload_attribute`, with numba's signatures and rules, for the kernel language.

A generator receives the argument types and returns a Python implementation, which gpunb
compiles like a device function (compiler/infer/overloads.py). Overloads are part of the
kernels' cache keys: registering one again (a cell run twice) recompiles the kernels using it.

`@intrinsic` too, for scalar and pointer values (whose LLVM form gpunb and numba share). Not
here: `type_callable` / `lower_builtin`, data models and typing templates: their code runs
inside numba's own lowering (its BaseContext, data models of numba types), which gpunb's
compiler does not have; kernels reach PTX through `cuda.inline_ptx` and foreign functions
through `cuda.declare_device`.
"""

from __future__ import annotations

import sys

from gpunb.foundation import extending as _registry
from gpunb.foundation import types as _t
from gpunb.foundation.errors import JitOptionError
from gpunb.jit.options import user_location

__all__ = ["intrinsic", "overload", "overload_attribute", "overload_method",
           "register_jitable"]


def _check_target(target) -> str:
    if target not in _registry.TARGETS:
        raise JitOptionError(f"unknown overload target {target!r}", user_location(),
                             hint=f"use one of {', '.join(map(repr, _registry.TARGETS))}: "
                             "'cuda' (kernels), 'generic' (kernels and numba's CPU njit), "
                             "'cpu' (numba's CPU njit only)")
    return target


def _registered(entry: _registry.Overload) -> None:
    from gpunb.cache import epoch

    _registry.register(entry)
    epoch.bump()  # kernels that resolved through the old registrations check their keys again


def _numba_core():
    """numba's extension module, when numba is loaded (it is never imported for this: numba's
    CPU njit only needs overloads that its user's process uses numba for)."""
    if "numba" not in sys.modules:
        return None
    try:
        from numba.core import extending
    except ImportError:
        return None
    return extending


def overload(func, jit_options=None, strict: bool = True, inline="never",
             prefer_literal: bool = False, target: str = "cuda", **kwargs):
    """Decorate a generator that types and implements `func` in kernels (numba's @overload).

    The generator takes `func`'s parameters and is called with the argument types; it returns
    a function implementing `func` for those types, or None. `target='generic'` also
    registers it with numba's CPU njit (where numba is imported), as numba-cuda does."""
    if kwargs:
        raise JitOptionError(f"unknown @overload option(s): {', '.join(sorted(kwargs))}",
                             user_location(),
                             hint="@overload takes jit_options, strict, inline, "
                             "prefer_literal and target")
    if jit_options is not None and "inline" in jit_options:
        raise ValueError("`inline` should be passed as a separate argument, not in "
                         "`jit_options`")
    target = _check_target(target)

    def decorate(generator):
        _registered(_registry.Overload("function", func, "", generator, target, bool(strict),
                                       inline, bool(prefer_literal), dict(jit_options or {})))
        numba_ext = _numba_core() if target in ("generic", "cpu") else None
        if numba_ext is not None:
            numba_ext.overload(func, jit_options=dict(jit_options or {}), strict=strict,
                               inline=inline, prefer_literal=prefer_literal,
                               target=target)(generator)
        return generator

    return decorate


def register_jitable(*args, **kwargs):
    """A plain Python function that kernels can call too (numba's register_jitable): compiled
    like a device function for each tuple of argument types; Python calls run it as is."""
    inline = kwargs.pop("inline", "never")

    def wrap(fn):
        _registered(_registry.Overload("function", fn, "", fn, "generic", False, inline,
                                       False, dict(kwargs), implements=fn))
        return fn

    if args and not kwargs and len(args) == 1 and callable(args[0]):
        return wrap(args[0])
    return wrap


def _check_type(typ, what: str):
    from gpunb.foundation.numba_types import is_numba_object

    if isinstance(typ, type) or isinstance(typ, _t.Type) or is_numba_object(typ):
        return typ
    raise TypeError(f"@{what} needs a type (a class such as types.Array, or one type such as "
                    f"types.float64), got {typ!r}")


def overload_method(typ, attr: str, target: str = "cuda", **kwargs):
    """Decorate a generator implementing `value.attr(...)` for values of `typ` (numba's
    @overload_method): it takes the value's type first, then the method's arguments."""
    return _member("method", typ, attr, target, kwargs)


def overload_attribute(typ, attr: str, target: str = "cuda", **kwargs):
    """Decorate a generator implementing the attribute `value.attr` for values of `typ`
    (numba's @overload_attribute): it takes the value's type; its implementation the value."""
    return _member("attribute", typ, attr, target, kwargs)


def _member(kind: str, typ, attr: str, target: str, kwargs: dict):
    what = f"overload_{kind}"
    typ = _check_type(typ, what)
    target = _check_target(target)
    inline = kwargs.pop("inline", "never")
    prefer_literal = bool(kwargs.pop("prefer_literal", False))
    jit_options = dict(kwargs.pop("jit_options", None) or {})
    if kwargs:
        raise JitOptionError(f"unknown @{what} option(s): {', '.join(sorted(kwargs))}",
                             user_location(),
                             hint=f"@{what} takes target, inline, prefer_literal and "
                             "jit_options")
    if not isinstance(attr, str) or not attr.isidentifier():
        raise TypeError(f"@{what} needs an attribute name, got {attr!r}")

    def decorate(generator):
        _registered(_registry.Overload(kind, typ, attr, generator, target, True, inline,
                                       prefer_literal, jit_options))
        return generator

    return decorate


def intrinsic(*args, **kwargs):
    """numba's @intrinsic: `defn(typingctx, *argument types)` returns (signature, codegen) or
    None; `codegen(context, builder, signature, args)` writes the call's LLVM IR with llvmlite
    into the kernel (integers, floats, bools and typed pointers; compiler/user_intrinsics.py).
    Usable as `@intrinsic` or `@intrinsic(prefer_literal=True)`."""
    prefer_literal = bool(kwargs.pop("prefer_literal", False))
    kwargs.pop("target", None)  # numba-cuda's target="cuda": the kernel language's
    if kwargs:
        raise JitOptionError(f"unknown @intrinsic option(s): {', '.join(sorted(kwargs))}",
                             user_location(), hint="@intrinsic takes prefer_literal")

    def wrap(defn):
        from gpunb.cache import epoch

        epoch.bump()  # a redefinition is a new object: kernels re-check what they read
        return _registry.Intrinsic(defn, prefer_literal)

    if len(args) == 1 and callable(args[0]) and not kwargs:
        return wrap(args[0])
    return wrap


def __getattr__(name: str):
    if name in ("type_callable", "lower_builtin", "register_model",
                "make_attribute_wrapper", "typeof_impl", "models", "core_models",
                "overload_classmethod"):
        raise AttributeError(
            f"gpunb.cuda.extending has no {name}: numba's low-level extension API runs inside "
            "numba's own lowering (its context, data models and cgutils), which gpunb's "
            "compiler does not have. Write the operation in the kernel language with @overload "
            "or register_jitable, use cuda.inline_ptx for PTX, or cuda.declare_device for "
            "CUDA C/C++ device functions")
    raise AttributeError(f"module 'gpunb.cuda.extending' has no attribute {name!r}")
