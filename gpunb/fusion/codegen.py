"""Source of the gpunb kernels that evaluate a traced gpunb.fuse graph.

Every kernel is an ordinary gpunb kernel in the numba.cuda dialect with grid-stride loops:
`map` (one output element per iteration), `reduce_thread` (a thread walks a short reduced
extent), `reduce_block` (a block shares the reduction of one output, or one part of it) and
`finish` (combines per-block partials). Each value is computed in the dtype of numpy's loop and
converted to numpy's result dtype, so integer wrap-around and float rounding follow numpy.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from gpunb.fusion import graph as g

BLOCK = 256  # threads per block; the shared-memory trees below are written for it

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
          "remainder": "%", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
          "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
          "equal": "==", "not_equal": "!="}
_MATH = {"sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log",
         "log2": "log2", "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos",
         "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh",
         "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
         "arctanh": "atanh", "cbrt": "cbrt", "deg2rad": "radians", "radians": "radians",
         "rad2deg": "degrees", "degrees": "degrees", "arctan2": "atan2", "hypot": "hypot",
         "copysign": "copysign", "nextafter": "nextafter", "isnan": "isnan", "isinf": "isinf",
         "isfinite": "isfinite"}
_HELPER = {"fmax": "fmax", "fmin": "fmin", "heaviside": "heaviside", "logaddexp": "logaddexp",
           "logaddexp2": "logaddexp2", "signbit": "signbit", "left_shift": "left_shift",
           "right_shift": "right_shift"}
_SPECIAL = {"negative", "positive", "absolute", "fabs", "square", "reciprocal", "sign", "floor",
            "ceil", "trunc", "rint", "logical_not", "invert", "logical_and", "logical_or",
            "logical_xor", "maximum", "minimum", "power", "float_power", "fmod"}


def supports_ufunc(name: str) -> bool:
    return name in _INFIX or name in _MATH or name in _HELPER or name in _SPECIAL


# ---- expressions --------------------------------------------------------------------------------


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """numpy computes float16 loops in float32 and rounds the result."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def convert(code: str, src: np.dtype, dst: np.dtype) -> str:
    return code if src == dst else f"{dst.name}({code})"


def literal(value, dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "f":
        value = float(value)
        if math.isnan(value):  # keep the sign: np.copysign(x, -nan) is negative
            text = "-math.nan" if math.copysign(1.0, value) < 0 else "math.nan"
        elif math.isinf(value):
            text = "math.inf" if value > 0 else "-math.inf"
        else:
            text = repr(value)
        return f"{dtype.name}({text})"
    return f"{dtype.name}({int(value)})"


class Expressions:
    """Assigns each node a variable and writes the statement that computes it."""

    def __init__(self, params: Params, space_ndim: int, prefix: str = "v"):
        self.params = params
        self.prefix = prefix
        self.space_ndim = space_ndim
        self.names: dict = {}
        self.count = 0

    def name(self, node: g.Node) -> str:
        return self.names[id(node)]

    def emit(self, nodes: list) -> list:
        """Statements for `nodes` (in dependency order) not emitted yet."""
        lines = []
        for node in nodes:
            if id(node) in self.names:
                continue
            if node.kind == g.CONST:
                self.names[id(node)] = literal(node.value, node.dtype)
                continue
            var = f"{self.prefix}{self.count}"
            self.count += 1
            lines.append(f"{var} = {self.code(node)}")
            self.names[id(node)] = var
        return lines

    def operand(self, node: g.Node, loop: np.dtype) -> str:
        """The operand converted to the loop dtype, then to the dtype the loop computes in."""
        compute = compute_dtype(loop)
        if node.kind == g.CONST:
            return convert(literal(node.value, loop), loop, compute)
        return convert(convert(self.name(node), node.dtype, loop), loop, compute)

    def code(self, node: g.Node) -> str:
        kind = node.kind
        if kind == g.ARRAY:
            return self.array_element(node)
        if kind == g.SCALAR:
            return f"{node.dtype.name}({self.params.scalar(node.value)})"
        if kind == g.CAST:
            (arg,) = node.args
            return convert(self.name(arg), arg.dtype, node.dtype)
        if kind == g.WHERE:
            cond, x, y = node.args
            return (f"{convert(self.name(x), x.dtype, node.dtype)} if "
                    f"{convert(self.name(cond), cond.dtype, np.dtype(np.bool_))} else "
                    f"{convert(self.name(y), y.dtype, node.dtype)}")
        if kind == g.UFUNC:
            operands = [self.operand(a, d) for a, d in zip(node.args, node.loop, strict=True)]
            expr = ufunc_expression(node, operands, compute_dtype(node.loop[0]))
            return f"{node.dtype.name}({expr})"  # whatever type the expression has
        raise AssertionError(f"no code for a {kind} node here")

    def array_element(self, node: g.Node) -> str:
        """The element of an array argument (or view of it). Its dimensions align with the
        iteration space's last ones (broadcasting); a dimension of extent 1 is read at 0."""
        leaf = node.value
        offset = self.space_ndim - node.ndim
        index = ["0"] * len(leaf.source_shape)
        for d, source_dim in enumerate(leaf.dims):
            if source_dim is not None and leaf.source_shape[source_dim] != 1:
                index[source_dim] = f"i{d + offset}"
        return f"{self.params.array(leaf.source)}[{', '.join(index) or '0'}]"


def ufunc_expression(node: g.Node, xs: list, compute: np.dtype) -> str:
    """The expression of a ufunc over operands already in the dtype its loop computes in."""
    name = node.op
    if name == "floor_divide" and compute == np.dtype(np.int64):
        # numpy wraps INT64_MIN // -1 to INT64_MIN; the kernel language gives numba's 0 there
        return f"(({xs[0]} // {xs[1]}) if {xs[1]} != -1 else -{xs[0]})"
    if name in _INFIX:
        return f"({xs[0]} {_INFIX[name]} {xs[1]})"
    if name in _MATH:
        return f"math.{_MATH[name]}({', '.join(xs)})"
    if name in _HELPER:
        return f"{_HELPER[name]}({', '.join(xs)})"
    kind = compute.kind
    a = xs[0]
    if name == "negative":
        return f"(-{a})"
    if name == "positive":
        return a
    if name in ("absolute", "fabs"):
        return a if kind in "bu" else f"abs({a})"
    if name == "square":
        return f"({a} * {a})"
    if name == "reciprocal":
        if kind == "f":
            return f"(1.0 / {a})"
        # numpy's (x86's) result for 1 / 0: the most negative value of int32 and int64, else 0
        of_zero = np.iinfo(compute).min if compute.kind == "i" and compute.itemsize >= 4 else 0
        return f"reciprocal_int({a}, {literal(of_zero, compute)})"
    if name == "sign":
        return f"sign_float({a})" if kind == "f" else f"sign_int({a})"
    if name in ("floor", "ceil", "trunc"):
        return f"np.{name}({a})" if kind == "f" else a
    if name == "rint":
        return f"rint({a})" if kind == "f" else a
    if name == "logical_not":
        return f"(not {a})"
    if name == "invert":
        return f"(not {a})" if kind == "b" else f"(~{a})"
    if name in ("logical_and", "logical_or", "logical_xor"):
        op = {"logical_and": "&", "logical_or": "|", "logical_xor": "!="}[name]
        return f"(bool({xs[0]}) {op} bool({xs[1]}))"
    if name in ("maximum", "minimum"):
        if kind == "f":
            return f"{name}({xs[0]}, {xs[1]})"
        return f"{name[:3]}({xs[0]}, {xs[1]})"
    if name == "fmod":
        return (f"math.fmod({xs[0]}, {xs[1]})" if kind == "f" else
                f"fmod_int({xs[0]}, {xs[1]})")
    if name in ("power", "float_power"):
        return power_expression(node, xs, kind)
    raise AssertionError(f"no code for np.{name}")


def power_expression(node: g.Node, xs: list, kind: str) -> str:
    base, exponent = xs
    exp_node = node.args[1]
    if exp_node.kind == g.CONST and exp_node.value == 2:
        return f"({base} * {base})"
    if kind == "f" and exp_node.phase == g.SCALAR_PHASE:
        return f"power_by_scalar({base}, {exponent})"
    return f"({base} ** {exponent})"


# ---- parameters and index arithmetic ------------------------------------------------------------


@dataclasses.dataclass
class Params:
    """The kernel's array and scalar parameters, in the order the launcher passes them."""

    arrays: list = dataclasses.field(default_factory=list)    # (argument index, views)
    scalars: list = dataclasses.field(default_factory=list)   # argument index

    def array(self, source: tuple) -> str:
        if source not in self.arrays:
            self.arrays.append(source)
        return f"a{self.arrays.index(source)}"

    def scalar(self, index: int) -> str:
        if index not in self.scalars:
            self.scalars.append(index)
        return f"s{self.scalars.index(index)}"

    def names(self) -> list:
        return [f"a{k}" for k in range(len(self.arrays))] + \
            [f"s{k}" for k in range(len(self.scalars))]


def collect_params(nodes: list) -> Params:
    params = Params()
    for node in nodes:
        if node.kind == g.ARRAY:
            params.array(node.value.source)
        elif node.kind == g.SCALAR:
            params.scalar(node.value)
    return params


def unravel(flat: str, dims: list, shape: tuple, index_type: str) -> list:
    """Statements setting i<d> for each dimension d in `dims` (outermost first) from a flat
    C-order position; dimensions of extent 1 are 0 and need no division."""
    live = [d for d in dims if shape[d] != 1]
    if not live:
        return []
    lines = [f"rem = {index_type}({flat})"]
    for pos in range(len(live) - 1, 0, -1):
        d = live[pos]
        lines.append(f"i{d} = rem % shape[{d}]")
        lines.append(f"rem = rem // shape[{d}]")
    lines.append(f"i{live[0]} = rem")
    return lines


def indent(lines: list, levels: int = 1) -> list:
    return ["    " * levels + line for line in lines]


__all__ = ["BLOCK", "Expressions", "Params", "collect_params", "supports_ufunc", "unravel"]
