"""Inner functions and lambdas inside GPU functions, compiled as numba does: never as values.

`def inner(x): ...` and `f = lambda x: ...` inside a kernel or device function become private
device functions that take the variables they read from the enclosing function (closures) as
extra parameters after their own; each call passes those variables' current values, so a closure
sees the values at the call, as in Python. An inner function may call other inner functions of
its scope and of enclosing scopes, and GPU functions. What numba refuses stays refused: an inner
function returned or stored, recursion, and `nonlocal`; one passed to a GPU function as a value
"escapes" as numba's does: a function of its own whose captured variables must hold constants.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field

from gpunb.compiler.frontend import KernelSource
from gpunb.compiler.scopes import assigned_names, free_names, is_lambda_binding, walk_scope
from gpunb.compiler.typed import GpuCall
from gpunb.compiler.values import NotConstant, const_eval, constant_type
from gpunb.foundation import types as t


@dataclass(eq=False)
class InnerFunction:
    """One `def`/lambda binding in a GPU function's body, ready to be inferred per call."""

    name: str
    node: ast.AST  # the user's FunctionDef or the Assign of a lambda: errors point here
    source: KernelSource  # tree: own parameters, then one parameter per captured variable
    signature: inspect.Signature  # own parameters with their (compile-time) defaults
    captures: tuple  # names read from the enclosing function, passed at each call
    visible: dict = field(default_factory=dict)  # name -> InnerFunction it may call


def _bindings(fn: ast.FunctionDef) -> list:
    """(name, def-or-assign node, FunctionDef or Lambda) for each inner function of a scope."""
    out = []
    for node in walk_scope(fn):
        if isinstance(node, ast.FunctionDef):
            out.append((node.name, node, node))
        elif is_lambda_binding(node):
            out.append((node.targets[0].id, node, node.value))
    return sorted(out, key=lambda b: (b[1].lineno, b[1].col_offset))


def collect(inferer, enclosing: dict) -> dict:
    """The inner functions a GPU function's body defines, plus those of enclosing scopes that it
    does not shadow; removes their names from `inferer.locals` (they are not variables)."""
    tree = inferer.source.tree
    bindings = _bindings(tree)
    if not bindings and not enclosing:
        return {}
    own_names = {name for name, _, _ in bindings}
    scope_vars = inferer.locals - own_names
    assigned = assigned_names(tree)
    visible = {k: v for k, v in enclosing.items() if k not in scope_vars}
    seen: dict = {}
    for name, stmt, fn in bindings:
        if name in seen:
            twice = sorted(n for n in free_names(fn) & scope_vars if _assign_count(tree, n) > 1)
            if twice:  # numba's words: it turns such closures into functions of constants
                raise inferer.error(stmt, f"Cannot capture a constant value for variable "
                                    f"'{twice[0]}' as there are multiple definitions present.",
                                    "give each inner function its own name")
            raise inferer.error(stmt, f"inner function '{name}' is defined twice",
                                "give each inner function its own name")
        if isinstance(stmt, ast.FunctionDef) and name in assigned or \
                isinstance(stmt, ast.Assign) and _assign_count(tree, name) > 1:
            raise inferer.error(stmt, f"'{name}' names an inner function and is also assigned "
                                "another value", "use another name for the variable")
        seen[name] = stmt
    captures = _captures(bindings, scope_vars, visible)
    own = {name: _make(inferer, name, stmt, fn, captures[name]) for name, stmt, fn in bindings}
    visible.update(own)
    for fn in own.values():
        fn.visible = visible  # one dict: inner functions of a scope can call each other
    inferer.locals = scope_vars
    return visible


def _captures(bindings: list, scope_vars: set, visible: dict) -> dict:
    """Per inner function, the variables of this scope that a call must pass: those it reads,
    and those that the inner functions it calls read (they are called with values it holds)."""
    free = {name: free_names(fn) for name, _, fn in bindings}
    out = {name: names & scope_vars for name, names in free.items()}
    for name, names in free.items():
        for called in names & visible.keys():
            out[name] |= set(visible[called].captures)
    changed = True
    while changed:  # siblings may call each other in any order
        changed = False
        for name, names in free.items():
            for called in names & out.keys():
                if not out[called] <= out[name]:
                    out[name] |= out[called]
                    changed = True
    return out


def _assign_count(tree, name: str) -> int:
    return sum(1 for n in walk_scope(tree) if isinstance(n, ast.Name) and n.id == name
               and isinstance(n.ctx, ast.Store))


def _make(inferer, name: str, stmt, fn, captures: set) -> InnerFunction:
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise inferer.error(stmt, "inner functions take plain positional parameters only",
                            "remove *args, **kwargs and keyword-only parameters")
    if getattr(fn, "decorator_list", None):
        raise inferer.error(fn.decorator_list[0], "inner functions cannot be decorated",
                            "remove the decorator: an inner function is compiled with the GPU "
                            "function that defines it")
    rebound = sorted(captures & ({a.arg for a in args.args} | assigned_names(fn)))
    if rebound:
        raise inferer.error(stmt, f"inner function '{name}' rebinds '{rebound[0]}', which an "
                            "inner function it calls reads from the enclosing function",
                            f"rename the parameter or local variable '{rebound[0]}' of '{name}'")
    params = []
    first_default = len(args.args) - len(args.defaults)
    for i, a in enumerate(args.args):
        default = inspect.Parameter.empty
        if i >= first_default:
            default = _constant_default(inferer, name, args.defaults[i - first_default])
        params.append(inspect.Parameter(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=default))
    captures = tuple(sorted(captures))
    tree = ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a.arg) for a in args.args] +
                           [ast.arg(arg=c) for c in captures], kwonlyargs=[], kw_defaults=[],
                           defaults=[]),
        body=fn.body if isinstance(fn, ast.FunctionDef) else
        [ast.copy_location(ast.Return(value=fn.body), fn.body)],
        decorator_list=[], returns=None)
    ast.copy_location(tree, stmt)
    outer = inferer.source
    source = KernelSource(name, f"{outer.qualname}.<locals>.{name}", outer.filename,
                          stmt.lineno, tree, outer.module, outer.text_lines)
    return InnerFunction(name, stmt, source, inspect.Signature(params), captures)


def _constant_default(inferer, name: str, node):
    try:
        value = const_eval(node, inferer.resolve_constant)
    except NotConstant:
        raise inferer.error(node, f"the default value of a parameter of inner function "
                            f"'{name}' must be a compile-time constant",
                            "use a literal or a module-level constant, or pass the value at "
                            "each call") from None
    if value is not None and constant_type(value) is None:
        raise inferer.error(node, f"default value {value!r} has no GPU type")
    return value


class EscapedFunction:
    """An inner function used as a value (passed to a GPU function, numba's "escaping"
    closure): a function of its own, compiled where it is called, whose captured variables are
    the compile-time constants they hold where it escapes (numba's MakeFunctionToJitFunction)."""

    __gpunb_function__ = True
    options: dict = {}
    declared_signatures = ()

    def __init__(self, py_func):
        self.py_func = py_func
        self.__name__ = py_func.__name__

    def __repr__(self) -> str:
        return f"<inner function {self.__name__}>"


def escape(inferer, node: ast.Name, fn: InnerFunction) -> EscapedFunction:
    """`fn` as a value: a real function made from its definition, its captures bound to their
    constant values here; the same object for the same values (stable specialisations)."""
    values = {}
    for name in fn.captures:
        var = inferer.env.get(name)
        value = inferer.var_constants.get(var, _NOT_CONSTANT) if var is not None else \
            _NOT_CONSTANT
        if value is _NOT_CONSTANT:
            raise inferer.error(node, f"Cannot capture the non-constant value associated with "
                                f"variable '{name}' in a function that may escape.",
                                f"'{fn.name}' is passed as a value: the variables it reads from "
                                "the enclosing function must hold compile-time constants")
        values[name] = value
    key = ("escaped", id(fn.node), id(inferer.py_func), tuple(sorted(values.items(), key=repr)))
    found = inferer.session.done.get(key)
    if found is None:
        found = inferer.session.done[key] = EscapedFunction(_materialise(inferer, fn, values))
    return found


_NOT_CONSTANT = object()


def escape_error(inferer, node: ast.Name):
    """Returned or stored, an inner function is refused (numba only turns closures passed to
    functions into functions of their own)."""
    return inferer.error(node, f"inner function '{node.id}' is used as a value",
                         "inner functions and lambdas can be called, or passed to a GPU "
                         "function (as in numba); they cannot be returned or stored: make it a "
                         "@cuda.jit function at top level to share it")


def passed_as_value(inferer, arg) -> bool:
    """Whether a call argument names an inner function of this scope (it then escapes)."""
    return isinstance(arg, ast.Name) and arg.id in inferer.inner_functions and \
        arg.id not in inferer.locals


def _materialise(inferer, fn: InnerFunction, values: dict):
    """A Python function object for an inner def or lambda: compiled from its own AST (so its
    source is read back from the same file or cell), with the enclosing function's globals and
    the captured constants as its namespace; inner functions of the scope it calls come along."""
    outer = inferer.py_func
    namespace = dict(outer.__globals__)
    namespace.update(values)
    for called in free_names(_definition(fn)) & fn.visible.keys():
        sibling = fn.visible[called]
        if sibling is not fn:
            namespace[called] = EscapedFunction(_materialise(inferer, sibling, values))
    definition = _definition(fn)
    if isinstance(definition, ast.Lambda):
        tree = ast.Expression(body=definition)
        code = compile(ast.fix_missing_locations(tree), outer.__code__.co_filename, "eval")
        made = eval(code, namespace)  # noqa: S307 - the user's own lambda, re-made
    else:
        definition = ast.copy_location(ast.FunctionDef(
            name=definition.name, args=definition.args, body=definition.body,
            decorator_list=[], returns=None), definition)
        module = ast.fix_missing_locations(ast.Module(body=[definition], type_ignores=[]))
        exec(compile(module, outer.__code__.co_filename, "exec"), namespace)  # noqa: S102
        made = namespace[definition.name]
    made.__qualname__ = f"{outer.__qualname__}.<locals>.{fn.name}"
    return made


def _definition(fn: InnerFunction):
    return fn.node.value if isinstance(fn.node, ast.Assign) else fn.node


def call(inferer, node: ast.Call, fn: InnerFunction) -> t.Type:
    """Type a call of an inner function: bind arguments as Python does, add the captured
    variables' values where the call is, and infer the body for those argument types."""
    if fn.name not in inferer.defined_inner:
        raise inferer.error(node, f"inner function '{fn.name}' is called before its definition",
                            "move the def (or the lambda) above its first call")
    args, argtypes = inferer.bind_call(node, fn.signature, fn.name)
    for name in fn.captures:
        if inferer.env.get(name) is None:
            raise inferer.error(node, f"inner function '{fn.name}' reads '{name}', which is not "
                                "assigned before this call",
                                f"assign '{name}' before calling '{fn.name}'")
        ref = inferer.capture_refs.get((node, name))
        if ref is None:  # one synthetic read per call and name, kept across passes
            ref = inferer.capture_refs[(node, name)] = ast.copy_location(
                ast.Name(id=name, ctx=ast.Load()), node)
        args.append(ref)
        argtypes.append(inferer.expr(ref))
    argtypes = tuple(argtypes)
    callee = _infer(inferer, node, fn, argtypes)
    inferer.callees[(id(fn.node), argtypes)] = callee
    inferer.calls[node] = GpuCall(callee, tuple(args), argtypes)
    return callee.return_type


def _infer(caller, node, fn: InnerFunction, argtypes: tuple):
    session = caller.session
    key = ("inner", id(fn.node), id(caller.py_func), argtypes)
    found = session.done.get(key)
    if found is not None:
        return found
    active = ("inner", id(fn.node), id(caller.py_func))
    if active in session.in_progress:
        raise caller.error(node, f"recursive call of inner function '{fn.name}'",
                           "recursion is not supported in GPU code (numba refuses recursive "
                           "inner functions too); use a loop")
    session.in_progress[active] = None
    try:
        typed = type(caller)(fn.source, caller.py_func, argtypes, session, False,
                             enclosing=fn.visible).run()
    finally:
        session.in_progress.pop(active, None)
    session.done[key] = typed
    return typed
