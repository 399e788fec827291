"""libdevice functions on the CPU target: the ones whose host version is the same function.

Each entry computes what libdevice computes with the host's own math (libm through the target's
math(), LLVM intrinsics, integer arithmetic): the functions of C's math library, IEEE
round-to-nearest arithmetic (`dadd_rn`), exact bit casts and conversions, and the integer
intrinsics. libdevice's other directed-rounding variants, approximations with no host twin
(`rsqrt`, `sinpi`, `byte_perm`, ...) are left out on purpose: the caller then raises a located
CompileError instead of returning a different answer. `fast_*` functions are approximations on the
GPU; here they are the exact function, which is within their documented error.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler.builtins.mathfuncs import modf
from gpunb.compiler.kernel_api import LibdeviceDeclaration
from gpunb.foundation import types as t

# libm functions of one or two floats, by their C name (the float32 name adds "f")
_LIBM_UNARY = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "cos", "cosh",
               "erf", "erfc", "exp", "exp2", "expm1", "fabs", "floor", "lgamma", "log", "log10",
               "log1p", "log2", "rint", "round", "nearbyint", "sin", "sinh", "sqrt", "tan", "tanh",
               "trunc", "j0", "j1", "y0", "y1"]
_LIBM_BINARY = ["atan2", "copysign", "fdim", "fmax", "fmin", "fmod", "hypot", "nextafter", "pow",
                "remainder"]
_FAST = {"fast_sinf": "sin", "fast_cosf": "cos", "fast_tanf": "tan", "fast_expf": "exp",
         "fast_logf": "log", "fast_log2f": "log2", "fast_log10f": "log10", "fast_powf": "pow"}


def lower(low, decl: LibdeviceDeclaration, args: list):
    """The host value of `decl` called with converted `args`, or None where there is none."""
    rule = _RULES.get(decl.name)
    return None if rule is None else rule(low, decl, args)


def pack(b: ir.IRBuilder, result: t.Type, values: list):
    """A tuple value of `result` from its items (a single item is the value itself)."""
    if not isinstance(result, t.Tuple):
        return values[0]
    out = ir.Constant(dm.value_type(result), ir.Undefined)
    for k, v in enumerate(values):
        out = b.insert_value(out, v, k)
    return out


def _float_of(decl: LibdeviceDeclaration) -> t.Float:
    return next(p.ty for p in decl.params if isinstance(p.ty, t.Float))


def _libm(base: str):
    def rule(low, decl, args):
        ft = _float_of(decl)
        return low.math_call(base, args, [ft] * len(args), ft)
    return rule


def _llvm(name: str, result: ir.Type | None = None):
    """An LLVM intrinsic overloaded on its first argument's type (llvm.ctpop.i32, ...)."""
    def rule(low, decl, args):
        x = args[0]
        suffix = {ir.FloatType(): "f32", ir.DoubleType(): "f64"}.get(x.type, str(x.type))
        extra = [ir.Constant(dm.i1, 0)] if name in ("ctlz", "cttz") else []
        fn = low.target.intrinsic(low.mb.module, f"llvm.{name}.{suffix}", x.type,
                                  [a.type for a in args + extra])
        out = low.builder.call(fn, args + extra)
        return _resize(low.builder, out, dm.value_type(decl.result))
    return rule


def _resize(b: ir.IRBuilder, value, to: ir.Type):
    if value.type == to:
        return value
    return b.trunc(value, to) if value.type.width > to.width else b.zext(value, to)


def _arith(op: str):
    def rule(low, decl, args):
        return getattr(low.builder, op)(*args)
    return rule


def _reciprocal(low, decl, args):
    return low.builder.fdiv(ir.Constant(args[0].type, 1.0), args[0])


def _fma(low, decl, args):
    ft = _float_of(decl)
    return low.math_call("fma", args, [ft] * 3, ft)


def _frexp(low, decl, args):
    ft = _float_of(decl)
    return low.math_call("frexp", args, [ft], decl.returns)


def _ldexp(low, decl, args):
    ft = _float_of(decl)
    return low.math_call("ldexp", args, [ft, t.int32], ft)


def _modf(low, decl, args):
    ft = _float_of(decl)
    return modf(low, args[0], ft, decl.returns)


def _sincos(low, decl, args):
    ft = _float_of(decl)
    sin = low.math_call("sin", args, [ft], ft)
    cos = low.math_call("cos", args, [ft], ft)
    return pack(low.builder, decl.returns, [sin, cos])


def _powi(low, decl, args):
    ft = _float_of(decl)
    exponent = low.builder.sitofp(args[1], args[0].type)
    return low.math_call("pow", [args[0], exponent], [ft, ft], ft)


def _saturate(low, decl, args):
    """Clamp to [0, 1]; NaN gives 0 (as cvt.sat does)."""
    ft = _float_of(decl)
    zero, one = ir.Constant(args[0].type, 0.0), ir.Constant(args[0].type, 1.0)
    low_clamped = low.math_call("fmax", [args[0], zero], [ft, ft], ft)
    return low.math_call("fmin", [low_clamped, one], [ft, ft], ft)


def _predicate(kind: str):
    """isnan/isinf/isfinite/signbit as 0 or 1 (int32)."""
    def rule(low, decl, args):
        b, x = low.builder, args[0]
        if kind == "nan":
            bit = b.fcmp_unordered("uno", x, x)
        elif kind == "signbit":
            width = 32 if x.type == ir.FloatType() else 64
            bits = b.bitcast(x, ir.IntType(width))
            bit = b.icmp_signed("<", bits, ir.Constant(bits.type, 0))
        else:
            ft = _float_of(decl)
            magnitude = low.math_call("fabs", [x], [ft], ft)
            infinity = ir.Constant(x.type, float("inf"))
            bit = b.fcmp_ordered("==" if kind == "inf" else "<", magnitude, infinity)
        return b.zext(bit, dm.i32)
    return rule


def _bitcast(low, decl, args):
    return low.builder.bitcast(args[0], dm.value_type(decl.result))


def _double_word(high: bool):
    def rule(low, decl, args):
        b = low.builder
        bits = b.bitcast(args[0], dm.i64)
        if high:
            bits = b.lshr(bits, ir.Constant(dm.i64, 32))
        return b.trunc(bits, dm.i32)
    return rule


def _hilo_to_double(low, decl, args):
    b = low.builder
    high = b.shl(b.zext(args[0], dm.i64), ir.Constant(dm.i64, 32))
    return b.bitcast(b.or_(high, b.zext(args[1], dm.i64)), ir.DoubleType())


def _convert(kind: str):
    """int -> float (sitofp/uitofp round to nearest even: `_rn`), float -> float, and float ->
    int with truncation (`_rz`), saturating with NaN -> 0 as PTX's cvt.rzi does."""
    def rule(low, decl, args):
        b, x = low.builder, args[0]
        to = dm.value_type(decl.result)
        if kind in ("sitofp", "uitofp", "fptrunc"):
            return getattr(b, kind)(x, to)
        suffix = "f32" if x.type == ir.FloatType() else "f64"
        fn = low.target.intrinsic(low.mb.module, f"llvm.{kind}.sat.{to}.{suffix}", to, [x.type])
        return b.call(fn, [x])
    return rule


def _half_bits(low, decl, args):
    b = low.builder
    return b.bitcast(b.fptrunc(args[0], ir.HalfType()), dm.value_type(decl.result))


def _half_value(low, decl, args):
    b = low.builder
    return b.fpext(b.bitcast(args[0], ir.HalfType()), ir.FloatType())


def _abs(low, decl, args):
    b, x = low.builder, args[0]
    return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)


def _min_max(op: str, signed: bool):
    def rule(low, decl, args):
        b, x, y = low.builder, args[0], args[1]
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return b.select(cmp(op, x, y), x, y)
    return rule


def _ffs(low, decl, args):
    """1-based position of the lowest set bit, 0 for 0."""
    b, x = low.builder, args[0]
    fn = low.target.intrinsic(low.mb.module, f"llvm.cttz.{x.type}", x.type, [x.type, dm.i1])
    position = b.add(b.call(fn, [x, ir.Constant(dm.i1, 0)]), ir.Constant(x.type, 1))
    found = b.select(b.icmp_unsigned("==", x, ir.Constant(x.type, 0)), ir.Constant(x.type, 0),
                     position)
    return _resize(b, found, dm.i32)


def _mulhi(signed: bool):
    """The high half of the double-width product."""
    def rule(low, decl, args):
        b = low.builder
        width = args[0].type.width
        wide = ir.IntType(2 * width)
        ext = b.sext if signed else b.zext
        product = b.mul(ext(args[0], wide), ext(args[1], wide))
        return b.trunc(b.lshr(product, ir.Constant(wide, width)), args[0].type)
    return rule


def _halving_add(signed: bool, rounded: bool):
    """(x + y) >> 1, or (x + y + 1) >> 1, without the sum overflowing (hadd, rhadd)."""
    def rule(low, decl, args):
        b = low.builder
        ext = b.sext if signed else b.zext
        total = b.add(ext(args[0], dm.i64), ext(args[1], dm.i64))
        if rounded:
            total = b.add(total, ir.Constant(dm.i64, 1))
        shifted = (b.ashr if signed else b.lshr)(total, ir.Constant(dm.i64, 1))
        return b.trunc(shifted, args[0].type)
    return rule


def _sad(signed: bool):
    """|x - y| + z, in 32-bit wrapping arithmetic as PTX's sad."""
    def rule(low, decl, args):
        b, x, y, z = low.builder, *args
        less = (b.icmp_signed if signed else b.icmp_unsigned)("<", x, y)
        return b.add(b.select(less, b.sub(y, x), b.sub(x, y)), z)
    return rule


def _build() -> dict:
    rules: dict = {}
    for base in _LIBM_UNARY + _LIBM_BINARY:
        rules[base] = rules[base + "f"] = _libm(base)
    rules["tgamma"] = rules["tgammaf"] = _libm("gamma")
    for name, base in _FAST.items():
        rules[name] = _libm(base)
    rules["fast_sincosf"] = _sincos
    rules["fast_fdividef"] = _arith("fdiv")
    for prefix in ("d", "f"):
        for op, name in (("add", "fadd"), ("sub", "fsub"), ("mul", "fmul"), ("div", "fdiv")):
            rules[f"{prefix}{op}_rn"] = _arith(name)
        rules[f"{prefix}rcp_rn"] = _reciprocal
        rules[f"{prefix}sqrt_rn"] = _libm("sqrt")
    rules.update({
        "fma": _fma, "fmaf": _fma, "fma_rn": _fma, "fmaf_rn": _fma, "fmaf_ieee_rn": _fma,
        "frexp": _frexp, "frexpf": _frexp, "ldexp": _ldexp, "ldexpf": _ldexp,
        "scalbn": _ldexp, "scalbnf": _ldexp, "modf": _modf, "modff": _modf,
        "sincos": _sincos, "sincosf": _sincos, "powi": _powi, "powif": _powi,
        "saturatef": _saturate,
        "isnand": _predicate("nan"), "isnanf": _predicate("nan"),
        "isinfd": _predicate("inf"), "isinff": _predicate("inf"),
        "isfinited": _predicate("finite"), "finitef": _predicate("finite"),
        "signbitd": _predicate("signbit"), "signbitf": _predicate("signbit"),
        "float_as_int": _bitcast, "int_as_float": _bitcast, "float_as_uint": _bitcast,
        "uint_as_float": _bitcast, "double_as_longlong": _bitcast,
        "longlong_as_double": _bitcast,
        "double2hiint": _double_word(True), "double2loint": _double_word(False),
        "hiloint2double": _hilo_to_double,
        "float2half_rn": _half_bits, "half2float": _half_value,
        "double2float_rn": _convert("fptrunc"),
        "abs": _abs, "llabs": _abs,
        "min": _min_max("<", True), "max": _min_max(">", True),
        "llmin": _min_max("<", True), "llmax": _min_max(">", True),
        "umin": _min_max("<", False), "umax": _min_max(">", False),
        "ullmin": _min_max("<", False), "ullmax": _min_max(">", False),
        "popc": _llvm("ctpop"), "popcll": _llvm("ctpop"),
        "brev": _llvm("bitreverse"), "brevll": _llvm("bitreverse"),
        "clz": _llvm("ctlz"), "clzll": _llvm("ctlz"), "ffs": _ffs, "ffsll": _ffs,
        "mulhi": _mulhi(True), "umulhi": _mulhi(False),
        "mul64hi": _mulhi(True), "umul64hi": _mulhi(False),
        "hadd": _halving_add(True, False), "uhadd": _halving_add(False, False),
        "rhadd": _halving_add(True, True), "urhadd": _halving_add(False, True),
        "sad": _sad(True), "usad": _sad(False),
    })
    for src, signed in (("int", True), ("uint", False), ("ll", True), ("ull", False)):
        for dst in ("float", "double"):
            rules[f"{src}2{dst}_rn"] = _convert("sitofp" if signed else "uitofp")
    for src in ("float", "double"):
        for dst, signed in (("int", True), ("uint", False), ("ll", True), ("ull", False)):
            rules[f"{src}2{dst}_rz"] = _convert("fptosi" if signed else "fptoui")
    return rules


_RULES = _build()
