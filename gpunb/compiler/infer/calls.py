"""Typing of calls: GPU functions, inner functions, builtins and conversions (np.float32(x)).

GPU functions resolve through globals at compile time; defaults and keyword arguments are bound
here, at the call site (seed 001), by one binder that GPU functions and inner functions share.
Among several declared signatures the one numba would choose wins (the best conversion rating).
"""

from __future__ import annotations

import ast
import inspect

import numpy as np

from gpunb.compiler import promotion
from gpunb.compiler.builtins import find_builtin
from gpunb.compiler.infer import inner
from gpunb.compiler.infer.core import NeedsConstant
from gpunb.compiler.infer.overloads import BoundOverloadedMethod
from gpunb.compiler.typed import (
    BuiltinCall,
    Cast,
    Const,
    GpuCall,
    RecursiveRef,
    StarredCall,
    Typed,
)
from gpunb.compiler.values import (
    ConstValue,
    NotConstant,
    PyValue,
    const_eval,
    constant_type,
    dtype_to_type,
)
from gpunb.compiler.values import missing as is_missing
from gpunb.foundation import extending
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError, did_you_mean
from gpunb.foundation.pyobjects import (
    is_cpu_only_numba_function,
    is_gpu_function,
    lookup_global,
)


class CallTyping:
    def expr_Call(self, node: ast.Call) -> t.Type:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "bit_count" and \
                not node.args and not node.keywords:
            found = self.int_bit_count(node)
            if found is not None:
                return found
        callee = self.callee_object(node.func)
        if isinstance(callee, BoundOverloadedMethod):  # value.method() of an @overload_method
            return self.overloaded_method_call(node, callee)
        if isinstance(callee, extending.Intrinsic):
            return self.intrinsic_call(node, callee)
        if callee is None:
            ftype = self.expr(node.func)
            raise self.error(node.func, f"{ftype} is not callable in GPU code",
                             "only functions can be called; array methods are not available "
                             "inside kernels" if isinstance(ftype, t.Array) else None)
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw, "**kwargs is not supported in GPU code",
                                 "pass each keyword argument by name: f(a=x, b=y)")
        starred = next((a for a in node.args if isinstance(a, ast.Starred)), None)
        if starred is not None and not (isinstance(callee, inner.InnerFunction) or
                                        is_gpu_function(callee) or
                                        extending.has_overloads(callee) or
                                        is_namedtuple_class(callee)):  # these bind *t
            return self.starred_builtin_call(node, callee, starred)
        if isinstance(callee, inner.InnerFunction):
            return inner.call(self, node, callee)
        if is_gpu_function(callee) and not extending.has_overloads(callee):
            found = self.call_gpu_function(node, callee)
            if isinstance(found, t.Optional) and node not in self.keep_optional:
                return found.type  # used as its value: lowering checks it is not None
            return found
        if is_namedtuple_class(callee):
            return self.namedtuple_call(node, callee)
        builtin = find_builtin(callee)
        target = dtype_to_type(callee) if builtin is None else None
        if extending.has_overloads(callee):
            return self.native_or_overload(node, callee, builtin, target)
        if builtin is not None:
            return self.builtin_call(node, builtin)
        if callee is np.dtype:  # np.dtype("int16"): a compile-time dtype, as np.int16 is
            return PyValue(self.const(node, "the argument of np.dtype(...)"))
        if callee is slice:
            return PyValue(self.slice_object(node))
        if target is not None:
            return self.conversion(node, callee, target)
        name = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", repr(callee))
        if is_cpu_only_numba_function(callee):
            raise self.error(node.func, f"Untyped global name '{callee.__name__}': using cpu "
                             "function on device", "a numba @jit function given explicit "
                             "signatures is compiled for the CPU only (numba-cuda refuses it "
                             "too): drop the signatures, or use @cuda.jit(device=True)")
        untyped = f"Untyped global name '{node.func.id}': " \
            if isinstance(node.func, ast.Name) else ""  # numba's words, for those who search
        raise self.error(node.func, f"{untyped}cannot call {name} from GPU code",
                         _call_hint(callee))

    def builtin_call(self, node: ast.Call, builtin) -> t.Type:
        argtypes = [self.expr(a) for a in node.args]
        kwtypes = {kw.arg: self.expr(kw.value) for kw in node.keywords}
        typed = builtin.type_call(self, node, argtypes, kwtypes)
        result, data = (typed.result, typed.data) if isinstance(typed, Typed) else (typed, None)
        self.calls[node] = BuiltinCall(builtin, tuple(node.args), tuple(argtypes), result, data)
        return result

    def native_or_overload(self, node: ast.Call, callee, builtin, target) -> t.Type:
        """A function given @overloads: a builtin or conversion of the language (float(x),
        np.float32(x)) keeps its own typing for the types it takes, as numba's builtins come
        first; the overloads extend it to others."""
        if builtin is None and target is None:
            return self.overloaded_function_call(node, callee)
        try:
            if builtin is not None:
                return self.builtin_call(node, builtin)
            return self.conversion(node, callee, target)
        except CompileError as error:
            try:
                return self.overloaded_function_call(node, callee)
            except CompileError:
                raise error from None

    def namedtuple_call(self, node: ast.Call, cls: type) -> t.Type:
        """`Point(1.0, y=2.0)`: a namedtuple built in GPU code, its fields typed as passed."""
        from gpunb.compiler.builtins.pybuiltins import NamedTupleBuild

        signature = inspect.signature(cls)  # its fields and defaults (annotations dropped)
        signature = signature.replace(parameters=[p.replace(annotation=p.empty) for p in
                                                  signature.parameters.values()])
        args, argtypes = self.bind_call(node, signature, cls.__name__)
        for arg, found in zip(args, argtypes, strict=True):
            if isinstance(found, PyValue):
                raise self.error(arg if isinstance(arg, ast.AST) else node,
                                 f"a field of {cls.__name__} cannot hold {found}",
                                 "namedtuples in GPU code hold numbers, arrays and tuples")
        result = t.Tuple(tuple(argtypes), tuple(cls._fields))
        self.calls[node] = BuiltinCall(NamedTupleBuild(cls), tuple(args), tuple(argtypes),
                                       result)
        return result

    def int_bit_count(self, node: ast.Call) -> t.Type | None:
        """`x.bit_count()` on an integer value; None when `x` is not one (a module's function
        of that name, say), which then types as any other call."""
        if self.callee_object(node.func.value) is not None:
            return None
        base = self.expr(node.func.value)
        if not isinstance(base, t.Integer):
            return None
        from gpunb.compiler.builtins.warp import INT_BIT_COUNT

        self.calls[node] = BuiltinCall(INT_BIT_COUNT, (node.func.value,), (base,), t.int32, None)
        return t.int32

    def conversion(self, node: ast.Call, callee, target: t.Type) -> t.Type:
        """int(x), float(x), bool(x), np.float32(x): numba keeps an integer's own type under
        int() and a float's under float(); numpy scalar types convert to themselves."""
        cname = getattr(callee, "__name__", str(callee))
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{cname}() takes exactly one argument in GPU code")
        arg = node.args[0]
        found = self.expr(arg)
        if callee is float and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            try:  # float("nan"), float("inf"): a float constant (lowered from the literal)
                float(arg.value)
            except ValueError:
                raise self.error(arg, f"could not convert string to float: {arg.value!r}",
                                 "write a number, or 'nan' / 'inf' / '-inf'") from None
            self.calls[node] = Cast(t.float64, arg, found)
            return t.float64
        if not (t.is_number(found) or t.is_fp8(found)):
            raise self.error(arg, f"cannot convert {found} to {target}")
        if isinstance(found, t.Complex) and isinstance(target, (t.BFloat16, t.FP8)) or \
                t.is_fp8(found) and isinstance(target, t.Complex):
            raise self.error(arg, f"cannot convert {found} to {target}", "take .real first")
        if callee is int:
            target = found if isinstance(found, t.Integer) else t.int64
            if isinstance(found, t.Complex):
                raise self.error(arg, "int() of a complex number", "take .real first")
        elif callee is float:
            if isinstance(found, t.Boolean):
                raise self.error(arg, "float() takes a number, not a bool (numba refuses it "
                                 "too)", "convert with float(int(flag)) or np.float64(flag)")
            if isinstance(found, t.Complex):
                raise self.error(arg, "float() of a complex number", "take .real or abs(x)")
            target = found if isinstance(found, t.Float) else t.float64
        self.calls[node] = Cast(target, arg, found)
        return target

    def callee_object(self, func):
        """The compile-time object a call's func expression names, or None if it is a value."""
        if isinstance(func, ast.Constant) and isinstance(func.value, np.ufunc):
            return func.value  # a call made by inference (an in-place array operator)
        if isinstance(func, ast.Name):
            if func.id in self.inner_functions and func.id not in self.locals:
                return self.inner_functions[func.id]
            if func.id in self.locals:  # a function or type passed as an argument
                found = self.var_types.get(self.env.get(func.id))
                if isinstance(found, PyValue):
                    self.read(func, func.id)
                    self.uses[func] = self.env[func.id]
                    self.record(func, found)
                    return found.obj
                return None
            value = lookup_global(self.py_func, func.id)
            if is_missing(value):
                raise self.error(func, f"NameError: name '{func.id}' is not defined",
                                 did_you_mean(func.id, self.visible_names())
                                 + "define it before the GPU function is compiled")
            self.refuse_numba_cuda(func, value)
            self.record(func, PyValue(value))
            return value
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value)
            if isinstance(base, PyValue):
                if not hasattr(base.obj, func.attr):
                    raise self.error(func, f"{base} has no attribute '{func.attr}'",
                                     did_you_mean(func.attr, dir(base.obj))
                                     + "check the spelling; GPU code sees the object as it is "
                                     "when the kernel compiles")
                value = getattr(base.obj, func.attr)
                self.record(func, PyValue(value))
                return value
            if isinstance(base, t.Array):  # a.sum(), a.max(), ...: reductions; a.reshape()
                from gpunb.compiler.builtins.arraymethods import METHODS
                from gpunb.compiler.builtins.reductions import METHOD_BUILTINS

                return METHOD_BUILTINS.get(func.attr) or METHODS.get(func.attr) or \
                    self.overloaded_method(base, func.attr)
            if t.is_number(base) and not isinstance(base, t.Boolean) and \
                    func.attr == "conjugate":
                from gpunb.compiler.builtins.pybuiltins import CONJUGATE

                return CONJUGATE
            if isinstance(base, t.Group):
                from gpunb.compiler.builtins.groups import group_method, method_names

                method = group_method(base, func.attr)
                if method is None:
                    names = ", ".join(f"{n}()" for n in method_names(base))
                    raise self.error(func, f"{base} has no method '{func.attr}'",
                                     f"{base} has {names} and size")
                return method
            return self.overloaded_method(base, func.attr)
        return None

    # ---- GPU functions and inner functions -----------------------------------------------------

    def bind_call(self, node: ast.Call, signature: inspect.Signature, name: str) -> tuple:
        """Arguments of a call, one per parameter in order: the argument's node, or Const of the
        parameter's default; and their types. Shared by GPU functions and inner functions."""
        try:
            bound = signature.bind(*self.positional_nodes(node),
                                   **{kw.arg: kw.value for kw in node.keywords})
        except TypeError as exc:
            raise self.error(node, f"bad call of '{name}': {exc}",
                             f"its parameters are {signature}") from None
        args, argtypes = [], []
        for pname, param in signature.parameters.items():
            if param.kind is param.VAR_POSITIONAL:  # *args: the extra arguments as one tuple
                extra = list(bound.arguments.get(pname, ()))
                arg = self.synthetic(("varargs", node), lambda extra=extra: ast.copy_location(
                    ast.Tuple(elts=extra, ctx=ast.Load()), node))
                args.append(arg)
                argtypes.append(self.expr(arg))
                continue
            if pname in bound.arguments:
                arg = bound.arguments[pname]
                if inner.passed_as_value(self, arg):  # an escaping closure (numba's)
                    found = self.record(arg, PyValue(inner.escape(
                        self, arg, self.inner_functions[arg.id])))
                else:
                    found = self.expr(arg)  # a function or type: a compile-time value
                if isinstance(found, PyValue) and isinstance(found.obj, type(ast)):
                    raise self.error(arg, f"cannot pass the module {found} to '{name}'",
                                     "pass the function or constant it holds")
            else:
                default = param.default
                found = t.none if default is None else constant_type(default)
                if found is None:
                    raise self.error(node, f"default value {default!r} of parameter '{pname}' "
                                     f"of '{name}' has no GPU type")
                arg = Const(default)
            args.append(arg)
            argtypes.append(found)
        return args, argtypes

    def positional_nodes(self, node: ast.Call) -> list:
        """The call's positional argument nodes, `*t` of a tuple expanded to `t[0], t[1], ...`
        (numba's star-args of a tuple, whose length is known when the call is typed)."""
        out = []
        for arg in node.args:
            if not isinstance(arg, ast.Starred):
                out.append(arg)
                continue
            found = self.expr(arg.value)
            if not isinstance(found, t.Tuple):
                raise self.error(arg, f"*args needs a tuple in GPU code, got {found}")
            out.extend(self.synthetic(("star", arg, k), lambda k=k, arg=arg: _star_item(arg, k))
                       for k in range(len(found.items)))
        return out

    def starred_builtin_call(self, node: ast.Call, callee, starred: ast.Starred) -> t.Type:
        """`f(*t)` of a builtin (or a conversion) and a tuple t: typed as the call with t's
        items as its arguments (numba's star-args, the length known when the call is typed)."""
        if find_builtin(callee) is None and dtype_to_type(callee) is None:
            raise self.error(starred, "*args is only supported in calls of GPU functions and "
                             "builtins", "pass each argument: f(t[0], t[1])")
        args = self.positional_nodes(node)
        expanded = self.synthetic(("starcall", node, len(args)), lambda: ast.copy_location(
            ast.Call(func=node.func, args=args, keywords=node.keywords), node))
        result = self.expr(expanded)
        self.calls[node] = StarredCall(expanded, result)
        return result

    def slice_object(self, node: ast.Call) -> slice:
        """slice(stop) / slice(start, stop[, step]) of compile-time integers or None: a slice
        object known when compiling (what a global slice is), usable as an index (a[s], t[s])
        and as s.start / s.stop / s.step."""
        if node.keywords or not 1 <= len(node.args) <= 3:
            raise self.error(node, "slice() takes 1 to 3 positional arguments",
                             "write slice(stop), slice(start, stop) or slice(start, stop, step)")
        bounds = []
        for arg in node.args:
            try:
                value = const_eval(arg, self.resolve_constant)
            except NotConstant:
                raise self.error(arg, "a slice object's bounds must be known at compile time "
                                 "in GPU code", "index with the bounds themselves, e.g. "
                                 "a[i:i + 4], when they are known only at run time") from None
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise self.error(arg, f"slice bounds must be integers or None, got {value!r}")
            bounds.append(value)
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.error(node.args[2], "slice step cannot be zero",
                             "use a step of 1 or more (or negative to go backwards)")
        # one object per call site and bounds: a PyValue is its object's identity, and the
        # types of a pass must equal the last pass's
        return self.synthetic(("slice()", node, *bounds), lambda: slice(*bounds))

    def synthetic(self, key, make):
        """A node made for a call (kept across passes, so that its facts are the same node's)."""
        found = self.capture_refs.get(key)
        if found is None:
            found = self.capture_refs[key] = make()
        return found

    def call_gpu_function(self, node: ast.Call, dispatcher) -> t.Type:
        py_func = dispatcher.py_func
        args, argtypes = self.bind_call(node, inspect.signature(py_func), py_func.__name__)
        argtypes = self.apply_declared_signature(node, dispatcher, tuple(argtypes), args)
        declared = self.declared_return(dispatcher, argtypes)
        callee = self.infer_callee(node, py_func, args, argtypes, declared)
        if not isinstance(callee, RecursiveRef):  # (a self-call is not a callee to collect)
            self.callees[(py_func.__code__, callee.argtypes)] = callee
        options = getattr(dispatcher, "options", {}) or {}
        self.calls[node] = GpuCall(callee, tuple(args), callee.argtypes,
                                   bool(options.get("forceinline")),
                                   self.inlines(node, options.get("inline"), py_func))
        return callee.return_type

    def inlines(self, node, inline, callee_func) -> bool:
        """numba-cuda's inline= of the callee: 'always' / True inline its body at the call (no
        call in the IR handed to LLVM), a cost model decides per call: gpunb calls it with the
        call's AST node and the caller's and callee's Python functions (numba passes its IR)."""
        if not callable(inline):
            return inline in ("always", True)
        try:
            return bool(inline(node, self.py_func, callee_func))
        except Exception as exc:  # noqa: BLE001 - the user's cost model failed
            raise self.error(node, f"the inline= cost model of '{callee_func.__name__}' raised "
                             f"{type(exc).__name__}: {exc}") from None

    @staticmethod
    def declared_return(dispatcher, argtypes: tuple):
        """The return type a declared signature gives for these (converted) argument types."""
        for sig in getattr(dispatcher, "declared_signatures", ()):
            if tuple(sig.args) == argtypes and sig.return_type is not None:
                return sig.return_type
        return None

    def infer_callee(self, node, py_func, args: list, argtypes: tuple, declared=None):
        """Infer a callee for these argument types; where it needs a parameter as a
        compile-time constant and this call passes one, bind that value and infer again.

        numba types a device function with the literal types of the constants passed to it
        (and so prunes `if flag:` on a literal flag before typing the dead branch); gpunb binds
        constant flags only when the callee does not type without them, which keeps one
        specialisation where the constants make no difference."""
        try:
            try:
                return self.infer_binding(node, py_func, args, argtypes, declared)
            except NeedsConstant:
                raise
            except CompileError as error:
                literal = self.literal_argtypes(args, argtypes)
                if literal is None or error.function != py_func.__name__:
                    raise
                try:
                    return self.infer_binding(node, py_func, args, literal, declared)
                except CompileError:
                    raise error from None
        except CompileError as error:
            if not isinstance(error, NeedsConstant):  # numba's words for where it came from
                loc = self.source.loc(node)
                error.add_context(f"During: resolving callee type: type(CUDADispatcher("
                                  f"<function {py_func.__qualname__}>)), called from "
                                  f"'{self.source.name}' at line {loc.line}")
            raise

    def literal_argtypes(self, args: list, argtypes: tuple) -> tuple | None:
        """The argument types with every constant flag (a bool) bound to its value (numba's
        Literal types); None when there is none not bound yet. Only flags: a number bound to
        its value would specialise a recursion on every value it passes and move errors from
        the callee to the caller."""
        bound, changed = list(argtypes), False
        for k, (arg, ty) in enumerate(zip(args, argtypes, strict=True)):
            if not isinstance(ty, t.Boolean):
                continue
            value = self.constant_argument(arg)
            if isinstance(value, (bool, np.bool_)):
                bound[k], changed = ConstValue(value, ty), True
        return tuple(bound) if changed else None

    def infer_binding(self, node, py_func, args: list, argtypes: tuple, declared=None):
        params = list(inspect.signature(py_func).parameters)
        while True:
            try:
                return self.session.infer(py_func, argtypes, call_node=node, caller=self,
                                          declared_return=declared)
            except NeedsConstant as needs:
                bound = list(argtypes)
                for name in needs.params:
                    k = params.index(name) if name in params else -1
                    value = self.constant_argument(args[k]) if k >= 0 else None
                    if value is None or isinstance(bound[k], ConstValue):
                        mine = self.parameters_in(args[k]) if k >= 0 else ()
                        if mine:  # our own parameter: our caller may pass a constant for it
                            raise NeedsConstant(needs.message, needs.loc, needs.hint,
                                                needs.function, mine) from None
                        raise
                    bound[k] = ConstValue(value, bound[k])
                argtypes = tuple(bound)

    def parameters_in(self, node) -> tuple:
        """Names of this function's parameters an expression reads (unreassigned)."""
        if not isinstance(node, ast.AST):
            return ()
        return tuple(sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                             and self.env.get(n.id) in self.params}))

    def constant_argument(self, arg):
        """The compile-time value of a call argument (a literal, a global constant, a constant
        parameter of this function, or a bound default), or None."""
        if isinstance(arg, Const):
            return arg.value
        try:
            value = const_eval(arg, self.resolve_constant)
        except NotConstant:
            return None
        if isinstance(value, (str, bytes)):  # a literal string (numba's StringLiteral)
            return value
        return value if constant_type(value) is not None else None

    def apply_declared_signature(self, node, dispatcher, argtypes: tuple, args: list) -> tuple:
        """A device function declared with signatures takes the one numba would choose (the
        best conversion rating), its arguments converted to it."""
        declared = getattr(dispatcher, "declared_signatures", ())
        if not declared:
            return argtypes
        literals = tuple(a.value if isinstance(a, ast.Constant) and type(a.value) is int
                         else None for a in args)
        chosen = promotion.best_match(argtypes, [tuple(s.args) for s in declared], literals)
        if chosen is None:
            sigs = ", ".join(str(s) for s in declared)
            raise self.error(node, f"no declared signature of '{dispatcher.__name__}' accepts "
                             f"({', '.join(map(str, argtypes))})", f"declared: {sigs}")
        return tuple(declared[chosen].args)

    # ---- compile-time values for builtins ------------------------------------------------------

    def resolve_constant(self, node):
        """Compile-time value of a Name/Attribute (raises NotConstant): a global, or a local
        whose definition here is a compile-time value (a function, type or literal passed)."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                found = self.var_types.get(self.env.get(node.id))
                if isinstance(found, PyValue):
                    return found.obj
                if isinstance(found, ConstValue):
                    return found.value
                var = self.env.get(node.id)
                if var in self.var_constants:
                    return self.var_constants[var]
                raise NotConstant
            value = lookup_global(self.py_func, node.id)
            if is_missing(value):
                raise NotConstant
            return value
        if isinstance(node, ast.Attribute):
            if node.attr == "dtype" and isinstance(node.value, ast.Name) and \
                    node.value.id in self.locals:  # `ary.dtype` of an array: its type's dtype
                found = self.var_types.get(self.env.get(node.value.id))
                if isinstance(found, t.Array):
                    return found.dtype
            base = self.resolve_constant(node.value)
            if not hasattr(base, node.attr):
                raise NotConstant
            return getattr(base, node.attr)
        raise NotConstant

    def const(self, node, what: str):
        """A compile-time constant argument of a builtin, with a clear error otherwise; one that
        reads parameters of this function asks the caller for their values (NeedsConstant)."""
        try:
            value = const_eval(node, self.resolve_constant)
        except NotConstant:
            params = self.parameters_in(node)
            # numba's error is RequireLiteralValue; its name is kept for those who search it
            raise NeedsConstant(f"RequireLiteralValue: {what} must be a compile-time constant",
                                self.source.loc(node),
                                "use a literal, a module-level constant, or a parameter that "
                                "every caller passes a constant for", self.source.name,
                                params) from None
        self.constants[node] = value
        return value

    def resolve_type_annotation(self, node) -> t.Type | None:
        try:
            value = const_eval(node, self.resolve_constant)
        except NotConstant:
            return None
        return dtype_to_type(value)


def _call_hint(callee) -> str:
    """What to do about a call of something that is not GPU code, by what the callee is."""
    module = getattr(callee, "__module__", None) or type(callee).__module__ or ""
    if getattr(callee, "_gpunb_intrinsic", None) is not None:
        return f"cuda.{callee._gpunb_intrinsic.split('.')[-1]} is not a function here; read its " \
               "attributes (cuda.threadIdx.x) or call it as numba.cuda documents"
    if module.startswith("numpy.random"):
        return "use gpunb.random (xoroshiro128+, as numba.cuda.random) for random numbers in " \
               "kernels"
    if module.split(".")[0] == "numpy":
        return "numpy's array functions are not available inside kernels: write a loop over " \
               "the elements, or use gpunb.fuse for whole-array numpy code; numpy scalar " \
               "types (np.float32(x)) and math functions work"
    if module in ("builtins", "math", "cmath") or isinstance(callee, type):
        return "GPU code can call @cuda.jit functions, cuda.* intrinsics, math/cmath " \
               "functions, numpy scalar types and the builtins abs, min, max, sum, round, pow, " \
               "divmod, int, float, complex, bool, len, range, enumerate, zip and print"
    if inspect.isfunction(callee):
        return "decorate it with @cuda.jit (or define it in a %%gpukernel cell)"
    return "only @cuda.jit functions, cuda.* intrinsics and math functions can be called " \
           "in GPU code"


def _star_item(arg: ast.Starred, k: int) -> ast.Subscript:
    """Item k of `*t` as the node `t[k]`, marked (`star_of`) so that lowering evaluates t once
    for all its items (t may have side effects: `f(*g())`)."""
    item = ast.copy_location(ast.Subscript(value=arg.value, slice=ast.Constant(k),
                                           ctx=ast.Load()), arg)
    item.star_of = arg.value
    return item


def is_namedtuple_class(obj) -> bool:
    """A class made by collections.namedtuple or typing.NamedTuple (numba types calls of it)."""
    return isinstance(obj, type) and issubclass(obj, tuple) and \
        isinstance(getattr(obj, "_fields", None), tuple)
