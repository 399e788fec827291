"""The inference driver: per-function state, SSA variables, the fixed point, the frozen result.

Variables are typed per definition, as numba types them after its SSA pass: the walk keeps, for
every name, the Var that reaches the current statement (`env`); an assignment defines a new Var;
where control flow joins (after an if, at a loop header, after a loop) names reached by different
Vars get a phi Var whose type is the join (np.promote_types for numbers) of what reaches it.
Loops are typed to a fixed point: a loop header's phis take the back edges' Vars seen in the
previous pass. A read of a Var whose type is not known yet (a value carried from the previous
iteration, assigned further down the body) defers its statement to the next pass; only a pass
that learns nothing new turns it into an error.
"""

from __future__ import annotations

import ast
import types
import warnings

from gpunb.compiler import promotion, scopes
from gpunb.compiler import typed as ty
from gpunb.compiler.frontend import KernelSource
from gpunb.compiler.infer import inner
from gpunb.compiler.infer.session import DeferredCycle
from gpunb.compiler.typed import Feature, JoinKind, Var, VarKind
from gpunb.compiler.values import ConstValue, PyValue
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError, KernelReturnError

MAX_PASSES = 16


class Deferred(Exception):
    """A statement read a Var whose type this pass has not learnt yet (see the module doc), or
    (var None) called its own function before any return told its type."""

    def __init__(self, node: ast.AST, var: Var | None):
        super().__init__(var.name if var is not None else "recursion")
        self.node, self.var = node, var


class NeedsConstant(CompileError):
    """A parameter was used where a compile-time constant is needed; a caller that passes a
    constant for it retries with that value bound (numba's literal dispatch)."""

    def __init__(self, message: str, loc, hint, function, params: tuple):
        super().__init__(message, loc, hint, function=function)
        self.params = params


class Conflict:
    """The type of a phi whose incoming types cannot be joined; an error only if it is read."""

    def __init__(self, a: t.Type, b: t.Type, site: ast.AST):
        self.a, self.b, self.site = a, b, site

    def __eq__(self, other) -> bool:
        return isinstance(other, Conflict) and (self.a, self.b) == (other.a, other.b)

    def __hash__(self) -> int:
        return hash((self.a, self.b))


class InferenceCore:
    """State and machinery shared by the statement, loop, expression, index and call mixins."""

    def __init__(self, source: KernelSource, py_func, argtypes: tuple, session, is_kernel: bool,
                 enclosing: dict | None = None):
        self.source = source
        self.py_func = py_func
        self.session = session
        self.options = session.options
        self.is_kernel = is_kernel
        args = source.tree.args
        if args.kwarg or args.kwonlyargs or args.posonlyargs or args.vararg and is_kernel:
            raise self.error(source.tree, "GPU functions take positional parameters and *args "
                             "only (kernels no *args)",
                             "remove **kwargs and keyword-only parameters")
        # *args is one more parameter, the tuple of the extra arguments (calls.bind_call)
        params = list(args.args) + ([args.vararg] if args.vararg else [])
        self.argnames = tuple(a.arg for a in params)
        if len(argtypes) != len(self.argnames):
            takes = len(self.argnames)
            raise self.error(source.tree, f"'{source.name}' takes {takes} "
                             f"argument{'s' * (takes != 1)} ({', '.join(self.argnames)}) but "
                             f"{len(argtypes)} {'was' if len(argtypes) == 1 else 'were'} given "
                             f"({', '.join(map(str, argtypes))})",
                             "give one type per parameter, in order, in the signature")
        self.argtypes = tuple(argtypes)
        self.params = tuple(Var(a.arg, VarKind.PARAM, a) for a in params)
        # facts that persist across passes (rewritten by each pass as it goes)
        self.types: dict = {}
        self.var_types: dict = {}
        self.defs: dict = {}
        self.uses: dict = {}
        self.calls: dict = {}
        self.constants: dict = {}
        self.weak: set = set()
        # Name nodes that read an Optional as it is (`x is None`, `y = x`); elsewhere a read
        # unwraps it to its value, checked not None when lowered (numba's Optional casts)
        self.keep_optional: set = set()
        self.loops: dict = {}
        self.indexes: dict = {}
        self.raises: dict = {}
        self.branches: dict = {}
        self.comparisons: dict = {}
        self.callees: dict = {}
        self.features: set = set()
        self.capture_refs: dict = {}
        # definitions whose value is a compile-time constant (`N = 100`): usable where a
        # constant is needed (cuda.shared.array(N, ...)), as numba's literal types are
        self.var_constants: dict = {}  # Var -> its compile-time value
        self.exact_constants: set = set()  # Vars whose constant is the value they hold
        self.folded_reads: set = set()  # Name reads lowered as their Var's constant value
        self.back_edges: dict = {}  # header phi -> Vars its back edges carried (last pass)
        self.recursive = False  # it calls itself (session.recursive_call sets this)
        self.unrolled: dict = {}  # For node -> its literal_unroll copies (target, body)
        self.assumed_return = None  # the return type its own recursive calls were typed with
        self.signature_return = None  # the declared signature's return type, when there is one
        self.falls_off = False  # a pass reached the end of the body (an implicit return None)
        self.locals = scopes.assigned_names(source.tree) | set(self.argnames)
        # per pass
        self.env: dict = {}
        self.phi_inputs: dict = {}
        self.joins: dict = {}
        self.loop_frames: list = []
        self.return_types: list = []
        self.defined_inner: set = set()
        self.new_back_edges: dict = {}
        self.deferred: list = []
        self.changed = False
        self.inner_functions = inner.collect(self, enclosing or {})
        self.enclosing_inner: set = set(enclosing or ())
        self.warned: set = set()  # nodes warned about (warn(): once, however many passes)

    # ---- errors --------------------------------------------------------------------------------

    def error(self, node, message: str, hint: str | None = None) -> CompileError:
        return CompileError(message, self.source.loc(node), hint, function=self.source.name)

    def warn(self, node, message: str, category: type) -> None:
        """A compile-time warning pointing at the user's line, once per inference."""
        if node in self.warned:
            return
        self.warned.add(node)
        loc = self.source.loc(node)
        warnings.warn_explicit(f"{message} (in GPU function '{self.source.name}')", category,
                               loc.filename, loc.line)

    def visible_names(self) -> set:
        """Names the function body could mean: its locals, its module's globals, the builtins
        GPU code can use (the candidates for a "did you mean" hint: `helper` misspelt is not
        `help`, which no kernel can call)."""
        globals_ = getattr(self.py_func, "__globals__", {}) or {}
        return set(self.locals) | set(globals_) | _usable_builtins()

    # ---- the fixed point -----------------------------------------------------------------------

    def run(self) -> ty.TypedFunction:
        previous_deferred = None
        for _ in range(MAX_PASSES):
            self.begin_pass()
            # falling off the end returns None: a recursive procedure's calls of itself are
            # typed None from the next pass on (assumed_return_type)
            self.falls_off = not self.visit_body(self.source.tree.body) or self.falls_off
            self.settle_phis()
            if self.new_back_edges != self.back_edges:
                self.back_edges = self.new_back_edges
                self.changed = True
            if self.recursive:
                self.check_recursive_assumption()
            deferred = [(d.node, d.var) for d in self.deferred]
            if not self.changed and self.provisional:
                raise self.provisional[0]
            if not self.changed and not deferred:
                return self.freeze()
            if not self.changed and deferred == previous_deferred:
                node, var = deferred[0]
                if var is None:
                    raise self.error(node, "cannot type infer runaway recursion",
                                     "give the function a return that does not call itself "
                                     "(a base case), or declare its signature")
                raise self.error(node, f"local variable '{var.name}' is used before it is "
                                 "assigned", "assign it on every path that reaches this line")
            previous_deferred = deferred
        if self.provisional:
            raise self.provisional[0]
        if self.recursive:
            raise self.error(self.source.tree, "Return type of recursive function does not "
                             "converge", "make every return give the same type (a recursion "
                             "that grows a tuple has no fixed return type)")
        raise self.error(self.source.tree, "types of local variables did not settle",
                         "give variables one type, e.g. initialise with 0.0 not 0")

    def assumed_return_type(self, call_node, across: bool = False) -> t.Type:
        """The return type a call of this function from its own body is typed with: the one
        assumed last pass, else the join of the returns typed so far (Deferred if none; a call
        from another function of a cycle, `across`: DeferredCycle, which this function's
        statement that led there catches)."""
        if self.assumed_return is None:
            values = [rt for _, rt in self.return_types if not isinstance(rt, t.NoneType)] or \
                [rt for _, rt in self.previous_returns if not isinstance(rt, t.NoneType)]
            # (the last pass's value returns: falling off the end there adds None to them, it
            # does not make None the only return when the call comes before them)
            if not values and (self.return_types or self.falls_off):  # only None returns:
                self.assumed_return = t.none  # a procedure, or a base case returning None
                return self.assumed_return
            if not values:
                raise DeferredCycle(self) if across else Deferred(call_node, None)
            joined = values[0]
            for rt in values[1:]:
                joined = promotion.join(joined, rt) or joined
            self.assumed_return = joined
        return self.assumed_return

    def check_recursive_assumption(self) -> None:
        """Recursive calls were typed with an assumed return type: another pass unless the
        returns of this pass agree with it."""
        values = [rt for _, rt in self.return_types if not isinstance(rt, t.NoneType)]
        if not values:
            return
        try:
            found = self.return_type()
        except CompileError:  # the returns disagree with what the recursive calls assumed
            raise self.error(self.source.tree, "Return type of recursive function does not "
                             "converge", "make every return give the same type (a recursion "
                             "that grows a tuple has no fixed return type)") from None
        if found != self.assumed_return:
            self.assumed_return = found
            self.changed = True
            self.session.forget_assumed(self)

    def begin_pass(self) -> None:
        self.changed = False
        self.env = {}
        for var, argtype in zip(self.params, self.argtypes, strict=True):
            self.set_type(var, argtype)
            self.env[var.name] = var
        self.phi_inputs = {}
        self.joins = {}
        self.loop_frames = []
        self.previous_returns = getattr(self, "return_types", [])
        self.return_types = []
        self.defined_inner = set(self.enclosing_inner)
        self.new_back_edges = {}
        self.deferred = []
        self.provisional: list[CompileError] = []  # errors in loop bodies, see visit_body

    def visit_body(self, body: list) -> bool:
        """Type a statement list; True when it always leaves (return/raise/break/continue),
        after which nothing is typed (and lowering skips it too)."""
        for stmt in body:
            frames = len(self.loop_frames)
            try:
                if self.visit(stmt):
                    return True
            except (Deferred, DeferredCycle) as deferred:
                if isinstance(deferred, DeferredCycle):
                    if deferred.owner is not self:
                        raise  # to the function whose return the cycle needs
                    deferred = Deferred(stmt, None)
                self.deferred.append(deferred)
                if isinstance(stmt, (ast.Return, ast.Raise)):
                    return True  # it ends the block however its value types
            except NeedsConstant:
                raise
            except CompileError as error:
                if not frames and not self.provisional:
                    raise
                # inside a loop, a type seen before the back edges are known may still widen
                # (numba unifies a loop-carried bool with the int assigned further down):
                # the error stands only if a pass that learns nothing new raises it again;
                # an error after it (maybe caused by the skipped statement) waits for it too
                del self.loop_frames[frames:]
                self.provisional.append(error)
                if isinstance(stmt, (ast.Return, ast.Raise)):
                    return True
        return False

    # ---- variables -----------------------------------------------------------------------------

    def set_type(self, var: Var, new: t.Type) -> None:
        if self.var_types.get(var) != new:
            self.var_types[var] = new
            self.changed = True

    def define(self, site: ast.AST, name: str, value_type: t.Type) -> Var:
        """A new definition of `name` at `site` (a Name store node) holding `value_type`."""
        if isinstance(value_type, t.StringLiteral):
            raise self.error(site, "strings cannot be stored in variables in GPU code",
                             "string literals can only be passed to print()")
        if isinstance(value_type, PyValue) and isinstance(value_type.obj, types.ModuleType):
            raise self.error(site, f"cannot assign the module {value_type} to a variable",
                             "use the module's functions and constants directly")
        var = Var(name, VarKind.DEF, site)
        self.defs[site] = var
        self.set_type(var, value_type)
        self.env[name] = var
        return var

    def read(self, node: ast.AST, name: str) -> tuple[Var, t.Type]:
        """The Var that reaches a read of local `name`, and its type (Deferred if unknown)."""
        var = self.env.get(name)
        if var is None:
            var = self.unbound_read(node, name)
        found = self.var_types.get(var)
        if found is None:
            raise Deferred(node, var)
        if isinstance(found, Conflict):
            raise self.error(node, f"variable '{name}' is {found.a} on one path and {found.b} "
                             "on another, and they meet here",
                             "give the variable one type on every path (or use another name)")
        return var, found

    def unbound_read(self, node: ast.AST, name: str) -> Var:
        """A read of local `name` where no assignment reaches on this path. numba compiles it
        (its SSA gives an undefined value) and so does gpunb, typed as the name's assignments
        elsewhere (one type): run, the read raises Python's UnboundLocalError."""
        known = {vt.type if isinstance(vt, ConstValue) else vt
                 for v, vt in self.var_types.items()
                 if v.name == name and v.kind is not VarKind.UNBOUND
                 and isinstance(vt, t.Type) and not isinstance(vt, PyValue)}
        if len(known) != 1:
            raise self.error(node, f"local variable '{name}' is used before it is assigned",
                             "assign it before this line on every path")
        var = Var(name, VarKind.UNBOUND, node)
        self.set_type(var, known.pop())
        return var

    # ---- joins ---------------------------------------------------------------------------------

    def merge(self, site: ast.AST, kind: JoinKind, envs: list) -> dict | None:
        """The environment after control flow from `envs` (those of live predecessors) joins at
        `site`; None when no predecessor reaches it."""
        envs = [e for e in envs if e is not None]
        if not envs:
            return None
        if len(envs) == 1:
            return dict(envs[0])
        out = {}
        first, others = envs[0], envs[1:]
        for name in {n for e in envs for n in e}:
            # most names reach a join unchanged (the same Var from every predecessor): decided
            # without hashing records, since every join visits every name in scope (the cost
            # of a long kernel's ifs grew with ifs x variables)
            value = first.get(name)
            if value is not None and all(e.get(name) is value for e in others):
                out[name] = value
                continue
            reaching = [e.get(name) for e in envs]
            distinct = {v for v in reaching if v is not None}
            if len(distinct) == 1 and None not in reaching:
                out[name] = distinct.pop()
                continue
            phi = self.phi(site, kind, name)
            self.add_incoming(phi, distinct)
            out[name] = phi
        return out

    def phi(self, site: ast.AST, kind: JoinKind, name: str) -> Var:
        var = Var(name, VarKind.PHI, site, kind)
        if var not in self.phi_inputs:
            self.phi_inputs[var] = set()
            self.joins.setdefault((site, kind), []).append(var)
        return var

    def add_incoming(self, phi: Var, incoming) -> None:
        inputs = self.phi_inputs[phi]
        before = len(inputs)
        inputs.update(incoming)
        if len(inputs) != before or phi not in self.var_types:
            self.update_phi(phi)

    def update_phi(self, phi: Var) -> None:
        joined = None
        for var in sorted(self.phi_inputs[phi], key=_var_order):
            found = self.var_types.get(var)
            if found is None:
                continue
            if isinstance(found, Conflict) or isinstance(joined, Conflict):
                joined = found if isinstance(found, Conflict) else joined
                continue
            if joined is None:
                joined = found
                continue
            merged = promotion.join(joined, found) or promotion.join_optional(joined, found)
            joined = merged if merged is not None else Conflict(joined, found, phi.site)
        if joined is None:
            if phi in self.var_types:
                del self.var_types[phi]
                self.changed = True
            return
        self.set_type(phi, joined)

    def settle_phis(self) -> None:
        """Re-join every phi of this pass until none changes (an input typed after the phi was
        made, e.g. a back edge)."""
        for _ in range(len(self.phi_inputs) + 1):
            before = dict(self.var_types)
            for phi in self.phi_inputs:
                self.update_phi(phi)
            if self.var_types == before:
                return

    # ---- loops: header phis and back edges -----------------------------------------------------

    def enter_loop(self, node: ast.AST, assigned: set) -> dict:
        """Header phis for the names the loop body assigns; returns the header environment."""
        header = dict(self.env)
        for name in sorted(assigned):
            phi = self.phi(node, JoinKind.HEADER, name)
            entry = self.env.get(name)
            self.add_incoming(phi, ({entry} if entry is not None else set()) |
                              self.back_edges.get(phi, set()))
            header[name] = phi
        self.env = dict(header)
        self.loop_frames.append(_LoopFrame(node, header, assigned))
        return header

    def back_edge(self, env: dict | None) -> None:
        """Control reaches the innermost loop's header again with `env` (body end, continue)."""
        if env is None:
            return
        frame = self.loop_frames[-1]
        for name in frame.assigned:
            var = env.get(name)
            phi = frame.header[name]
            if var is None or var == phi:
                continue
            self.new_back_edges.setdefault(phi, set()).add(var)
            self.add_incoming(phi, {var})

    def leave_loop(self) -> _LoopFrame:
        return self.loop_frames.pop()

    # ---- facts ---------------------------------------------------------------------------------

    def record(self, node: ast.AST, result: t.Type) -> t.Type:
        self.types[node] = result
        return result

    def require(self, feature: Feature) -> None:
        self.features.add(Feature(feature))

    def is_weak(self, node) -> bool:
        return node in self.weak

    def type_of(self, node) -> t.Type:
        return self.types[node]

    def freeze(self) -> ty.TypedFunction:
        ret = self.return_type()
        flows: dict = {}
        for phi, inputs in self.phi_inputs.items():
            for var in inputs:
                flows.setdefault(var, []).append(phi)
        var_types = {v: vt for v, vt in self.var_types.items() if not isinstance(vt, Conflict)}
        return ty.TypedFunction(
            source=self.source, py_func=self.py_func, argnames=self.argnames,
            argtypes=self.argtypes, return_type=ret, is_kernel=self.is_kernel,
            params=self.params, types=ty.frozen(self.types), var_types=ty.frozen(var_types),
            defs=ty.frozen(self.defs), uses=ty.frozen(self.uses),
            flows=ty.frozen({v: tuple(sorted(p, key=_var_order)) for v, p in flows.items()}),
            joins=ty.frozen({k: tuple(v) for k, v in self.joins.items()}),
            calls=ty.frozen(self.calls), constants=ty.frozen(self.constants),
            weak=frozenset(self.weak), loops=ty.frozen(self.loops),
            indexes=ty.frozen(self.indexes), raises=ty.frozen(self.raises),
            branches=ty.frozen(self.branches), comparisons=ty.frozen(self.comparisons),
            callees=tuple(self.callees.values()),
            features=frozenset(self.features), recursive=self.recursive)

    def return_type(self) -> t.Type:
        values = [(node, rt) for node, rt in self.return_types if not isinstance(rt, t.NoneType)]
        if self.is_kernel and values:
            raise KernelReturnError(
                "a kernel cannot return a value (a CUDA kernel must have void return type)",
                self.source.loc(values[0][0]),
                "write results into an output array; only device functions return",
                function=self.source.name)
        if self.signature_return is not None and not self.is_kernel:
            return self.declared_return_type(values)
        ret = None
        # a bare `return` beside `return value` keeps the value's type (the bare path returns
        # an unspecified value), as gpunb did before typing per definition
        for node, rt in values or self.return_types:
            merged = rt if ret is None else (promotion.join(ret, rt) or
                                             promotion.join_optional(ret, rt))
            if merged is None:
                raise self.error(node, f"this function returns both {ret} and {rt}",
                                 "return values of one type from every return statement")
            ret = merged
        nones = [node for node, rt in self.return_types
                 if isinstance(rt, t.NoneType) and getattr(node, "value", None) is not None]
        if nones and values:  # `return None` beside `return value`: numba's Optional
            optional = promotion.join_optional(t.none, ret)
            if optional is None:
                raise self.error(nones[0], f"this function returns both {ret} and None",
                                 "return values of one type from every return statement")
            return optional
        implicit = self.falls_off or len(values) < len(self.return_types)
        if values and implicit and not self.is_kernel:
            # a bare `return`, or falling off the end, returns None in numba too: an Optional
            # where the value can be one (lowering stores None into the return slot first);
            # other values keep their type, the None path returning an unspecified value
            optional = promotion.join_optional(t.none, ret)
            if optional is not None:
                return optional
        return t.none if ret is None else ret

    def declared_return_type(self, values: list) -> t.Type:
        """numba returns the declared type: each returned value converts to it (as an
        assignment would), `int32(int32, int32)` returning `a + b` returns an int32."""
        declared = self.signature_return
        for node, rt in values:
            if isinstance(declared, t.NoneType) or not promotion.can_convert(rt, declared):
                raise self.error(node, f"this function returns {rt}, which does not convert to "
                                 f"the declared return type {declared}",
                                 "return a value of the declared type, or declare the type "
                                 "it returns")
        return declared


class _LoopFrame:
    __slots__ = ("node", "header", "assigned", "breaks", "continues", "unrolled")

    def __init__(self, node, header: dict, assigned: set, unrolled: bool = False):
        self.node, self.header, self.assigned = node, header, assigned
        self.breaks: list = []
        self.continues: list = []  # (literal_unroll) environments going to the next copy
        self.unrolled = unrolled


def _var_order(var: Var) -> tuple:
    return (getattr(var.site, "lineno", 0), getattr(var.site, "col_offset", 0), var.name,
            var.kind.value, var.join.value if var.join else "")


def _usable_builtins() -> set:
    """Python builtins GPU code can name: the functions the kernel language implements (range,
    len, min ...) and the types (int, float, exceptions to raise)."""
    import builtins

    from gpunb.compiler.builtins import find_builtin

    return {name for name, value in vars(builtins).items() if not name.startswith("_")
            and (isinstance(value, type) or find_builtin(value) is not None)}
