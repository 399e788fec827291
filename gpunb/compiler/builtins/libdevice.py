"""`libdevice.NAME(...)` in kernels: typing by the bitcode's declaration, lowering per target.

A stub (gpunb.cuda.libdevice) carries its LibdeviceDeclaration, so this module needs no table of
its own. Typing is numba-cuda's: one signature, every argument converted to its parameter's type
(unsafe conversions allowed), output pointers returned after the return value as a tuple. The
CUDA target calls `__nv_NAME` (libdevice is linked when a module uses it); the CPU target computes
the functions that have a host equivalent (libdevice_host) and refuses the others by name, never
with an approximation of its own.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin, libdevice_host
from gpunb.compiler.builtins.libdevice_host import pack
from gpunb.compiler.kernel_api import LibdeviceDeclaration
from gpunb.foundation import types as t

_NOT_ON_CPU_HINT = ("run it on the CUDA target (target='cuda' or GPUNB_TARGET=cuda; compile_ptx "
                    "works without a GPU), or use the math module, which works on both targets")


class LibdeviceCall(Builtin):
    """One libdevice function called from a kernel."""

    def __init__(self, declaration: LibdeviceDeclaration):
        self.declaration = declaration
        self.name = f"libdevice.{declaration.name}"

    def describe(self) -> str:
        d = self.declaration
        args = ", ".join(f"{p.name}: {p.ty}" for p in d.params if not p.is_ptr)
        return f"{self.name}({args}) -> {d.returns}"

    def type_call(self, inf, node, argtypes, kwtypes):
        params = [p for p in self.declaration.params if not p.is_ptr]
        if kwtypes:
            raise inf.error(node, f"{self.name}() takes positional arguments only",
                            f"call it as {self.describe()}")
        if len(argtypes) != len(params):
            raise inf.error(node, f"{self.name}() takes {len(params)} argument(s), got "
                            f"{len(argtypes)}", f"its signature is {self.describe()}")
        for arg, found, param in zip(node.args, argtypes, params, strict=True):
            if not t.is_number(found) or promotion.conversion(found, param.ty) is None:
                raise inf.error(arg, f"{self.name}() cannot take {found} as {param.name} "
                                f"({param.ty})", f"its signature is {self.describe()}")
        return self.declaration.returns

    def lower_call(self, low, node, call):
        b = low.builder
        inputs = self.declaration.inputs
        args = [ops.cast(b, low.expr(n), found, param)
                for n, found, param in zip(node.args, call.argtypes, inputs, strict=True)]
        if low.target.name == "cuda":
            return call_libdevice(low, self.declaration, args)
        value = libdevice_host.lower(low, self.declaration, args)
        if value is None:
            raise low.error(node, f"{self.name} exists only on the CUDA target: the "
                            f"{low.target.name.upper()} target has no host version of libdevice's "
                            f"{self.declaration.symbol}", _NOT_ON_CPU_HINT)
        return value


def call_libdevice(low, decl: LibdeviceDeclaration, args: list):
    """Call `__nv_NAME` with the converted inputs; outputs go through stack slots and come back
    as a tuple after the return value (numba-cuda's libdeviceimpl does the same)."""
    b = low.builder
    void = isinstance(decl.result, t.NoneType)
    param_types = [dm.ptr if p.is_ptr else dm.value_type(p.ty) for p in decl.params]
    fn = low.target.intrinsic(low.mb.module, decl.symbol,
                              dm.void if void else dm.value_type(decl.result), param_types)
    inputs = iter(args)
    actual, slots = [], []
    for p in decl.params:
        if p.is_ptr:
            slot = low.alloca(dm.value_type(p.ty), f"{decl.name}.{p.name}")
            slots.append(slot)
            actual.append(slot)
        else:
            actual.append(next(inputs))
    value = b.call(fn, actual)
    if not slots:
        return ir.Constant(ir.LiteralStructType([]), None) if void else value
    return pack(b, decl.returns, ([] if void else [value]) + [b.load(s) for s in slots])


_BUILTINS: dict = {}


def builtin_for(stub) -> LibdeviceCall | None:
    """The builtin of a gpunb.cuda.libdevice stub, made once per declaration."""
    decl = getattr(stub, "declaration", None)
    if not isinstance(decl, LibdeviceDeclaration):
        return None
    found = _BUILTINS.get(decl)
    if found is None:
        found = _BUILTINS.setdefault(decl, LibdeviceCall(decl))
    return found
