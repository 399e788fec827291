"""Typing of calls that resolve through registered overloads (gpunb.cuda.extending): a function
given `@overload`s, `register_jitable` functions, `value.method(...)` and `value.attr` given
`@overload_method` / `@overload_attribute`.

numba's rules: the generator is called with the arguments' types (literal types of constant
arguments first when it prefers literals, else after the plain types failed; an omitted argument
as `Omitted(default)`); it returns None (not for these types: the next overload is tried), an
implementation, or (signature, implementation). The implementation is typed and compiled as a
device function for the call's types; with strict=True its parameters must be the generator's.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

from gpunb.compiler.infer import inner
from gpunb.compiler.overload_types import Omitted, reads_numba_types, shown, type_matches
from gpunb.compiler.typed import BuiltinCall, GpuCall, RecursiveRef
from gpunb.compiler.values import ConstValue, NotConstant, PyValue, const_eval
from gpunb.foundation import extending
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError
from gpunb.foundation.numba_types import from_numba, is_numba_object
from gpunb.foundation.pyobjects import is_gpu_function


@dataclass(frozen=True, slots=True)
class BoundOverloadedMethod:
    """`value.name` where `name` is an @overload_method of the value's type (called next)."""

    attr: str
    receiver_type: t.Type
    overloads: tuple


class _NotThisOverload(Exception):  # noqa: N818 - control flow: the generator declined
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class OverloadTyping:
    """Mixin of the Inferer: calls, methods and attributes implemented by overloads."""

    def overloaded_method(self, base: t.Type, attr: str) -> BoundOverloadedMethod | None:
        found = _applicable(extending.member_overloads("method", attr), base)
        return BoundOverloadedMethod(attr, base, tuple(found)) if found else None

    def overloaded_function_call(self, node: ast.Call, func) -> t.Type:
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        candidates = extending.for_kernels(extending.function_overloads(func))
        if not candidates:
            raise self.error(node.func, f"'{name}' has overloads only for numba's CPU target "
                             "(target='cpu'), none for kernels",
                             "register it with target='cuda' or target='generic'")
        return self.resolve_overloads(node, candidates, list(node.args), name, node.func)

    def overloaded_method_call(self, node: ast.Call, method: BoundOverloadedMethod) -> t.Type:
        receiver = node.func.value
        return self.resolve_overloads(node, list(method.overloads), [receiver, *node.args],
                                      f"{method.receiver_type}.{method.attr}", node.func)

    def overloaded_attribute(self, node: ast.Attribute, base: t.Type) -> t.Type | None:
        found = _applicable(extending.member_overloads("attribute", node.attr), base)
        if not found:
            return None
        return self.resolve_overloads(node, found, [node.value], f"{base}.{node.attr}", node,
                                      keywords=())

    def intrinsic_call(self, node: ast.Call, intrinsic) -> t.Type:
        """A call of an @intrinsic: its typing function with the argument types (literal ones
        first when it prefers literals), then its codegen at lowering."""
        from gpunb.compiler.user_intrinsics import UserIntrinsic, as_gpunb, unsupported

        if node.keywords:
            raise self.error(node, f"@intrinsic {intrinsic.__name__} takes positional "
                             "arguments only")
        positional = self.expand_starred(list(node.args))
        plain = [self.argument_type(a) for a in positional]
        literal = self.literal_nodes(positional, ())
        attempts = [True, False] if intrinsic.prefer_literal else [False, True]
        numba = reads_numba_types(intrinsic._defn)
        for with_literals in attempts if literal else [False]:
            typed = [literal.get(a, ty) if with_literals else ty
                     for a, ty in zip(positional, plain, strict=True)]
            found = intrinsic._defn(None, *shown(tuple(typed), numba))
            if found is None:
                continue
            signature, codegen = found
            sig = as_gpunb(signature)
            if not isinstance(sig, t.Signature) or not callable(codegen):
                raise self.error(node, f"the typing function of @intrinsic "
                                 f"{intrinsic.__name__} returned {found!r}",
                                 "return (signature, codegen), or None when the types are "
                                 "not supported")
            bad = [ty for ty in (*sig.args, sig.return_type) if unsupported(ty) and not (
                ty is sig.return_type and isinstance(ty, t.NoneType))]
            if bad or len(sig.args) != len(positional):
                raise self.error(node, f"@intrinsic {intrinsic.__name__}'s signature {sig} "
                                 "is not one gpunb can lower" if bad else
                                 f"@intrinsic {intrinsic.__name__}'s signature {sig} takes "
                                 f"{len(sig.args)} arguments, the call passes "
                                 f"{len(positional)}", "intrinsics take and return integers, "
                                 "floats, bools and typed pointers (gpunb's arrays, tuples and "
                                 "records are not laid out as numba's data models)")
            self.calls[node] = BuiltinCall(UserIntrinsic(intrinsic, signature, codegen),
                                           tuple(positional), tuple(sig.args), sig.return_type)
            return sig.return_type
        shown_types = ", ".join(map(str, plain))
        raise self.error(node.func, f"no implementation for @intrinsic {intrinsic.__name__} "
                         f"with ({shown_types})", "its typing function returned None for "
                         "these types")

    # ---- resolution --------------------------------------------------------------------------

    def resolve_overloads(self, node, candidates: list, positional: list, name: str, where,
                          keywords=None) -> t.Type:
        keywords = node.keywords if keywords is None else keywords
        for kw in keywords:
            if kw.arg is None:
                raise self.error(kw, "**kwargs is not supported in GPU code",
                                 "pass each keyword argument by name: f(a=x, b=y)")
        positional = self.expand_starred(positional)
        pos_types = [self.argument_type(a) for a in positional]
        kw_types = {kw.arg: self.argument_type(kw.value) for kw in keywords}
        declined = []
        for overload in candidates:
            try:
                return self.apply_overload(node, overload, positional, keywords, name)
            except _NotThisOverload as why:
                declined.append(f"{overload.describe()}: {why.reason}")
        shown_types = [str(x) for x in pos_types] + [f"{k}={v}" for k, v in kw_types.items()]
        raise self.error(where, f"no implementation for {name} with ({', '.join(shown_types)})",
                         "tried " + "; ".join(declined) + ". Each overload's generator returns "
                         "an implementation for the argument types it supports and None for "
                         "others: add one for these types, or convert the arguments")

    def argument_type(self, arg) -> t.Type:
        """An argument's type; an inner function passed escapes as a function (bind_call's
        rule: numba passes closures to functions as functions of their own)."""
        if inner.passed_as_value(self, arg):
            return self.record(arg, PyValue(inner.escape(self, arg, self.inner_functions[arg.id])))
        return self.expr(arg)

    def expand_starred(self, positional: list) -> list:
        if not any(isinstance(a, ast.Starred) for a in positional):
            return positional
        fake = ast.Call(func=ast.Constant(None), args=positional, keywords=[])
        return self.positional_nodes(fake)

    def apply_overload(self, node, overload, positional: list, keywords, name: str) -> t.Type:
        literal = self.literal_nodes(positional, keywords)
        attempts = [False, True] if literal else [False]
        if overload.prefer_literal and literal:
            attempts = [True, False]
        reasons = []
        for with_literals in attempts:
            try:
                found = self.implementation(node, overload, positional, keywords, literal,
                                            with_literals)
            except _NotThisOverload as why:
                reasons.append(why.reason)
                continue
            impl, declared = found
            return self.call_implementation(node, overload, impl, declared, positional,
                                            keywords, literal if with_literals else {}, name)
        raise _NotThisOverload("; ".join(dict.fromkeys(reasons)))

    def literal_nodes(self, positional: list, keywords) -> dict:
        """Arguments that are compile-time ints, bools or strings (numba's literal types)."""
        out = {}
        for arg in [*positional, *(kw.value for kw in keywords)]:
            try:
                value = const_eval(arg, self.resolve_constant)
            except NotConstant:
                continue
            if isinstance(value, (bool, int, str)) and not isinstance(value, float):
                out[arg] = ConstValue(value, self.expr(arg))
        return out

    def implementation(self, node, overload, positional, keywords, literal, with_literals):
        """(implementation, declared argument types or None) the overload gives these
        argument types; _NotThisOverload when it gives none."""
        if overload.implements is not None:
            return overload.implements, None
        typed = [literal.get(a) if with_literals and a in literal else self.argument_type(a)
                 for a in positional]
        kw_typed = {kw.arg: literal.get(kw.value) if with_literals and kw.value in literal
                    else self.argument_type(kw.value) for kw in keywords}
        memo = self.session.overload_impls
        key = (id(overload), tuple(typed), tuple(sorted(kw_typed.items(), key=lambda i: i[0])))
        if key not in memo:
            memo[key] = self.run_generator(node, overload, typed, kw_typed)
        result = memo[key]
        if isinstance(result, _NotThisOverload):
            raise result
        return result

    def run_generator(self, node, overload, typed: list, kw_typed: dict):
        generator = overload.generator
        numba = reads_numba_types(generator)
        kw_shown = shown(tuple(kw_typed.values()), numba)
        try:
            bound = inspect.signature(generator).bind(
                *shown(tuple(typed), numba), **dict(zip(kw_typed, kw_shown, strict=True)))
        except TypeError as exc:
            return _NotThisOverload(f"its parameters do not take this call ({exc})")
        for pname, param in inspect.signature(generator).parameters.items():
            if pname not in bound.arguments and param.default is not param.empty and \
                    param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                bound.arguments[pname] = shown((Omitted(param.default),), numba)[0]
        try:
            result = generator(*bound.args, **bound.kwargs)
        except Exception as exc:  # noqa: BLE001 - numba's TypingError from a generator: declined
            return _NotThisOverload(f"its generator raised {type(exc).__name__}: {exc}")
        if result is None:
            return _NotThisOverload("its generator returned None for these types")
        declared = None
        if isinstance(result, tuple) and len(result) == 2:
            sig, result = result
            sig = from_numba(sig) if is_numba_object(sig) else sig
            declared = tuple(sig.args) if isinstance(sig, t.Signature) else None
        if is_gpu_function(result):
            result = result.py_func
        if not inspect.isfunction(result):
            raise self.error(node, f"the overload {overload.describe()} returned {result!r}, "
                             "not a function", "return the implementing function (a def or a "
                             "lambda), or None when the types are not supported")
        if overload.strict:
            problem = signature_mismatch(generator, result)
            if problem is not None:
                raise self.error(node, problem, "give the implementation the generator's "
                                 "parameters: the same names, kinds and defaults")
        return result, declared

    def call_implementation(self, node, overload, impl, declared, positional, keywords,
                            literal: dict, name: str) -> t.Type:
        call = self.synthetic(("overload-call", node, id(impl)), lambda: ast.copy_location(
            ast.Call(func=ast.Constant(None), args=positional, keywords=list(keywords)), node))
        args, argtypes = self.bind_call(call, inspect.signature(impl), name)
        argtypes = [literal.get(a, ty) if isinstance(a, ast.AST) else ty
                    for a, ty in zip(args, argtypes, strict=True)]
        if declared is not None and len(declared) == len(argtypes):
            argtypes = list(declared)
        callee = self.infer_callee(node, impl, args, tuple(argtypes))
        if not isinstance(callee, RecursiveRef):  # (a self-call is not a callee to collect)
            self.callees[(impl.__code__, callee.argtypes)] = callee
        options = overload.jit_options
        inline = self.inlines(node, overload.inline, impl) if overload.inline != "never" \
            else False
        self.calls[node] = GpuCall(callee, tuple(args), callee.argtypes,
                                   bool(options.get("forceinline")), inline)
        found = callee.return_type
        if isinstance(found, t.Optional) and node not in self.keep_optional:
            return found.type
        return found


def _applicable(overloads: tuple, base: t.Type) -> list:
    return [o for o in extending.for_kernels(overloads) if type_matches(o.key, base)]


def signature_mismatch(typing_func, impl_func) -> str | None:
    """numba's check that an implementation takes the generator's parameters (its words, which
    its users search for), or None when they agree."""
    typing_sig, impl_sig = inspect.signature(typing_func), inspect.signature(impl_func)

    def split(sig):
        args, kws, star = [], [], None
        for p in sig.parameters.values():
            if p.default is p.empty:
                args.append(p)
                if p.kind is p.VAR_POSITIONAL:
                    star = p
                elif p.kind is p.VAR_KEYWORD:
                    raise _Mismatch("The use of VAR_KEYWORD (e.g. **kwargs) is unsupported. "
                                    f"(offending argument name is '{p}')")
            else:
                kws.append(p)
        return args, kws, star

    sig_str = f"Typing signature:         {typing_sig}\nImplementation signature: {impl_sig}"
    prefix = "Typing and implementation arguments differ in "
    try:
        ty_args, ty_kws, ty_star = split(typing_sig)
        im_args, im_kws, im_star = split(impl_sig)
    except _Mismatch as problem:
        return str(problem)
    a, b = ty_args, im_args
    if ty_star and not im_star:
        return (f"VAR_POSITIONAL (e.g. *args) argument kind (offending argument name is "
                f"'{ty_star}') found in the typing function signature, but is not in the "
                f"implementing function signature.\n{sig_str}")
    if not ty_star and im_star:
        b = im_args[:im_args.index(im_star)]
        names = [p.name for p in ty_args]
        if not b or b[-1].name not in names:
            return f"{prefix}argument names.\n{sig_str}\nFirst difference: " \
                   f"'{b[-1] if b else im_star}'"
        a = ty_args[:names.index(b[-1].name) + 1]
    if a != b:
        return f"{prefix}argument names.\n{sig_str}\nDifference: {set(a) ^ set(b)}"
    if [p.name for p in ty_kws] != [p.name for p in im_kws]:
        return f"{prefix}keyword argument names.\n{sig_str}\nDifference: " \
               f"{set(ty_kws) ^ set(im_kws)}"
    if [p.default for p in ty_kws] != [p.default for p in im_kws]:
        return f"{prefix}keyword argument default values.\n{sig_str}\nDifference: " \
               f"{set(ty_kws) ^ set(im_kws)}"
    return None


class _Mismatch(Exception):  # noqa: N818 - carries signature_mismatch's message
    pass


__all__ = ["BoundOverloadedMethod", "CompileError", "OverloadTyping", "signature_mismatch"]
