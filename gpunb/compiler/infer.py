"""Type inference: a located Python AST plus argument types -> a TypedFunction.

Local and per specialisation: every variable gets one type, the unification of everything assigned
to it (iterated to a fixed point so loop-carried values settle); every expression node gets a type;
every call is resolved - GPU functions through globals at compile time, with defaults and keyword
arguments bound here (seed 001). Python float literals are weak: `x * 2.0` stays float32.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field

import numpy as np

from gpunb.compiler import exceptions, inner
from gpunb.compiler.builtins import Builtin, find_builtin
from gpunb.compiler.frontend import KernelSource, load_source
from gpunb.compiler.values import (
    NotConstant,
    PyValue,
    const_eval,
    constant_type,
    dtype_to_type,
    missing,
)
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError
from gpunb.foundation.pyobjects import is_gpu_function, lookup_global


@dataclass(eq=False)
class CallInfo:
    """How one ast.Call was resolved."""

    kind: str  # "gpufunc" | "builtin" | "cast"
    target: object  # callee TypedFunction (gpufunc), Builtin, or the Type cast to
    args: list  # per parameter: an ast node, or ("const", python value) for a bound default
    argtypes: tuple
    result: t.Type


@dataclass(eq=False)
class TypedFunction:
    """The result of inference for one function and one tuple of argument types."""

    source: KernelSource
    py_func: object
    argnames: tuple
    argtypes: tuple
    return_type: t.Type
    var_types: dict
    expr_types: dict  # id(node) -> Type
    calls: dict  # id(ast.Call) -> CallInfo
    constants: dict  # id(node) -> python value frozen at compile time
    callees: list = field(default_factory=list)  # TypedFunctions of GPU functions called
    features: set = field(default_factory=set)  # "barrier", "grid_sync", "dynamic_shared", ...
    is_kernel: bool = False
    weak: set = field(default_factory=set)  # id(node) of weak (untyped) float literal expressions
    loops: dict = field(default_factory=dict)  # id(ast.For) -> (kind, item type)
    # id(ast.If / ast.IfExp) -> the branch taken, where the test is known at compile time
    # (`x is None`): the other branch is neither typed nor lowered, as numba prunes it
    static_branches: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.source.name

    def type_of(self, node: ast.AST) -> t.Type:
        return self.expr_types[id(node)]

    def all_features(self) -> set:
        out = set(self.features)
        for callee in self.callees:
            out |= callee.all_features()
        return out


class InferenceSession:
    """Shared by one compilation: memoises device-function specialisations, detects recursion."""

    def __init__(self, options: dict | None = None):
        self.options = options or {}
        self.done: dict = {}
        self.in_progress: set = set()

    def infer(self, py_func, argtypes: tuple, is_kernel: bool = False, call_node=None,
              caller: Inferer | None = None) -> TypedFunction:
        key = (py_func.__code__, id(py_func.__globals__), argtypes, is_kernel,
               _closure_key(py_func))
        found = self.done.get(key)
        if found is not None:
            return found
        if key in self.in_progress:
            raise caller.error(call_node, f"recursive call of GPU function '{py_func.__name__}'",
                               "recursion is not supported in GPU functions; use a loop")
        self.in_progress.add(key)
        try:
            typed = Inferer(load_source(py_func), py_func, argtypes, self, is_kernel).run()
        finally:
            self.in_progress.discard(key)
        self.done[key] = typed
        return typed


def _closure_key(py_func):
    if not py_func.__closure__:
        return ()
    out = []
    for cell in py_func.__closure__:
        try:
            out.append(id(cell.cell_contents))
        except ValueError:
            out.append(None)
    return tuple(out)


_UNKNOWN = object()


class Inferer(ast.NodeVisitor):
    """One visitor method per statement kind; `expr()` dispatches on expression kinds."""

    MAX_PASSES = 12

    def __init__(self, source: KernelSource, py_func, argtypes: tuple,
                 session: InferenceSession, is_kernel: bool, enclosing: dict | None = None):
        self.source = source
        self.py_func = py_func
        self.session = session
        self.is_kernel = is_kernel
        args = source.tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(source.tree, "GPU functions take plain positional parameters only",
                             "remove *args, **kwargs and keyword-only parameters")
        self.argnames = tuple(a.arg for a in args.args)
        if len(argtypes) != len(self.argnames):
            raise self.error(source.tree, f"'{source.name}' takes {len(self.argnames)} "
                             f"arguments but {len(argtypes)} were given")
        self.argtypes = tuple(argtypes)
        self.var_types: dict = dict(zip(self.argnames, self.argtypes, strict=False))
        self.locals = _assigned_names(source.tree) | set(self.argnames)
        self.expr_types: dict = {}
        self.calls: dict = {}
        self.constants: dict = {}
        self.weak: set = set()
        self.callees: dict = {}
        self.features: set = set()
        self.return_types: list = []
        self.loops: dict = {}
        self.literal_vars: set = set()
        self.static_branches: dict = {}
        self.terminated = False  # the statement just visited always leaves the block
        self.changed = False
        # inner defs and lambdas by name (this scope's and the enclosing scopes'), those whose
        # definition has been passed, and the Name nodes that pass captured variables to them
        self.inner_functions = inner.collect(self, enclosing or {})
        self.defined_inner: set = set(enclosing or ())
        self.capture_refs: dict = {}

    # ---- driver --------------------------------------------------------------------------------

    def run(self) -> TypedFunction:
        for _ in range(self.MAX_PASSES):
            self.changed = False
            self.return_types = []
            self.visit_body(self.source.tree.body)
            if not self.changed:
                break
        else:
            raise self.error(self.source.tree, "types of local variables did not settle",
                             "give variables one type, e.g. initialise with 0.0 not 0")
        ret = t.none
        for node, rt in self.return_types:
            merged = t.unify(ret, rt) if ret != t.none else rt
            if merged is None:
                raise self.error(node, f"this function returns both {ret} and {rt}",
                                 "return values of one type from every return statement")
            ret = merged
        if self.is_kernel and ret != t.none:
            node = self.return_types[0][0]
            raise self.error(node, "a kernel cannot return a value",
                             "write results into an output array; only device functions return")
        return TypedFunction(self.source, self.py_func, self.argnames, self.argtypes, ret,
                             self.var_types, self.expr_types, self.calls, self.constants,
                             list(self.callees.values()), self.features, self.is_kernel,
                             self.weak, self.loops, self.static_branches)

    def error(self, node, message: str, hint: str | None = None) -> CompileError:
        return CompileError(message, self.source.loc(node), hint, function=self.source.name)

    def visit_body(self, body: list) -> None:
        self.terminated = False
        for stmt in body:
            self.visit(stmt)
            if self.terminated:
                break  # after return/break/continue: unreachable, and lowering skips it too

    def set_var(self, node, name: str, ty: t.Type) -> None:
        if isinstance(ty, t.StringLiteral):
            raise self.error(node, "strings cannot be stored in variables in GPU code",
                             "string literals can only be passed to print()")
        if isinstance(ty, PyValue):
            raise self.error(node, f"cannot assign {ty} to a variable",
                             "functions, modules and types cannot be stored in variables "
                             "in GPU code")
        old = self.var_types.get(name)
        if old is None:
            self.var_types[name] = ty
            self.changed = True
            return
        new = t.unify(old, ty)
        if new is None:
            raise self.error(node, f"variable '{name}' holds {old} and is assigned {ty}",
                             "use a new variable name for a value of another type")
        if new != old:
            self.var_types[name] = new
            self.changed = True

    # ---- statements ----------------------------------------------------------------------------

    def generic_visit(self, node):
        kind = type(node).__name__
        hints = {
            "Try": "try/except is not supported in GPU code",
            "With": "with-blocks are not supported in GPU code",
            "FunctionDef": "define helpers at top level (or in the cell) and call them",
            "ClassDef": "classes cannot be defined in GPU code",
            "Global": "GPU code cannot rebind globals; pass values as arguments",
            "Nonlocal": "inner functions may read the enclosing function's variables but not "
                        "assign them (numba refuses nonlocal too); return the new value instead",
            "Delete": "del is not supported in GPU code",
            "Import": "import modules at top level, outside GPU functions",
            "ImportFrom": "import modules at top level, outside GPU functions",
            "Match": "match is not supported in GPU code; use if/elif",
            "AsyncFor": "async is not available in GPU code",
            "AsyncWith": "async is not available in GPU code",
            "TypeAlias": "declare types at top level, outside GPU functions",
        }
        raise self.error(node, f"unsupported statement: {kind}",
                         hints.get(kind, "this Python statement has no GPU meaning in gpunb"))

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.expr(node.value)

    def visit_Pass(self, node) -> None:
        return

    def visit_Assert(self, node: ast.Assert) -> None:
        """numba.cuda compiles assert only with debug=True (then a failure raises
        AssertionError on the host); without debug it is typed and compiles to nothing."""
        self.condition(node.test)
        if self.session.options.get("debug"):
            self.constants[id(node)] = ("AssertionError", self.checked_raise(
                node, exceptions.assert_message))
        elif node.msg is not None and not isinstance(node.msg, ast.Constant):
            self.expr(node.msg)

    def visit_Raise(self, node: ast.Raise) -> None:
        """`raise Cls` / `raise Cls("constant")`: ends the thread (reported with debug=True)."""
        self.constants[id(node)] = self.checked_raise(node, exceptions.raise_target)
        self.terminated = True

    def checked_raise(self, node, read):
        try:
            return read(node, self.resolve_constant)
        except exceptions.BadRaise as bad:
            raise self.error(*bad.args) from None

    def visit_Break(self, node) -> None:
        self.terminated = True

    def visit_Continue(self, node) -> None:
        self.terminated = True

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.defined_inner.add(node.name)  # compiled at its calls (inner.call)

    def visit_Assign(self, node: ast.Assign) -> None:
        if inner.is_lambda_binding(node):
            self.defined_inner.add(node.targets[0].id)
            return
        vt = self.expr(node.value)
        for target in node.targets:
            self.assign(target, vt, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        vt = self.expr(node.value)
        if isinstance(node.target, ast.Name):
            declared = self.resolve_type_annotation(node.annotation)
            if declared is not None:
                if not t.can_convert(vt, declared):
                    raise self.error(node.value, f"cannot assign {vt} to '{node.target.id}', "
                                     f"annotated {declared}",
                                     "annotate the variable with the value's type, or drop the "
                                     "annotation")
                self.set_var(node, node.target.id, declared)
                return
        self.assign(node.target, vt, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        current = self.expr(node.target) if not isinstance(node.target, ast.Name) else \
            self.name_type(node.target)
        value = self.expr(node.value)
        result = self.binop_type(node, node.op, current, value, False, id(node.value) in self.weak)
        self.expr_types[id(node)] = result
        if isinstance(node.target, ast.Name):
            self.assign(node.target, result, node)
        else:
            self.check_store(node.target, result, node.value)

    def assign(self, target, vt: t.Type, value_node) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            existing = self.var_types.get(name)
            if id(value_node) in self.weak and isinstance(existing, t.Float):
                vt = existing
            # integer literals are weak too (numba's Literal[int]): `s = 0` then `s ^= u64`
            # makes s a uint64, not a float64
            if _is_int_literal(value_node):
                if isinstance(existing, t.Integer) and name not in self.literal_vars:
                    vt = existing
                elif existing is None:
                    self.literal_vars.add(name)
            elif name in self.literal_vars and isinstance(vt, t.Integer) and \
                    isinstance(existing, t.Integer):
                self.literal_vars.discard(name)
                if existing != vt:
                    self.var_types[name] = vt
                    self.changed = True
                return
            self.set_var(target, name, vt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            starred = next((e for e in target.elts if isinstance(e, ast.Starred)), None)
            if starred is not None:
                raise self.error(starred, "starred assignment is not supported in GPU code",
                                 "unpack every item (a, b, c = t) or index the tuple (t[0])")
            items = self.unpack_types(target, vt, len(target.elts))
            for elt, it in zip(target.elts, items, strict=False):
                self.assign(elt, it, None)
        elif isinstance(target, ast.Subscript):
            self.expr(target)
            self.check_store(target, vt, value_node)
        elif isinstance(target, ast.Attribute):
            self.expr(target)
            self.check_store(target, vt, value_node)
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def unpack_types(self, node, vt: t.Type, n: int) -> tuple:
        if isinstance(vt, t.Tuple):
            if len(vt.items) != n:
                raise self.error(node, f"cannot unpack a tuple of {len(vt.items)} into {n} names",
                                 f"name all {len(vt.items)} items on the left")
            return vt.items
        if isinstance(vt, t.Complex):
            raise self.error(node, "cannot unpack a complex number")
        raise self.error(node, f"cannot unpack {vt}", "only tuples can be unpacked in GPU code")

    def check_store(self, target, vt: t.Type, value_node) -> None:
        slot = self.expr_types[id(target)]
        base = self.expr_types[id(target.value)]
        if isinstance(target, ast.Attribute) and not isinstance(base, t.Record):
            raise self.error(target, f"cannot assign to '{target.attr}' of {base}",
                             "in GPU code only record fields can be assigned (rec.x = v); "
                             "array attributes and module names are read-only")
        if isinstance(base, t.Record) and isinstance(slot, t.Array):
            raise self.error(target, "a record's array field cannot be assigned as a whole",
                             "assign its elements, e.g. rec.v[0] = x")
        if isinstance(base, t.Record) and base.readonly:
            raise self.error(target, "cannot store into a field of a record of a read-only "
                             "array", READONLY_HINT)
        if isinstance(target, ast.Subscript):
            if isinstance(base, t.Tuple):
                raise self.error(target, "tuples are immutable", "build a new tuple instead")
            if isinstance(base, t.Array) and base.readonly:
                raise self.error(target, f"cannot store into a read-only array ({base})",
                                 READONLY_HINT)
            if isinstance(slot, t.Array):
                self.check_slice_store(target, vt, slot)
                return
        if not t.can_convert(vt, slot):
            raise self.error(value_node or target, f"cannot store {vt} into an element of {slot}",
                             _store_hint(vt, slot))

    def visit_If(self, node: ast.If) -> None:
        self.condition(node.test)
        known = self.static_truth(node.test)
        if known is not None:
            self.static_branches[id(node)] = known
            self.visit_body(node.body if known else node.orelse)
            return  # terminated as the branch taken left it
        self.visit_body(node.body)
        self.visit_body(node.orelse)
        self.terminated = False

    def static_truth(self, test) -> bool | None:
        """The truth of a condition known at compile time (`x is None`, a None value), else
        None."""
        ty = self.expr_types[id(test)]
        if isinstance(ty, t.NoneType):
            return False
        value = self.constants.get(id(test))
        if isinstance(test, (ast.Compare, ast.UnaryOp)) and isinstance(value, bool):
            return value
        return None

    def visit_While(self, node: ast.While) -> None:
        self.condition(node.test)
        self.visit_body(node.body)
        self.visit_body(node.orelse)
        self.terminated = False

    def visit_For(self, node: ast.For) -> None:
        it = node.iter
        callee = self.callee_object(it.func) if isinstance(it, ast.Call) else None
        inner = it.args[0] if callee is enumerate and it.args else None
        inner_callee = self.callee_object(inner.func) if isinstance(inner, ast.Call) else None
        if callee is range:
            loop_t = self.range_type(it)
            if not isinstance(node.target, ast.Name):
                raise self.error(node.target, "a range loop needs one variable name")
            self.loops[id(node)] = ("range", loop_t)
            self.set_var(node.target, node.target.id, loop_t)
        elif callee is enumerate and inner_callee is zip and not self.zips_tuples(inner):
            if not (isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2) or \
                    len(it.args) > 2 or any(k.arg != "start" for k in it.keywords):
                raise self.error(node.target, "write `for i, (a, b) in enumerate(zip(...))`")
            start_node = it.args[1] if len(it.args) > 1 else next(
                (k.value for k in it.keywords if k.arg == "start"), None)
            if start_node is not None and not isinstance(self.expr(start_node), t.Integer):
                raise self.error(start_node, "enumerate's start must be an integer")
            self.assign(node.target.elts[0], t.int64, None)
            self.zip_loop(node, inner, node.target.elts[1])
            self.loops[id(node)] = ("enumerate_zip", self.loops[id(node)][1])
        elif callee is enumerate and (inner_callee is range or (
                inner is not None and isinstance(self.expr(inner), t.Array))):
            start_node = it.args[1] if len(it.args) > 1 else next(
                (k.value for k in it.keywords if k.arg == "start"), None)
            if start_node is not None and not isinstance(self.expr(start_node), t.Integer):
                raise self.error(start_node, "enumerate's start must be an integer")
            if not (isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2):
                raise self.error(node.target, "write `for i, x in enumerate(...)`")
            if inner_callee is range:
                item_t = self.range_type(inner)
                self.loops[id(node)] = ("enumerate_range", item_t)
            else:
                item_t = _array_item_type(self.expr_types[id(inner)])
                self.loops[id(node)] = ("enumerate_array", item_t)
            self.assign(node.target.elts[0], t.int64, None)
            self.assign(node.target.elts[1], item_t, None)
        elif callee is zip and not self.zips_tuples(it):
            self.zip_loop(node, it)
        else:
            seq = self.expr(it)
            if isinstance(seq, t.Tuple):
                if not seq.items:
                    raise self.error(it, "cannot iterate over an empty tuple")
                item = seq.items[0]
                for other in seq.items[1:]:
                    item = t.unify(item, other)
                    if item is None:
                        raise self.error(it, "loop over a tuple of mixed types",
                                         "only tuples of one type can be looped over")
                self.loops[id(node)] = ("tuple", item)
                self.assign(node.target, item, None)
            elif isinstance(seq, t.Array) and seq.ndim >= 1:
                self.loops[id(node)] = ("array", _array_item_type(seq))
                self.assign(node.target, _array_item_type(seq), None)
            else:
                raise self.error(it, f"cannot loop over {seq}",
                                 "loop over range(...), enumerate/zip, a tuple or a 1-d array")
        self.visit_body(node.body)
        self.visit_body(node.orelse)
        self.terminated = False

    def zips_tuples(self, it: ast.Call) -> bool:
        """zip() of tuples only is built at compile time (a tuple of tuples, loop unrolled)."""
        for arg in it.args:
            if isinstance(arg, ast.Call) and self.callee_object(arg.func) is range:
                return False
            if not isinstance(self.expr(arg), t.Tuple):
                return False
        return True

    def zip_loop(self, node: ast.For, it: ast.Call, target=None) -> None:
        """`for a, b in zip(range(...), arr, ...)`: ranges and 1-d arrays, in lock step."""
        if it.keywords or not it.args:
            raise self.error(it, "zip() in GPU code takes ranges and 1-d arrays, no keywords")
        kinds, items = [], []
        for arg in it.args:
            inner = self.callee_object(arg.func) if isinstance(arg, ast.Call) else None
            if inner is range:
                kinds.append("range")
                items.append(self.range_type(arg))
                continue
            ty = self.expr(arg)
            if not (isinstance(ty, t.Array) and ty.ndim == 1):
                raise self.error(arg, f"cannot zip over {ty}",
                                 "zip() in GPU code takes range(...) and 1-d arrays")
            kinds.append("array")
            items.append(ty.dtype)
        self.loops[id(node)] = ("zip", tuple(kinds))
        self.expr_types[id(it)] = t.Tuple(tuple(items))
        self.assign(node.target if target is None else target, t.Tuple(tuple(items)), None)

    def range_type(self, it: ast.Call) -> t.Integer:
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range() takes 1 to 3 positional arguments")
        types = [self.expr(a) for a in it.args]
        for a, ty in zip(it.args, types, strict=False):
            if not isinstance(ty, (t.Integer, t.Boolean)):
                raise self.error(a, f"range() needs integers, got {ty}", "convert with int(...)")
        loop_t = types[0] if isinstance(types[0], t.Integer) else t.int64
        for ty in types[1:]:
            loop_t = t.unify(loop_t, ty) if isinstance(ty, t.Integer) else loop_t
        if not isinstance(loop_t, t.Integer):
            loop_t = t.int64
        self.expr_types[id(it)] = t.Tuple((loop_t,))
        return loop_t

    def visit_Return(self, node: ast.Return) -> None:
        rt = t.none if node.value is None else self.expr(node.value)
        if isinstance(rt, t.Array):
            raise self.error(node, "GPU functions cannot return arrays",
                             "write into an array argument instead")
        if isinstance(rt, PyValue):
            raise self.error(node, f"cannot return {rt}")
        self.return_types.append((node, rt))
        self.terminated = True

    def condition(self, node) -> None:
        ty = self.expr(node)
        if not isinstance(ty, _HAS_TRUTH):
            raise self.error(node, f"{ty} cannot be used as a condition",
                             "compare explicitly, e.g. `if x > 0:`")

    # ---- expressions ---------------------------------------------------------------------------

    def expr(self, node) -> t.Type:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported expression: {type(node).__name__}",
                             _EXPR_HINTS.get(type(node).__name__))
        ty = method(node)
        self.expr_types[id(node)] = ty
        return ty

    def expr_Constant(self, node: ast.Constant) -> t.Type:
        value = node.value
        if isinstance(value, bool):
            return t.boolean
        if isinstance(value, float):
            self.weak.add(id(node))
            return t.float64
        if value is None:
            return t.none
        if isinstance(value, str):
            return t.StringLiteral()
        self.check_int_range(node, value)
        ty = constant_type(value)
        if ty is None:
            hint = "GPU code has numbers, booleans, None and (in print only) strings"
            if value is Ellipsis:
                hint = "`...` is not supported in GPU code; index every dimension (a[i, j]) or " \
                       "slice one (a[:, j])"
            raise self.error(node, f"constant {value!r} has no GPU type", hint)
        return ty

    def expr_Name(self, node: ast.Name) -> t.Type:
        return self.name_type(node)

    def name_type(self, node: ast.Name) -> t.Type:
        name = node.id
        if name in self.inner_functions and name not in self.locals:
            raise inner.escape_error(self, node)
        if name in self.locals:
            ty = self.var_types.get(name)
            if ty is None:
                raise self.error(node, f"local variable '{name}' is used before it is assigned")
            return ty
        value = lookup_global(self.py_func, name)
        if missing(value):
            raise self.error(node, f"name '{name}' is not defined",
                             "define it before the GPU function is compiled, or pass it in")
        builtin = find_builtin(value) if not isinstance(value, (int, float)) else None
        if builtin is not None and builtin.is_value:
            return self.builtin_value(node, builtin)
        return self.global_value_type(node, value)

    def builtin_value(self, node, builtin: Builtin) -> t.Type:
        ty = builtin.type_value(self, node)
        self.calls[id(node)] = CallInfo("value", builtin, [], (), ty)
        return ty

    def check_int_range(self, node, value) -> None:
        """numba refuses integers beyond 64 bits ("Int value is too large"); never truncate."""
        if isinstance(value, int) and not -(2**63) <= value < 2**64:
            raise self.error(node, f"integer {value} does not fit in 64 bits",
                             "GPU integers are int64 or uint64 at most; use a float "
                             "(e.g. 1.5e30) for larger magnitudes")

    def global_value_type(self, node, value) -> t.Type:
        self.check_int_range(node, value)
        ty = constant_type(value)
        if ty is not None:
            self.constants[id(node)] = value
            if type(value) is float:  # a Python float; np.float64 (a float subclass) is typed
                self.weak.add(id(node))
            return ty
        return PyValue(value)

    def expr_Attribute(self, node: ast.Attribute) -> t.Type:
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, PyValue):
            obj = base.obj
            if not hasattr(obj, attr):
                raise self.error(node, f"{base} has no attribute '{attr}'",
                                 "check the spelling; GPU code sees the object as it is when the "
                                 "kernel compiles")
            value = getattr(obj, attr)
            builtin = find_builtin(value) if not isinstance(value, (int, float)) else None
            if builtin is not None and builtin.is_value:
                return self.builtin_value(node, builtin)
            return self.global_value_type(node, value)
        return self.attribute_of_value(node, base, attr)

    def attribute_of_value(self, node, base: t.Type, attr: str) -> t.Type:
        if isinstance(base, t.Array):
            if attr in ("shape", "strides"):
                return t.Tuple((t.int64,) * base.ndim)
            if attr in ("size", "ndim", "itemsize", "nbytes"):
                return t.int64
            if attr == "T" and base.ndim <= 2:
                layout = base.layout
                if base.ndim == 2:
                    layout = {"C": "F", "F": "C"}.get(base.layout, "A")
                return base.derived(base.ndim, layout)
        if isinstance(base, t.Complex) and attr in ("real", "imag"):
            return base.component
        if isinstance(base, (t.Integer, t.Float, t.Boolean)) and attr in ("real", "imag"):
            return base
        if isinstance(base, t.Record):
            found = base.field(attr)
            if found is not None:
                return _field_value_type(base, *found)
        if isinstance(base, t.Group) and attr == "size":
            return t.int64
        raise self.error(node, f"{base} has no attribute '{attr}' in GPU code",
                         _attribute_hint(base))

    def expr_Tuple(self, node: ast.Tuple) -> t.Type:
        return t.Tuple(tuple(self.expr(e) for e in node.elts))

    def expr_BinOp(self, node: ast.BinOp) -> t.Type:
        left, right = self.expr(node.left), self.expr(node.right)
        return self.binop_type(node, node.op, left, right,
                               id(node.left) in self.weak, id(node.right) in self.weak)

    def binop_type(self, node, op, a: t.Type, b: t.Type, weak_a: bool, weak_b: bool) -> t.Type:
        if isinstance(a, t.Tuple) and isinstance(b, t.Tuple) and isinstance(op, ast.Add):
            return t.Tuple(a.items + b.items)
        if not (t.is_number(a) and t.is_number(b)):
            raise self.error(node, f"unsupported operand types for {_OP_SYMBOLS[type(op)]}: "
                             f"{a} and {b}", _array_hint(a, b))
        if weak_a and weak_b:
            self.weak.add(id(node))
        if weak_a and isinstance(b, (t.Float, t.Complex)):
            a = b if isinstance(b, t.Float) else b.component
        if weak_b and isinstance(a, (t.Float, t.Complex)):
            b = a if isinstance(a, t.Float) else a.component
        if isinstance(op, (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)):
            if not (t.is_int(a) and t.is_int(b)):
                raise self.error(node, f"bit operations need integers, got {a} and {b}")
            if isinstance(a, t.Boolean) and isinstance(b, t.Boolean) and not isinstance(
                    op, (ast.LShift, ast.RShift)):
                return t.boolean
            if isinstance(op, (ast.LShift, ast.RShift)):
                # the result has the left operand's signedness (at least 64 bits, as numba)
                left = t.int64 if isinstance(a, t.Boolean) else a
                return t.Integer(max(left.bitwidth, 64), left.signed)
            return _bitwise_result(a, b)
        if isinstance(op, ast.Div):
            result = t.unify_numbers(a, b)
            return t.float64 if isinstance(result, t.Integer) else result
        if isinstance(op, ast.Pow):
            if t.is_int(a) and t.is_int(b):
                return t.integer_result(a, b)
            if isinstance(a, t.Float) and t.is_int(b):
                return a
            return t.unify_numbers(a, b)
        if isinstance(op, (ast.FloorDiv, ast.Mod)) and (isinstance(a, t.Complex) or
                                                        isinstance(b, t.Complex)):
            raise self.error(node, "// and % are not defined for complex numbers")
        if isinstance(op, ast.MatMult):
            raise self.error(node, "the @ operator is not supported in GPU code")
        return t.unify_numbers(a, b)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> t.Type:
        ty = self.expr(node.operand)
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and \
                type(node.operand.value) is int:
            # a negative literal is one constant, as Python's compiler folds it (and numba sees
            # it): -9223372036854775808 is an int64, not the negation of a uint64
            self.check_int_range(node, -node.operand.value)
            self.constants[id(node)] = -node.operand.value
            return constant_type(-node.operand.value)
        if isinstance(node.op, ast.Not):
            if not isinstance(ty, _HAS_TRUTH):
                raise self.error(node.operand, f"{ty} has no truth value for 'not'",
                                 "compare explicitly, e.g. `not (x > 0)`")
            known = self.constants.get(id(node.operand))
            if isinstance(node.operand, ast.Compare) and isinstance(known, bool):
                self.constants[id(node)] = not known  # not (x is None)
            return t.boolean
        if not t.is_number(ty):
            raise self.error(node, f"unsupported operand type for unary operator: {ty}")
        if id(node.operand) in self.weak:
            self.weak.add(id(node))
        if isinstance(node.op, ast.Invert):
            if isinstance(ty, t.Boolean):
                return t.boolean  # numba follows numpy: ~True is False (Python gives -2)
            if not isinstance(ty, t.Integer):
                raise self.error(node, f"~ needs an integer, got {ty}")
        if isinstance(ty, t.Boolean):
            return t.int64
        if isinstance(ty, t.Integer):
            # numba: unary -, + and ~ on integers give at least 64 bits (-int32(-2**31) == 2**31)
            return t.Integer(max(ty.bitwidth, 64), ty.signed)
        return ty

    def expr_BoolOp(self, node: ast.BoolOp) -> t.Type:
        types = [self.expr(v) for v in node.values]
        result = types[0]
        for v, ty in zip(node.values[1:], types[1:], strict=False):
            merged = t.unify(result, ty)
            if merged is None:
                raise self.error(v, f"operands of and/or have types {result} and {ty}")
            result = merged
        return result

    def expr_Compare(self, node: ast.Compare) -> t.Type:
        left = node.left
        lt = self.expr(left)
        for op, right in zip(node.ops, node.comparators, strict=False):
            rt = self.expr(right)
            if isinstance(op, (ast.Is, ast.IsNot)) and len(node.ops) == 1 and (
                    isinstance(lt, t.NoneType) or isinstance(rt, t.NoneType)):
                # only None has type none, so the answer is known at compile time
                same = isinstance(lt, t.NoneType) and isinstance(rt, t.NoneType)
                self.constants[id(node)] = same if isinstance(op, ast.Is) else not same
                return t.boolean
            if isinstance(op, (ast.Is, ast.IsNot)):
                raise self.error(node, f"'{_CMP_SYMBOLS[type(op)]}' only tests for None in GPU "
                                 "code", "compare values with == and !=")
            if isinstance(op, (ast.In, ast.NotIn)):
                self.contains_type(node, lt, rt)
                left, lt = right, rt
                continue
            if not (t.is_number(lt) and t.is_number(rt)):
                raise self.error(node, f"cannot compare {lt} with {rt}")
            if isinstance(lt, t.Complex) or isinstance(rt, t.Complex):
                if not isinstance(op, (ast.Eq, ast.NotEq)):
                    raise self.error(node, "complex numbers can only be compared with == and !=")
            left, lt = right, rt
        return t.boolean

    def expr_IfExp(self, node: ast.IfExp) -> t.Type:
        self.condition(node.test)
        known = self.static_truth(node.test)
        if known is not None:
            self.static_branches[id(node)] = known
            live = node.body if known else node.orelse
            ty = self.expr(live)
            if id(live) in self.weak:
                self.weak.add(id(node))
            return ty
        a, b = self.expr(node.body), self.expr(node.orelse)
        weak_a, weak_b = id(node.body) in self.weak, id(node.orelse) in self.weak
        if weak_a and isinstance(b, t.Float):
            a = b
        if weak_b and isinstance(a, t.Float):
            b = a
        merged = t.unify(a, b)
        if merged is None:
            raise self.error(node, f"the branches of this conditional expression have types "
                             f"{a} and {b}", "make both branches the same type")
        return merged

    def expr_Subscript(self, node: ast.Subscript) -> t.Type:
        base = self.expr(node.value)
        index = node.slice
        if isinstance(base, t.Array):
            return self.array_index_type(node, base, index)
        if isinstance(base, t.Record):
            if not (isinstance(index, ast.Constant) and isinstance(index.value, str)):
                raise self.error(index, "a record field is selected with a string constant, "
                                 "e.g. rec['x'] or rec.x")
            found = base.field(index.value)
            if found is None:
                names = ", ".join(f[0] for f in base.fields)
                raise self.error(index, f"record has no field {index.value!r}",
                                 f"fields: {names}")
            self.expr_types[id(index)] = t.StringLiteral()
            return _field_value_type(base, *found)
        if isinstance(base, t.Tuple) and isinstance(index, ast.Slice):
            return self.tuple_slice_type(index, base)
        if isinstance(base, t.Tuple):
            try:
                i = const_eval(index, self.resolve_constant)
            except NotConstant:
                it = self.expr(index)
                items = set(base.items)
                if not isinstance(it, t.Integer) or len(items) != 1:
                    raise self.error(index, "a tuple of mixed types needs a constant index") \
                        from None
                return base.items[0]
            self.expr_types[id(index)] = t.int64
            if isinstance(i, int):
                self.constants[id(index)] = i  # lowering needs it for t[-1], t[N - 1]
                try:
                    return base.items[i]
                except IndexError:
                    raise self.error(index, f"tuple index {i} out of range for {base}") from None
            raise self.error(index, "tuple slicing is not supported in GPU code")
        if isinstance(base, PyValue) and isinstance(base.obj, t.Type):
            raise self.error(node, "array types cannot be built inside GPU code")
        raise self.error(node, f"{base} cannot be indexed")

    def tuple_slice_type(self, index: ast.Slice, base: t.Tuple) -> t.Type:
        """t[1:], t[::-1]: numba slices tuples at compile time, so the bounds are constants."""
        bounds = [None if s is None else self.const(s, "a tuple slice bound")
                  for s in (index.lower, index.upper, index.step)]
        if not all(b is None or isinstance(b, int) for b in bounds) or bounds[2] == 0:
            raise self.error(index, "tuple slice bounds must be integer constants (step not 0)")
        picked = slice(*bounds)
        self.constants[id(index)] = picked
        return t.Tuple(base.items[picked])

    def contains_type(self, node, item: t.Type, seq: t.Type) -> None:
        """`x in seq` for a tuple of numbers or a 1-d numeric array (numba's operator.contains)."""
        items = seq.items if isinstance(seq, t.Tuple) else (
            (seq.dtype,) if isinstance(seq, t.Array) and seq.ndim == 1 else None)
        if items is None or not all(t.is_number(i) for i in items) or not t.is_number(item):
            raise self.error(node, f"'in' needs a number and a tuple of numbers or a 1-d array, "
                             f"got {item} in {seq}", "compare values with == and !=")

    def check_slice_store(self, target, vt: t.Type, slot: t.Array) -> None:
        """a[1:3] = x and a[:, j] = b[...]: a number fills the view; an array is copied
        element by element, broadcast as numpy does (trailing axes, extents of 1)."""
        if t.is_number(vt) and t.can_convert(vt, slot.dtype):
            return
        if isinstance(vt, t.Array) and vt.ndim <= slot.ndim and t.can_convert(vt.dtype,
                                                                             slot.dtype):
            return
        raise self.error(target, f"cannot assign {vt} to a slice {slot}",
                         f"assign a number, or an array of at most {slot.ndim} dimension(s)")

    def index_parts(self, node, index, ndim: int) -> list:
        """The items of an array index with `...` expanded into full slices."""
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        dots = [p for p in parts if isinstance(p, ast.Constant) and p.value is Ellipsis]
        if not dots:
            return parts
        if len(dots) > 1:
            raise self.error(dots[1], "an index can only have a single ellipsis ('...')")
        at = parts.index(dots[0])
        fill = [ast.copy_location(ast.Slice(), dots[0])
                for _ in range(max(ndim - (len(parts) - 1), 0))]
        parts = parts[:at] + fill + parts[at + 1:]
        self.constants[id(index)] = parts
        return parts

    def array_index_type(self, node, base: t.Array, index) -> t.Type:
        parts = self.index_parts(node, index, base.ndim)
        n_int, sliced, layout_kept = 0, 0, True
        for i, p in enumerate(parts):
            if isinstance(p, ast.Slice):
                for s in (p.lower, p.upper, p.step):
                    if s is not None and not isinstance(self.expr(s), (t.Integer, t.Boolean,
                                                                       t.NoneType)):
                        raise self.error(s, "slice bounds must be integers (or None)")
                if p.step is not None and _folded(p.step, self.resolve_constant) == 0:
                    raise self.error(p.step, "slice step cannot be zero",
                                     "use a step of 1 or more (or negative to go backwards)")
                sliced += 1
                if p.step is not None or p.lower is not None or p.upper is not None:
                    layout_kept = layout_kept and (i == 0 and p.step is None)
                continue
            ty = self.expr(p)
            if isinstance(ty, t.Tuple):
                raise self.error(p, "index with a tuple of integers directly: a[i, j]")
            if not isinstance(ty, (t.Integer, t.Boolean)):
                raise self.error(p, f"array index must be an integer, got {ty}",
                                 "convert with int(...)")
            if sliced:
                layout_kept = False
            n_int += 1
        if isinstance(index, ast.Tuple):
            self.expr_types[id(index)] = t.Tuple(tuple(self.expr_types.get(id(p), t.none)
                                                       for p in parts))
        if len(parts) > base.ndim:
            raise self.error(node, f"too many indices: {len(parts)} for a {base.ndim}-d array",
                             f"index a {base.ndim}-d array with at most {base.ndim} "
                             f"integer{'s' if base.ndim != 1 else ''} or slices")
        if n_int == base.ndim:
            element = base.dtype
            if isinstance(element, t.Record) and not base.aligned:
                element = element.with_align(1)  # a record at any address: byte accesses
            if isinstance(element, t.Record) and base.readonly:
                element = element.as_readonly()
            return element
        ndim = base.ndim - n_int
        layout = base.layout if base.layout == "C" and layout_kept else "A"
        return base.derived(ndim, layout)

    def expr_Call(self, node: ast.Call) -> t.Type:
        callee = self.callee_object(node.func)
        if callee is None:
            ftype = self.expr(node.func)
            raise self.error(node.func, f"{ftype} is not callable in GPU code",
                             "only functions can be called; array methods are not available "
                             "inside kernels" if isinstance(ftype, t.Array) else None)
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw, "**kwargs is not supported in GPU code",
                                 "pass each keyword argument by name: f(a=x, b=y)")
        starred = next((a for a in node.args if isinstance(a, ast.Starred)), None)
        if starred is not None:
            raise self.error(starred, "*args is not supported in GPU code",
                             "pass each argument: f(t[0], t[1])")
        if isinstance(callee, inner.InnerFunction):
            return inner.call(self, node, callee)
        if is_gpu_function(callee):
            return self.call_gpu_function(node, callee)
        builtin = find_builtin(callee)
        if builtin is not None:
            argtypes = [self.expr(a) for a in node.args]
            kwtypes = {kw.arg: self.expr(kw.value) for kw in node.keywords}
            result = builtin.type_call(self, node, argtypes, kwtypes)
            self.calls[id(node)] = CallInfo("builtin", builtin, list(node.args),
                                            tuple(argtypes), result)
            return result
        if callee is np.dtype:  # np.dtype("int16"): a compile-time dtype, as np.int16 is
            return PyValue(self.const(node, "the argument of np.dtype(...)"))
        target_type = dtype_to_type(callee)
        if target_type is not None:
            if len(node.args) != 1 or node.keywords:
                cname = getattr(callee, "__name__", callee)
                raise self.error(node, f"{cname}() takes exactly one argument in GPU code")
            at = self.expr(node.args[0])
            if not t.is_number(at):
                raise self.error(node.args[0], f"cannot convert {at} to {target_type}")
            self.calls[id(node)] = CallInfo("cast", target_type, list(node.args), (at,),
                                            target_type)
            return target_type
        name = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", repr(callee))
        raise self.error(node.func, f"cannot call {name} from GPU code", _call_hint(callee))

    def callee_object(self, func):
        """The compile-time object a call's func expression names, or None if it is a value."""
        if isinstance(func, ast.Name):
            if func.id in self.inner_functions and func.id not in self.locals:
                return self.inner_functions[func.id]
            if func.id in self.locals:
                return None
            value = lookup_global(self.py_func, func.id)
            if missing(value):
                raise self.error(func, f"name '{func.id}' is not defined",
                                 "define it before the GPU function is compiled")
            self.expr_types[id(func)] = PyValue(value)
            return value
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value)
            if isinstance(base, PyValue):
                if not hasattr(base.obj, func.attr):
                    raise self.error(func, f"{base} has no attribute '{func.attr}'",
                                     "check the spelling; GPU code sees the object as it is when "
                                     "the kernel compiles")
                value = getattr(base.obj, func.attr)
                self.expr_types[id(func)] = PyValue(value)
                return value
            if isinstance(base, t.Complex) and func.attr == "conjugate":
                from gpunb.compiler.builtins.pybuiltins import CONJUGATE

                return CONJUGATE
            if isinstance(base, t.Group):
                from gpunb.compiler.builtins.groups import group_method

                method = group_method(base, func.attr)
                if method is None:
                    raise self.error(func, f"{base} has no method '{func.attr}'",
                                     "groups have sync(), thread_rank() and size")
                return method
            return None
        return None

    def call_gpu_function(self, node: ast.Call, dispatcher) -> t.Type:
        py_func = dispatcher.py_func
        sig = inspect.signature(py_func)
        try:
            bound = sig.bind(*node.args, **{kw.arg: kw.value for kw in node.keywords})
        except TypeError as exc:
            raise self.error(node, f"bad call of '{py_func.__name__}': {exc}",
                             f"its parameters are {sig}") from None
        args, argtypes = [], []
        for name, param in sig.parameters.items():
            if name in bound.arguments:
                arg = bound.arguments[name]
                args.append(arg)
                ty = self.expr(arg)
                if id(arg) in self.weak and param.annotation is not inspect.Parameter.empty:
                    pass
                argtypes.append(ty)
            else:
                default = param.default
                ty = t.none if default is None else constant_type(default)
                if ty is None:
                    raise self.error(node, f"default value {default!r} of parameter '{name}' of "
                                     f"'{py_func.__name__}' has no GPU type")
                args.append(("const", default))
                argtypes.append(ty)
        for arg, ty in zip(args, argtypes, strict=False):
            if isinstance(ty, PyValue):
                raise self.error(arg if isinstance(arg, ast.AST) else node,
                                 f"cannot pass {ty} to a GPU function")
        argtypes = self.apply_declared_signature(node, dispatcher, tuple(argtypes))
        callee = self.session.infer(py_func, argtypes, call_node=node, caller=self)
        self.callees[(py_func.__code__, argtypes)] = callee
        self.calls[id(node)] = CallInfo("gpufunc", callee, args, argtypes, callee.return_type)
        return callee.return_type

    def apply_declared_signature(self, node, dispatcher, argtypes: tuple) -> tuple:
        """Device functions declared with signatures convert their arguments to those types."""
        for declared in getattr(dispatcher, "declared_signatures", ()):
            if len(declared.args) == len(argtypes) and all(
                    t.can_convert(a, d) for a, d in zip(argtypes, declared.args, strict=False)):
                return tuple(declared.args)
        if getattr(dispatcher, "declared_signatures", ()):
            sigs = ", ".join(str(s) for s in dispatcher.declared_signatures)
            raise self.error(node, f"no declared signature of '{dispatcher.__name__}' accepts "
                             f"({', '.join(map(str, argtypes))})", f"declared: {sigs}")
        return tuple(_canonical_arg(a) for a in argtypes)

    # ---- helpers for builtins ------------------------------------------------------------------

    def resolve_constant(self, node):
        """Compile-time value of a Name/Attribute (raises NotConstant)."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                raise NotConstant
            value = lookup_global(self.py_func, node.id)
            if missing(value):
                raise NotConstant
            return value
        if isinstance(node, ast.Attribute):
            base = self.resolve_constant(node.value)
            if not hasattr(base, node.attr):
                raise NotConstant
            return getattr(base, node.attr)
        raise NotConstant

    def const(self, node, what: str):
        """A compile-time constant argument of a builtin, with a clear error otherwise."""
        try:
            value = const_eval(node, self.resolve_constant)
        except NotConstant:
            raise self.error(node, f"{what} must be a compile-time constant",
                             "use a literal or a module-level constant") from None
        self.constants[id(node)] = value
        return value

    def resolve_type_annotation(self, node) -> t.Type | None:
        try:
            value = const_eval(node, self.resolve_constant)
        except NotConstant:
            return None
        return dtype_to_type(value)


def _array_item_type(arr: t.Array) -> t.Type:
    """What looping over an array yields: its elements, or views of its rows (numba's iter)."""
    if arr.ndim == 1:
        return arr.dtype
    return arr.derived(arr.ndim - 1, "C" if arr.layout == "C" else "A")


def _bitwise_result(a: t.Type, b: t.Type) -> t.Integer:
    """& | ^ keep integers integers: mixed signedness gives uint64 when an operand is uint64."""
    a = t.int64 if isinstance(a, t.Boolean) else a
    b = t.int64 if isinstance(b, t.Boolean) else b
    if a.signed == b.signed:
        return t.Integer(max(a.bitwidth, b.bitwidth, 64), a.signed)
    unsigned = a if not a.signed else b
    return t.uint64 if unsigned.bitwidth >= 64 else t.int64


def _is_int_literal(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _canonical_arg(ty: t.Type) -> t.Type:
    return ty


def _assigned_names(tree: ast.FunctionDef) -> set:
    return inner.assigned_names(tree)  # not those of inner functions' own scopes


def _call_hint(callee) -> str:
    """What to do about a call of something that is not GPU code, by what the callee is."""
    module = getattr(callee, "__module__", None) or type(callee).__module__ or ""
    if getattr(callee, "_gpunb_intrinsic", None) is not None:
        return f"cuda.{callee._gpunb_intrinsic.split('.')[-1]} is not a function here; read its " \
               "attributes (cuda.threadIdx.x) or call it as numba.cuda documents"
    if module.startswith("numpy.random"):
        return "use gpunb.random (xoroshiro128+, as numba.cuda.random) for random numbers in " \
               "kernels"
    if module.split(".")[0] == "numpy":
        return "numpy's array functions are not available inside kernels: write a loop over " \
               "the elements, or use gpunb.fuse for whole-array numpy code; numpy scalar " \
               "types (np.float32(x)) and math functions work"
    if module in ("builtins", "math", "cmath") or isinstance(callee, type):
        return "GPU code can call @cuda.jit functions, cuda.* intrinsics, math/cmath " \
               "functions, numpy scalar types and the builtins abs, min, max, sum, round, pow, " \
               "divmod, int, float, complex, bool, len, range, enumerate, zip and print"
    if inspect.isfunction(callee):
        return "decorate it with @cuda.jit (or define it in a %%gpukernel cell)"
    return "only @cuda.jit functions, cuda.* intrinsics and math functions can be called " \
           "in GPU code"


def _folded(node, resolve):
    """The compile-time value of an expression, or None when it is only known at run time."""
    try:
        return const_eval(node, resolve)
    except NotConstant:
        return None


def _store_hint(value: t.Type, slot: t.Type) -> str | None:
    if isinstance(value, t.NoneType):
        return "the value is None: a device function without `return value` gives None"
    if isinstance(value, t.Complex) and t.is_number(slot):
        return "store x.real (or abs(x)), or use a complex array"
    if isinstance(value, (t.Array, t.Tuple)):
        return "store one element at a time, e.g. out[i] = x[i]"
    if isinstance(value, PyValue):
        return "only numbers can be stored into arrays"
    return None


def _attribute_hint(base: t.Type) -> str | None:
    if isinstance(base, t.Array):
        return "arrays have shape, strides, size, ndim, itemsize, nbytes and T in GPU code; " \
               "methods (sum, max, ...) are not available: write a loop"
    if isinstance(base, t.Record):
        return f"its fields are {', '.join(name for name, *_ in base.fields)}"
    if t.is_number(base):
        return "numbers have .real and .imag (and complex numbers .conjugate())"
    return None


def _array_hint(a, b) -> str | None:
    if isinstance(a, t.Array) or isinstance(b, t.Array):
        return "whole-array arithmetic is not available inside kernels; index elements " \
               "(x[i] * 2), or use gpunb.fuse for elementwise expressions"
    return None


READONLY_HINT = "the array is read-only, as in numba: a global array is a constant frozen into " \
                "the code, and a numpy argument with ary.flags.writeable False may not be " \
                "written; pass a writeable array as an argument (np.array(ary) copies one)"
_HAS_TRUTH = (t.Boolean, t.Integer, t.Float, t.Complex, t.NoneType)
_OP_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
               ast.BitXor: "^", ast.BitAnd: "&", ast.MatMult: "@"}
_CMP_SYMBOLS = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
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


__all__ = ["Builtin", "CallInfo", "InferenceSession", "Inferer", "TypedFunction"]


def _field_value_type(record: t.Record, ftype: t.Type, offset: int) -> t.Type:
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
