"""numpy ufuncs called in kernels: `np.sin(x, out)`, `np.greater(a, b, out=o)`, `np.maximum(a, b)`.

With an output array the call runs numpy's loop over the output's elements in the calling thread
(inputs broadcast against it as numpy broadcasts them) and returns the output, as numba-cuda
does; a kernel cannot allocate, so array inputs need an output array. On scalars it is the
element function itself. The loop (the types computed in) is chosen by numba's rule over
numpy's own loop list (`np.greater.types`): the first loop every input casts to safely (an
integer to any float when the inputs mix integers and floats) whose result casts to the output
"same_kind"; float16 and object loops are skipped. Element functions follow numpy's C loops:
maximum/minimum propagate NaN, fmax/fmin skip it, complex numbers order lexicographically, and a
signed/unsigned 64-bit comparison compares the values (numpy >= 1.25).

The numpy names of math functions that had a scalar form before (np.sin(x)) keep it: that
builtin types and lowers their scalar calls; this module adds the array form around it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import complexmath as cm
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin, ufunc_math
from gpunb.compiler.typed import Typed
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError
from gpunb.foundation.kernel_errors import BROADCAST_MESSAGE

_SUPPORTED_CHARS = set("?bBhHiIlLqQfdFD")  # numba's loops: no float16, long double, objects


@dataclass(frozen=True, slots=True)
class Loop:
    """The numpy loop a call runs: the types its inputs are converted to, and its result."""

    inputs: tuple
    result: t.Type  # a Tuple of the results for a ufunc of several (np.divmod)


@dataclass(frozen=True, slots=True)
class Delegated:
    """A scalar call typed by the math builtin of the same numpy name; its own typing fact."""

    data: object


@dataclass(frozen=True, slots=True)
class ArrayForm:
    """`np.f(inputs..., out)`: which inputs are arrays is in the call's argument types."""

    loop: Loop
    out_keyword: bool  # out= given as a keyword (else the last positional argument)


def find_loop(ufunc: np.ufunc, inputs: tuple, outputs: tuple = ()) -> Loop | None:
    """numba's ufunc_find_matching_loop over numpy's loop list (first viable loop wins)."""
    try:
        in_dtypes = [t.to_dtype(a) for a in inputs]
        out_dtypes = [t.to_dtype(a) for a in outputs]
    except (TypeError, ValueError, KeyError):
        return None
    mixed = any(d.kind in "iu" for d in in_dtypes) and any(d.kind in "cf" for d in in_dtypes)

    def can_cast(src, dst, casting):
        src, dst = np.dtype(src), np.dtype(dst)
        if mixed and src.kind in "iu" and dst.kind in "cf":
            return True  # np.power(float32, int32) computes in float32
        return bool(np.can_cast(src, dst, casting))

    for candidate in ufunc.types:
        ins, outs = candidate.split("->")
        if not set(ins + outs) <= _SUPPORTED_CHARS:
            continue
        if not all(can_cast(d, c, "safe") for d, c in zip(in_dtypes, ins, strict=True)):
            continue
        if not all(can_cast(c, d, "same_kind") for d, c in zip(out_dtypes, outs, strict=False)):
            continue
        results = tuple(t.from_dtype(np.dtype(c)) for c in outs)
        return Loop(tuple(t.from_dtype(np.dtype(c)) for c in ins),
                    results[0] if len(results) == 1 else t.Tuple(results))
    return None


# ---- element functions: (low, values converted to loop.inputs, loop) -> value of loop.result --

_FLOAT_MATH = {"sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos",
               "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
               "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "exp": "exp",
               "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
               "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "cbrt": "cbrt",
               "arctan2": "atan2", "hypot": "hypot", "copysign": "copysign",
               "nextafter": "nextafter", "fmod": "fmod", "floor": "floor", "ceil": "ceil",
               "trunc": "trunc", "rint": "rint", "fabs": "fabs"}


def _complex_log2(f, x, y):
    re, im = cm.log(f, x, y)
    return f.div(re, f.c(math.log(2.0))), f.div(im, f.c(math.log(2.0)))


_COMPLEX_MATH = {"sin": cm.sin, "cos": cm.cos, "tan": cm.tan, "arcsin": cm.asin,
                 "arccos": cm.acos, "arctan": cm.atan, "sinh": cm.sinh, "cosh": cm.cosh,
                 "tanh": cm.tanh, "arcsinh": cm.asinh, "arccosh": cm.acosh,
                 "arctanh": cm.atanh, "exp": cm.exp, "log": cm.log, "log10": cm.log10,
                 "log2": _complex_log2, "sqrt": cm.sqrt}
_ANGLES = {"deg2rad": math.pi / 180.0, "radians": math.pi / 180.0,
           "rad2deg": 180.0 / math.pi, "degrees": 180.0 / math.pi}
_COMPARISONS = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
                "equal": "==", "not_equal": "!="}
_PREDICATES = ("isnan", "isinf", "isfinite")
_LOGICAL = ("logical_and", "logical_or", "logical_xor", "logical_not")
_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "invert")
_EXTREMES = ("maximum", "minimum", "fmax", "fmin")
_ARITHMETIC = ("add", "subtract", "multiply", "divide", "negative", "positive", "square",
               "absolute", "conjugate")


# numpy's integer and sign ufuncs on real loops: the kinds of input each computes
_REAL_OPS = {"sign": (t.Integer, t.Float, t.Complex), "floor_divide": (t.Integer, t.Float),
             "left_shift": (t.Integer,), "right_shift": (t.Integer,), "signbit": (t.Float,),
             "remainder": (t.Integer, t.Float), "power": (t.Integer, t.Float)}


# ufuncs computed from other math, numpy's loops for each (numba-cuda's ufunc table has them):
# which kinds of first input each computes
_COMPOSED = {"logaddexp": (t.Float,), "logaddexp2": (t.Float,), "ldexp": (t.Float,),
             "reciprocal": (t.Float, t.Complex), "float_power": (t.Float, t.Complex)}
# ufunc_math's element functions: the kinds of input each computes
_INTEGER_MATH = {"gcd": (t.Integer,), "lcm": (t.Integer,), "spacing": (t.Float,)}
# ufuncs of two results: the element functions of each
_PAIRS = {"divmod": ("floor_divide", "remainder")}


def has_element_function(name: str, loop: Loop) -> bool:
    """Whether gpunb can compute this loop of the ufunc (complex math exists for some)."""
    if name in ("fmod", "reciprocal") and isinstance(loop.inputs[0], t.Integer):
        return True  # numpy's integer loops ('ll->l')
    if name in _PREDICATES:
        return True  # every loop: 'D->?' tests both parts, an integer is finite
    if name in _COMPOSED:
        return isinstance(loop.inputs[0], _COMPOSED[name])
    if name in _INTEGER_MATH:
        return isinstance(loop.inputs[0], _INTEGER_MATH[name]) and \
            not isinstance(loop.inputs[0], t.Boolean)
    if name in _PAIRS:
        return all(has_element_function(part, Loop(loop.inputs, result)) for part, result in
                   zip(_PAIRS[name], loop.result.items, strict=True))
    if name in _REAL_OPS:
        return isinstance(loop.inputs[0], _REAL_OPS[name]) and \
            not isinstance(loop.inputs[0], t.Boolean)
    if name in _FLOAT_MATH or name in _COMPLEX_MATH:
        kind = loop.inputs[0]
        if isinstance(kind, t.Complex):
            return name in _COMPLEX_MATH
        return isinstance(kind, t.Float) and name in _FLOAT_MATH
    if name in _ANGLES:
        return isinstance(loop.inputs[0], t.Float)
    if name in ("divide",):
        return isinstance(loop.result, (t.Float, t.Complex))
    return name in _COMPARISONS or name in _LOGICAL or name in _BITWISE or \
        name in _EXTREMES or name in _ARITHMETIC


def element(low, name: str, xs: list, loop: Loop):
    """One element of ufunc `name` on values already of the loop's input types."""
    b = low.builder
    ty = loop.inputs[0]
    if name == "fmod" and isinstance(ty, t.Integer):
        return ufunc_math.integer_fmod(b, xs[0], xs[1], ty)
    if name == "reciprocal" and isinstance(ty, t.Integer):
        return ufunc_math.integer_reciprocal(b, xs[0], ty)
    if name in _PREDICATES:
        return ufunc_math.predicate(low, name, xs[0], ty)
    if name in _COMPARISONS:
        return _compare(b, _COMPARISONS[name], xs[0], xs[1], loop.inputs)
    if name in _LOGICAL:
        truths = [ops.truth(b, x, it) for x, it in zip(xs, loop.inputs, strict=True)]
        if name == "logical_not":
            return b.not_(truths[0])
        return {"logical_and": b.and_, "logical_or": b.or_, "logical_xor": b.xor}[name](*truths)
    if name in _BITWISE:
        if name == "invert":
            return b.not_(xs[0])
        return {"bitwise_and": b.and_, "bitwise_or": b.or_, "bitwise_xor": b.xor}[name](*xs)
    if name in _EXTREMES:
        return _extreme(b, name, xs[0], xs[1], ty)
    if name in _ANGLES:
        return b.fmul(xs[0], ir.Constant(xs[0].type, _ANGLES[name]))
    if name in _ARITHMETIC or name == "divide":
        return _arithmetic(low, name, xs, loop)
    if name in _REAL_OPS:
        return _real_op(low, name, xs, loop)
    if name in _COMPOSED:
        return ufunc_math.composed(low, name, xs, loop)
    if name in _INTEGER_MATH:
        f = getattr(ufunc_math, name)
        return f(low, xs[0], ty) if name == "spacing" else f(low, xs[0], xs[1], ty)
    if name in _PAIRS:
        value = ir.Constant(dm.value_type(loop.result), ir.Undefined)
        for k, (part, result) in enumerate(zip(_PAIRS[name], loop.result.items, strict=True)):
            value = b.insert_value(value, element(low, part, xs, Loop(loop.inputs, result)), k)
        return value
    if isinstance(ty, t.Complex):
        f = cm.FloatOps(b, low.math_call, ty.component)
        re, im = _COMPLEX_MATH[name](f, b.extract_value(xs[0], 0), b.extract_value(xs[0], 1))
        return ops.make_complex(b, re, im, ty)
    return low.math_call(_FLOAT_MATH[name], xs, list(loop.inputs), loop.result)


def _real_op(low, name: str, xs: list, loop: Loop):
    """sign (numpy's: 1, -1, 0, or the NaN itself), signbit, floor_divide, remainder, power and
    the shifts (as Python's //, %, ** and << / >> on the loop's type, numba's)."""
    import ast

    b, ty = low.builder, loop.inputs[0]
    if name == "signbit":
        bits = ir.IntType(t.sizeof(ty) * 8)
        return b.icmp_signed("<", b.bitcast(xs[0], bits), ir.Constant(bits, 0))
    if name == "sign" and isinstance(ty, t.Complex):
        return ufunc_math.complex_sign(low, xs[0], ty)
    if name == "sign":
        x, one = xs[0], ir.Constant(xs[0].type, 1)
        zero, minus = ir.Constant(x.type, 0), ir.Constant(x.type, -1)
        above, below = (_compare(b, sym, x, zero, (ty, ty)) for sym in (">", "<"))
        rest = x if isinstance(ty, t.Float) else zero  # 0 for ±0, the NaN for a NaN
        return b.select(above, one, b.select(below, minus, b.select(
            _compare(b, "==", x, zero, (ty, ty)), zero, rest)))
    op = {"floor_divide": ast.FloorDiv(), "left_shift": ast.LShift(),
          "right_shift": ast.RShift(), "remainder": ast.Mod(), "power": ast.Pow()}[name]
    xs = [ops.cast(b, x, it, loop.result) for x, it in zip(xs, loop.inputs, strict=True)]
    return ops.binary(b, op, xs[0], xs[1], loop.result, low.math_call)


def _compare(b, sym: str, x, y, types: tuple):
    tx, ty = types
    if isinstance(tx, t.Complex):
        return _complex_compare(b, sym, x, y)
    if isinstance(tx, t.Integer) and isinstance(ty, t.Integer) and tx.signed != ty.signed:
        # 'qQ->?' / 'Qq->?': a negative signed value is below every unsigned one
        signed, value = (x, y) if tx.signed else (y, x)
        negative = b.icmp_signed("<", signed, ir.Constant(signed.type, 0))
        unsigned = b.icmp_unsigned(sym, x, y)
        below = sym in ("<", "<=", "!=") if tx.signed else sym in (">", ">=", "!=")
        return b.select(negative, ir.Constant(dm.i1, int(below)), unsigned)
    if isinstance(tx, t.Float):
        return b.fcmp_unordered(sym, x, y) if sym == "!=" else b.fcmp_ordered(sym, x, y)
    if isinstance(tx, t.Boolean) or not tx.signed:
        return b.icmp_unsigned(sym, x, y)
    return b.icmp_signed(sym, x, y)


def _complex_compare(b, sym: str, x, y):
    """numpy's CGT/CGE/CLT/CLE/CEQ/CNE: lexicographic, a NaN imaginary part spoils the real
    comparison."""
    xr, xi, yr, yi = (b.extract_value(v, k) for v in (x, y) for k in (0, 1))
    if sym in ("==", "!="):
        eq = b.and_(b.fcmp_ordered("==", xr, yr), b.fcmp_ordered("==", xi, yi))
        return eq if sym == "==" else b.not_(eq)
    strict = sym[0]
    no_nan = b.and_(b.fcmp_ordered("ord", xi, xi), b.fcmp_ordered("ord", yi, yi))
    first = b.and_(b.fcmp_ordered(strict, xr, yr), no_nan)
    return b.or_(first, b.and_(b.fcmp_ordered("==", xr, yr), b.fcmp_ordered(sym, xi, yi)))


def _is_nan(b, x, ty: t.Type):
    if isinstance(ty, t.Complex):
        return b.or_(_is_nan(b, b.extract_value(x, 0), ty.component),
                     _is_nan(b, b.extract_value(x, 1), ty.component))
    if isinstance(ty, t.Float):
        return b.fcmp_unordered("uno", x, x)
    return ir.Constant(dm.i1, 0)


def _extreme(b, name: str, x, y, ty: t.Type):
    """numpy: maximum = (x >= y || isnan(x)) ? x : y; fmax = (x >= y || isnan(y)) ? x : y."""
    sym = ">=" if name in ("maximum", "fmax") else "<="
    if isinstance(ty, t.Complex):
        ordered = _complex_compare(b, sym, x, y)
    elif isinstance(ty, t.Float):
        ordered = b.fcmp_ordered(sym, x, y)
    else:
        ordered = _compare(b, sym, x, y, (ty, ty))
    keep_x = b.or_(ordered, _is_nan(b, x if name in ("maximum", "minimum") else y, ty))
    return b.select(keep_x, x, y)


def _arithmetic(low, name: str, xs: list, loop: Loop):
    import ast

    b, ty = low.builder, loop.result
    if name == "absolute" and isinstance(loop.inputs[0], t.Complex):  # 'F->f': |z|
        z, ct = xs[0], loop.inputs[0]
        return low.math_call("hypot", [b.extract_value(z, 0), b.extract_value(z, 1)],
                             [ct.component] * 2, ct.component)
    xs = [ops.cast(b, x, it, ty) for x, it in zip(xs, loop.inputs, strict=True)]
    if name == "positive" or name == "conjugate" and not isinstance(ty, t.Complex):
        return xs[0]  # +z is z, complex or not
    if name == "conjugate":
        return b.insert_value(xs[0], b.fneg(b.extract_value(xs[0], 1)), 1)
    if name == "negative":
        return ops.negate(b, xs[0], ty) if not isinstance(ty, t.Boolean) else b.not_(xs[0])
    if name == "absolute":
        if isinstance(ty, t.Float):
            return low.math_call("fabs", xs, [ty], ty)
        if isinstance(ty, t.Integer) and ty.signed:
            negative = b.icmp_signed("<", xs[0], ir.Constant(xs[0].type, 0))
            return b.select(negative, b.neg(xs[0]), xs[0])
        return xs[0]
    if name == "square":
        xs = [xs[0], xs[0]]
        name = "multiply"
    if isinstance(ty, t.Boolean):  # numpy's '??->?' loops: add is or, multiply is and
        return (b.and_ if name == "multiply" else b.or_)(*xs) if name != "subtract" else \
            b.xor(*xs)
    op = {"add": ast.Add(), "subtract": ast.Sub(), "multiply": ast.Mult(),
          "divide": ast.Div()}[name]
    return ops.binary(b, op, xs[0], xs[1], ty, low.math_call)


# ---- the builtin --------------------------------------------------------------------------------


class NumpyUfunc(Builtin):
    """np.<ufunc> in kernels: the scalar form (delegated to `scalar` when there is one) and the
    array form with an output array."""

    def __init__(self, ufunc: np.ufunc, scalar: Builtin | None = None):
        self.ufunc = ufunc
        self.scalar = scalar
        self.name = f"numpy.{ufunc.__name__}"

    def label(self) -> str:
        return f"np.{self.ufunc.__name__}()"

    # ---- typing -------------------------------------------------------------------------------

    def type_call(self, inf, node, argtypes, kwtypes):
        uf = self.ufunc
        if set(kwtypes) - {"out"}:
            raise inf.error(node, f"{self.label()} in GPU code takes no keyword but out=",
                            "dtype=, where= and casting= are not supported")
        outs = list(argtypes[uf.nin:])
        if "out" in kwtypes:
            if outs:
                raise inf.error(node, f"{self.label()} got its output both as an argument and "
                                "as out=")
            out = kwtypes["out"]  # out=(q, r) for a ufunc of several results
            outs = list(out.items) if isinstance(out, t.Tuple) else [out]
        if len(argtypes) < uf.nin or len(outs) > uf.nout:
            raise inf.error(node, f"{self.label()} takes {uf.nin} input(s) and at most "
                            f"{uf.nout} output(s), got {len(argtypes) + len(kwtypes)} arguments")
        inputs = tuple(argtypes[:uf.nin])
        for a in inputs:
            if not (t.is_number(a) or isinstance(a, t.Array) and t.is_number(a.dtype)):
                raise inf.error(node, f"{self.label()} needs numbers or arrays of numbers, "
                                f"got {a}")
        if not outs:
            if any(isinstance(a, t.Array) for a in inputs):
                raise inf.error(node, f"{self.label()} of an array needs an output array in GPU "
                                "code (a kernel cannot allocate one)",
                                f"pass one: np.{uf.__name__}(..., out) writes into `out`")
            return self.type_scalar(inf, node, argtypes, kwtypes, inputs)
        return self.type_array(inf, node, inputs, outs, "out" in kwtypes)

    def type_scalar(self, inf, node, argtypes, kwtypes, inputs):
        if self.scalar is not None and not self.integer_loop(inputs):
            try:
                typed = self.scalar.type_call(inf, node, argtypes, kwtypes)
            except CompileError:
                # the math function refuses what the ufunc has a loop for (np.abs of a
                # complex: its 'F->f' loop, |z|): the ufunc's own loop, else that error
                if self.ufunc.nout != 1 or find_loop(self.ufunc, _strengthen(
                        inputs, [n in inf.weak for n in node.args[:self.ufunc.nin]]),
                        ()) is None:
                    raise
            else:
                if isinstance(typed, Typed):
                    return Typed(typed.result, Delegated(typed.data))
                return Typed(typed, Delegated(None))
        if self.ufunc.nout != 1 and self.ufunc.__name__ not in _PAIRS:
            raise inf.error(node, f"{self.label()} has {self.ufunc.nout} results: not supported "
                            "in GPU code")
        weak = [n in inf.weak for n in node.args[:self.ufunc.nin]]
        loop = self.choose(inf, node, _strengthen(inputs, weak), ())
        return Typed(loop.result, loop)

    def integer_loop(self, inputs: tuple) -> bool:
        """Integers and bools take numpy's integer loop where the ufunc has one that gpunb
        computes (np.power, np.fmod, np.remainder: 'll->l'), as numba does, before the math
        function of the same name (which computes in a float)."""
        if self.ufunc.nout != 1 or not all(isinstance(a, (t.Integer, t.Boolean))
                                           for a in inputs):
            return False
        loop = find_loop(self.ufunc, inputs, ())
        return loop is not None and isinstance(loop.result, t.Integer) and \
            has_element_function(self.ufunc.__name__, loop)

    def type_array(self, inf, node, inputs, outs, out_keyword):
        nout = self.ufunc.nout
        if nout != 1 and self.ufunc.__name__ not in _PAIRS:
            raise inf.error(node, f"{self.label()} has {nout} results: not supported "
                            "in GPU code")
        if len(outs) != nout:
            raise inf.error(node, f"{self.label()} has {nout} results: give an output array "
                            f"for each ({len(outs)} given)",
                            f"np.{self.ufunc.__name__}(x, y, q, r) or out=(q, r)")
        out = outs[0]
        for o in outs:
            if not isinstance(o, t.Array) or not t.is_number(o.dtype):
                raise inf.error(node, f"the output of {self.label()} must be an array of "
                                f"numbers, got {o}")
            if o.readonly:
                raise inf.error(node, f"the output of {self.label()} is read-only ({o})")
            if o.ndim != out.ndim:
                raise inf.error(node, f"the outputs of {self.label()} differ in dimensions "
                                f"({out.ndim} and {o.ndim})")
        for a in inputs:
            if isinstance(a, t.Array) and a.ndim > out.ndim:
                raise inf.error(node, f"{self.label()}: an input of {a.ndim} dimensions does not "
                                f"broadcast to an output of {out.ndim}",
                                "give the output at least as many dimensions as each input")
        elements = tuple(a.dtype if isinstance(a, t.Array) else a for a in inputs)
        loop = self.choose(inf, node, elements, tuple(o.dtype for o in outs))
        return Typed(out if nout == 1 else t.Tuple(tuple(outs)), ArrayForm(loop, out_keyword))

    def choose(self, inf, node, inputs: tuple, outputs: tuple) -> Loop:
        loop = find_loop(self.ufunc, inputs, outputs)
        where = f" into {outputs[0]}" if outputs else ""
        if loop is None:
            raise inf.error(node, f"{self.label()} has no loop for "
                            f"({', '.join(map(str, inputs))}){where}",
                            f"numpy's loops: {', '.join(self.ufunc.types)}")
        if not has_element_function(self.ufunc.__name__, loop):
            raise inf.error(node, f"{self.label()} of "
                            f"({', '.join(map(str, loop.inputs))}) is not supported in GPU code")
        return loop

    # ---- lowering -----------------------------------------------------------------------------

    def lower_call(self, low, node, call):
        if isinstance(call.data, Delegated):
            inner = dataclasses.replace(call, builtin=self.scalar, data=call.data.data)
            return self.scalar.lower_call(low, node, inner)
        b = low.builder
        nin = self.ufunc.nin
        values = [low.expr(n) for n in node.args]
        if isinstance(call.data, Loop):
            xs = [ops.cast(b, v, at, it) for v, at, it in
                  zip(values, call.argtypes, call.data.inputs, strict=True)]
            return element(low, self.ufunc.__name__, xs, call.data)
        form: ArrayForm = call.data
        if form.out_keyword:
            out_node = next(k.value for k in node.keywords if k.arg == "out")
            out_value, out_t = low.expr(out_node), low.type_of(out_node)
        else:
            out_value, out_t = values[nin], call.argtypes[nin]
            if self.ufunc.nout > 1:
                out_t = t.Tuple(tuple(call.argtypes[nin:]))
                out_value = ir.Constant(dm.value_type(out_t), ir.Undefined)
                for k, v in enumerate(values[nin:]):
                    out_value = b.insert_value(out_value, v, k)
        outs = [(b.extract_value(out_value, k), o) for k, o in enumerate(out_t.items)] \
            if isinstance(out_t, t.Tuple) else [(out_value, out_t)]
        ins = list(zip(values[:nin], call.argtypes[:nin], strict=True))
        self.lower_loop(low, node, ins, outs, form.loop)
        return out_value

    def lower_loop(self, low, node, ins: list, outs: list, loop: Loop) -> None:
        """for every index of the outputs: out[index] = f(inputs broadcast at index) (with
        several results, each output gets its own)."""
        b = low.builder
        out_t = outs[0][1]
        out_parts = [arrays.parts(b, value, ty.ndim) for value, ty in outs]
        out_shape = out_parts[0][1]
        for parts in out_parts[1:]:
            self.check_same_shape(low, node, parts[1], out_shape)
        sources = []
        for value, ty in ins:
            if not isinstance(ty, t.Array):
                sources.append((value, ty, None))
                continue
            parts = arrays.parts(b, value, ty.ndim)
            self.check_broadcast(low, node, parts[1], out_shape)
            sources.append((value, ty, parts))
        order = list(range(out_t.ndim))
        if out_t.layout == "F":
            order.reverse()

        def body(indices_in_order):
            index = [None] * out_t.ndim
            for axis, i in zip(order, indices_in_order, strict=True):
                index[axis] = i
            xs = []
            for (value, ty, parts), it in zip(sources, loop.inputs, strict=True):
                if parts is None:
                    xs.append(ops.cast(b, value, ty, it))
                    continue
                data, shape, strides = parts
                mine = index[out_t.ndim - ty.ndim:]
                mine = [b.select(b.icmp_signed("==", extent, ir.Constant(dm.i64, 1)),
                                 ir.Constant(dm.i64, 0), i) for i, extent in zip(mine, shape,
                                                                                   strict=True)]
                pointer = arrays.element_pointer(b, ty, data, shape, strides, mine)
                item = arrays.load_element(b, ty.dtype, pointer, arrays.access_alignment(ty))
                xs.append(ops.cast(b, item, ty.dtype, it))
            result = element(low, self.ufunc.__name__, xs, loop)
            results = [(result, loop.result)] if len(outs) == 1 else \
                [(b.extract_value(result, k), r) for k, r in enumerate(loop.result.items)]
            for (value, ty), (_, o_t), (data, shape, strides) in zip(results, outs, out_parts,
                                                                     strict=True):
                pointer = arrays.element_pointer(b, o_t, data, shape, strides, index)
                arrays.store_element(b, o_t.dtype, pointer, ops.cast(b, value, ty, o_t.dtype),
                                     arrays.access_alignment(o_t))

        low.loop_nest([out_shape[axis] for axis in order], body)

    def check_same_shape(self, low, node, shape: list, out_shape: list) -> None:
        """The outputs of a ufunc of several results have one shape (checked at run time)."""
        b = low.builder
        bad = ir.Constant(dm.i1, 0)
        for extent, out_extent in zip(shape, out_shape, strict=True):
            bad = b.or_(bad, b.icmp_signed("!=", extent, out_extent))
        fail, ok = low.new_block("ufunc.outs"), low.new_block("ufunc.outs_ok")
        b.cbranch(bad, fail, ok)
        b.position_at_end(fail)
        low.raise_exception(node, "ValueError", "the output arrays have different shapes",
                            report=True)
        b.position_at_end(ok)

    def check_broadcast(self, low, node, shape: list, out_shape: list) -> None:
        """numpy's rule, checked at run time: each input extent is 1 or the output's."""
        b = low.builder
        bad = ir.Constant(dm.i1, 0)
        for extent, out_extent in zip(reversed(shape), reversed(out_shape), strict=False):
            fits = b.or_(b.icmp_signed("==", extent, out_extent),
                         b.icmp_signed("==", extent, ir.Constant(dm.i64, 1)))
            bad = b.or_(bad, b.not_(fits))
        fail, ok = low.new_block("ufunc.shape"), low.new_block("ufunc.shape_ok")
        b.cbranch(bad, fail, ok)
        b.position_at_end(fail)
        low.raise_exception(node, "ValueError", BROADCAST_MESSAGE, report=True)
        b.position_at_end(ok)


def _strengthen(argtypes: tuple, weak: list) -> tuple:
    """A weak float literal takes the width of a float among the other arguments (gpunb's rule
    for literals, as in arithmetic)."""
    floats = [a for a, w in zip(argtypes, weak, strict=True) if not w and isinstance(a, t.Float)]
    if not floats or not any(weak):
        return argtypes
    width = max(floats, key=lambda f: f.bitwidth)
    return tuple(width if w and isinstance(a, t.Float) else a
                 for a, w in zip(argtypes, weak, strict=True))


_NEW_NAMES = (tuple(_COMPARISONS) + _LOGICAL + _BITWISE + _EXTREMES + _ARITHMETIC +
              tuple(_REAL_OPS) + tuple(_COMPOSED) + tuple(_INTEGER_MATH) + tuple(_PAIRS) +
              _PREDICATES +
              ("divide", "deg2rad", "rad2deg", "exp2", "expm1", "log1p", "rint"))


def wrap(table: dict) -> dict:
    """The numpy ufunc entries of the builtin table: every ufunc with an element function,
    around the scalar builtin already there for its name (np.sin's MathFunction)."""
    wrapped = {}
    names = set(_NEW_NAMES) | set(_FLOAT_MATH) | set(_COMPLEX_MATH) | set(_ANGLES)
    for name in sorted(names):
        ufunc = getattr(np, name, None)
        if not isinstance(ufunc, np.ufunc):
            continue
        key = f"numpy.{ufunc.__name__}"
        wrapped[key] = NumpyUfunc(ufunc, table.get(key))
    return wrapped
