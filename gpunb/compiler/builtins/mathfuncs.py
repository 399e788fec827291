"""The `math` module (and numpy's scalar ufuncs of the same names) in kernels.

float32 arguments give float32 results (the `f` variants of libdevice / libm); integers are
computed in float64, as numba does. floor/ceil/trunc return int64 like Python's math module.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t

UNARY = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
         "tanh", "exp", "expm1", "exp2", "log", "log10", "log1p", "log2", "sqrt", "erf", "erfc",
         "gamma", "lgamma", "fabs", "cbrt"]
BINARY = ["atan2", "copysign", "fmod", "hypot", "pow", "remainder", "nextafter"]
TO_INT = ["floor", "ceil", "trunc"]
PREDICATES = ["isnan", "isinf", "isfinite"]


def float_type_of(ty: t.Type) -> t.Float:
    if isinstance(ty, t.Float):
        return t.float32 if ty.bitwidth == 16 else ty
    return t.float64


class MathFunction(Builtin):
    def __init__(self, name: str, kind: str, base: str, numpy_style: bool = False):
        self.name = name
        self.kind = kind
        self.base = base
        self.numpy_style = numpy_style  # np.floor returns a float, math.floor an int

    def type_call(self, inf, node, argtypes, kwtypes):
        arity = {"unary": 1, "binary": 2, "to_int": 1, "predicate": 1, "ldexp": 2, "frexp": 1,
                 "modf": 1, "angle": 1, "fma": 3}[self.kind]
        if kwtypes or len(argtypes) != arity:
            raise inf.error(node, f"{self.name}() takes {arity} argument(s)")
        for a in argtypes:
            if not t.is_number(a) or isinstance(a, t.Complex):
                raise inf.error(node, f"{self.name}() needs real numbers, got {a}",
                                "use cmath for complex numbers")
        weak = [n in inf.weak for n in node.args]
        ft = self.common_float(argtypes, weak)
        if self.kind in ("unary", "binary", "angle", "fma"):
            return ft
        if self.kind == "to_int":
            return ft if self.numpy_style else t.int64
        if self.kind == "predicate":
            return t.boolean
        if self.kind == "ldexp":
            return float_type_of(argtypes[0])
        if self.kind == "frexp":
            return t.Tuple((ft, t.int32))
        return t.Tuple((ft, ft))  # modf

    @staticmethod
    def common_float(argtypes, weak) -> t.Float:
        strong = [a for a, w in zip(argtypes, weak, strict=False) if not w] or list(argtypes)
        ft = float_type_of(strong[0])
        for a in strong[1:]:
            other = float_type_of(a)
            if other.bitwidth > ft.bitwidth or not isinstance(a, t.Float):
                ft = t.float64 if not isinstance(a, t.Float) else other
        return ft

    def lower_call(self, low, node, call):
        b = low.builder
        args = [low.expr(n) for n in node.args]
        weak = [n in low.typed.weak for n in node.args]
        ft = self.common_float(call.argtypes, weak)
        if self.kind == "predicate":
            x = args[0]
            at = call.argtypes[0]
            if not isinstance(at, t.Float):
                return ir.Constant(dm.i1, 1 if self.base == "isfinite" else 0)
            if self.base == "isnan":
                return b.fcmp_unordered("uno", x, x)
            inf = ir.Constant(x.type, float("inf"))
            absx = low.math_call("fabs", [x], [at], at)
            if self.base == "isinf":
                return b.fcmp_ordered("==", absx, inf)
            return b.fcmp_ordered("<", absx, inf)
        if self.kind == "ldexp":
            ft = float_type_of(call.argtypes[0])
            x = ops.cast(b, args[0], call.argtypes[0], ft)
            e = ops.cast(b, args[1], call.argtypes[1], t.int32)
            return low.math_call("ldexp", [x, e], [ft, t.int32], ft)
        xs = [ops.cast(b, a, at, ft) for a, at in zip(args, call.argtypes, strict=False)]
        if self.kind == "angle":
            factor = (180.0 / 3.141592653589793) if self.base == "degrees" else \
                (3.141592653589793 / 180.0)
            return b.fmul(xs[0], ir.Constant(xs[0].type, factor))
        if self.kind == "to_int":
            value = low.math_call(self.base, xs, [ft], ft)
            return value if self.numpy_style else ops.cast(b, value, ft, t.int64)
        if self.kind == "frexp":
            return low.math_call("frexp", xs, [ft], call.result)
        if self.kind == "modf":
            whole = low.math_call("trunc", xs, [ft], ft)
            frac = b.fsub(xs[0], whole)
            out = ir.Constant(dm.value_type(call.result), ir.Undefined)
            out = b.insert_value(out, frac, 0)
            return b.insert_value(out, whole, 1)
        return low.math_call(self.base, xs, [ft] * len(xs), ft)


BUILTINS: dict = {}
for _name in UNARY:
    BUILTINS[f"math.{_name}"] = MathFunction(f"math.{_name}", "unary", _name)
for _name in BINARY:
    BUILTINS[f"math.{_name}"] = MathFunction(f"math.{_name}", "binary", _name)
for _name in TO_INT:
    BUILTINS[f"math.{_name}"] = MathFunction(f"math.{_name}", "to_int", _name)
for _name in PREDICATES:
    BUILTINS[f"math.{_name}"] = MathFunction(f"math.{_name}", "predicate", _name)
BUILTINS["math.ldexp"] = MathFunction("math.ldexp", "ldexp", "ldexp")
BUILTINS["math.frexp"] = MathFunction("math.frexp", "frexp", "frexp")
BUILTINS["math.modf"] = MathFunction("math.modf", "modf", "modf")
BUILTINS["math.degrees"] = MathFunction("math.degrees", "angle", "degrees")
BUILTINS["math.radians"] = MathFunction("math.radians", "angle", "radians")
BUILTINS["math.fma"] = MathFunction("math.fma", "fma", "fma")

# numpy's scalar ufuncs under their numpy names
_NUMPY = {"arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
          "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2", "absolute": "fabs",
          "power": "pow", "fabs": "fabs"}
for _name in UNARY + BINARY:
    BUILTINS[f"numpy.{_name}"] = MathFunction(f"numpy.{_name}",
                                              "unary" if _name in UNARY else "binary", _name)
for _np_name, _name in _NUMPY.items():
    BUILTINS[f"numpy.{_np_name}"] = MathFunction(f"numpy.{_np_name}",
                                                 "binary" if _name in BINARY else "unary", _name)
for _name in TO_INT:
    BUILTINS[f"numpy.{_name}"] = MathFunction(f"numpy.{_name}", "to_int", _name, numpy_style=True)
for _name in PREDICATES:
    BUILTINS[f"numpy.{_name}"] = MathFunction(f"numpy.{_name}", "predicate", _name)
BUILTINS["numpy.degrees"] = MathFunction("numpy.degrees", "angle", "degrees")
BUILTINS["numpy.radians"] = MathFunction("numpy.radians", "angle", "radians")
del BUILTINS["numpy.gamma"], BUILTINS["numpy.lgamma"], BUILTINS["numpy.erf"], \
    BUILTINS["numpy.erfc"]
