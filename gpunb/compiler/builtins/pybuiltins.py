"""Python builtins in kernels: len, abs, min, max, round, divmod, pow (int/float/bool casts are
handled as conversions by inference)."""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import datetimes, promotion
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin, debugging
from gpunb.foundation import types as t


class Len(Builtin):
    name = "len"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or not isinstance(argtypes[0], (t.Array, t.Tuple)):
            raise inf.error(node, "len() takes one array or tuple")
        return t.int64

    def lower_call(self, low, node, call):
        at = call.argtypes[0]
        value = low.expr(node.args[0])
        if isinstance(at, t.Tuple):
            return ir.Constant(dm.i64, len(at.items))
        if at.ndim == 0:
            raise low.error(node, "len() of a 0-d array")
        return low.builder.extract_value(value, [1, 0])


class Abs(Builtin):
    name = "abs"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) == 1 and isinstance(argtypes[0], t.DateTime) and \
                argtypes[0].kind == "m":
            return argtypes[0]  # abs(timedelta64)
        if len(argtypes) != 1 or not t.is_number(argtypes[0]):
            raise inf.error(node, "abs() takes one number")
        a = argtypes[0]
        if isinstance(a, t.Complex):
            return a.component
        if isinstance(a, t.BFloat16):
            return t.float32  # numba-cuda: no bfloat16 case, float32 is the best-rated one
        return t.int8 if isinstance(a, t.Boolean) else a  # numba: abs keeps the width

    def lower_call(self, low, node, call):
        b = low.builder
        a = call.argtypes[0]
        x = low.expr(node.args[0])
        if isinstance(a, t.DateTime):
            return datetimes.absolute(b, x)
        if isinstance(a, t.BFloat16):
            a, x = t.float32, ops.cast(b, x, a, t.float32)
        if isinstance(a, t.Float):
            return low.math_call("fabs", [x], [a], a)
        if isinstance(a, t.Complex):
            re, im = b.extract_value(x, 0), b.extract_value(x, 1)
            return low.math_call("hypot", [re, im], [a.component] * 2, a.component)
        if isinstance(a, t.Boolean):
            return b.zext(x, dm.i8)
        if not a.signed:
            return x
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)


class MinMax(Builtin):
    def __init__(self, name: str, datetimes: bool = False):
        self.name = name
        self.datetimes = datetimes  # Python's min/max order datetimes too (numpy's do not)

    def operands(self, argtypes, nodes):
        if len(argtypes) == 1 and isinstance(argtypes[0], t.Tuple):
            return list(argtypes[0].items), None
        return list(argtypes), nodes

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or not argtypes:
            raise inf.error(node, f"{self.name}() takes numbers or one tuple")
        if len(argtypes) == 1 and _iterable_array(argtypes[0]):  # max(a): over a's items
            return argtypes[0].dtype
        types, nodes = self.operands(argtypes, node.args)
        if self.datetimes and types and datetimes.involved(*types):
            return _common_datetime(inf, node, types)
        if len(types) < 1 or not all(t.is_number(a) and not isinstance(a, t.Complex)
                                     for a in types):
            raise inf.error(node, f"{self.name}() needs real numbers, got "
                            f"{', '.join(map(str, types))}")
        weak = [nodes is not None and n in inf.weak for n in (nodes or [None] * len(types))]
        return _common(types, weak)

    def lower_call(self, low, node, call):
        b = low.builder
        result = call.result
        if len(call.argtypes) == 1 and isinstance(call.argtypes[0], t.Array):
            return _array_extreme(low, node, call.argtypes[0], low.expr(node.args[0]),
                                  self.name)
        if len(call.argtypes) == 1 and isinstance(call.argtypes[0], t.Tuple):
            tup = low.expr(node.args[0])
            values = [ops.cast(b, b.extract_value(tup, k), it, result)
                      for k, it in enumerate(call.argtypes[0].items)]
        else:
            values = [ops.cast(b, low.expr(n), low.type_of(n), result) for n in node.args]
        op = ast.Lt() if self.name == "min" else ast.Gt()
        acc = values[0]
        for v in values[1:]:
            if isinstance(result, t.Float):
                # Python: min(a, b) keeps a unless b < a; NaN in b is ignored like Python's
                better = ops.compare(b, op, v, acc, result)
            else:
                better = ops.compare(b, op, v, acc, result)
            acc = b.select(better, v, acc)
        return acc


def _iterable_array(ty: t.Type) -> bool:
    """A 1-d array of real numbers: Python's max/min/sum iterate it (numba's builtins)."""
    return isinstance(ty, t.Array) and ty.ndim == 1 and t.is_number(ty.dtype) and \
        not isinstance(ty.dtype, t.Complex)


def _array_extreme(low, node, arr_t: t.Array, value, name: str):
    """Python's max(a) / min(a): the first item, replaced by each later one that compares
    greater (less), so a leading NaN stays and later NaNs are skipped, as numba's max(iterable)
    does; an empty array raises ValueError."""
    from gpunb.compiler import arrays
    from gpunb.compiler.builtins.reductions import for_each

    b, dtype = low.builder, arr_t.dtype
    size = arrays.attribute(b, arr_t, value, "size", t.int64)
    empty_bb, ok_bb = low.new_block(f"{name}.empty"), low.new_block(f"{name}.items")
    b.cbranch(b.icmp_signed("==", size, ir.Constant(dm.i64, 0)), empty_bb, ok_bb)
    b.position_at_end(empty_bb)
    low.raise_exception(node, "ValueError", f"{name}() arg is an empty sequence")
    b.position_at_end(ok_bb)
    best = low.alloca(dm.value_type(dtype), f"{name}.best")
    seen = low.alloca(dm.i1, f"{name}.seen")
    b.store(ir.Constant(dm.i1, 0), seen)
    op = ast.Gt() if name == "max" else ast.Lt()

    def visit(item):
        first = b.not_(b.load(seen))
        better = ops.compare(b, op, item, b.select(first, item, b.load(best)), dtype)
        b.store(b.select(b.or_(first, better), item, b.load(best)), best)
        b.store(ir.Constant(dm.i1, 1), seen)

    for_each(low, arr_t, value, visit)
    return b.load(best)


def _common_datetime(inf, node, types) -> t.Type:
    """min/max of datetimes (or of timedeltas): numba's comparison unit, the finer one."""
    common = types[0]
    try:
        for other in types[1:]:
            common = datetimes.compare_type(None, common, other)
    except datetimes.DateTimeTypeError as exc:
        raise inf.error(node, str(exc)) from None
    if len(types) == 1:
        raise inf.error(node, "min()/max() of one datetime: pass two or more")
    return common


def _common(types, weak) -> t.Type:
    """numba types min/max by np.promote_types of the arguments (min(int8, int16) is int16);
    a weak float literal takes the width of a float among the others (gpunb's weak literals)."""
    floats = [a for a, w in zip(types, weak, strict=True) if not w and isinstance(a, t.Float)]
    widest = max(floats, key=lambda f: f.bitwidth) if floats else None
    effective = [widest if w and widest is not None else a
                 for a, w in zip(types, weak, strict=True)]
    return promotion.promote(*effective)


class Round(Builtin):
    name = "round"

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) not in (1, 2) or not t.is_number(argtypes[0]):
            raise inf.error(node, "round() takes a number and optional ndigits")
        a = argtypes[0]
        if isinstance(a, t.Complex):
            raise inf.error(node.args[0], "round() takes a real number")
        if len(argtypes) == 1:
            return t.int64
        if not isinstance(argtypes[1], (t.Integer, t.Boolean)):
            raise inf.error(node.args[1], "ndigits must be an integer")
        # numba's Round cases are (float32, intp) and (float64, intp): small integers convert
        # safely to float32, wider ones to float64
        if isinstance(a, t.Float):
            return t.float32 if a.bitwidth <= 32 else a
        return t.float32 if promotion.conversion(a, t.float32) == promotion.SAFE else t.float64

    def lower_call(self, low, node, call):
        b = low.builder
        a = call.argtypes[0]
        x = low.expr(node.args[0])
        if len(node.args) == 1:
            # numba types round() of an integer as round() of the float it converts to safely
            # (float32 for 8/16-bit, float64 wider): round(2**62 + 1) is 2**62, as in numba
            if isinstance(a, t.Float):
                ft = a
            else:
                ft = t.float32 if promotion.conversion(a, t.float32) == promotion.SAFE \
                    else t.float64
            x = ops.cast(b, x, a, ft)
            return ops.cast(b, low.math_call("rint", [x], [ft], ft), ft, t.int64)
        nd = ops.cast(b, low.expr(node.args[1]), call.argtypes[1], t.int64)
        rounded = round_ndigits(low, ops.cast(b, x, a, t.float64), nd)
        return ops.cast(b, rounded, t.float64, call.result)


def round_ndigits(low, x, ndigits):
    """round(x, ndigits) as numba-cuda computes it (CPython's fallback double_round), in
    float64 whatever x's type: scale by 10**ndigits (in two steps past 1e22, so the scale never
    overflows), round half to even, scale back; an infinite scaled value leaves x unchanged."""
    b = low.builder
    f64 = dm.value_type(t.float64)
    zero, ten = ir.Constant(dm.i64, 0), ir.Constant(f64, 10.0)

    def power(exponent):  # 10.0 ** n by squaring, as numba's int_power_impl computes it
        return ops.power(b, ten, exponent, t.float64, t.int64, None, low.math_call)

    def rint(value):
        return low.math_call("rint", [value], [t.float64], t.float64)

    def is_inf(value):
        return b.fcmp_ordered("==", low.math_call("fabs", [value], [t.float64], t.float64),
                              ir.Constant(f64, float("inf")))

    big = b.icmp_signed(">", ndigits, ir.Constant(dm.i64, 22))
    pow1 = power(b.select(big, b.sub(ndigits, ir.Constant(dm.i64, 22)), ndigits))
    pow2 = b.select(big, ir.Constant(f64, 1e22), ir.Constant(f64, 1.0))
    scaled = b.fmul(b.fmul(x, pow1), pow2)
    up = b.fdiv(b.fdiv(rint(scaled), pow2), pow1)
    up = b.select(is_inf(scaled), x, up)
    pow_neg = power(b.neg(ndigits))
    down = b.fmul(rint(b.fdiv(x, pow_neg)), pow_neg)
    result = b.select(b.icmp_signed(">=", ndigits, zero), up, down)
    special = b.or_(is_inf(x), b.fcmp_unordered("uno", x, x))
    return b.select(special, x, result)


class DivMod(Builtin):
    name = "divmod"
    # numba's DivMod cases: (ty, ty) -> (ty, ty) for int64, uint64, float32, float64, the best
    # rated one chosen (divmod(int64, uint64) converts both to float64)
    CASES = [(ty, ty) for ty in (t.int64, t.uint64, t.float32, t.float64)]

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 2 or not all(t.is_number(a) and not isinstance(a, t.Complex)
                                         for a in argtypes):
            raise inf.error(node, "divmod() takes two real numbers")
        weak = [n in inf.weak for n in node.args]
        args = [argtypes[1 - k] if weak[k] and not weak[1 - k] and
                isinstance(argtypes[1 - k], t.Float) else argtypes[k] for k in range(2)]
        literals = tuple(n.value if isinstance(n, ast.Constant) and type(n.value) is int
                         else None for n in node.args)
        chosen = promotion.best_match(tuple(args), self.CASES, literals)
        ty = self.CASES[chosen][0] if chosen is not None else promotion.binop(
            ast.FloorDiv(), *args)
        return t.Tuple((ty, ty))

    def lower_call(self, low, node, call):
        b = low.builder
        ty = call.result.items[0]
        x = ops.cast(b, low.expr(node.args[0]), call.argtypes[0], ty)
        y = ops.cast(b, low.expr(node.args[1]), call.argtypes[1], ty)
        q = ops.binary(b, ast.FloorDiv(), x, y, ty, low.math_call)
        r = ops.binary(b, ast.Mod(), x, y, ty, low.math_call)
        out = ir.Constant(dm.value_type(call.result), ir.Undefined)
        return b.insert_value(b.insert_value(out, q, 0), r, 1)


class Pow(Builtin):
    name = "pow"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 2:
            raise inf.error(node, "pow() takes two arguments in GPU code")
        return inf.binop_type(node, ast.Pow(), argtypes[0], argtypes[1],
                              node.args[0] in inf.weak, node.args[1] in inf.weak)

    def lower_call(self, low, node, call):
        return low.arith(ast.Pow(), low.expr(node.args[0]), call.argtypes[0],
                         low.expr(node.args[1]), call.argtypes[1], call.result, node.args[1])


class Conjugate(Builtin):
    name = "complex.conjugate"

    def type_call(self, inf, node, argtypes, kwtypes):
        return inf.types[node.func.value]

    def lower_call(self, low, node, call):
        b = low.builder
        value = low.expr(node.func.value)
        if not isinstance(call.result, t.Complex):
            return value  # a real number is its own conjugate (numba has .conjugate() on them)
        return b.insert_value(value, b.fneg(b.extract_value(value, 1)), 1)


class RealImag(Builtin):
    """np.real(x) / np.imag(x): numba's overloads return x.real / x.imag, so they type and
    lower as the attribute does (a number's part; a complex array's view of its parts)."""

    def __init__(self, part: str):
        self.part, self.name = part, f"numpy.{part}"

    def type_call(self, inf, node, argtypes, kwtypes):
        ok = len(argtypes) == 1 and not kwtypes and (
            isinstance(argtypes[0], (t.Complex, t.Integer, t.Float)) or
            isinstance(argtypes[0], t.Array) and (
                isinstance(argtypes[0].dtype, t.Complex) or
                self.part == "real" and isinstance(argtypes[0].dtype, (t.Integer, t.Float))))
        if not ok:
            raise inf.error(node, f"np.{self.part}() takes one number or array of numbers, got "
                            f"({', '.join(map(str, argtypes))})")
        a = argtypes[0]
        if isinstance(a, t.Array):
            if isinstance(a.dtype, t.Complex):
                return t.Array(a.dtype.component, a.ndim, "A", a.readonly, a.aligned)
            return a
        return a.component if isinstance(a, t.Complex) else a

    def lower_call(self, low, node, call):
        from gpunb.compiler import arrays

        b, a = low.builder, call.argtypes[0]
        value = low.expr(node.args[0])
        if isinstance(a, t.Array):
            return value if call.result == a else arrays.attribute(b, a, value, self.part,
                                                                    call.result)
        if isinstance(a, t.Complex):
            return b.extract_value(value, 0 if self.part == "real" else 1)
        return value if self.part == "real" else ops.constant(a, 0)


class NotInKernels(Builtin):
    def __init__(self, name: str, hint: str):
        self.name, self.hint = name, hint

    def type_call(self, inf, node, argtypes, kwtypes):
        raise inf.error(node, f"{self.name}() cannot be used here in GPU code", self.hint)



class IsNaT(Builtin):
    """np.isnat(datetime or timedelta): whether it holds NaT."""

    name = "isnat"

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 1 or not isinstance(argtypes[0], t.DateTime):
            raise inf.error(node, "np.isnat() takes one datetime64 or timedelta64 value")
        return t.boolean

    def lower_call(self, low, node, call):
        b = low.builder
        return b.not_(datetimes.not_nat(b, low.expr(node.args[0])))


CONJUGATE = Conjugate()

BUILTINS = {
    "builtins.len": Len(),
    "builtins.abs": Abs(),
    "builtins.min": MinMax("min", datetimes=True),
    "builtins.max": MinMax("max", datetimes=True),
    "builtins.round": Round(),
    "builtins.divmod": DivMod(),
    "builtins.pow": Pow(),
    "builtins.range": NotInKernels("range", "range() can only be used in `for i in range(...)`"),
    "numpy.abs": Abs(),
    "numpy.isnat": IsNaT(),
    "numpy.real": RealImag("real"),
    "numpy.imag": RealImag("imag"),
    **debugging.BUILTINS,
}


class EnumerateTuple(Builtin):
    """enumerate(tuple[, start]) and zip(tuple, ...) build tuples at compile time; a loop over
    them is unrolled. (enumerate over range() or a 1-d array is a real loop: see
    lower.visit_For.)"""

    name = "enumerate"

    def type_call(self, inf, node, argtypes, kwtypes):
        if not argtypes or not isinstance(argtypes[0], t.Tuple):
            raise inf.error(node, "enumerate() in GPU code takes a tuple, a range() or a 1-d "
                            "array, and is used in a for loop")
        return t.Tuple(tuple(t.Tuple((t.int64, item)) for item in argtypes[0].items))

    def lower_call(self, low, node, call):
        b = low.builder
        tup = low.expr(node.args[0])
        start_node = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "start"), None)
        start = ir.Constant(dm.i64, 0) if start_node is None else ops.cast(
            b, low.expr(start_node), low.type_of(start_node), t.int64)
        out = ir.Constant(dm.value_type(call.result), ir.Undefined)
        for k, pair_t in enumerate(call.result.items):
            pair = ir.Constant(dm.value_type(pair_t), ir.Undefined)
            pair = b.insert_value(pair, b.add(start, ir.Constant(dm.i64, k)), 0)
            pair = b.insert_value(pair, b.extract_value(tup, k), 1)
            out = b.insert_value(out, pair, k)
        return out


class ZipTuples(Builtin):
    name = "zip"

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or not argtypes or not all(isinstance(a, t.Tuple) for a in argtypes):
            raise inf.error(node, "zip() in GPU code takes tuples")
        n = min(len(a.items) for a in argtypes)
        return t.Tuple(tuple(t.Tuple(tuple(a.items[k] for a in argtypes)) for k in range(n)))

    def lower_call(self, low, node, call):
        b = low.builder
        tuples = [low.expr(n) for n in node.args]
        out = ir.Constant(dm.value_type(call.result), ir.Undefined)
        for k, row_t in enumerate(call.result.items):
            row = ir.Constant(dm.value_type(row_t), ir.Undefined)
            for j, tup in enumerate(tuples):
                row = b.insert_value(row, b.extract_value(tup, k), j)
            out = b.insert_value(out, row, k)
        return out


class SumTuple(Builtin):
    name = "sum"

    def type_call(self, inf, node, argtypes, kwtypes):
        if not kwtypes and len(argtypes) == 1 and _iterable_array(argtypes[0]):
            # sum(a): Python's 0 plus each item (numba's: float32 items sum in float64)
            return t.unify_numbers(t.int64, argtypes[0].dtype) if not isinstance(
                argtypes[0].dtype, t.Boolean) else t.int64
        if kwtypes or len(argtypes) != 1 or not isinstance(argtypes[0], t.Tuple) or not all(
                t.is_number(i) for i in argtypes[0].items) or not argtypes[0].items:
            raise inf.error(node, "sum() in GPU code takes a non-empty tuple of numbers or a "
                            "1-d array")
        result = argtypes[0].items[0]
        for item in argtypes[0].items[1:]:
            result = t.unify_numbers(result, item)
        return t.int64 if isinstance(result, t.Boolean) else result

    def lower_call(self, low, node, call):
        b = low.builder
        if isinstance(call.argtypes[0], t.Array):
            from gpunb.compiler.builtins.reductions import lower_sum

            return lower_sum(low, node, call.argtypes[0], low.expr(node.args[0]), call.result)
        tup = low.expr(node.args[0])
        items = call.argtypes[0].items
        acc = ops.cast(b, b.extract_value(tup, 0), items[0], call.result)
        for k in range(1, len(items)):
            value = ops.cast(b, b.extract_value(tup, k), items[k], call.result)
            acc = ops.binary(b, ast.Add(), acc, value, call.result, low.math_call)
        return acc


class IsInstance(Builtin):
    """isinstance(value, classes): decided at compile time from the value's type (numba's rule),
    so `if isinstance(x, float):` prunes the other branch before it is typed."""

    name = "isinstance"

    def type_call(self, inf, node, argtypes, kwtypes):
        from gpunb.compiler.typed import Typed

        if kwtypes or len(argtypes) != 2:
            raise inf.error(node, "isinstance() takes a value and a class (or a tuple of them)")
        classes = argtypes[1]
        items = classes.items if isinstance(classes, t.Tuple) else (classes,)
        objects = [getattr(item, "obj", item) for item in items]
        known = [_isinstance_of(argtypes[0], obj) for obj in objects]
        if any(k is None for k in known):
            bad = objects[known.index(None)]
            raise inf.error(node.args[1], f"isinstance() in GPU code cannot test for {bad!r}",
                            "test for a number class (int, float, complex, bool), a numpy "
                            "scalar type, a kernel type such as float32, tuple or np.ndarray")
        value = any(known)
        inf.constants[node] = value
        return Typed(t.boolean, value)

    def lower_call(self, low, node, call):
        return ir.Constant(dm.value_type(t.boolean), int(call.data))


def _isinstance_of(vt: t.Type, cls) -> bool | None:
    """Whether a value of type `vt` is an instance of `cls` (None: a class GPU code cannot
    test for)."""
    import numpy as np

    from gpunb.foundation.numba_types import from_numba, is_numba_object

    if is_numba_object(cls):
        cls = from_numba(cls)
    if isinstance(cls, t.Type):
        return vt == cls
    # numba's: a Python number class is one type (int: int64, float: float64), not a family
    numbers = {bool: t.boolean, int: t.int64, float: t.float64, complex: t.complex128}
    if cls in numbers:
        return vt == numbers[cls]
    if cls in (tuple, np.ndarray):
        return isinstance(vt, t.Tuple if cls is tuple else t.Array)
    if isinstance(cls, type) and issubclass(cls, np.generic):
        try:
            return vt == t.from_dtype(np.dtype(cls))
        except TypeError:
            return None
    return None


class TupleOf(Builtin):
    """tuple(t) of a tuple: the tuple itself (numba's)."""

    name = "tuple"

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 1 or not isinstance(argtypes[0], t.Tuple):
            raise inf.error(node, "tuple() in GPU code takes one tuple")
        return t.Tuple(argtypes[0].items)

    def lower_call(self, low, node, call):
        return low.expr(node.args[0])


BUILTINS.update({
    "builtins.tuple": TupleOf(),
    "builtins.isinstance": IsInstance(),
    "builtins.enumerate": EnumerateTuple(),
    "builtins.zip": ZipTuples(),
    "builtins.sum": SumTuple(),
})


class NamedTupleBuild(Builtin):
    """`Point(x, y)` of a namedtuple class in a kernel: a tuple whose fields are named (numba's
    NamedTuple); arguments bound as the class binds them (keywords, defaults). Inference binds
    the call and records it with `Const` defaults, as calls of GPU functions are."""

    def __init__(self, cls: type):
        self.cls = cls
        self.name = cls.__name__

    def lower_call(self, low, node, call):
        from gpunb.compiler.typed import Const

        items = []
        for arg, item_t in zip(call.args, call.argtypes, strict=True):
            if isinstance(item_t, t.NoneType):
                items.append(ir.Constant(dm.value_type(item_t), None))
            elif isinstance(arg, Const):
                items.append(ops.constant(item_t, arg.value))
            else:
                items.append(low.expr(arg))
        return low.build_tuple(items, call.result)
