"""A random program builder for the differential test against numba's njit
(test_numba_diff.py): from one integer seed, a small kernel body over scalar parameters of every
width (int8..uint64, float32/64, bool, complex64/128) and a local array, written with the parts
of the language the typing oracle (test_numba_oracle.py) does not draw: while loops, break /
continue / loop `else`, tuple unpacking and swaps, comparison chains, complex literals and
results, numpy's scalar functions, more of `math`/`cmath`, local arrays, integer division and
remainder by zero.

The builder tracks a *kind* per expression (B bool, I signed, U unsigned, F float, C complex) to
write mostly code numba accepts; kinds are not numba's types (the comparison asks numba).
Operations whose result LLVM leaves undefined are guarded in the source so that both sides
compute the same defined thing: floats converted to integers only inside the target's range,
shift counts masked to 0..63, integer powers with small exponents.

Left out on purpose (documented differences, or no reference): a bare float literal beside a
float (gpunb's weak literals, README "Typing"); math.floor/ceil/trunc and math.pow(float32, int)
(numba-cuda's tables keep float32, njit's give int64 / float64); round(float32, n) (numba-cuda
rounds through float64, njit in float32); float16 (njit has no float16 arithmetic);
np.floor_divide of floats and np.fmod of integers (gpunb: numpy's values; numba: floor(x / y),
an unsigned remainder); np.reciprocal of a bool (gpunb has none); complex **
(njit: CPython's _Py_c_pow, numba-cuda: its own float32 cpow, gpunb: CPython's complex_pow,
squaring integral exponents - three answers in the last bits); cmath of complex64 other than
exp/sin/cos and the predicates (njit computes them with float64 steps), whose argument is
made complex128.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
from numba_oracle_support import Case

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
PARAM_TYPES = ["bool", *INT_TYPES, "float32", "float64", "complex64", "complex128"]
INT_LITERALS = [0, 1, 2, 3, 7, 10, -1, -5, 127, 128, 255, 256, 65535, 2**31 - 1, 2**31,
                2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)]
FLOAT_LITERALS = [0.0, -0.0, 0.5, 1.5, 2.5, 0.1, 3.0, 1e10, 1e-5, 1e300, 123.456]
COMPLEX_LITERALS = ["1j", "2.5j", "(1+2j)", "(-0.5j)", "(3-4j)"]
FLOAT_EDGES = [0.0, -0.0, 1.0, -1.5, 0.1, 2.5, 3.5, -2.5, 1e10, -1e-7, 3.4028234e38, np.inf,
               -np.inf, np.nan, 2.0**24 + 1, 2.0**53 + 1, 7.0, -7.0]
INT_EDGES = [0, 1, 2, 3, 7, -1, -3, -7, -128, 127, 255, 256, 1000]

MATH1 = ["sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "atan", "asinh",
         "fabs", "erf", "erfc", "expm1", "log1p", "gamma", "lgamma", "degrees", "radians"]
MATH2 = ["atan2", "hypot", "copysign"]  # math.fmod: numba-cuda only; math.pow: see above
NP1 = ["abs", "absolute", "negative", "sqrt", "exp", "log", "sin", "square", "sign",
       "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "reciprocal", "positive",
       "cbrt", "exp2", "log2", "fabs", "signbit"]
NP2 = ["minimum", "maximum", "fmin", "fmax", "power", "floor_divide", "remainder", "fmod",
       "true_divide", "add", "subtract", "multiply", "hypot", "arctan2", "copysign",
       "logaddexp", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
       "greater", "less_equal", "equal", "not_equal", "logical_and", "logical_xor"]
CMATH1 = ["sqrt", "exp", "log", "sin", "cos", "tanh", "phase", "isnan", "isinf"]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>"]
COMPARE = ["<", "<=", "==", "!=", ">", ">="]
CASTS = ["float32", "float64", *INT_TYPES, "bool_", "complex64", "complex128"]
ORDER = "BIUFC"


def kind_of(type_name: str) -> str:
    if type_name.startswith("complex"):
        return "C"
    if type_name.startswith("float"):
        return "F"
    if type_name == "bool" or type_name == "bool_":
        return "B"
    return "U" if type_name.startswith("uint") else "I"


def join(a: str, b: str) -> str:
    """numba joins int64 and uint64 to float64; otherwise the wider kind wins."""
    if {a, b} == {"I", "U"}:
        return "F"
    return max(a, b, key=ORDER.index)


def arith(a: str, b: str) -> str:
    for kind in "CF":
        if kind in (a, b):
            return kind
    return "U" if a == b == "U" else "I"


def binary_kind(op: str, a: str, b: str) -> str | None:
    """The kind of `a op b`, or None where numba refuses it."""
    if op in ("&", "|", "^", "<<", ">>"):
        if {a, b} & {"F", "C"}:
            return None
        if op in ("<<", ">>"):
            return "U" if a == "U" else "I"
        return "B" if a == b == "B" else arith(a, b)
    if op in ("//", "%") and "C" in (a, b):
        return None
    if op == "/":
        return "C" if "C" in (a, b) else "F"
    if op == "**" and a == "B":
        return "F"
    return arith(a, b)


@dataclass
class Scope:
    variables: dict = field(default_factory=dict)
    loop_vars: dict = field(default_factory=dict)

    def copy(self) -> Scope:
        return Scope(dict(self.variables), dict(self.loop_vars))


class DiffCase(Case):
    """A Case whose body may take a local array: `local_array(shape, dtype)` is
    cuda.local.array in the kernel and np.empty in numba's function."""

    def source(self) -> str:
        text = super().source()
        kernel, reference = text.split("@numba.njit", 1)
        kernel = kernel.replace("local_array(", "cuda.local.array(")
        return kernel + "@numba.njit" + reference.replace("local_array(", "np.empty(")


class Builder:
    """One program per seed: `Builder(seed).program()` is a Case."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.names = 0
        self.local_dtype = self.pick(["int8", "uint8", "int32", "uint64", "float32", "float64",
                                      "complex64", "bool_"])

    # ---- helpers ----------------------------------------------------------------------------
    def pick(self, items):
        return self.rng.choice(list(items))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def fresh(self) -> str:
        self.names += 1
        return f"v{self.names}"

    # ---- expressions ------------------------------------------------------------------------
    def literal(self, operand: bool) -> tuple:
        kind = self.pick("IIIFFBC")
        if kind == "B":
            return self.pick(["True", "False"]), "B"
        if kind == "C":
            return self.pick(COMPLEX_LITERALS), "C"
        if kind == "I":
            value = self.pick(INT_LITERALS)
            return (f"({value})" if value < 0 else str(value)), ("U" if value >= 2**63 else "I")
        value = self.pick(FLOAT_LITERALS)
        # a bare float literal is weak in gpunb: as an operand it is written np.float64(...)
        return (f"np.float64({value!r})" if operand else repr(value)), "F"

    def expr(self, scope: Scope, depth: int = 0, operand: bool = False) -> tuple:
        if depth >= 3 or self.chance(0.3):
            names = sorted(scope.variables.items()) + sorted(scope.loop_vars.items())
            if names and self.chance(0.75):
                return self.pick(names)
            if self.chance(0.15):
                return f"la[{self.rng.randrange(4)}]", "I"
            if self.chance(0.1):
                return f"lf[{self.rng.randrange(3)}]", kind_of(self.local_dtype)
            return self.literal(operand)
        form = self.pick(["binary"] * 6 + ["unary", "compare", "compare", "cast", "cast",
                                           "math1", "math2", "np1", "np2", "np2", "minmax",
                                           "round", "abs", "ifexp", "boolop", "complex",
                                           "cmath", "divzero"])
        return getattr(self, f"_{form}")(scope, depth + 1)

    def operand(self, scope: Scope, depth: int) -> tuple:
        return self.expr(scope, depth, operand=True)

    def _binary(self, scope, depth):
        (a, ka), (b, kb) = self.operand(scope, depth), self.operand(scope, depth)
        ops = [op for op in BINARY if binary_kind(op, ka, kb) is not None]
        op = self.pick(ops if ops and not self.chance(0.04) else BINARY)
        if op in ("<<", ">>") and kb not in "FC":
            b = f"({b} & 63)"
        if op == "**" and "C" in (ka, kb):
            op = "*"
        if op == "**" and ka not in "FC" and kb not in "FC":
            # an integer power: numba goes through math.pow past large exponents (overflow to
            # inf converted back to an integer is undefined)
            b = f"({b} & 15)" if kb != "B" else b
        return f"({a} {op} {b})", binary_kind(op, ka, kb) or "I"

    def _divzero(self, scope, depth):
        """Integer and float division / remainder by a zero only known at run time."""
        (a, ka) = self.operand(scope, depth)
        zero = self.pick(["z", "np.int8(z)", "np.uint32(z)", "np.float32(z)", "np.float64(z)"])
        op = self.pick(["//", "%", "/"])
        if ka == "C" and op != "/":
            op = "/"
        kz = "F" if "float" in zero else ("U" if "uint" in zero else "I")
        return f"({a} {op} {zero})", binary_kind(op, ka, kz) or "F"

    def _unary(self, scope, depth):
        a, ka = self.operand(scope, depth)
        op = self.pick(["-", "+", "not "] + (["~"] if ka in "BIU" else []))
        if op == "not ":
            return f"(not {a})", "B"
        if op == "~":
            return f"(~{a})", ka if ka in "BU" else "I"
        return f"({op}{a})", "I" if ka == "B" else ka

    def _compare(self, scope, depth):
        count = self.pick([1, 1, 2, 3])
        parts, kinds = [], []
        for _ in range(count + 1):
            p, k = self.operand(scope, depth)
            if k == "C":
                p, k = f"({p}).real", "F"
            parts.append(p)
            kinds.append(k)
        text = parts[0]
        for p in parts[1:]:
            text += f" {self.pick(COMPARE)} {p}"
        return f"({text})", "B"

    def _cast(self, scope, depth):
        a, ka = self.expr(scope, depth)
        target = self.pick(CASTS + ["int", "float", "bool", "complex"])
        if ka == "C" and target not in ("complex", "complex64", "complex128", "bool"):
            a, ka = f"({a}).imag", "F"
        if target in ("int", "float", "bool", "complex"):
            if target == "complex" and ka == "B":
                a = f"int({a})"
            kind = {"int": "U" if ka == "U" else "I", "float": "F", "bool": "B",
                    "complex": "C"}[target]
            return f"{target}({guarded(a, ka, 'int64') if target == 'int' else a})", kind
        kind = kind_of(target)
        return f"np.{target}({guarded(a, ka, target) if kind in 'IU' else a})", kind

    def _math1(self, scope, depth):
        a, ka = self.expr(scope, depth)
        if ka == "C":
            a = f"({a}).real"
        fn = self.pick(MATH1 + ["isnan", "isinf", "isfinite"])
        if fn in ("gamma", "lgamma", "erf", "erfc") and self.chance(0.5):
            a = f"({a} % 7)" if ka in "IUB" else a
        return f"math.{fn}({a})", "B" if fn.startswith("is") else "F"

    def _math2(self, scope, depth):
        (a, ka), (b, kb) = self.real_pair(scope, depth)
        return f"math.{self.pick(MATH2)}({a}, {b})", "F"

    def real_pair(self, scope, depth):
        pair = []
        for _ in range(2):
            a, k = self.operand(scope, depth)
            if k == "C":
                a, k = f"({a}).real", "F"
            pair.append((a, k))
        return pair

    def _np1(self, scope, depth):
        a, ka = self.operand(scope, depth)
        fn = self.pick(NP1)
        if ka == "C" and fn in ("floor", "ceil", "trunc", "cbrt", "exp2", "log2", "fabs",
                                "signbit", "isfinite", "sign", "rint"):
            a, ka = f"({a}).real", "F"
        if fn in ("isnan", "isinf", "isfinite", "signbit"):
            return f"np.{fn}({a})", "B"
        if fn in ("abs", "absolute", "negative", "square", "sign", "positive"):
            kind = "F" if (fn in ("abs", "absolute") and ka == "C") else ka
            if fn == "negative" and ka == "B":
                a, kind = f"int({a})", "I"
            return f"np.{fn}({a})", kind if kind != "B" or fn in ("abs", "absolute") else "I"
        if fn == "reciprocal":  # of a bool: not in gpunb
            return (f"np.{fn}({a})", ka) if ka != "B" else (f"np.negative(int({a}))", "I")
        return f"np.{fn}({a})", "C" if ka == "C" else "F"

    def _np2(self, scope, depth):
        (a, ka), (b, kb) = self.operand(scope, depth), self.operand(scope, depth)
        fn = self.pick(NP2)
        if fn in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
            if {ka, kb} & {"F", "C"}:
                fn = "add"
            elif fn in ("left_shift", "right_shift"):
                b = f"({b} & 63)"
        if fn in ("greater", "less_equal", "equal", "not_equal", "logical_and", "logical_xor"):
            if "C" in (ka, kb) and fn in ("greater", "less_equal"):
                fn = "equal"  # numba types complex ordering but has no lowering for it
            return f"np.{fn}({a}, {b})", "B"
        if "C" in (ka, kb) and fn in ("floor_divide", "remainder", "fmod", "hypot", "arctan2",
                                      "copysign", "logaddexp", "fmin", "fmax", "minimum",
                                      "maximum", "power"):
            fn = "multiply"
        if fn == "fmod" and not {ka, kb} & {"F", "C"}:
            fn = "remainder"  # of integers: numpy's value here, numba's unsigned rem (README)
        if fn == "floor_divide" and {ka, kb} & {"F", "C"}:
            fn = "subtract"  # of floats: numpy's value here, numba's floor(x / y) (README)
        if fn == "power" and ka not in "FC" and kb not in "FC":
            b = f"({b} & 7)"
        kind = arith(ka, kb)
        if fn in ("true_divide", "hypot", "arctan2", "copysign", "logaddexp"):
            kind = "C" if "C" in (ka, kb) else "F"
        return f"np.{fn}({a}, {b})", kind

    def _minmax(self, scope, depth):
        count = self.pick([2, 2, 3])
        parts = [self.operand(scope, depth) for _ in range(count)]
        parts = [(f"({p}).real", "F") if k == "C" else (p, k) for p, k in parts]
        kind = parts[0][1]
        for _, k in parts[1:]:
            kind = join(kind, k)
        return f"{self.pick(['min', 'max'])}({', '.join(p for p, _ in parts)})", kind

    def _round(self, scope, depth):
        a, ka = self.expr(scope, depth)
        if ka == "C":
            a, ka = f"({a}).real", "F"
        if self.chance(0.5):
            return f"round({guarded(a, 'F' if ka == 'I' else ka, 'int64')})", "I"
        return f"round(np.float64({a}), {self.rng.randint(-2, 5)})", "F"

    def _abs(self, scope, depth):
        a, ka = self.expr(scope, depth)
        return f"abs({a})", {"B": "I", "C": "F"}.get(ka, ka)

    def _ifexp(self, scope, depth):
        cond, _ = self._compare(scope, depth)
        # operands: a bare float literal there is weak in gpunb (README), np.float64 is not
        (a, ka), (b, kb) = self.operand(scope, depth), self.operand(scope, depth)
        return f"({a} if {cond} else {b})", join(ka, kb)

    def _boolop(self, scope, depth):
        (a, ka), (b, kb) = self.expr(scope, depth), self.expr(scope, depth)
        return f"({a} {self.pick(['and', 'or'])} {b})", join(ka, kb)

    def _complex(self, scope, depth):
        a, ka = self.operand(scope, depth)
        if ka != "C":
            a = f"complex({'int(' + a + ')' if ka == 'B' else a}, {self.pick(['1', '-0.5', 'z'])})"
        form = self.pick(["real", "imag", "conj", "abs", "mul"])
        if form in ("real", "imag"):
            return f"({a}).{form}", "F"
        if form == "conj":
            return f"({a}).conjugate()", "C"
        if form == "abs":
            return f"abs({a})", "F"
        return f"({a} * {self.pick(COMPLEX_LITERALS)})", "C"

    def _cmath(self, scope, depth):
        a, ka = self.expr(scope, depth)
        if ka == "B":
            a = f"int({a})"
        fn = self.pick(CMATH1)
        if fn not in ("exp", "sin", "cos", "isnan", "isinf"):
            a = f"np.complex128({a})"
        return f"cmath.{fn}({a})", "B" if fn.startswith("is") else ("F" if fn == "phase"
                                                                     else "C")

    # ---- statements -------------------------------------------------------------------------
    def statements(self, scope: Scope, depth: int, in_loop: bool) -> list:
        lines: list = []
        for _ in range(self.rng.randint(1, 3 if depth else 6)):
            forms = ["assign"] * 4 + ["aug", "aug", "unpack", "store", "lstore"]
            if depth < 2:
                forms += ["if", "for", "while"]
            if in_loop:
                forms += ["break", "continue"]
            form = self.pick(forms)
            if form in ("break", "continue"):
                cond, _ = self._compare(scope, 1)
                lines += [f"if {cond}:", f"    {form}"]
            elif form == "aug" and scope.variables:
                lines.append(self.augassign(scope))
            elif form == "unpack" and scope.variables:
                lines += self.unpack(scope)
            elif form == "store":
                value, kind = self.expr(scope)
                lines.append(f"la[{self.rng.randrange(4)}] = {guarded(value, kind, 'int32')}"
                             if kind in "FC" else f"la[{self.rng.randrange(4)}] = {value}")
            elif form == "lstore":
                lines.append(self.local_store(scope))
            elif form == "if":
                lines += self.if_statement(scope, depth, in_loop)
            elif form == "for" and len(scope.loop_vars) < 3:
                lines += self.loop(scope, depth, "for")
            elif form == "while" and len(scope.loop_vars) < 3:
                lines += self.loop(scope, depth, "while")
            else:
                value, kind = self.expr(scope)
                name = self.pick(sorted(scope.variables)) if (
                    scope.variables and self.chance(0.3)) else self.fresh()
                lines.append(f"{name} = {value}")
                scope.variables[name] = kind
        return lines

    def local_store(self, scope: Scope) -> str:
        """A store (or + - * in place) into the local array `lf` of the program's dtype: the
        value converted as numba converts it on a store."""
        value, kind = self.expr(scope, 1)
        target, index = kind_of(self.local_dtype), self.rng.randrange(3)
        if kind == "C" and target != "C":
            value, kind = f"({value}).real", "F"
        if target in "IU":
            if kind != target and kind not in "B":
                value = guarded(value, "F" if kind in "FIU" else kind, self.local_dtype) \
                    if kind == "F" else f"({value} & 127)"
            return f"lf[{index}] = {value}"
        op = self.pick(["", "+", "-", "*"]) if target != "B" else ""
        return f"lf[{index}] {op}= {value}"

    def augassign(self, scope: Scope) -> str:
        name, kind = self.pick(sorted(scope.variables.items()))
        value, vkind = self.operand(scope, 1)
        ops = [op for op in BINARY if binary_kind(op, kind, vkind)] or BINARY
        op = self.pick(ops)
        if op == "**" and "C" in (kind, vkind):
            op = "*"
        if op in ("<<", ">>"):
            value = f"({value} & 63)"
        if op == "**" and kind not in "FC" and vkind not in "FC":
            value = f"({value} & 7)"
        scope.variables[name] = binary_kind(op, kind, vkind) or kind
        return f"{name} {op}= {value}"

    def unpack(self, scope: Scope) -> list:
        names = sorted(scope.variables)
        if len(names) >= 2 and self.chance(0.5):
            a, b = self.rng.sample(names, 2)
            ka, kb = scope.variables[a], scope.variables[b]
            scope.variables[a], scope.variables[b] = kb, ka
            return [f"{a}, {b} = {b}, {a}"]
        (x, kx), (y, ky) = self.expr(scope, 1), self.expr(scope, 1)
        a, b = self.fresh(), self.fresh()
        scope.variables[a], scope.variables[b] = kx, ky
        if self.chance(0.5):  # through a tuple variable (named t*: never a result)
            self.names += 1
            t = f"t{self.names}"
            return [f"{t} = ({x}, {y})", f"{a}, {b} = {t}"]
        return [f"{a}, {b} = {x}, {y}"]

    def if_statement(self, scope: Scope, depth: int, in_loop: bool) -> list:
        branches = [scope.copy() for _ in range(self.rng.randint(1, 3))]
        lines = []
        for number, branch in enumerate(branches):
            cond, _ = self._compare(scope, 1)
            head = "if" if number == 0 else "elif"
            lines.append(f"{head} {cond}:")
            lines += ["    " + ln for ln in self.statements(branch, depth + 1, in_loop)]
        otherwise = scope.copy()
        if self.chance(0.5):
            lines.append("else:")
            lines += ["    " + ln for ln in self.statements(otherwise, depth + 1, in_loop)]
        merged = dict(otherwise.variables)
        for branch in branches:
            merged = {n: join(merged[n], branch.variables[n])
                      for n in merged.keys() & branch.variables.keys()}
        scope.variables = {n: merged[n] for n in sorted(merged)}
        return lines

    def loop(self, scope: Scope, depth: int, kind: str) -> list:
        var = "ij"[sum(name in "ij" for name in scope.loop_vars)]
        inner = scope.copy()
        if kind == "for":
            bound, bkind = self.pick([("n", "I"), ("3", "I"), ("np.uint8(3)", "U"),
                                      ("np.int16(n)", "I"), ("np.uint64(2)", "U")])
            head = [f"for {var} in range({bound}):"]
            inner.loop_vars[var] = bkind
            step = []
        else:
            head = [f"{var} = 0", f"while {var} < n + 1:"]
            inner.loop_vars[var] = "I"
            step = [f"    {var} += 1"]
        # the counter steps first, so a `continue` cannot make a while loop endless
        body = step + ["    " + ln for ln in self.statements(inner, depth + 1, True)]
        lines = head + body
        if self.chance(0.4):
            after = scope.copy()
            lines += ["else:"] + ["    " + ln for ln in self.statements(after, depth + 1,
                                                                       False)]
        for name in scope.variables:  # the body may run zero times or stop early
            scope.variables[name] = join(scope.variables[name], inner.variables.get(name, "B"))
        return lines

    # ---- the program ------------------------------------------------------------------------
    def program(self) -> Case:
        types = [self.pick(PARAM_TYPES) for _ in range(self.rng.randint(1, 3))]
        params = {f"p{i}": value_of(self.rng, t) for i, t in enumerate(types)}
        params.update(n=self.rng.randint(0, 3), z=0)
        scope = Scope({f"p{i}": kind_of(t) for i, t in enumerate(types)})
        scope.loop_vars.update(n="I")  # read only: loops count to it
        lines = ["la = local_array(4, np.int64)", "for _k in range(4):", "    la[_k] = _k - 1",
                 f"lf = local_array(3, np.{self.local_dtype})", "for _k in range(3):",
                 "    lf[_k] = _k"]
        lines += self.statements(scope, 0, False)
        results = []
        for name in sorted(n for n in scope.variables if n.startswith("v")):
            lines.append(f"_r{len(results)} = {name}")
            results.append(f"_r{len(results)}")
        lines.append(f"_r{len(results)} = la[0] + la[1] + la[2] + la[3]")
        results.append(f"_r{len(results)}")
        for k in range(3):
            lines.append(f"_r{len(results)} = lf[{k}]")
            results.append(f"_r{len(results)}")
        return DiffCase("\n".join(lines), params, tuple(results))


def guarded(text: str, kind: str, target: str) -> str:
    """A float converted to an integer type only inside the target's range (LLVM leaves the
    conversion of out-of-range values and NaN undefined)."""
    if kind == "C":
        text, kind = f"({text}).real", "F"
    if kind != "F":
        return text
    limits = {"int8": 100, "int16": 30000, "int32": 2_000_000_000, "int64": 10**18,
              "uint8": 200, "uint16": 60000, "uint32": 4_000_000_000, "uint64": 10**19}
    limit = limits[target]
    if target.startswith("uint"):
        return f"({text} if 0 <= {text} < {limit} else 0)"
    return f"({text} if abs({text}) < {limit} else 0)"


def value_of(rng: random.Random, type_name: str):
    if type_name == "bool":
        return rng.choice([True, False])
    if type_name.startswith("complex"):
        return getattr(np, type_name)(complex(rng.choice(FLOAT_EDGES), rng.choice(FLOAT_EDGES)))
    if type_name.startswith("float"):
        if rng.random() < 0.3:
            return getattr(np, type_name)(rng.uniform(-1e3, 1e3))
        return getattr(np, type_name)(rng.choice(FLOAT_EDGES))
    info = np.iinfo(type_name)
    edges = [e for e in INT_EDGES + [int(info.max), int(info.min)] if info.min <= e <= info.max]
    value = rng.choice(edges) if rng.random() < 0.7 else rng.randint(int(info.min),
                                                                     int(info.max))
    return getattr(np, type_name)(value)
