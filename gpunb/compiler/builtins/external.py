"""Foreign device functions: what `cuda.declare_device(name, sig, link=[...])` returns.

Calling one from GPU code types as its declared signature (arguments converted as for a declared
device function) and lowers to a call of the external symbol `name`, which the CUDA backend
resolves by linking the declared code (NVRTC for CUDA C++). Two ABIs, as numba-cuda: "numba"
(`int name(Ret *out, args...)`, the status ignored as numba-cuda's non-exception code does) and
"c" (`Ret name(args...)`). The CPU target cannot run foreign GPU code and says so.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer

try:  # hashlib.blake2b without loading OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

ABIS = ("numba", "c")


class ExternalFunction(Builtin):
    """A declared foreign device function (numba-cuda: the descriptor declare_device returns)."""

    def __init__(self, name: str, sig: t.Signature, link: tuple = (), abi: str = "numba",
                 use_cooperative: bool = False):
        self.name = name
        self.sig = sig
        self.link = tuple(link)
        self.abi = abi
        self.use_cooperative = bool(use_cooperative)

    def __repr__(self) -> str:
        return f"<gpunb foreign device function {self.name}: {self.sig}>"

    @property
    def _gpunb_content_key(self) -> str:
        """What cache keys read for this global: the declaration and the linked code's bytes."""
        text = "|".join([self.name, str(self.sig), self.abi, str(self.use_cooperative),
                         *(item._gpunb_content_key for item in self.link)])
        return blake2b(text.encode(), digest_size=16).hexdigest()

    def describe(self) -> str:
        return f"{self.name}{self.sig}"

    def type_call(self, inf, node, argtypes, kwtypes):
        declared = self.sig.args
        if kwtypes:
            raise inf.error(node, f"the foreign function '{self.name}' takes positional "
                            "arguments only", f"declared as {self.sig}")
        if len(argtypes) != len(declared):
            raise inf.error(node, f"the foreign function '{self.name}' takes {len(declared)} "
                            f"argument(s), got {len(argtypes)}", f"declared as {self.sig}")
        for arg, found, want in zip(node.args, argtypes, declared, strict=True):
            if not _passable(want):
                raise inf.error(arg, f"gpunb cannot pass {want} to the foreign function "
                                f"'{self.name}': numbers, bools and pointers can be passed",
                                "pass the values the function needs, or write the function "
                                "in Python (@cuda.jit(device=True))")
            if not (t.is_number(found) or isinstance(found, Pointer)) or \
                    promotion.conversion(found, want) is None:
                raise inf.error(arg, f"cannot pass {found} as {want} to the foreign function "
                                f"'{self.name}'", f"declared as {self.sig}")
        result = self.sig.return_type
        if not (_passable(result) or isinstance(result, t.NoneType)):
            raise inf.error(node, f"gpunb cannot receive {result} from the foreign function "
                            f"'{self.name}'", "declare it returning a number, a bool or void")
        return result

    def lower_call(self, low, node, call):
        if low.target.name != "cuda":
            raise low.error(node, f"'{self.name}' is foreign code (cuda.declare_device): the "
                            f"{low.target.name.upper()} target cannot run code written for "
                            "the GPU",
                            "run this kernel on a GPU (gpunb.set_target('cuda')), or write "
                            f"{self.name} in Python as a @cuda.jit(device=True) function for "
                            "the CPU target")
        b = low.builder
        args = [_abi_value(b, low.expr(n) if isinstance(want, Pointer) else
                           ops.cast(b, low.expr(n), found, want), want)
                for n, found, want in zip(node.args, call.argtypes, self.sig.args, strict=True)]
        param_types = [_abi_type(a) for a in self.sig.args]
        result_t = self.sig.return_type
        void = isinstance(result_t, t.NoneType)
        module = low.mb.module
        if self.abi == "c":
            fnty = ir.FunctionType(dm.void if void else _abi_type(result_t), param_types)
        else:
            fnty = ir.FunctionType(ir.IntType(32), [dm.ptr] + param_types)
        fn = module.globals.get(self.name)
        if fn is None:
            fn = ir.Function(module, fnty, self.name)
        elif fn.function_type != fnty:
            raise low.error(node, f"two foreign functions named '{self.name}' with different "
                            "signatures are called from one kernel",
                            "give each declaration its own name")
        low.mb.links.extend(i for i in self.link if i not in low.mb.links)
        if self.use_cooperative:  # the kernel must be launched cooperatively
            low.mb.foreign_cooperative = True
        if self.abi == "c":
            value = b.call(fn, args)
            return None if void else _from_abi(b, value, result_t)
        slot_t = dm.i8 if void else _abi_type(result_t)
        slot = low.alloca(slot_t, f"{self.name}.ret")
        b.store(ir.Constant(slot_t, None), slot)
        b.call(fn, [slot] + args)
        return None if void else _from_abi(b, b.load(slot), result_t)


def _passable(ty) -> bool:
    return isinstance(ty, (t.Integer, t.Float, t.Boolean, Pointer))


def _abi_type(ty: t.Type) -> ir.Type:
    return dm.i8 if isinstance(ty, t.Boolean) else dm.value_type(ty)


def _abi_value(b, value, ty: t.Type):
    return b.zext(value, dm.i8) if isinstance(ty, t.Boolean) else value


def _from_abi(b, value, ty: t.Type):
    if isinstance(ty, t.Boolean):
        return b.icmp_unsigned("!=", value, ir.Constant(dm.i8, 0))
    return value


__all__ = ["ABIS", "ExternalFunction"]
