"""cmath in kernels, complex(re, im), and numba.cuda's fp16 helpers (cuda.fp16.*).

Complex functions are written with real math functions of the component type, so they lower the
same way on every target (libdevice on CUDA, libm on the host).
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import complexmath as cm
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Typed
from gpunb.foundation import types as t


def _as_complex(ty: t.Type) -> t.Complex:
    if isinstance(ty, t.Complex):
        return ty
    if isinstance(ty, t.Float) and ty.bitwidth <= 32:
        return t.complex64
    return t.complex128


# numba's cmath typing: these are @overload'ed for complex arguments only (a real one has no
# implementation); the others are templates over (complex64, complex128) that take any number,
# converted as numba rates it (bool, 8- and 16-bit integers and float32 to complex64)
_COMPLEX_ONLY = frozenset({"log10", "phase", "polar", "cosh", "sinh", "tanh", "acosh"})
# numba's implementations of these mix float64 constants into the parts (log10's LN_10, tanh's
# 1.0 / cosh, acosh's LN_4): a complex64 argument gives complex128
_WIDENED = frozenset({"log10", "tanh", "acosh"})
_CASES = [(t.complex64,), (t.complex128,)]


def _numba_complex(inf, node, name: str, argtypes: list) -> t.Complex:
    """The complex type numba's template computes `argtypes` in (all in one type)."""
    chosen = promotion.best_match(tuple(argtypes), [c * len(argtypes) for c in _CASES])
    if chosen is None:
        raise inf.error(node, f"{name}() has no form for ({', '.join(map(str, argtypes))})",
                        "it takes complex64 or complex128 numbers")
    return _CASES[chosen][0]


class ComplexFunction(Builtin):
    def __init__(self, name: str, op: str, result: str = "complex"):
        self.name, self.op, self.result = name, op, result

    def type_call(self, inf, node, argtypes, kwtypes):
        arity = 2 if self.op == "rect" else 1
        if self.op == "log" and len(argtypes) == 2:
            arity = 2  # cmath.log(z, base) = log(z) / log(base)
        if kwtypes or len(argtypes) != arity or not all(t.is_number(a) for a in argtypes):
            raise inf.error(node, f"{self.name}() takes {arity} number(s)")
        if self.op == "rect":
            if not all(isinstance(a, t.Float) for a in argtypes):  # numba: floats only
                raise inf.error(node, f"cmath.rect() takes two floats, got "
                                f"({', '.join(map(str, argtypes))})",
                                "convert them: cmath.rect(float(r), float(phi))")
            return _as_complex(t.unify_numbers(argtypes[0], argtypes[1]))
        if self.op in _COMPLEX_ONLY and not isinstance(argtypes[0], t.Complex):
            raise inf.error(node, f"{self.name}() takes a complex number, got {argtypes[0]}",
                            f"convert it: {self.name}(complex(x))")
        if self.op in _COMPLEX_ONLY or isinstance(argtypes[0], t.BFloat16):
            ct = _as_complex(argtypes[0])
        else:
            ct = _numba_complex(inf, node, self.name, argtypes)
        if self.op == "log" and arity == 2:
            return ct
        if self.op in _WIDENED and ct == t.complex64:
            # numba's type; computed in complex64 all the same (float64 is slow on a GPU) and
            # widened at the end, so the last bits can differ from numba's
            return Typed(t.complex128, ct)
        # lowering computes in `ct`, the complex type numba converts the argument to
        if self.result == "real":
            return Typed(ct.component, ct)
        if self.result == "bool":
            return Typed(t.boolean, ct)
        if self.result == "polar":
            return Typed(t.Tuple((ct.component, ct.component)), ct)
        return Typed(ct, ct)

    def lower_call(self, low, node, call):
        b = low.builder
        if self.op == "rect":
            ct = call.result
            ft = ct.component
            r = ops.cast(b, low.expr(node.args[0]), call.argtypes[0], ft)
            phi = ops.cast(b, low.expr(node.args[1]), call.argtypes[1], ft)
            re, im = cm.rect(cm.FloatOps(b, low.math_call, ft), r, phi)
            return ops.make_complex(b, re, im, ct)
        if self.op == "log" and len(node.args) == 2:
            ct = call.result
            logs = [self.complex_log(low, ops.cast(b, low.expr(n), at, ct), ct)
                    for n, at in zip(node.args, call.argtypes, strict=True)]
            return ops.binary(b, ast.Div(), logs[0], logs[1], ct, low.math_call)
        ct = call.data
        ft = ct.component
        z = ops.cast(b, low.expr(node.args[0]), call.argtypes[0], ct)
        a, y = b.extract_value(z, 0), b.extract_value(z, 1)
        m = low.math_call

        def f(name, *xs):
            return m(name, list(xs), [ft] * len(xs), ft)

        op = self.op
        if op == "phase":
            return f("atan2", y, a)
        if op == "abs":
            return f("hypot", a, y)
        if op == "polar":
            out = ir.Constant(dm.value_type(call.result), ir.Undefined)
            out = b.insert_value(out, f("hypot", a, y), 0)
            return b.insert_value(out, f("atan2", y, a), 1)
        if op in ("isnan", "isinf", "isfinite"):
            def test(x):
                if op == "isnan":
                    return b.fcmp_unordered("uno", x, x)
                inf = ir.Constant(x.type, float("inf"))
                absx = f("fabs", x)
                return b.fcmp_ordered("==" if op == "isinf" else "<", absx, inf)
            if op == "isfinite":
                return b.and_(test(a), test(y))
            return b.or_(test(a), test(y))
        if op in _ALGORITHMS:
            re, im = _ALGORITHMS[op](cm.FloatOps(b, m, ft), a, y)
            return ops.cast(b, ops.make_complex(b, re, im, ct), ct, call.result)
        raise low.error(node, f"{self.name} is not supported")


    @staticmethod
    def complex_log(low, z, ct: t.Complex):
        b = low.builder
        f = cm.FloatOps(b, low.math_call, ct.component)
        re, im = cm.log(f, b.extract_value(z, 0), b.extract_value(z, 1))
        return ops.make_complex(b, re, im, ct)


# numba's cmathimpl (CPython's algorithms, C99's special values), in complexmath
_ALGORITHMS = {"exp": cm.exp, "log": cm.log, "log10": cm.log10, "sqrt": cm.sqrt, "cos": cm.cos,
               "sin": cm.sin, "tan": cm.tan, "cosh": cm.cosh, "sinh": cm.sinh, "tanh": cm.tanh,
               "asin": cm.asin, "acos": cm.acos, "atan": cm.atan, "asinh": cm.asinh,
               "acosh": cm.acosh, "atanh": cm.atanh}


class MakeComplex(Builtin):
    name = "complex"

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) not in (1, 2) or not all(
                t.is_number(a) and not isinstance(a, t.Boolean) for a in argtypes):
            raise inf.error(node, "complex(real, imag) takes one or two numbers (not bools, "
                            "as in numba)", "convert a flag first, e.g. complex(int(flag))")
        # numba's Complex template: float32 parts give complex64, anything else complex128
        return t.complex64 if all(a == t.float32 for a in argtypes) else t.complex128

    def lower_call(self, low, node, call):
        b = low.builder
        ct = call.result
        values = [low.expr(n) for n in node.args]
        re = ops.cast(b, values[0], call.argtypes[0], ct)
        if len(node.args) == 1:
            return re
        if isinstance(call.argtypes[1], t.Complex) or isinstance(call.argtypes[0], t.Complex):
            im = ops.cast(b, values[1], call.argtypes[1], ct)  # a + b*1j, as Python
            real = b.fsub(b.extract_value(re, 0), b.extract_value(im, 1))
            imag = b.fadd(b.extract_value(re, 1), b.extract_value(im, 0))
            return b.insert_value(b.insert_value(re, real, 0), imag, 1)
        # two reals: the parts as given (complex(1.5, -0.0) keeps its -0.0)
        im = ops.cast(b, values[1], call.argtypes[1], ct.component)
        return b.insert_value(re, im, 1)


class Fp16(Builtin):
    """cuda.fp16.h*: half-precision arithmetic, comparisons and math (math via float32)."""

    _ARITH = {"hadd": "+", "hsub": "-", "hmul": "*", "hdiv": "/"}
    _CMP = {"heq": "==", "hne": "!=", "hgt": ">", "hge": ">=", "hlt": "<", "hle": "<="}
    _MATH = {"hsin": "sin", "hcos": "cos", "hlog": "log", "hlog10": "log10", "hlog2": "log2",
             "hexp": "exp", "hexp2": "exp2", "hsqrt": "sqrt", "hceil": "ceil", "hfloor": "floor",
             "htrunc": "trunc", "hrint": "rint", "habs": "fabs"}

    def __init__(self, op: str):
        self.op = op
        self.name = f"cuda.fp16.{op}"

    def arity(self) -> int:
        if self.op in self._ARITH or self.op in self._CMP or self.op in ("hmax", "hmin"):
            return 2
        return 3 if self.op == "hfma" else 1

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != self.arity() or not all(t.is_number(a) for a in argtypes):
            raise inf.error(node, f"{self.name}() takes {self.arity()} float16 value(s)")
        return t.boolean if self.op in self._CMP else t.float16

    def lower_call(self, low, node, call):
        b = low.builder
        xs = [ops.cast(b, low.expr(n), at, t.float16)
              for n, at in zip(node.args, call.argtypes, strict=True)]
        if self.op in self._ARITH:
            fn = {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[self._ARITH[self.op]]
            return fn(xs[0], xs[1])
        if self.op in self._CMP:
            sym = self._CMP[self.op]
            return b.fcmp_unordered(sym, xs[0], xs[1]) if sym == "!=" else \
                b.fcmp_ordered(sym, xs[0], xs[1])
        if self.op == "hneg":
            return b.fneg(xs[0])
        if self.op in ("hmax", "hmin"):
            better = b.fcmp_ordered(">" if self.op == "hmax" else "<", xs[1], xs[0])
            return b.select(better, xs[1], xs[0])
        if self.op == "hfma":
            return b.fadd(b.fmul(xs[0], xs[1]), xs[2])
        if self.op == "hrcp":
            return b.fdiv(ir.Constant(xs[0].type, 1.0), xs[0])
        if self.op == "hrsqrt":
            s = low.math_call("sqrt", [xs[0]], [t.float16], t.float16)
            return b.fdiv(ir.Constant(xs[0].type, 1.0), s)
        if self.op == "hexp10":
            wide = b.fpext(xs[0], ir.FloatType())
            p = low.math_call("pow", [ir.Constant(ir.FloatType(), 10.0), wide],
                              [t.float32, t.float32], t.float32)
            return b.fptrunc(p, ir.HalfType())
        return low.math_call(self._MATH[self.op], xs, [t.float16], t.float16)


FP16_OPS = list(Fp16._ARITH) + list(Fp16._CMP) + list(Fp16._MATH) + [
    "hneg", "hmax", "hmin", "hfma", "hrcp", "hrsqrt", "hexp10"]

BUILTINS: dict = {f"cmath.{name}": ComplexFunction(f"cmath.{name}", name) for name in
                  ("exp", "log", "log10", "sqrt", "sin", "cos", "sinh", "cosh", "tan", "tanh",
                   "asin", "acos", "atan", "asinh", "acosh", "atanh")}
BUILTINS.update({
    "cmath.phase": ComplexFunction("cmath.phase", "phase", "real"),
    "cmath.polar": ComplexFunction("cmath.polar", "polar", "polar"),
    "cmath.rect": ComplexFunction("cmath.rect", "rect"),
    "cmath.isnan": ComplexFunction("cmath.isnan", "isnan", "bool"),
    "cmath.isinf": ComplexFunction("cmath.isinf", "isinf", "bool"),
    "cmath.isfinite": ComplexFunction("cmath.isfinite", "isfinite", "bool"),
    "builtins.complex": MakeComplex(),
})
BUILTINS.update({f"cuda.fp16.{op}": Fp16(op) for op in FP16_OPS})
