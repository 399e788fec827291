"""One compilation's inference: memoised specialisations of every GPU function it reaches."""

from __future__ import annotations

from gpunb.compiler.frontend import load_source
from gpunb.compiler.typed import RecursiveRef


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

    def infer(self, py_func, argtypes: tuple, is_kernel: bool = False, call_node=None,
              caller=None, declared_return=None):
        key = (py_func.__code__, id(py_func.__globals__), argtypes, is_kernel,
               _closure_key(py_func), declared_return)
        found = self.done.get(key)
        if found is not None:
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
        self.done[key] = typed
        return typed

    def recursive_call(self, key, active, caller, call_node, declared_return):
        """A function calling itself: a RecursiveRef whose return type is the declared one, or
        the one its other returns give (the inferer re-types until that assumption holds).
        Only self-recursion: a cycle through other functions needs declared signatures."""
        if caller is not active:
            if declared_return is None:
                raise caller.error(call_node, f"recursive call of GPU function "
                                   f"'{active.source.name}' through another function",
                                   "declare the signatures of the functions in the cycle, e.g. "
                                   "@cuda.jit(\"int64(int64)\", device=True)")
            return_type = declared_return
        else:
            return_type = declared_return or active.assumed_return_type(call_node)
        ref = RecursiveRef(active.source.name, return_type, active.argtypes)
        self.recursive_refs.setdefault(key, []).append(ref)
        active.recursive = True
        return ref


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
