"""Earlier definitions of a GPU function, for the diff view after a redefinition.

Running a kernel's cell again (edited) makes a new GPU function under the same name; the diff
view compares its code with the definition it replaced, whether or not that one was ever
inspected. Kept per (module, qualified name): the Python function and the options of the last
KEEP definitions before the current one - not their compiled code, which is made again on
demand (memoised by content in jit/inspection), so memory stays small and bounded (KEEP per name,
NAMES names). A definition still alive elsewhere (`old = saxpy`) is reused as it is.
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections import OrderedDict

KEEP = 3  # earlier definitions kept per name
NAMES = 64  # names remembered (the least recently defined go first)


@dataclasses.dataclass(frozen=True, slots=True)
class Definition:
    """What it takes to build one definition again: its function and jit arguments."""

    py_func: object
    device: bool
    target: str | None
    inspection_arch: str | None
    options: tuple  # (name, value) pairs of the checked jit options
    signatures: tuple  # declared signatures (numba's eager form)
    dispatcher: weakref.ref
    serial: int  # definitions are numbered in the order they were made

    @property
    def where(self) -> str:
        """`Cell In[3], line 1`: where this definition's source is."""
        from gpunb.foundation.errors import describe_filename

        code = self.py_func.__code__
        return f"{describe_filename(code.co_filename)}, line {code.co_firstlineno}"


_latest: OrderedDict = OrderedDict()  # key -> Definition of the newest dispatcher
_earlier: dict = {}  # key -> [Definition, ...] oldest first
_serials = itertools.count(1)


def _key(dispatcher) -> tuple:
    return (dispatcher.__module__, dispatcher.__qualname__)


def _definition(dispatcher) -> Definition:
    return Definition(dispatcher.py_func, dispatcher.device, dispatcher.requested_target,
                      dispatcher.inspection_arch, tuple(dispatcher.options.items()),
                      tuple(dispatcher.declared_signatures), weakref.ref(dispatcher),
                      next(_serials))


def note(dispatcher) -> None:
    """A GPU function was defined (cuda.jit): the one it replaces, if any, becomes an earlier
    definition of its name. A definition whose code is the same as the one before it (a cell
    run again unchanged) replaces that one rather than adding to the list."""
    key = _key(dispatcher)
    previous = _latest.pop(key, None)
    current = _latest[key] = _definition(dispatcher)
    if previous is not None and not _same_code(previous, current):
        versions = [d for d in _earlier.get(key, []) if not _same_code(d, previous)]
        _earlier[key] = [*versions, previous][-KEEP:]
    while len(_latest) > NAMES:
        gone, _ = _latest.popitem(last=False)
        _earlier.pop(gone, None)


def _same_code(a: Definition, b: Definition) -> bool:
    code_a, code_b = a.py_func.__code__, b.py_func.__code__
    return (code_a.co_code == code_b.co_code and code_a.co_consts == code_b.co_consts
            and code_a.co_names == code_b.co_names and a.options == b.options)


def _chain(dispatcher) -> tuple[list[Definition], int | None]:
    """(the remembered definitions of its name, oldest first; the index of `dispatcher`'s)."""
    key = _key(dispatcher)
    chain = [*_earlier.get(key, []), *([_latest[key]] if key in _latest else [])]
    for k, definition in enumerate(chain):
        if definition.dispatcher() is dispatcher:
            return chain, k
    return chain, None


def earlier_definitions(dispatcher) -> list[Definition]:
    """The definitions of this function's name before `dispatcher`, newest first ([] for a
    function that cuda.jit did not make, or one forgotten)."""
    chain, index = _chain(dispatcher)
    return [] if index is None else chain[:index][::-1]


def serial_of(dispatcher) -> int | None:
    """When `dispatcher` was defined, in definition order (None: not made by cuda.jit, or
    forgotten)."""
    chain, index = _chain(dispatcher)
    return None if index is None else chain[index].serial


def forget() -> None:
    """Forget every definition (tests)."""
    _latest.clear()
    _earlier.clear()
