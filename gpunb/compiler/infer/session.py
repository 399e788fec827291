"""One compilation's inference: memoised specialisations of every GPU function it reaches."""

from __future__ import annotations

from gpunb.compiler.frontend import load_source


class InferenceSession:
    """Shared by one compilation: memoises device-function specialisations, detects recursion.

    `inferer_class` builds the per-function inferer (compiler.infer.Inferer); it is passed in
    rather than imported so that this module stays below the mixins it composes.
    """

    def __init__(self, inferer_class, options: dict | None = None):
        self.inferer_class = inferer_class
        self.options = options or {}
        self.done: dict = {}
        self.in_progress: set = set()

    def infer(self, py_func, argtypes: tuple, is_kernel: bool = False, call_node=None,
              caller=None):
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
            typed = self.inferer_class(load_source(py_func), py_func, argtypes, self,
                                       is_kernel).run()
        finally:
            self.in_progress.discard(key)
        self.done[key] = typed
        return typed


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
