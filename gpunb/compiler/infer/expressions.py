"""Typing of expressions: constants, names, attributes, operators, comparisons, conditionals.

`expr(node)` dispatches to one `expr_<Node>` method per expression kind and records the type.
Subscripts live in indexing.py and calls in calls.py.
"""

from __future__ import annotations

import ast

from gpunb.compiler import datetimes, promotion
from gpunb.compiler.builtins import Builtin, find_builtin
from gpunb.compiler.infer import inner
from gpunb.compiler.kernel_api import intrinsic_name
from gpunb.compiler.typed import BuiltinValue
from gpunb.compiler.values import (
    ArrayCTypes,
    ConstValue,
    NotConstant,
    PyValue,
    constant_type,
    missing,
)
from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.foundation.errors import did_you_mean
from gpunb.foundation.pyobjects import lookup_global
from gpunb.foundation.tensor_types import Fragment

_OP_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
               ast.BitXor: "^", ast.BitAnd: "&", ast.MatMult: "@"}
_CMP_SYMBOLS = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_HAS_TRUTH = (t.Boolean, t.Integer, t.Float, t.Complex, t.NoneType)
_EXPR_HINTS = {
    "List": "lists are not available in GPU code; use a tuple or cuda.local.array",
    "Dict": "dicts are not available in GPU code",
    "Set": "sets are not available in GPU code",
    "ListComp": "comprehensions are not available in GPU code; write a loop",
    "SetComp": "comprehensions are not available in GPU code; write a loop",
    "DictComp": "comprehensions are not available in GPU code; write a loop",
    "YieldFrom": "generators are not available in GPU code",
    "GeneratorExp": "generators are not available in GPU code; write a loop",
    "Lambda": "a lambda must be bound to a name and called in the function that defines it "
              "(f = lambda x: x * 3, then f(a)); it cannot be passed or returned",
    "JoinedStr": "f-strings are not available in GPU code; print(\"x =\", x) works",
    "NamedExpr": "the walrus operator is not supported in GPU code",
    "Await": "await is not available in GPU code",
    "Yield": "generators are not available in GPU code",
    "Starred": "*args is not supported in GPU code",
    "Slice": "slices can only be used to index arrays",
}


class ExpressionTyping:
    def expr(self, node) -> t.Type:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported expression: {type(node).__name__}",
                             _EXPR_HINTS.get(type(node).__name__))
        return self.record(node, method(node))

    # ---- leaves --------------------------------------------------------------------------------

    def expr_Constant(self, node: ast.Constant) -> t.Type:
        value = node.value
        if isinstance(value, bool):
            return t.boolean
        if isinstance(value, float):
            self.weak.add(node)
            return t.float64
        if value is None:
            return t.none
        if isinstance(value, (str, bytes)):  # print() and stores into string arrays take them
            return t.StringLiteral("str" if isinstance(value, str) else "bytes")
        self.check_int_range(node, value)
        found = constant_type(value)
        if found is None:
            hint = "GPU code has numbers, booleans, None and (in print only) strings"
            if value is Ellipsis:
                hint = "`...` is not supported in GPU code; index every dimension (a[i, j]) or " \
                       "slice one (a[:, j])"
            raise self.error(node, f"constant {value!r} has no GPU type", hint)
        return found

    def expr_Name(self, node: ast.Name) -> t.Type:
        name = node.id
        if name in self.inner_functions and name not in self.locals:
            raise inner.escape_error(self, node)
        if name in self.locals:
            var, found = self.read(node, name)
            self.uses[node] = var
            if isinstance(found, ConstValue):  # a literal bound at the call site
                self.constants[node] = found.value
                return found.type
            self.fold_read(node, var, found)
            if isinstance(found, t.Optional) and node not in self.keep_optional:
                return found.type  # used as its value: lowering checks it is not None
            return found
        value = lookup_global(self.py_func, name)
        if missing(value):
            raise self.error(node, f"NameError: name '{name}' is not defined",
                             did_you_mean(name, self.visible_names())
                             + "define it before the GPU function is compiled, or pass it in")
        builtin = find_builtin(value) if not isinstance(value, (int, float)) else None
        if builtin is not None and builtin.is_value:
            return self.builtin_value(node, builtin)
        return self.global_value_type(node, value)

    def fold_read(self, node: ast.Name, var, found: t.Type) -> None:
        """A read of a variable whose definition is a compile-time number (`j = 8 * p + 2`
        with p a literal_unroll item): lowered as that number, so that index arithmetic on it
        reaches LLVM folded (no wraparound select for a known non-negative index). Only where
        the value is exactly what the typed definition holds; a pass that no longer finds the
        read constant (a loop's phi reaches it) takes the fold back."""
        value = self.var_constants.get(var, _UNKNOWN) if var in self.exact_constants else \
            _UNKNOWN
        if value is not _UNKNOWN and _holds_exactly(found, value):
            self.constants[node] = value
            self.folded_reads.add(node)
        elif node in self.folded_reads:
            self.folded_reads.discard(node)
            self.constants.pop(node, None)

    def builtin_value(self, node, builtin: Builtin) -> t.Type:
        found = builtin.type_value(self, node)
        self.calls[node] = BuiltinValue(builtin, found)
        return found

    def check_int_range(self, node, value) -> None:
        """numba refuses integers beyond 64 bits ("Int value is too large"); never truncate."""
        if isinstance(value, int) and not -(2**63) <= value < 2**64:
            raise self.error(node, f"integer {value} does not fit in 64 bits",
                             "GPU integers are int64 or uint64 at most; use a float "
                             "(e.g. 1.5e30) for larger magnitudes")

    def global_value_type(self, node, value) -> t.Type:
        self.refuse_numba_cuda(node, value)
        self.check_int_range(node, value)
        found = constant_type(value)
        if found is not None:
            self.constants[node] = value
            if type(value) is float:  # a Python float; np.float64 (a float subclass) is typed
                self.weak.add(node)
            return found
        return PyValue(value)

    def refuse_numba_cuda(self, node, value) -> None:
        """numba's own cuda module in a gpunb kernel (an import left unchanged): its stubs mean
        nothing to gpunb, so say which import to change rather than fail on a stub."""
        if isinstance(value, type(ast)) and value.__name__ == "numba.cuda" and \
                intrinsic_name(getattr(value, "threadIdx", None)) is None:
            # (a numba.cuda that forwards to gpunb.cuda, as the parity harness's, is gpunb's)
            raise self.error(node, f"'{value.__name__}' is numba's CUDA module, not gpunb's: "
                             "a gpunb kernel cannot use its names",
                             "import it from gpunb instead: `from gpunb import cuda` (numba "
                             "types such as numba.float32 work as they are)")

    def expr_Attribute(self, node: ast.Attribute) -> t.Type:
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, PyValue):
            obj = base.obj
            if not hasattr(obj, attr):
                raise self.error(node, f"{base} has no attribute '{attr}'",
                                 did_you_mean(attr, dir(obj))
                                 + "check the spelling; GPU code sees the object as it is when "
                                 "the kernel compiles")
            value = getattr(obj, attr)
            builtin = find_builtin(value) if not isinstance(value, (int, float)) else None
            if builtin is not None and builtin.is_value:
                return self.builtin_value(node, builtin)
            return self.global_value_type(node, value)
        return self.attribute_of_value(node, base, attr)

    def attribute_of_value(self, node, base: t.Type, attr: str) -> t.Type:
        if isinstance(base, Fragment):  # frag.x, frag.num_elements (nvcuda::wmma)
            from gpunb.compiler.builtins.tensorcore_wmma import fragment_attribute_type

            return fragment_attribute_type(self, node, base, attr)
        if isinstance(base, t.Array):
            if attr in ("shape", "strides"):
                return t.Tuple((t.int64,) * base.ndim)
            if attr in ("size", "ndim", "itemsize", "nbytes"):
                return t.int64
            if attr == "dtype":  # a compile-time dtype (cuda.local.array(n, dtype=a.dtype))
                return PyValue(base.dtype)
            if attr == "ctypes":  # numba's arr.ctypes.data: the address
                return ArrayCTypes(base)
            if attr == "T" and base.ndim <= 2:
                layout = base.layout
                if base.ndim == 2:
                    layout = {"C": "F", "F": "C"}.get(base.layout, "A")
                return base.derived(base.ndim, layout)
            if attr in ("real", "imag") and isinstance(base.dtype, t.Complex):
                # views of the components (numba's): every other float, strides unchanged
                return t.Array(base.dtype.component, base.ndim, "A", base.readonly,
                               base.aligned)
            if attr == "real" and isinstance(base.dtype, (t.Integer, t.Float)):
                return base  # a real array is its own real part (numba: the same array)
            if isinstance(base.dtype, t.Record) and base.dtype.field(attr) is not None:
                return record_field_view_type(base, *base.dtype.field(attr))
        if isinstance(base, ArrayCTypes) and attr == "data":
            return t.uint64
        if isinstance(base, t.Complex) and attr in ("real", "imag"):
            return base.component
        if isinstance(base, (t.Integer, t.Float)) and attr in ("real", "imag"):
            return base  # (numba has no .real on a bool)
        if isinstance(base, t.Record):
            found = base.field(attr)
            if found is not None:
                return field_value_type(base, *found)
        if isinstance(base, t.Group) and attr == "size":
            return t.int64
        if isinstance(base, t.Tuple) and attr in base.names:  # a namedtuple's field
            return base.items[base.names.index(attr)]
        found = self.overloaded_attribute(node, base)  # an @overload_attribute of the type
        if found is not None:
            return found
        raise self.error(node, f"{base} has no attribute '{attr}' in GPU code",
                         _attribute_hint(base))

    def expr_Tuple(self, node: ast.Tuple) -> t.Type:
        return t.Tuple(tuple(self.expr(e) for e in node.elts))

    # ---- operators -----------------------------------------------------------------------------

    def expr_BinOp(self, node: ast.BinOp) -> t.Type:
        left, right = self.expr(node.left), self.expr(node.right)
        return self.binop_type(node, node.op, left, right, node.left in self.weak,
                               node.right in self.weak)

    def binop_type(self, node, op, a: t.Type, b: t.Type, weak_a: bool, weak_b: bool) -> t.Type:
        if datetimes.involved(a, b):
            try:
                return datetimes.binop_type(op, a, b)
            except datetimes.DateTimeTypeError as exc:
                raise self.error(node, str(exc)) from None
        if isinstance(a, t.Tuple) and isinstance(b, t.Tuple) and isinstance(op, ast.Add):
            return t.Tuple(a.items + b.items)
        if not (t.is_number(a) and t.is_number(b)):
            raise self.error(node, f"unsupported operand types for {_OP_SYMBOLS[type(op)]}: "
                             f"{a} and {b}", _array_hint(a, b))
        if weak_a and weak_b:
            self.weak.add(node)
        try:
            return promotion.binop_with_weak(op, a, b, weak_a, weak_b)
        except promotion.NoRule:
            pass
        symbol = _OP_SYMBOLS[type(op)]
        if isinstance(op, ast.MatMult):
            raise self.error(node, "the @ operator is not supported in GPU code")
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            raise self.error(node, f"{symbol} is not defined for complex numbers")
        if isinstance(op, (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)):
            raise self.error(node, f"bit operations need integers, got {a} and {b}",
                             "convert with int(...) first; bitwise operators do not apply to "
                             "floats or complex numbers")
        raise self.error(node, f"unsupported operand types for {symbol}: {a} and {b}")

    def expr_UnaryOp(self, node: ast.UnaryOp) -> t.Type:
        found = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            if not isinstance(found, _HAS_TRUTH):
                raise self.error(node.operand, f"{found} has no truth value for 'not'",
                                 "compare explicitly, e.g. `not (x > 0)`")
            known = self.constants.get(node.operand)
            if isinstance(node.operand, ast.Compare) and isinstance(known, bool):
                self.constants[node] = not known  # not (x is None)
            return t.boolean
        if node.operand in self.weak:
            self.weak.add(node)
        if isinstance(found, t.DateTime) and found.kind == "m" and \
                isinstance(node.op, (ast.USub, ast.UAdd)):
            return found  # -timedelta, +timedelta
        try:
            return promotion.unary(node.op, found)
        except promotion.NoRule:
            if isinstance(node.op, ast.Invert) and t.is_number(found):
                raise self.error(node, f"~ needs an integer, got {found}") from None
            raise self.error(node, f"unsupported operand type for unary operator: "
                             f"{found}") from None

    def expr_BoolOp(self, node: ast.BoolOp) -> t.Type:
        live, types = [], []
        for k in self.live_operands(node):
            live.append(k)
            types.append(self.expr(node.values[k]))
            known = self.constants.get(node.values[k])
            if isinstance(node.values[k], ast.Compare) and known is isinstance(node.op, ast.Or):
                break  # `x is None or ...` with x None (so far): the rest is not evaluated
        if len(live) != len(node.values):
            self.branches[node] = tuple(live)
        else:
            self.branches.pop(node, None)  # a pass that knew less may have pruned some
        values = [node.values[k] for k in live]
        result = types[0]
        for value, found in zip(values[1:], types[1:], strict=True):
            merged = promotion.join(result, found)
            if merged is None:
                raise self.error(value, f"operands of and/or have types {result} and {found}",
                                 "give both operands one type")
            result = merged
        return result

    def live_operands(self, node: ast.BoolOp) -> list:
        """Indices of the operands of `a or b or ...` that can give its value: numba prunes a
        constant operand's dead branch (`0.0 or x` is x; `2 or x` is 2)."""
        from gpunb.compiler.infer.statements import constant_condition

        live = []
        for k, value in enumerate(node.values):
            last = k == len(node.values) - 1
            try:
                truth = self.constant_truth(value, constant_condition)
            except NotConstant:
                live.append(k)
                continue
            decides = truth if isinstance(node.op, ast.Or) else not truth
            if decides or last:
                live.append(k)
                break
        return live

    def constant_truth(self, value: ast.expr, constant_condition) -> bool:
        """The truth of a constant operand of and/or (NotConstant otherwise). A nested and/or
        that pruning leaves with one constant operand is that constant, as numba sees it after
        pruning its branch: `(2 or x) or y` is 2."""
        if isinstance(value, ast.BoolOp):
            inner = self.live_operands(value)
            if len(inner) == 1:
                return self.constant_truth(value.values[inner[0]], constant_condition)
            raise NotConstant
        return bool(constant_condition(value, self.resolve_constant))

    def constant_string_comparison(self, node: ast.Compare, op) -> t.Type:
        """Two constant strings (literals, or parameters every caller passes a literal for, as
        numba's literal strings) compare at compile time; the branch they guard is pruned."""
        import operator

        what = "a string compared in GPU code"
        left, right = self.const(node.left, what), self.const(node.comparators[0], what)
        compare = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
                   ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}[type(op)]
        try:
            self.constants[node] = bool(compare(left, right))
        except TypeError as exc:  # str with bytes
            raise self.error(node, f"cannot compare {left!r} with {right!r}: {exc}") from None
        return t.boolean

    def expr_Compare(self, node: ast.Compare) -> t.Type:
        left = node.left
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            self.keep_optional.update((left, node.comparators[0]))  # `x is None` on an Optional
        lt = self.expr(left)
        operand_types = []
        for op, right in zip(node.ops, node.comparators, strict=True):
            rt = self.expr(right)
            enums = self.enum_comparison(node, op, lt, rt)
            if enums is not None:
                return enums
            if isinstance(op, (ast.Is, ast.IsNot)) and len(node.ops) == 1 and \
                    {type(lt), type(rt)} == {t.Optional, t.NoneType}:  # decided at run time
                self.constants.pop(node, None)  # known in a pass that saw only the None
                self.comparisons[node] = (t.boolean,)
                return t.boolean
            if isinstance(op, (ast.Is, ast.IsNot)) and len(node.ops) == 1 and (
                    isinstance(lt, t.NoneType) or isinstance(rt, t.NoneType)):
                # only None has type none, so the answer is known at compile time
                same = isinstance(lt, t.NoneType) and isinstance(rt, t.NoneType)
                self.constants[node] = same if isinstance(op, ast.Is) else not same
                return t.boolean
            if _is_string(lt) and _is_string(rt) and len(node.ops) == 1 and \
                    not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                return self.constant_string_comparison(node, op)
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(lt, t.Boolean) and \
                    isinstance(rt, t.Boolean):  # numba: `flag is True` compares the values
                operand_types.append(t.boolean)
                left, lt = right, rt
                continue
            if isinstance(op, (ast.Is, ast.IsNot)):
                raise self.error(node, f"'{_CMP_SYMBOLS[type(op)]}' only tests for None in GPU "
                                 "code", "compare values with == and !=")
            if isinstance(op, (ast.In, ast.NotIn)):
                operand_types.append(self.contains_types(node, left, lt, rt))
            elif datetimes.involved(lt, rt):
                try:
                    operand_types.append(datetimes.compare_type(op, lt, rt))
                except datetimes.DateTimeTypeError as exc:
                    raise self.error(node, str(exc)) from None
            else:
                if not (t.is_number(lt) and t.is_number(rt)):
                    raise self.error(node, f"cannot compare {lt} with {rt}",
                                     "comparisons take numbers (compare arrays element by "
                                     "element in a loop)")
                if (isinstance(lt, t.Complex) or isinstance(rt, t.Complex)) and \
                        not isinstance(op, (ast.Eq, ast.NotEq)):
                    raise self.error(node, "complex numbers can only be compared with == and !=")
                operand_types.append(self.comparison_type(lt, rt, left in self.weak,
                                                          right in self.weak))
            left, lt = right, rt
        self.comparisons[node] = tuple(operand_types)
        return t.boolean

    def enum_comparison(self, node, op, lt: t.Type, rt: t.Type) -> t.Type | None:
        """==, != and is between Enum / IntEnum members (numba's rules): members of one class
        compare by value; another class or a non-member is never equal (an IntEnum member
        compares with numbers as the int it is); None when neither side is an Enum member."""
        enum_kinds = (enum_types.EnumMember, enum_types.IntEnumMember)
        if not isinstance(lt, enum_kinds) and not isinstance(rt, enum_kinds):
            return None
        identity = isinstance(op, (ast.Is, ast.IsNot))
        if not identity and isinstance(lt, enum_types.IntEnumMember) and t.is_number(rt) or \
                not identity and isinstance(rt, enum_types.IntEnumMember) and t.is_number(lt):
            return None  # numbers compare as numbers
        if len(node.ops) != 1 or not isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            raise self.error(node, f"cannot compare {lt} with {rt} that way",
                             "Enum members compare with ==, != and is")
        positive = isinstance(op, (ast.Eq, ast.Is))
        if type(lt) is not type(rt) or lt.enum_class is not rt.enum_class:
            self.constants[node] = not positive  # another class: never the same member
            return t.boolean
        self.comparisons[node] = (t.int64,)  # positions (Enum) or values (IntEnum)
        return t.boolean

    def comparison_type(self, a: t.Type, b: t.Type, weak_a: bool, weak_b: bool) -> t.Type:
        """What both sides of == < ... are converted to; a weak float literal takes the other
        side's float width (`x < 0.5` with x float32 compares in float32)."""
        if weak_a and not weak_b and isinstance(b, t.Float):
            a = b
        if weak_b and not weak_a and isinstance(a, t.Float):
            b = a
        return promotion.comparison_operands(a, b)

    def contains_types(self, node, item_node, item: t.Type, seq: t.Type):
        """`x in seq` for a tuple of numbers or a 1-d numeric array (numba's operator.contains):
        the comparison type per tuple item, or the one for array elements."""
        items = seq.items if isinstance(seq, t.Tuple) else (
            (seq.dtype,) if isinstance(seq, t.Array) and seq.ndim == 1 else None)
        if items is None or not all(t.is_number(i) for i in items) or not t.is_number(item):
            raise self.error(node, f"'in' needs a number and a tuple of numbers or a 1-d array, "
                             f"got {item} in {seq}", "compare values with == and !=")
        weak = item_node in self.weak
        found = tuple(self.comparison_type(item, i, weak, False) for i in items)
        return found if isinstance(seq, t.Tuple) else found[0]

    def expr_IfExp(self, node: ast.IfExp) -> t.Type:
        self.condition(node.test)
        known = self.static_truth(node.test)
        if known is not None:
            self.branches[node] = known
            live = node.body if known else node.orelse
            found = self.expr(live)
            if live in self.weak:
                self.weak.add(node)
            return found
        a, b = self.expr(node.body), self.expr(node.orelse)
        weak_a, weak_b = node.body in self.weak, node.orelse in self.weak
        if weak_a and weak_b:
            self.weak.add(node)
        if weak_a and isinstance(b, t.Float):
            a = b
        if weak_b and isinstance(a, t.Float):
            b = a
        merged = promotion.join(a, b)
        if merged is None:
            raise self.error(node, f"the branches of this conditional expression have types "
                             f"{a} and {b}", "make both branches the same type")
        return merged


def field_value_type(record: t.Record, ftype: t.Type, offset: int) -> t.Type:
    """What reading a record field gives: a sub-array field reads as a C-contiguous view,
    unaligned where the record's layout does not keep its elements aligned."""
    if isinstance(ftype, t.InlineArray):
        aligned = record.field_alignment(ftype, offset) is None
        return t.Array(ftype.dtype, len(ftype.shape), "C", record.readonly, aligned)
    if isinstance(ftype, t.Record):  # a nested record is only as aligned as its place says
        found = record.field_alignment(ftype, offset)
        nested = ftype if found is None else ftype.with_align(found)
        return nested.as_readonly() if record.readonly else nested
    return ftype


def record_field_view_type(base: t.Array, ftype: t.Type, offset: int) -> t.Array:
    """`recs.x` of a structured array: a view of field x of every record (numba's), with the
    record array's strides; a sub-array field adds its own dimensions."""
    unaligned = base.dtype.field_alignment(ftype, offset)
    aligned = base.aligned and unaligned is None
    if isinstance(ftype, t.InlineArray):
        return t.Array(ftype.dtype, base.ndim + len(ftype.shape), "A", base.readonly, aligned)
    if isinstance(ftype, t.Record) and unaligned is not None:
        ftype = ftype.with_align(unaligned)
    return t.Array(ftype, base.ndim, "A", base.readonly, aligned)


def _attribute_hint(base: t.Type) -> str | None:
    if isinstance(base, t.Array):
        fields = "; its records' fields (recs.x views field x) are " + ", ".join(
            name for name, *_ in base.dtype.fields) if isinstance(base.dtype, t.Record) else ""
        return "arrays have shape, strides, size, ndim, itemsize, nbytes and T in GPU code, " \
               "and the reductions sum, prod, mean, var, std, min, max, all and any; other " \
               "methods are not available: write a loop" + fields
    if isinstance(base, t.Record):
        return f"its fields are {', '.join(name for name, *_ in base.fields)}"
    if t.is_number(base):
        return "numbers have .real and .imag (and complex numbers .conjugate())"
    return None


def _array_hint(a, b) -> str | None:
    if isinstance(a, t.Array) or isinstance(b, t.Array):
        return "whole-array arithmetic is not available inside kernels; index elements " \
               "(x[i] * 2), or use gpunb.fuse for elementwise expressions"
    if _is_string(a) or _is_string(b):  # "x=%d" % x, "-" * 10: no strings are built on a GPU
        return "strings cannot be formatted or built in GPU code; print() takes the pieces: " \
               "print(\"x =\", x, \"y =\", y)"
    return None


def _is_string(ty: t.Type) -> bool:
    """A constant string: a literal, or a global or argument holding one."""
    return isinstance(ty, t.StringLiteral) or isinstance(getattr(ty, "obj", None), (str, bytes))


_UNKNOWN = object()


def _holds_exactly(found: t.Type, value) -> bool:
    """Whether a value of type `found` (an integer or a bool: a float's constant would be
    computed by Python's libm, not the target's) is exactly the Python number `value`."""
    if isinstance(found, t.Boolean):
        return type(value) is bool
    if isinstance(found, t.Integer) and type(value) in (int, bool):
        low = -(1 << (found.bitwidth - 1)) if found.signed else 0
        return low <= value < low + (1 << found.bitwidth)
    return False
