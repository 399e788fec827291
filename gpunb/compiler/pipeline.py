"""The compile pipeline as plain stages: parse -> infer -> lower -> target build -> artifact."""

from __future__ import annotations

import re

from gpunb.compiler.infer import TypedFunction, infer_function
from gpunb.compiler.lower import ModuleBuilder
from gpunb.foundation import types as t
from gpunb.foundation.abi import signature_slots


def mangle(name: str, argtypes: tuple) -> str:
    """A readable, unique, PTX-safe symbol for a kernel specialisation."""
    sig = "_".join(re.sub(r"[^0-9A-Za-z]+", "", str(a)) for a in argtypes)
    return re.sub(r"[^0-9A-Za-z_]", "_", f"{name}__{sig}" if sig else name)[:200]


def infer_kernel(py_func, argtypes: tuple, options: dict, device: bool = False,
                 return_type=None) -> TypedFunction:
    return infer_function(py_func, tuple(argtypes), options, is_kernel=not device,
                          return_type=return_type if device else None)


def lower_kernel(typed: TypedFunction, target, options: dict, symbol: str) -> ModuleBuilder:
    mb = ModuleBuilder(target, options, typed.name)
    mb.lower_kernel(typed, symbol)
    return mb


def lower_device_function(typed: TypedFunction, target, options: dict, symbol: str):
    """For compile_ptx(device=True): an externally visible device function; with
    options["abi"] == "numba", numba's calling convention: `int symbol(Ret *out, args...)`
    returning 0 (the status) and storing the result through `out`."""
    mb = ModuleBuilder(target, options, typed.name)
    fn = mb.device_function(typed)
    if options.get("abi") != "numba":
        fn.name = symbol
        fn.linkage = "external"
        return mb
    from llvmlite import ir

    from gpunb.compiler import datamodel as dm

    params = list(fn.function_type.args)
    wrapper = ir.Function(mb.module, ir.FunctionType(dm.i32, [dm.ptr] + params), symbol)
    b = ir.IRBuilder(wrapper.append_basic_block("entry"))
    if mb.debug is not None:  # the wrapper is the function's line of the line table
        scope = mb.debug.subprogram(wrapper, typed.source)
        b.debug_metadata = mb.debug.location(typed.source.first_line, 0, scope)
    result = b.call(fn, wrapper.args[1:])
    if not isinstance(typed.return_type, t.NoneType):
        b.store(result, wrapper.args[0])
    b.ret(ir.Constant(dm.i32, 0))
    return mb


def kernel_signature(typed: TypedFunction) -> str:
    return str(t.Signature(typed.return_type, typed.argtypes))


def slots_of(typed: TypedFunction) -> tuple:
    return signature_slots(typed.argtypes)
