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
    """For compile_ptx(device=True): an externally visible device function."""
    mb = ModuleBuilder(target, options, typed.name)
    fn = mb.device_function(typed)
    fn.name = symbol
    fn.linkage = "external"
    return mb


def kernel_signature(typed: TypedFunction) -> str:
    return str(t.Signature(typed.return_type, typed.argtypes))


def slots_of(typed: TypedFunction) -> tuple:
    return signature_slots(typed.argtypes)
