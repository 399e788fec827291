"""`numba.cuda.errors` / `numba.cuda.core.errors`: numba's exception names → gpunb's classes.

A test that expects `TypingError` passes when gpunb raises its compile-time error for the same
mistake: the mapping below names gpunb's counterpart of each numba class. A name not listed here
is real numba's class, which gpunb never raises (a test expecting it fails, honestly).
"""

from __future__ import annotations

import importlib

from numba.core import errors as _numba_errors

import gpunb

NumbaError = gpunb.GpunbError
TypingError = gpunb.CompileError
NumbaTypeError = gpunb.CompileError
LoweringError = gpunb.CompileError
UnsupportedError = gpunb.CompileError
CompilerError = gpunb.CompileError
KernelRuntimeError = gpunb.LaunchError


def _gpunb_performance_warning():
    """gpunb's warning for slow implicit work (host-array copies); not public, so searched."""
    for module, name in (("gpunb.cuda", "PerformanceWarning"), ("gpunb", "PerformanceWarning"),
                         ("gpunb.runtime.launch", "PerformanceWarning")):
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return _numba_errors.NumbaPerformanceWarning


NumbaPerformanceWarning = _gpunb_performance_warning()
# gpunb's warning for option combinations numba warns about (debug=True with opt=True)
NumbaInvalidConfigWarning = getattr(importlib.import_module("gpunb.foundation.errors"),
                                    "InvalidConfigWarning",
                                    _numba_errors.NumbaInvalidConfigWarning)


_MAPPED = {"NumbaError": NumbaError, "TypingError": TypingError, "NumbaTypeError": NumbaTypeError,
           "LoweringError": LoweringError, "UnsupportedError": UnsupportedError,
           "CompilerError": CompilerError, "KernelRuntimeError": KernelRuntimeError,
           "NumbaPerformanceWarning": NumbaPerformanceWarning,
           "NumbaInvalidConfigWarning": NumbaInvalidConfigWarning}


def map_numba_error_names(module) -> None:
    """A test module that imported numba's own exception classes (`from numba.core.errors
    import TypingError`, as upstream tests do when numba is installed) gets gpunb's counterparts
    under those names, as it does through numba.cuda.core.errors; one that imported the module
    (`from numba import errors`) gets this one, which maps the same names."""
    import sys

    for name, value in list(vars(module).items()):
        if value is _numba_errors:  # `from numba import errors`: this module in its place
            setattr(module, name, sys.modules[__name__])
            continue
        if getattr(value, "__module__", None) == _numba_errors.__name__ and \
                value is getattr(_numba_errors, getattr(value, "__name__", ""), None) and \
                value.__name__ in _MAPPED:
            setattr(module, name, _MAPPED[value.__name__])


def __getattr__(name: str):
    return getattr(_numba_errors, name)
