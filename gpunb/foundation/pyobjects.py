"""What a free name in kernel code is bound to, resolved as Python resolves it, in one place.

The compiler (which freezes the value into code) and the cache (which fingerprints and watches
the same binding) must agree on every name: closure cell first, then the function's globals,
then builtins. A name bound nowhere resolves to MISSING.
"""

from __future__ import annotations

import builtins

MISSING = type("Missing", (), {"__repr__": lambda self: "<missing>", "__slots__": ()})()
"""What a name resolves to when it is bound nowhere (also the watch value for such a name)."""


def is_gpu_function(obj) -> bool:
    """A function kernels can call: a gpunb GPU function (a cuda.jit Dispatcher says so with
    `__gpunb_function__`), or a numba-compiled function (`@numba.njit` / `@numba.jit`, a
    numba-cuda device function), which numba-cuda compiles as a device function when a kernel
    calls it and gpunb compiles from its `py_func` the same way."""
    return getattr(obj, "__gpunb_function__", False) is True or is_numba_dispatcher(obj)


def is_numba_dispatcher(obj) -> bool:
    """A numba Dispatcher (CPU @jit/@njit or numba-cuda's): a numba class with the Python
    function it compiles in `py_func`."""
    cls = type(obj)
    return cls.__module__.startswith("numba.") and \
        callable(getattr(obj, "py_func", None)) and hasattr(obj, "targetoptions") and \
        getattr(obj, "_can_compile", True)  # an explicit signature: CPU only (numba-cuda too)


def is_cpu_only_numba_function(obj) -> bool:
    """A numba @jit function given explicit signatures: compiled for the CPU only, which
    numba-cuda refuses to call from kernels."""
    cls = type(obj)
    return cls.__module__.startswith("numba.") and hasattr(obj, "py_func") and \
        getattr(obj, "_can_compile", True) is False


def closure_cell(py_func, name: str):
    """The closure cell that binds `name` in `py_func`, or None when it is not a free variable."""
    code = py_func.__code__
    if py_func.__closure__ and name in code.co_freevars:
        return py_func.__closure__[code.co_freevars.index(name)]
    return None


def cell_value(cell):
    """A closure cell's value, MISSING while the enclosing function has not assigned it."""
    try:
        return cell.cell_contents
    except ValueError:
        return MISSING


def lookup_global(py_func, name: str):
    """The value `name` has for `py_func`: its closure, then its globals, then builtins."""
    cell = closure_cell(py_func, name)
    if cell is not None:
        return cell_value(cell)
    value = py_func.__globals__.get(name, MISSING)
    if value is MISSING:
        value = getattr(builtins, name, MISSING)
    return value
