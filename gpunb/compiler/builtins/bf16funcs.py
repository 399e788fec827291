"""numba-cuda's cuda.bf16 functions, and math.* on bfloat16 (numba-cuda's overloads).

Arithmetic is LLVM's bfloat arithmetic (native bf16 instructions on sm_90; correctly rounded
through float32 elsewhere); fma goes through Target.bf16_fma (fma.rn.bf16 on CUDA, an exact
emulation on the host). Math computes in float32 (libdevice or libm) and rounds to nearest.
Conversions round as their names say, integers saturate and NaN converts to 0, as CUDA's do.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import lowfloat
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t

BF = t.bfloat16
i16 = ir.IntType(16)
_ARITH = {"hadd": "+", "hsub": "-", "hmul": "*", "hdiv": "/"}
_ORDERED = {"heq": "==", "hne": "!=", "hge": ">=", "hgt": ">", "hle": "<=", "hlt": "<"}
_UNORDERED = {"hequ": "==", "hneu": "!=", "hgeu": ">=", "hgtu": ">", "hleu": "<=", "hltu": "<"}
# functions of one bfloat16 computed in float32: (math function, exact in float32 anyway)
MATH = {"htrunc": "trunc", "hceil": "ceil", "hfloor": "floor", "hrint": "rint", "hsqrt": "sqrt",
        "hlog": "log", "hlog2": "log2", "hlog10": "log10", "hcos": "cos", "hsin": "sin",
        "htanh": "tanh", "htanh_approx": "tanh", "hexp": "exp", "hexp2": "exp2"}
# math.<name>(bfloat16) is bfloat16 in numba-cuda for these (numba_cuda/numba/cuda/bf16.py)
MATH_OVERLOADS = {"trunc", "ceil", "floor", "sqrt", "log", "log10", "cos", "sin", "tanh", "exp",
                  "exp2"}
_INTS = {"int8": t.int8, "uint8": t.uint8, "int16": t.int16, "uint16": t.uint16,
         "int32": t.int32, "uint32": t.uint32, "int64": t.int64, "uint64": t.uint64}


def _signature(op: str) -> tuple:
    """(parameter types, result type) of cuda.bf16.<op>."""
    if op in _ARITH or op.removesuffix("_rn") in _ARITH or op.removesuffix("_sat") in _ARITH \
            or op in ("hmax", "hmin", "hmax_nan", "hmin_nan"):
        return (BF, BF), BF
    if op in ("hfma", "hfma_sat", "hfma_relu"):
        return (BF, BF, BF), BF
    if op in _ORDERED or op in _UNORDERED:
        return (BF, BF), t.boolean
    if op in ("habs", "hneg", "hrsqrt", "hrcp", "hexp10") or op in MATH:
        return (BF,), BF
    if op == "hisnan":
        return (BF,), t.boolean
    if op == "hisinf":
        return (BF,), t.int32
    if op == "bfloat16_to_float32":
        return (BF,), t.float32
    if op.startswith("float32_to_bfloat16"):
        return (t.float32,), BF
    if op == "float64_to_bfloat16":
        return (t.float64,), BF
    if "_as_" in op:
        source, target = op.split("_as_")
        return ((BF,), _INTS[target]) if source == "bfloat16" else ((_INTS[source],), BF)
    source, _, rest = op.partition("_to_")
    if source == "bfloat16":
        return (BF,), _INTS[rest.rsplit("_", 1)[0]]
    return (_INTS[source],), BF


class Bf16Function(Builtin):
    def __init__(self, op: str):
        self.op = op
        self.name = f"cuda.bf16.{op}"
        self.params, self.result = _signature(op)

    def type_call(self, inf, node, argtypes, kwtypes):
        wanted = ", ".join(map(str, self.params))
        if kwtypes or len(argtypes) != len(self.params):
            raise inf.error(node, f"{self.name}() takes ({wanted})")
        for found in argtypes:
            if not t.is_number(found) or isinstance(found, t.Complex):
                raise inf.error(node, f"{self.name}() takes ({wanted}), got {found}",
                                "convert the argument first, e.g. cuda.bf16.bfloat16(x)")
        return self.result

    def lower_call(self, low, node, call):
        b = low.builder
        xs = [ops.cast(b, low.expr(n), at, pt)
              for n, at, pt in zip(node.args, call.argtypes, self.params, strict=True)]
        return lower_bf16(low, self.op, xs, self.result)


def _bits(b, x):
    return b.bitcast(x, i16)


def _from_bits(b, bits):
    return b.bitcast(bits, dm.bfloat)


def _constant(value: float):
    return ir.Constant(dm.bfloat, value)


def _saturate(b, x):
    """Clamp to [0, 1]; NaN gives +0 (CUDA's _sat)."""
    x = b.select(b.fcmp_ordered(">", x, _constant(1.0)), _constant(1.0), x)
    return b.select(b.fcmp_ordered(">", x, _constant(0.0)), x, _constant(0.0))


def _max_min(b, op: str, x, y):
    """CUDA's __hmax/__hmin (a NaN operand gives the other; +0 is above -0) and the _nan forms
    (a NaN operand gives NaN)."""
    is_max = op.startswith("hmax")
    pick_x = b.fcmp_ordered(">" if is_max else "<", x, y)
    found = b.select(pick_x, x, y)
    equal = b.fcmp_ordered("==", x, y)  # +-0: max keeps +0, min keeps -0
    both = (b.and_ if is_max else b.or_)(_bits(b, x), _bits(b, y))
    found = b.select(equal, _from_bits(b, both), found)
    x_nan, y_nan = b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y)
    nan = _from_bits(b, ir.Constant(i16, 0x7FFF))
    if op.endswith("_nan"):
        return b.select(b.or_(x_nan, y_nan), nan, found)
    found = b.select(x_nan, y, b.select(y_nan, x, found))
    return b.select(b.and_(x_nan, y_nan), nan, found)


def _math(low, name: str, x, bits_mode: str = "rn"):
    b = low.builder
    wide = low.math_call(name, [lowfloat.bf16_to_f32(b, x)], [t.float32], t.float32)
    return lowfloat.bf16_from_f32(b, wide, bits_mode)


def lower_bf16(low, op: str, xs: list, result: t.Type):
    b = low.builder
    base = op.removesuffix("_rn").removesuffix("_sat")
    if base in _ARITH:
        value = lowfloat.bf16_binary(b, _ARITH[base], xs[0], xs[1])
        return _saturate(b, value) if op.endswith("_sat") else value
    if op.startswith("hfma"):
        value = low.target.bf16_fma(low, *xs)
        if op == "hfma_sat":
            return _saturate(b, value)
        if op == "hfma_relu":  # negative -> 0, NaN stays NaN
            return b.select(b.fcmp_ordered("<", value, _constant(0.0)), _constant(0.0), value)
        return value
    if op in _ORDERED:
        return b.fcmp_ordered(_ORDERED[op], xs[0], xs[1])
    if op in _UNORDERED:
        return b.fcmp_unordered(_UNORDERED[op], xs[0], xs[1])
    if op in ("hmax", "hmin", "hmax_nan", "hmin_nan"):
        return _max_min(b, op, xs[0], xs[1])
    return _lower_unary(low, op, xs[0], result)


def _lower_unary(low, op: str, x, result: t.Type):
    b = low.builder
    if op == "hneg":
        return b.fneg(x)
    if op == "habs":
        return _from_bits(b, b.and_(_bits(b, x), ir.Constant(i16, 0x7FFF)))
    if op == "hisnan":
        return b.fcmp_unordered("uno", x, x)
    if op == "hisinf":
        wide = lowfloat.bf16_to_f32(b, x)
        inf = ir.Constant(ir.FloatType(), float("inf"))
        one = b.select(b.fcmp_ordered("==", wide, inf), ir.Constant(dm.i32, 1),
                       ir.Constant(dm.i32, 0))
        return b.select(b.fcmp_ordered("==", wide, b.fneg(inf)), ir.Constant(dm.i32, -1), one)
    if op in MATH:
        return _math(low, MATH[op], x)
    if op in ("hrcp", "hrsqrt", "hexp10"):
        wide = lowfloat.bf16_to_f32(b, x)
        one = ir.Constant(ir.FloatType(), 1.0)
        if op == "hrcp":
            value = b.fdiv(one, wide)
        elif op == "hrsqrt":
            value = b.fdiv(one, low.math_call("sqrt", [wide], [t.float32], t.float32))
        else:
            value = low.math_call("pow", [ir.Constant(ir.FloatType(), 10.0), wide],
                                  [t.float32, t.float32], t.float32)
        return lowfloat.bf16_from_f32(b, value)
    return _lower_conversion(b, op, x, result)


def _lower_conversion(b, op: str, x, result: t.Type):
    if "_as_" in op:
        return b.bitcast(x, dm.value_type(result))
    if op == "bfloat16_to_float32":
        return lowfloat.bf16_to_f32(b, x)
    mode = op.rsplit("_", 1)[1] if op.rsplit("_", 1)[1] in ("rn", "rz", "rd", "ru") else "rn"
    if isinstance(result, t.BFloat16):
        source = t.float64 if op.startswith("float64") else \
            (t.float32 if op.startswith("float32") else _INTS[op.split("_to_")[0]])
        return lowfloat.bf16_from_number(b, x, source, mode)
    wide = lowfloat.bf16_to_f32(b, x)  # bfloat16 -> integer: round as the mode says, saturate
    if mode != "rz":
        name = {"rn": "rint", "rd": "floor", "ru": "ceil"}[mode]
        fn = b.module.globals.get(f"llvm.{name}.f32") or ir.Function(
            b.module, ir.FunctionType(wide.type, [wide.type]), f"llvm.{name}.f32")
        wide = b.call(fn, [wide])
    return lowfloat.float_to_int_saturating(b, wide, result)


def _names() -> list:
    from gpunb.compiler.kernel_api import BF16_NAMES

    return BF16_NAMES


BUILTINS: dict = {f"cuda.bf16.{op}": Bf16Function(op) for op in _names()}
