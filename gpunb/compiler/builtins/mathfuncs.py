"""The `math` module (and numpy's scalar ufuncs of the same names) in kernels.

Typing follows numba-cuda's cudamath.py exactly: each function has a list of cases and the one
numba's conversion rating prefers is taken (math.floor(float32) is float32 there, an int64
argument computes in float64, copysign of ints converts them to float32 or float64). numpy's
names follow numba's ufunc loop choice: the first loop the arguments convert to safely (np.sqrt
of an int16 is float32, np.abs of an int keeps it). A weak float literal takes the width of a
float among the other arguments (gpunb's documented difference).
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins.bf16funcs import MATH_OVERLOADS, lower_bf16
from gpunb.compiler.typed import Typed
from gpunb.foundation import types as t

UNARY = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
         "tanh", "exp", "expm1", "exp2", "log", "log10", "log1p", "log2", "sqrt", "erf", "erfc",
         "gamma", "lgamma", "fabs", "cbrt"]
BINARY = ["atan2", "copysign", "fmod", "hypot", "pow", "remainder", "nextafter"]
TO_INT = ["floor", "ceil", "trunc"]
PREDICATES = ["isnan", "isinf", "isfinite"]

f16, f32, f64, i32, i64, u64 = t.float16, t.float32, t.float64, t.int32, t.int64, t.uint64
# numba-cuda's cudamath.py case lists: (argument types, result)
_UNARY_CASES = [((i64,), f64), ((u64,), f64), ((f32,), f32), ((f64,), f64)]
_UNARY_FP16_CASES = _UNARY_CASES + [((f16,), f16)]
_WITH_FP16 = {"sin", "cos", "ceil", "floor", "sqrt", "log", "log2", "log10", "exp", "fabs",
              "trunc", "exp2"}
_ATAN2_CASES = [((i64, i64), f64), ((u64, u64), f64), ((f32, f32), f32), ((f64, f64), f64)]
_REAL_BINARY_CASES = [((f32, f32), f32), ((f64, f64), f64)]
CASES = {
    "atan2": _ATAN2_CASES, "hypot": _ATAN2_CASES,
    "copysign": _REAL_BINARY_CASES, "fmod": _REAL_BINARY_CASES,
    "nextafter": _REAL_BINARY_CASES, "remainder": _REAL_BINARY_CASES,
    "pow": _REAL_BINARY_CASES + [((f32, i32), f32), ((f64, i32), f64)],
    "frexp": [((f32,), t.Tuple((f32, i32))), ((f64,), t.Tuple((f64, i32)))],
    "ldexp": [((f32, i32), f32), ((f64, i32), f64)],
    "modf": [((f64,), t.Tuple((f64, f64))), ((f32,), t.Tuple((f32, f32)))],
    "isnan": [((i64,), t.boolean), ((u64,), t.boolean), ((f32,), t.boolean),
              ((f64,), t.boolean)],
    "fma": [((f32, f32, f32), f32), ((f64, f64, f64), f64)],
}
CASES["isinf"] = CASES["isfinite"] = CASES["isnan"]
for _name in UNARY + TO_INT + ["degrees", "radians"]:
    CASES.setdefault(_name, _UNARY_FP16_CASES if _name in _WITH_FP16 else _UNARY_CASES)


def float_type_of(ty: t.Type) -> t.Float:
    if isinstance(ty, t.Float):
        return t.float32 if ty.bitwidth == 16 else ty
    return t.float64


def numpy_loop(argtypes: tuple, kind: str) -> tuple:
    """numba's ufunc loop choice for numpy's float functions: the argument types converted to
    the narrowest float every argument casts to safely (numpy's rule; float16 loops are not
    used), so np.sqrt(int16) computes in float32 and np.sqrt(int32) in float64."""
    import numpy as np

    for ft in (f32, f64):
        if all(np.can_cast(t.to_dtype(a), t.to_dtype(ft), "safe") for a in argtypes
               if not isinstance(a, t.Boolean)) or all(isinstance(a, t.Boolean)
                                                       for a in argtypes):
            if kind == "predicate":
                return (ft,) * len(argtypes), t.boolean
            return (ft,) * len(argtypes), ft
    return (f64,) * len(argtypes), f64


class MathFunction(Builtin):
    def __init__(self, name: str, kind: str, base: str, numpy_style: bool = False):
        self.name = name
        self.kind = kind
        self.base = base
        self.numpy_style = numpy_style  # numpy's names: numba's ufunc loops, not cudamath

    def type_call(self, inf, node, argtypes, kwtypes):
        arity = {"unary": 1, "binary": 2, "to_int": 1, "predicate": 1, "ldexp": 2, "frexp": 1,
                 "modf": 1, "angle": 1, "fma": 3}[self.kind]
        if kwtypes or len(argtypes) != arity:
            raise inf.error(node, f"{self.name}() takes {arity} argument(s)")
        for a in argtypes:
            if not t.is_number(a) or isinstance(a, t.Complex):
                raise inf.error(node, f"{self.name}() needs real numbers, got {a}",
                                "use cmath for complex numbers")
        if not self.numpy_style and self.base in MATH_OVERLOADS and argtypes == [t.bfloat16]:
            return Typed(t.bfloat16, "bfloat16")  # numba-cuda's overload: cuda.bf16.h<name>
        args = _strengthen(tuple(argtypes), [n in inf.weak for n in node.args])
        chosen = self.choose(args, tuple(_int_literal(n) for n in node.args))
        if chosen is None:
            raise inf.error(node, f"{self.name}() has no form for "
                            f"({', '.join(map(str, argtypes))})",
                            f"it takes {self.forms()}")
        params, result = chosen
        return Typed(result, params)  # lowering converts the arguments to `params`

    def choose(self, args: tuple, literals: tuple):
        if self.numpy_style:
            if self.name == "numpy.absolute" and isinstance(args[0], (t.Integer, t.Boolean)):
                # np.abs has integer and bool loops: it keeps the type ('b->b', '?->?');
                # np.fabs has none (an integer computes in a float)
                return args, args[0]
            if self.kind == "to_int" and _keeps_type(self.base, args[0]):
                return args, args[0]
            if self.kind == "to_int" or self.kind in ("unary", "binary", "predicate", "angle"):
                return numpy_loop(args, self.kind)
        cases = CASES.get(self.base)
        if cases is None:
            return None
        index = promotion.best_match(args, [params for params, _ in cases], literals)
        return None if index is None else cases[index]

    def forms(self) -> str:
        cases = CASES.get(self.base, ())
        return ", ".join(f"({', '.join(map(str, params))})" for params, _ in cases)

    def lower_call(self, low, node, call):
        b = low.builder
        params = call.data
        result = call.result
        if params == "bfloat16":
            return lower_bf16(low, "h" + self.base, [low.expr(node.args[0])], result)
        # integer cases ((int64,) -> float64) compute in the result's float type
        params = tuple(_compute_type(pt, result) for pt in params)
        xs = [ops.cast(b, low.expr(n), at, pt)
              for n, at, pt in zip(node.args, call.argtypes, params, strict=True)]
        if self.kind == "predicate":
            x, pt = xs[0], params[0]
            if not isinstance(pt, t.Float):
                return ir.Constant(dm.i1, 1 if self.base == "isfinite" else 0)
            if self.base == "isnan":
                return b.fcmp_unordered("uno", x, x)
            inf = ir.Constant(x.type, float("inf"))
            absx = low.math_call("fabs", [x], [pt], pt)
            if self.base == "isinf":
                return b.fcmp_ordered("==", absx, inf)
            return b.fcmp_ordered("<", absx, inf)
        ft = params[0]
        if self.kind == "ldexp":
            return low.math_call("ldexp", xs, [ft, t.int32], ft)
        if self.kind == "angle":
            factor = (180.0 / 3.141592653589793) if self.base == "degrees" else \
                (3.141592653589793 / 180.0)
            return b.fmul(xs[0], ir.Constant(xs[0].type, factor))
        if self.kind == "frexp":
            return low.math_call("frexp", xs, [ft], result)
        if self.kind == "modf":
            return modf(low, xs[0], ft, result)
        if isinstance(ft, t.Boolean):  # np.abs of a bool: numpy's '?->?' loop
            return xs[0]
        if isinstance(ft, t.Integer):  # np.abs of an integer; np.floor/ceil/trunc: itself
            return abs_integer(b, xs[0]) if ft.signed and self.base == "fabs" else xs[0]
        if self.base == "pow" and isinstance(params[1], t.Integer):
            xs[1] = ops.cast(b, xs[1], params[1], ft)  # powi: the exponent as a float
        return low.math_call(self.base, xs, [ft] * len(xs), ft)


def abs_integer(b: ir.IRBuilder, x):
    negative = b.icmp_signed("<", x, ir.Constant(x.type, 0))
    return b.select(negative, b.neg(x), x)


def modf(low, x, ft: t.Float, result: t.Tuple):
    """(fractional, integral) parts as C99's modf: modf(+-inf) is (+-0.0, +-inf), and the
    fractional part keeps x's sign (modf(-0.0) is (-0.0, -0.0))."""
    b = low.builder
    whole = low.math_call("trunc", [x], [ft], ft)
    frac = b.fsub(x, whole)
    infinite = b.fcmp_ordered("==", low.math_call("fabs", [x], [ft], ft),
                              ir.Constant(x.type, float("inf")))
    frac = b.select(infinite, ir.Constant(x.type, 0.0), frac)
    frac = low.math_call("copysign", [frac, x], [ft, ft], ft)
    out = ir.Constant(dm.value_type(result), ir.Undefined)
    return b.insert_value(b.insert_value(out, frac, 0), whole, 1)


def _keeps_type(name: str, arg: t.Type) -> bool:
    """numpy's np.floor/ceil/trunc have integer and bool loops since numpy 2.3 ('l->l'): an
    integer rounds to itself, in its own type (numba follows numpy's loop list)."""
    import numpy as np

    if not isinstance(arg, (t.Integer, t.Boolean)):
        return False
    char = t.to_dtype(arg).char
    return f"{char}->{char}" in getattr(np, name).types


def _compute_type(param: t.Type, result: t.Type) -> t.Type:
    if not isinstance(param, t.Integer) or param == t.int32:  # int32: ldexp's and powi's exponent
        return param
    if isinstance(result, t.Integer):
        return result  # np.abs's integer loops compute in the integer's own type
    if isinstance(result, t.Float):
        return result
    return t.float64  # (int64,) -> bool predicates: an integer is finite and not NaN


def _strengthen(argtypes: tuple, weak: list) -> tuple:
    """A weak float literal takes the width of a float among the other arguments."""
    floats = [a for a, w in zip(argtypes, weak, strict=True) if not w and isinstance(a, t.Float)]
    if not floats or not any(weak):
        return argtypes
    width = max(floats, key=lambda f: f.bitwidth)
    return tuple(width if w else a for a, w in zip(argtypes, weak, strict=True))


def _int_literal(node):
    import ast

    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


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
                                              "unary" if _name in UNARY else "binary", _name,
                                              numpy_style=_name != "pow")
for _np_name, _name in _NUMPY.items():
    BUILTINS[f"numpy.{_np_name}"] = MathFunction(f"numpy.{_np_name}",
                                                 "binary" if _name in BINARY else "unary", _name,
                                                 numpy_style=_name != "pow")
for _name in TO_INT:
    BUILTINS[f"numpy.{_name}"] = MathFunction(f"numpy.{_name}", "to_int", _name, numpy_style=True)
for _name in PREDICATES:
    BUILTINS[f"numpy.{_name}"] = MathFunction(f"numpy.{_name}", "predicate", _name)
BUILTINS["numpy.degrees"] = MathFunction("numpy.degrees", "angle", "degrees")
BUILTINS["numpy.radians"] = MathFunction("numpy.radians", "angle", "radians")
del BUILTINS["numpy.gamma"], BUILTINS["numpy.lgamma"], BUILTINS["numpy.erf"], \
    BUILTINS["numpy.erfc"]
# np.remainder is Python's % (the sign of the divisor: numpy's loops), not C99's remainder
del BUILTINS["numpy.remainder"]
