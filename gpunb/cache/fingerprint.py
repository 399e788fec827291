"""Content fingerprints of GPU functions: normalised AST plus every value their code reads.

`collect(func)` walks the function's AST for global reads (names and attribute chains), resolves
each the way the compiler does (closure, globals, builtins; attributes by getattr), encodes every
value canonically (encode.py) and fingerprints called GPU functions recursively. Comments,
formatting, docstrings, line numbers and file paths never enter a digest, so the same kernel in
another cell, directory or machine has the same fingerprint.

It also returns a *watch list*: (namespace.get, name, object seen) for each global read,
transitively, headed by the epoch entry, so `still_valid(watch)` - identity checks - tells the
launch fast path whether anything was rebound since. Work is memoised per code object (parsing,
chain extraction) and per function object (resolved values, valid while its watch list is).
"""

from __future__ import annotations

import ast
import builtins
import copy
import os
import types
import weakref
from dataclasses import dataclass, field, replace

from gpunb.cache import epoch
from gpunb.cache.encode import (
    blake2b,
    encode,
    is_constant,
    member_overloads,
    preview,
    same_constant,
)
from gpunb.foundation import loaded_sources
from gpunb.foundation.memo import RecentlyUsed
from gpunb.foundation.pyobjects import MISSING, closure_cell, is_gpu_function

KINDS = ("gpu function", "global", "closure", "default", "annotation")
_STABLE_MODULES = frozenset({"math", "cmath", "numpy", "gpunb", "operator", "builtins"})


@dataclass(frozen=True, slots=True)
class Dependency:
    """One thing a function's code depends on, where it was defined, and its content digest."""

    name: str  # "N", "b.helper", "cuda.threadIdx.x"; the parameter name for kind 'default'
    kind: str  # one of KINDS
    defined_at: str  # 'Cell In[7], line 2', 'File "b.py", line 3', 'module __main__'
    digest: str  # of the encoded value; for GPU functions the callee's whole fingerprint
    via: tuple[str, ...] = ()  # GPU functions between the fingerprinted function and the reader
    code_digest: str = ""  # GPU functions: their own normalised AST (tells "edited" from "reads")
    value: str = ""  # a short preview of constants, for provenance ("256")
    filename: str = ""
    line: int = 0

    def label(self) -> str:
        """`device function `scale``, `global `N``, ... as provenance sentences name things."""
        word = {"gpu function": "device function", "closure": "closure variable",
                "default": "default value of", "annotation": "annotation of"}.get(self.kind,
                                                                                 self.kind)
        return f"{word} `{self.name}`"

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "defined_at": self.defined_at,
                "digest": self.digest, "via": list(self.via), "code_digest": self.code_digest,
                "value": self.value, "filename": self.filename, "line": self.line}

    @classmethod
    def from_json(cls, data: dict) -> Dependency:
        return cls(str(data["name"]), str(data["kind"]), str(data["defined_at"]),
                   str(data["digest"]), tuple(data.get("via", ())),
                   str(data.get("code_digest", "")), str(data.get("value", "")),
                   str(data.get("filename", "")), int(data.get("line", 0)))


@dataclass(frozen=True, slots=True)
class FunctionFingerprint:
    """What a GPU function's compiled code can depend on, reduced to digests."""

    name: str
    qualname: str
    digest: str  # own code, defaults, every value read, callees transitively
    code_digest: str  # own normalised AST only
    defined_at: str
    filename: str
    first_line: int
    last_line: int
    dependencies: tuple[Dependency, ...]  # transitive; a callee's entries carry `via`
    watch: tuple  # (namespace's bound get, name, object seen), epoch entry first; still_valid
    epoch: int
    # ((qualname, filename, first_line, last_line, node positions), ...): self, then callees
    locations: tuple
    py_func: object = field(default=None, compare=False, repr=False)
    code: object = field(default=None, compare=False, repr=False)
    defaults_seen: tuple = field(default=(), compare=False, repr=False)
    options_seen: object = field(default=None, compare=False, repr=False)

    def dependency_tree(self) -> list[tuple[int, Dependency]]:
        """(depth, dependency) in reading order, for explain(): each GPU function this one
        reads is followed by what it reads in turn (a callee's entries carry its name first in
        `via`), not by the last function's."""
        nested = [d for d in self.dependencies if d.via]
        out = []
        for dep in self.dependencies:
            if not dep.via:
                out.append((0, dep))
                out.extend((len(d.via), d) for d in nested if d.via[0] == dep.name)
        shown = {id(d) for _, d in out}
        out.extend((len(d.via), d) for d in nested if id(d) not in shown)
        return out


class _CellView:
    """A closure cell seen as a one-name namespace, so watch entries stay `get(name) is obj`."""

    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def get(self, name, default=None):
        try:
            return self.cell.cell_contents
        except ValueError:  # an empty cell
            return default


class _AttrView:
    """Attributes of a non-module object (`cfg.N`) seen as a namespace, for watch entries."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def get(self, name, default=None):
        try:
            return getattr(self.obj, name, default)
        except Exception:  # noqa: BLE001 - a raising property reads as "not there"
            return default


def still_valid(watch) -> bool:
    """True while every watched name is still bound to the object seen (and the epoch is the same).

    The launch fast path calls this; it is deliberately one loop of dict lookups and identity
    checks. Entries hold the namespace's bound `get` (not the namespace): no attribute lookup per
    entry, a third faster. `MISSING` is the object recorded for a name that was unbound.
    """
    for get, name, obj in watch:
        seen = get(name, MISSING)
        if seen is not obj and not same_constant(seen, obj):
            return False
    return True


# ---- per code object: parse once ---------------------------------------------------------------

class _CodeFacts:
    """What one code object's source says (internal, so a plain class: no dataclass import cost)."""

    __slots__ = ("code_digest", "chains", "filename", "first_line", "last_line", "positions",
                 "attrs")

    def __init__(self, code_digest: str, chains: tuple, filename: str, first_line: int,
                 last_line: int, positions: tuple, attrs: tuple = ()):
        self.code_digest = code_digest
        self.chains = chains  # sorted global reads: ("N",), ("cuda", "threadIdx", "x")
        # sorted attribute names read from any value (`a.foo`): @overload_method/_attribute
        # registrations of these names can be what the code calls
        self.attrs = attrs
        self.filename = filename
        self.first_line = first_line
        self.last_line = last_line
        # (line - first line, column) of every node of the normalised tree, in walk order: a
        # cache hit compiled from the same code laid out differently maps its sites by these
        self.positions = positions


# id(code) -> (code, _CodeFacts); the code is kept alive (its id stays its own)
_facts_memo = RecentlyUsed(4096)


def _code_facts(py_func) -> _CodeFacts:
    code = py_func.__code__
    found = _facts_memo.get(id(code))
    if found is not None and found[0] is code:
        return found[1]
    from gpunb.compiler.frontend import load_source  # the compiler's own parse: same text, same AST

    source = load_source(py_func)
    tree = source.tree
    facts = _CodeFacts(
        blake2b(normalised_dump(tree).encode(), digest_size=16).hexdigest(),
        tuple(sorted(_GlobalReads(_local_names(code, tree)).run(tree))),
        # the code object's own file and line: equal code objects from two files compare equal,
        # so a parse cached by code object may name the other file
        code.co_filename, code.co_firstlineno,
        code.co_firstlineno + (getattr(tree, "end_lineno", None) or source.first_line)
        - source.first_line, node_positions(tree, source.first_line),
        tuple(sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)})))
    if os.path.isabs(facts.filename) and facts.filename.endswith(".py"):
        # a new code object from a tracked file: the module was (re)loaded, so its current text
        # is the imported one again
        epoch.forget_module_file(facts.filename)
        epoch.track_module_files([facts.filename])
    _facts_memo[id(code)] = (code, facts)
    return facts


def node_positions(tree: ast.FunctionDef, first_line: int) -> tuple:
    """((line - first_line, column), ...) of the nodes `normalised_dump` keeps, in walk order:
    equal dumps give lists of equal length whose items pair up (cache/relocate.py)."""
    out = []
    for node in ast.walk(_without_docstring(tree)):
        line = getattr(node, "lineno", None)
        if line is not None:
            out.append((line - first_line, node.col_offset))
    return tuple(out)


def _without_docstring(tree: ast.FunctionDef) -> ast.FunctionDef:
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        tree = copy.copy(tree)  # shallow: the compiler's cached tree is never modified
        tree.body = body[1:]
    return tree


def normalised_dump(tree: ast.FunctionDef) -> str:
    """The AST with docstring, positions and field names removed: comments/format never count."""
    tree = copy.copy(_without_docstring(tree))
    # default values are fingerprinted by value (kind "default"), so `a=2.0` -> `a=3.0` is
    # explained as a changed default, not as changed source
    args = tree.args = copy.copy(tree.args)
    args.defaults = []
    args.kw_defaults = []
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _local_names(code: types.CodeType, tree: ast.FunctionDef) -> frozenset:
    """Names local to the function: Python's own answer (the code object), plus comprehension
    variables (own scopes in 3.11) that the function does not also read as globals."""
    names = set(code.co_varnames) | set(code.co_cellvars)
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name) and target.id not in code.co_names \
                        and target.id not in code.co_freevars:
                    names.add(target.id)
    return frozenset(names)


class _GlobalReads(ast.NodeVisitor):
    """Collects the dotted chains of global reads: `N`, `b.helper`, `cuda.threadIdx.x`."""

    def __init__(self, local_names: frozenset):
        self.local_names = local_names
        self.chains: set[tuple[str, ...]] = set()

    def run(self, tree: ast.FunctionDef) -> set:
        args = tree.args
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)
        if tree.returns is not None:
            self.visit(tree.returns)
        for stmt in tree.body:  # defaults are read by value from __defaults__, not here
            self.visit(stmt)
        return self.chains

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id not in self.local_names:
            self.chains.add((node.id,))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        """An inner function (or lambda): its parameters and variables are its own, not global
        reads - a notebook global `x` must not become a dependency through `def f(x)`."""
        from gpunb.compiler.scopes import assigned_names, walk_scope

        args = node.args
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)  # evaluated in the enclosing scope
        for decorator in getattr(node, "decorator_list", ()):
            self.visit(decorator)
        own = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        own |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        own |= {n.name for n in walk_scope(node) if isinstance(n, ast.FunctionDef)}
        inner = _GlobalReads(self.local_names | own | assigned_names(node))
        inner.chains = self.chains
        for part in node.body if isinstance(node.body, list) else [node.body]:
            inner.visit(part)

    visit_Lambda = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attrs = []
        current = node
        while isinstance(current, ast.Attribute):
            attrs.append(current.attr)
            current = current.value
        if isinstance(current, ast.Name):
            if current.id not in self.local_names:
                self.chains.add((current.id, *reversed(attrs)))
        else:
            self.visit(current)


# ---- per function object: resolve and encode ---------------------------------------------------

# fingerprints of GPU functions (Dispatchers), one table per `follow`, for as long as each lives:
# a notebook redefines kernels all day, and the memo must not keep the old ones (their
# specialisations, device code) alive. A fingerprint holds the Python function it describes,
# so plain Python functions (what fusion follows) are kept apart, the least recently used dropped
# first.
_fp_memo = (weakref.WeakKeyDictionary(), weakref.WeakKeyDictionary())
PLAIN_FUNCTIONS_KEPT = 4096
# (id(func), follow) -> (func, FunctionFingerprint)
_plain_fp_memo = RecentlyUsed(PLAIN_FUNCTIONS_KEPT)


def _memoised(func, follow: bool):
    if isinstance(func, types.FunctionType):
        found = _plain_fp_memo.get((id(func), follow))
        return found[1] if found is not None and found[0] is func else None
    try:
        return _fp_memo[follow].get(func)
    except TypeError:  # not weak-referenceable: not memoised
        return None


def _memoise(func, follow: bool, fp) -> None:
    if isinstance(func, types.FunctionType):
        _plain_fp_memo[(id(func), follow)] = (func, fp)
        return
    try:
        _fp_memo[follow][func] = fp
    except TypeError:
        pass


def collect(func, fresh: bool = False, follow_python: bool = False) -> FunctionFingerprint:
    """The fingerprint of a GPU function (or a plain Python function), memoised while valid.

    `fresh=True` re-reads everything (callees, array contents) and refreshes the memo. A key that
    is about to describe newly compiled code must be fresh: the compiler freezes the values it
    reads *now*, while a memoised digest may predate an in-place write (`TABLE[0] = 5`), which no
    identity check sees - keyed by the old content, that code would be served to every later
    process whose TABLE still holds the old values.

    `follow_python=True` fingerprints plain Python functions it reads like GPU functions (their
    code and what they read, transitively): what a traced function (gpunb.fuse) depends on.
    """
    if fresh:
        from gpunb.cache import encode as _encode_module

        _encode_module._array_digests.clear()
    return _fingerprint(func, (), fresh, follow_python)[0]


def _unwrap(func) -> tuple:
    if is_gpu_function(func):
        options = {k: v for k, v in dict(getattr(func, "options", {}) or {}).items()
                   if k != "cache"}
        return func.py_func, options
    return func, None


def _fingerprint(func, stack: tuple, fresh: bool = False, follow: bool = False) -> tuple:
    """(fingerprint, lowest stack depth its digest refers to by position).

    `stack` holds the ids of the functions being fingerprinted, outermost first. A call back into
    one of them (recursion, possibly cut by branch pruning at compile time) is encoded by its
    distance up the stack, so the digest of a function inside such a cycle describes it only
    together with its callers: it is memoised only when every such reference points at itself or
    deeper (then it is content, whoever asks).
    """
    py_func, options = _unwrap(func)
    fp = _memoised(func, follow)
    if fp is not None:
        if not fresh and fp.py_func is py_func and fp.code is py_func.__code__ \
                and fp.defaults_seen[0] is py_func.__defaults__ \
                and fp.defaults_seen[1] is py_func.__kwdefaults__ \
                and fp.options_seen == options and still_valid(fp.watch):
            return fp, len(stack)
        if fp.epoch != epoch.current():
            epoch.check_module_files()
    builder = _Builder(py_func, (*stack, id(py_func)), fresh, follow)
    fp = builder.build(options)
    if builder.lowest_ref >= len(stack):  # self-contained: content, whoever asks
        _memoise(func, follow, fp)
    return fp, builder.lowest_ref


def _jit_options_text(func) -> str:
    """A GPU function's options and declared signatures as written: `jit(fastmath=True)`, or ''.

    Part of a caller's key (they shape the callee's code, and its arguments are converted to its
    declared types) and the dependency's `value`, so provenance can name an options change.
    """
    _, options = _unwrap(func)
    words = [repr(str(s)) for s in getattr(func, "declared_signatures", ()) or ()]
    words += [f"{k}={v!r}" for k, v in sorted((options or {}).items())]
    return f"jit({', '.join(words)})" if words else ""


def describe_namespace(namespace: dict) -> str:
    """Where a global lives: the module's file, else `module NAME` (notebook: `module __main__`)."""
    from gpunb.foundation.errors import describe_filename

    filename = namespace.get("__file__")
    if isinstance(filename, str) and filename:
        return describe_filename(filename)
    return f"module {namespace.get('__name__', '?')}"


def _where(filename: str, line: int) -> str:
    from gpunb.foundation.errors import describe_filename

    return f"{describe_filename(filename)}, line {line}"


def _short(text: str) -> str:
    return blake2b(text.encode(), digest_size=12).hexdigest()


def _is_stable(value) -> bool:
    """Library objects whose attributes never change under us (math.sqrt, np.float32, cuda.x)."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
    elif isinstance(value, type):
        name = value.__module__ or ""
    else:
        name = type(value).__module__ or ""
    return name.partition(".")[0] in _STABLE_MODULES


class _Builder:
    """Resolves one function's global reads into tokens, dependencies and watch entries."""

    def __init__(self, py_func, stack: tuple, fresh: bool = False, follow: bool = False):
        self.py_func = py_func
        self.stack = stack  # ids of the functions being fingerprinted, this one last
        self.fresh = fresh
        self.follow = follow  # plain Python functions are fingerprinted too (collect's doc)
        self.lowest_ref = len(stack) - 1  # see _fingerprint: the shallowest function referred to
        self.callees: list = []  # FunctionFingerprints met while encoding the current chain
        self.epoch_marker = epoch._state["epoch"]

    def build(self, options) -> FunctionFingerprint:
        py_func = self.py_func
        facts = _code_facts(py_func)
        loaded_sources.check_superseded(py_func)  # an object from before its module's reload
        defined_at = _where(facts.filename, facts.first_line)
        tokens = [f"code {facts.code_digest}"]
        deps: dict[str, Dependency] = {}
        nested: list[Dependency] = []
        watch: dict = {}
        locations = [(py_func.__qualname__, facts.filename, facts.first_line, facts.last_line,
                      facts.positions)]
        for chain in facts.chains:
            self.callees = []
            dep, token, entries = self._resolve(chain)
            if dep.name in deps:
                continue  # `arr` and `arr.shape` resolve to the same frozen value
            deps[dep.name] = dep
            tokens.append(token)
            for namespace, name, obj in entries:
                watch.setdefault((id(namespace), name), (namespace.get, name, obj))
            # what a callee reads is "read via" the name this function calls it by (`mod.f`,
            # an alias), unless the chain held several functions (a tuple): their own names
            single = len(self.callees) == 1 and dep.kind == "gpu function"
            self._take_callees(dep.name if single else None, watch, nested, locations)
        for attr in facts.attrs:  # methods and attributes given overloads
            self.callees = []
            token = member_overloads(attr, self._gpu_token)
            if token:
                name = f"overloads of .{attr}"
                deps[name] = Dependency(name, "global", "gpunb.cuda.extending", _short(token))
                tokens.append(token)
                self._take_callees(None, watch, nested, locations)
        for dep, token in self._defaults(defined_at, facts):
            deps[f"{dep.kind} {dep.name}"] = dep
            tokens.append(token)
        digest = blake2b("\n".join(tokens).encode(), digest_size=16).hexdigest()
        return FunctionFingerprint(
            py_func.__name__, py_func.__qualname__, digest, facts.code_digest, defined_at,
            facts.filename, facts.first_line, facts.last_line,
            tuple(deps.values()) + tuple(nested),
            (epoch.watch_entry(), *watch.values()), epoch.current(), tuple(locations),
            py_func, py_func.__code__, (py_func.__defaults__, py_func.__kwdefaults__), options)

    def _take_callees(self, via, watch: dict, nested: list, locations: list) -> None:
        """What the callees met while encoding one read read in turn: their watch entries,
        dependencies (read via `via`, else each callee's own name) and source locations."""
        for callee in self.callees:
            for entry in callee.watch[1:]:
                watch.setdefault((id(entry[0].__self__), entry[1]), entry)
            name = via or callee.name
            nested.extend(replace(d, via=(name, *d.via)) for d in callee.dependencies)
            locations.extend(loc for loc in callee.locations if loc not in locations)

    def _gpu_token(self, func) -> str:
        inner, options = _unwrap(func)
        if id(inner) in self.stack:
            # a call back into a function being fingerprinted: by how many levels up it is, not
            # expanded (its content is already part of the outer digest; a name could be another
            # function's), and relative, so a self-contained digest is the same at any depth
            depth = self.stack.index(id(inner))
            self.lowest_ref = min(self.lowest_ref, depth)
            return f"gpu-recursive:up{len(self.stack) - 1 - depth}"
        callee, lowest = _fingerprint(func, self.stack, self.fresh, self.follow)
        self.lowest_ref = min(self.lowest_ref, lowest)
        self.callees.append(callee)
        # a callee's own options and declared signatures (its arguments are converted to them)
        # shape the caller's code
        return f"gpu:{callee.digest}:{_jit_options_text(func)}"

    def _encode(self, value) -> str:
        if self.follow and type(value) is types.FunctionType:
            return self._gpu_token(value)
        if self.follow and getattr(type(value), "_gpunb_fused", False):
            return self._gpu_token(value.func)  # a gpunb.fuse function: traced through, inlined
        return encode(value, self._gpu_token, self.epoch_marker)

    def _resolve(self, chain: tuple[str, ...]) -> tuple:
        py_func = self.py_func
        root = chain[0]
        entries = []
        cell = closure_cell(py_func, root)
        if cell is not None:
            view = _CellView(cell)
            value = view.get(root, MISSING)
            entries.append((view, root, value))
            kind, where = "closure", f"closure of {py_func.__qualname__}"
        else:
            namespace = py_func.__globals__
            value = namespace.get(root, MISSING)
            entries.append((namespace, root, value))  # MISSING: a later global must shadow
            if value is MISSING:
                value = builtins.__dict__.get(root, MISSING)
            kind, where = "global", describe_namespace(namespace)
        path, encoded = [root], [self._encode(value)]
        for attr in chain[1:]:
            if value is MISSING or is_constant(value) or is_gpu_function(value):
                break
            try:
                nxt = getattr(value, attr, MISSING)
            except Exception:  # noqa: BLE001 - the compiler will report the failing attribute
                nxt = MISSING
            if isinstance(value, types.ModuleType):
                if _is_stable(value):
                    where = f"module {value.__name__}"
                else:
                    where = describe_namespace(value.__dict__)
                    # an attribute the module's __getattr__ answers (PEP 562) is not in its dict
                    namespace = value.__dict__ if attr in value.__dict__ or nxt is MISSING \
                        else _AttrView(value)
                    entries.append((namespace, attr, nxt))
            elif not _is_stable(value):
                entries.append((_AttrView(value), attr, nxt))
            value = nxt
            path.append(attr)
            encoded.append(self._encode(value))
        name = ".".join(path)
        token = f"{kind} {name} = {' | '.join(encoded)}"
        if is_gpu_function(value) and self.callees:
            callee = self.callees[-1]
            dep = Dependency(name, "gpu function", callee.defined_at, callee.digest,
                             code_digest=callee.code_digest, value=_jit_options_text(value),
                             filename=callee.filename, line=callee.first_line)
        else:
            dep = Dependency(name, kind, where, _short(token), value=preview(value))
        return dep, token, entries

    def _defaults(self, defined_at: str, facts: _CodeFacts):
        py_func = self.py_func
        code = py_func.__code__
        defaults = py_func.__defaults__ or ()
        positional = code.co_varnames[:code.co_argcount]
        named = list(zip(positional[len(positional) - len(defaults):], defaults, strict=True))
        named += sorted((py_func.__kwdefaults__ or {}).items())
        # annotations by value too: they declare signatures, and they are evaluated outside the
        # function's code, so two defs differing only there have equal code objects
        annotations = getattr(py_func, "__annotations__", None) or {}
        named = [("default", n, v) for n, v in named]
        named += [("annotation", n, v) for n, v in sorted(annotations.items())]
        for kind, name, value in named:
            token = f"{kind} {name} = {self._encode(value)}"
            yield (Dependency(name, kind, defined_at, _short(token), value=preview(value),
                              filename=facts.filename, line=facts.first_line), token)
