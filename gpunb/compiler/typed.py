"""The contract between inference and lowering: one frozen, fully typed function.

Inference (compiler/infer) produces a TypedFunction; lowering (compiler/lower) reads nothing else.
Every table is keyed by the AST node it describes (nodes hash by identity) and frozen. Local
variables are in SSA form, as numba types them: each definition of a name is its own `Var` with
its own type, and where control flow joins, a phi `Var` holds the unification of the values that
reach it. Lowering gives every Var a slot; a definition also stores into the slots of the phis it
reaches (`flows`), which is how a value crosses a join or a loop's back edge.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Mapping
from types import MappingProxyType

from gpunb.compiler.frontend import KernelSource
from gpunb.foundation import types as t
from gpunb.foundation.records import record


class Feature(str, enum.Enum):
    """What a function needs from the launch or the target (collected over its callees too)."""

    BARRIER = "barrier"  # syncthreads and friends, group sync
    WARP_BARRIER = "warp_barrier"  # syncwarp and the *_sync warp collectives
    GRID_SYNC = "grid_sync"  # cooperative groups' this_grid().sync(): a cooperative launch
    COOPERATIVE = "cooperative"  # this_grid() alone: launched cooperatively, as numba-cuda does
    SHARED = "shared"  # static shared memory
    DYNAMIC_SHARED = "dynamic_shared"  # cuda.shared.array(0, dtype)
    PRINT = "print"
    # cp.async, mbarriers, TMA and wgmma: the CPU target runs such a kernel as coroutines with
    # per-thread queues of pending copies (backends/cpu/async_*.py)
    ASYNC = "async"
    # thread-block clusters (sm_90): cuda.cg.this_cluster(), remote mbarrier arrivals, TMA
    # multicast; the CPU target schedules a cluster's blocks together
    CLUSTER = "cluster"
    SM90A = "sm_90a"  # wgmma / setmaxnreg: the CUDA target compiles for sm_90a
    BREAKPOINT = "breakpoint"  # breakpoint(): compiled as the CPU target's debug variant


class VarKind(str, enum.Enum):
    PARAM = "param"  # an argument, defined at entry
    DEF = "def"  # an assignment (or a loop target, or the target of `x += ...`)
    PHI = "phi"  # where control flow joins
    # a read of a local that no assignment reaches on its path: numba compiles it (its SSA gives
    # an undefined value); run, it raises Python's UnboundLocalError (lowering's unbound_read)
    UNBOUND = "unbound"


class JoinKind(str, enum.Enum):
    IF = "if"  # after an if/else
    HEADER = "header"  # a loop's header: entry and back edges
    EXIT = "exit"  # after a loop: the header's exit, the else clause and every break


@record
class Var:
    """One SSA value of a local variable: a definition, a parameter or a phi."""

    name: str
    kind: VarKind
    site: ast.AST  # the defining Name/arg node, or for a phi the If/For/While node
    join: JoinKind | None = None

    def __str__(self) -> str:
        where = getattr(self.site, "lineno", "?")
        if self.kind is VarKind.PHI:
            return f"{self.name} (joined at line {where}, {self.join.value})"
        return f"{self.name} (line {where})"


# ---- resolved calls -----------------------------------------------------------------------------


@record
class Const:
    """An argument bound at compile time (a parameter's default value)."""

    value: object


@record
class GpuCall:
    """A call of a GPU function or an inner function: its own typed body, called (or inlined);
    a call of the function from its own body has a RecursiveRef as callee."""

    callee: TypedFunction | RecursiveRef
    args: tuple  # per parameter: the argument's AST node, or a Const
    argtypes: tuple  # what each argument is converted to (the callee's parameter types)
    forceinline: bool = False  # the callee was made with cuda.jit(forceinline=True)
    inline: bool = False  # cuda.jit(inline='always'/True/a cost model saying so): body inlined

    @property
    def result(self) -> t.Type:
        return self.callee.return_type


class RecursiveRef:
    """A call of a function from inside its own body (self-recursion): the callee is the
    TypedFunction still being inferred, bound once inference of it finishes. Its return type is
    the declared one, or the one the function's other returns settled on."""

    __slots__ = ("name", "return_type", "argtypes", "_target")

    def __init__(self, name: str, return_type: t.Type, argtypes: tuple):
        self.name, self.return_type, self.argtypes = name, return_type, argtypes
        self._target = None

    def bind(self, typed: TypedFunction) -> None:
        self._target = typed

    @property
    def target(self) -> TypedFunction:
        if self._target is None:
            raise RuntimeError(f"recursive call of '{self.name}' was never bound")
        return self._target


@record
class StarredCall:
    """A builtin called with `*t` of a tuple (`complex(*cmath.polar(z))`): the call as typed,
    `expanded`, a synthetic call whose arguments are t[0], t[1], ... - each t evaluated once
    (lowering evaluates it at its first item and reuses the value for the others)."""

    expanded: ast.Call
    result: t.Type


@record
class InplaceCall:
    """`a += x` (and the other augmented assignments) of an array `a`: numba's in-place array
    operator, the ufunc called with `a` as its output - `call`, a synthetic
    `np.add(a, x, a)`, typed and lowered as written."""

    call: ast.Call


@record
class BuiltinCall:
    """A call of an intrinsic, math function or Python builtin; `data` is the builtin's own
    frozen fact (an array spec, a print format, a folded dimension count...)."""

    builtin: object  # a compiler.builtins.Builtin
    args: tuple  # the call's positional argument nodes
    argtypes: tuple
    result: t.Type
    data: object = None


@record
class BuiltinValue:
    """A builtin read as a value (cuda.threadIdx.x, cuda.warpsize)."""

    builtin: object
    result: t.Type


@record
class Cast:
    """np.float32(x), int(x), a numpy scalar type or Python type called on one number."""

    target: t.Type
    arg: ast.AST
    argtype: t.Type

    @property
    def result(self) -> t.Type:
        return self.target


@record
class Typed:
    """What a builtin's typing returns when it has a fact for lowering besides the result."""

    result: t.Type
    data: object = None


# ---- loop plans ---------------------------------------------------------------------------------


@record
class RangeSource:
    """range(stop) / range(start, stop) / range(start, stop, step): the argument nodes once."""

    start: ast.AST | None
    stop: ast.AST
    step: ast.AST | None
    item: t.Integer
    step_value: int | None = None  # the step when it is a compile-time constant


@record
class ArraySource:
    """A 1-d array's elements (or an n-d array's rows, as views)."""

    array: ast.AST
    item: t.Type


@record
class EnumerateSource:
    """enumerate(source[, start]) nested in a zip (or another enumerate): (start + k, item k)."""

    inner: object  # RangeSource | ArraySource | EnumerateSource | ZipSource
    start: ast.AST | None
    item: t.Tuple  # (int64, inner.item)


@record
class ZipSource:
    """zip(sources...) nested in a zip or an enumerate: its sources' items k, as one tuple."""

    sources: tuple
    item: t.Tuple


@record
class LoopPlan:
    """How a `for` loop runs, decided once by inference.

    `sources` is the one source a counted loop iterates (a range, an array, or a ZipSource /
    EnumerateSource of sources); `item` is what its target is bound to. A tuple loop is unrolled:
    `tuple_seq` is the tuple expression and `item` the type every item is converted to; with
    `enumerate` set (start: `enumerate_start`, None for 0) its target is (counter, item).
    """

    sources: tuple  # (RangeSource | ArraySource | EnumerateSource | ZipSource,) or ()
    item: t.Type  # what the loop target is bound to (a Tuple for zip)
    enumerate: bool = False
    enumerate_start: ast.AST | None = None
    tuple_seq: ast.AST | None = None
    # literal_unroll(tuple): one (target, body) copy per item, each typed with its own item's
    # type (copies of the loop's target and body, made once by inference)
    copies: tuple = ()

    @property
    def unrolled(self) -> bool:
        return self.tuple_seq is not None and not self.copies


# ---- index plans --------------------------------------------------------------------------------


@record
class IntIndex:
    """An integer index: the node's value, or item `position` of a tuple-valued node (a[idx]
    with idx = (i, j) indexes two axes), or with position -1 the value a 0-d integer array
    holds (numba indexes with those too)."""

    node: ast.AST
    type: t.Type
    position: int | None = None


@record
class SliceIndex:
    lower: ast.AST | None  # None also for a None bound (a[None:3])
    upper: ast.AST | None
    step: ast.AST | None


@record
class IndexPlan:
    """An array subscript: one part per indexed axis, `...` already expanded."""

    parts: tuple  # IntIndex | SliceIndex

    @property
    def is_element(self) -> bool:
        return all(isinstance(p, IntIndex) for p in self.parts)


@record
class RaiseSite:
    """A `raise` (or, with debug=True, an `assert`): the builtin class's name and the message."""

    exception: str
    message: str


# ---- the typed function -------------------------------------------------------------------------


def frozen(mapping: dict) -> Mapping:
    return MappingProxyType(dict(mapping))


@record(eq=False)
class TypedFunction:
    """Inference's result for one function and one tuple of argument types."""

    source: KernelSource
    py_func: object
    argnames: tuple
    argtypes: tuple
    return_type: t.Type
    is_kernel: bool
    params: tuple  # the Var of each argument, in order
    types: Mapping  # expression node -> Type
    var_types: Mapping  # Var -> Type (phis that no use reads may be missing)
    defs: Mapping  # Name (store) node -> Var
    uses: Mapping  # Name (load) node -> Var
    flows: Mapping  # Var -> tuple of phi Vars it reaches
    joins: Mapping  # (If/For/While node, JoinKind) -> tuple of phi Vars defined there
    calls: Mapping  # Call (or builtin-value Name/Attribute) node -> GpuCall | ...
    constants: Mapping  # node -> Python value folded at compile time
    weak: frozenset  # nodes whose value is a weak (untyped) float literal
    loops: Mapping  # For node -> LoopPlan
    indexes: Mapping  # Subscript node -> IndexPlan
    raises: Mapping  # Raise/Assert node -> RaiseSite (asserts only with debug=True)
    # If/IfExp node -> the branch taken, when known at compile time; BoolOp node -> the indices
    # of the operands that can give its value (constant ones pruned, as numba prunes them)
    branches: Mapping
    # Compare node -> per operator, the type both sides are converted to (for `in`: a tuple of
    # one type per tuple item, or the one type array elements are compared in)
    comparisons: Mapping
    callees: tuple  # TypedFunctions called, directly
    features: frozenset  # Feature members this function itself needs
    recursive: bool  # calls itself (so it is a real function on every target, never inlined)

    @property
    def name(self) -> str:
        return self.source.name

    def type_of(self, node: ast.AST) -> t.Type:
        return self.types[node]

    def all_features(self) -> frozenset:
        out = set(self.features)
        for callee in self.callees:
            out |= callee.all_features()
        return frozenset(out)

    def definitions(self, name: str) -> list:
        """(Var, type) of every definition of local `name` (parameter, assignments, joins), in
        source order: a variable's type can differ between its definitions, as in numba."""
        found = [(var, vt) for var, vt in self.var_types.items() if var.name == name]
        return sorted(found, key=lambda pair: _order(pair[0]))

    def type_of_name(self, name: str) -> t.Type:
        """The type of local `name` where it has one type throughout; a KeyError names the
        types otherwise (ask definitions() for each one)."""
        kinds = {vt for _, vt in self.definitions(name)}
        if len(kinds) != 1:
            raise KeyError(f"{name!r} has {len(kinds)} types in {self.name}: "
                           f"{', '.join(sorted(map(str, kinds)))}")
        return kinds.pop()


def _order(var: Var) -> tuple:
    """Source order of definitions: a join after an if or a loop sorts after its body."""
    site = var.site
    if var.join in (JoinKind.IF, JoinKind.EXIT):
        return (getattr(site, "end_lineno", 0) or 0, 1 << 20, var.name, var.kind.value)
    return (getattr(site, "lineno", 0), getattr(site, "col_offset", 0), var.name,
            var.kind.value)
