"""One compilation's inference: memoised specialisations of every GPU function it reaches."""

from __future__ import annotations

from gpunb.compiler.frontend import load_source
from gpunb.compiler.typed import RecursiveRef


class DeferredCycle(Exception):  # noqa: N818 - control flow, as core.Deferred
    """A function in a cycle of calls (f -> g -> f) reached `owner`, which has no return typed
    yet to assume for the call: the statement of `owner` that started the cycle waits for its
    next pass (numba types mutual recursion from the returns that do not recurse)."""

    def __init__(self, owner):
        super().__init__(owner.source.name)
        self.owner = owner


class InferenceSession:
    """Shared by one compilation: memoises device-function specialisations, detects recursion.

    `inferer_class` builds the per-function inferer (compiler.infer.Inferer); it is passed in
    rather than imported so that this module stays below the mixins it composes.
    """

    def __init__(self, inferer_class, options: dict | None = None):
        self.inferer_class = inferer_class
        self.options = options or {}
        self.done: dict = {}
        self.in_progress: dict = {}  # key -> the inferer typing that function now
        self.recursive_refs: dict = {}  # key -> RecursiveRefs made for it
        # key of a function being typed -> keys of functions typed on its assumed return type
        # (a cycle through them, or a caller of one of those): forgotten when that assumption
        # changes (forget_assumed)
        self.assumed_by: dict = {}
        # (id(overload), argument types) -> what its generator gave (infer/overloads.py): one
        # call per compilation and types, as numba calls a template once per signature
        self.overload_impls: dict = {}

    def infer(self, py_func, argtypes: tuple, is_kernel: bool = False, call_node=None,
              caller=None, declared_return=None):
        key = (py_func.__code__, id(py_func.__globals__), argtypes, is_kernel,
               _closure_key(py_func), declared_return)
        found = self.done.get(key)
        if found is not None:
            if self.assumed_by:
                self._typed_on_assumptions(key)
            return found
        active = self.in_progress.get(key)
        if active is not None:
            return self.recursive_call(key, active, caller, call_node, declared_return)
        inferer = self.inferer_class(load_source(py_func), py_func, argtypes, self, is_kernel)
        inferer.signature_return = declared_return  # a signature's return type: values cast to it
        self.in_progress[key] = inferer
        try:
            typed = inferer.run()
        finally:
            del self.in_progress[key]
        for ref in self.recursive_refs.pop(key, ()):
            ref.bind(typed)
        self.assumed_by.pop(key, None)
        self.done[key] = typed
        return typed

    def recursive_call(self, key, active, caller, call_node, declared_return):
        """A function calling itself, directly or through others (mutual recursion, as numba's
        njit types it): a RecursiveRef whose return type is the declared one, or the one the
        function's other returns give (the inferer re-types until that assumption holds).
        Every function of the cycle becomes a real call; those between the function and this
        call are typed on its assumption, and typed again when it changes."""
        if declared_return is not None:
            return_type = declared_return
        elif caller is active:
            return_type = active.assumed_return_type(call_node)
        else:
            return_type = active.assumed_return_type(call_node, across=True)
        cycle = list(self.in_progress)
        cycle = cycle[cycle.index(key):]
        for member in cycle:
            self.in_progress[member].recursive = True
        if declared_return is None and len(cycle) > 1:
            self.assumed_by.setdefault(key, set()).update(cycle[1:])
        ref = RecursiveRef(active.source.name, return_type, active.argtypes)
        self.recursive_refs.setdefault(key, []).append(ref)
        return ref

    def forget_assumed(self, inferer) -> None:
        """`inferer`'s assumed return type changed: the functions typed on it are typed again."""
        head = next((k for k, v in self.in_progress.items() if v is inferer), None)
        for key in self.assumed_by.pop(head, ()):
            self.done.pop(key, None)

    def _typed_on_assumptions(self, key) -> None:
        """A function typed on a head's assumption is used again: the functions typing now
        (those called from the head on) depend on that assumption too."""
        chain = list(self.in_progress)
        for head, keys in self.assumed_by.items():
            if key in keys and head in self.in_progress:
                keys.update(chain[chain.index(head) + 1:])


def _closure_key(py_func) -> tuple:
    if not py_func.__closure__:
        return ()
    out = []
    for cell in py_func.__closure__:
        try:
            out.append(id(cell.cell_contents))
        except ValueError:
            out.append(None)
    return tuple(out)
