"""Stand-ins for numba-cuda internals gpunb does not provide: importable, failing when used.

A test file that imports, say, `numba.cuda.core.ir` at the top still loads, so its other tests
run; a test that really uses the internal fails with NotProvidedByGpunb naming it.
"""

from __future__ import annotations

import contextlib
import importlib
import types as pytypes


class NotProvidedByGpunb(ImportError):
    """A numba-cuda internal (not kernel language, not host API) that the harness maps nowhere."""


_importing = 0  # > 0 while the plugin imports an upstream test module


@contextlib.contextmanager
def importing_test_module():
    """While a test module's top level runs, calling a Missing returns a Missing for the result
    (e.g. `times2_cu = cuda.CUSource(...)`), so one missing name fails the tests that use it,
    not the whole file. Inside tests a call raises at once."""
    global _importing
    _importing += 1
    try:
        yield
    finally:
        _importing -= 1


class MissingInGpunb(AttributeError):
    """A kernel-language or host-API name of numba.cuda that gpunb does not define."""


class Missing:
    """A name gpunb does not provide, bound so that the test module still imports; any use
    (call, attribute, index, truth value, ...) raises NotProvidedByGpunb or MissingInGpunb."""

    __slots__ = ("_qualname", "_why", "_error")

    def __init__(self, qualname: str, why: str = "is numba-cuda internals, not provided by gpunb",
                 error: type = NotProvidedByGpunb):
        object.__setattr__(self, "_qualname", qualname)
        object.__setattr__(self, "_why", why)
        object.__setattr__(self, "_error", error)

    def _fail(self, *args, **kwargs):
        raise self._error(f"{self._qualname} {self._why}")

    def __call__(self, *args, **kwargs):
        if _importing:
            return Missing(f"{self._qualname}(...)", self._why, self._error)
        self._fail()

    __getitem__ = _fail
    __iter__ = _fail
    __bool__ = _fail
    __enter__ = _fail
    __int__ = _fail
    __index__ = _fail
    __len__ = _fail

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if not _importing:
            self._fail()
        return Missing(f"{self._qualname}.{name}", self._why, self._error)

    def __setattr__(self, name, value):
        self._fail()

    def __mro_entries__(self, bases):
        # `class T(MissingBase): ...` at a test module's top level: the class exists, using it
        # fails later through whatever else it touches
        return (_MissingBase,)

    def __repr__(self) -> str:
        return f"<missing {self._qualname}>"


class _MissingBase:
    pass


class MissingModule(pytypes.ModuleType):
    """A numba.cuda.* module gpunb has no counterpart for; also a package, for nested imports."""

    def __init__(self, name: str, public: bool = False):
        what = "numba-cuda's public API, missing in gpunb" if public else \
            "numba-cuda internals, not provided by gpunb"
        super().__init__(name, f"{name}: {what}")
        self.__path__ = []
        self._public = public

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        from ..hook import MODULES  # local: hook imports this module

        if f"{self.__name__}.{name}" in MODULES:  # `from numba.cuda.core import config`
            return importlib.import_module(f"{self.__name__}.{name}")
        if name == "_public":
            raise AttributeError(name)
        if self._public:
            gpunb_name = "gpunb" + self.__name__[len("numba"):]
            return missing_in_gpunb(f"{self.__name__}.{name}", f"{gpunb_name}.{name}")
        return Missing(f"{self.__name__}.{name}")


def gpunb_attr(numba_name: str, *candidates: str):
    """The first of `candidates` ("gpunb.types.from_dtype") that exists, read attribute by
    attribute from the gpunb package; else a Missing saying gpunb lacks `numba_name`."""
    for path in candidates:
        parts = path.split(".")
        for cut in range(len(parts) - 1, 0, -1):  # the longest importable module first
            try:
                value = importlib.import_module(".".join(parts[:cut]))
                for part in parts[cut:]:
                    value = getattr(value, part)
            except (ImportError, AttributeError):
                continue
            return value
    return Missing(numba_name, f"has no gpunb counterpart (looked for {', '.join(candidates)})",
                   MissingInGpunb)


def missing_in_gpunb(numba_name: str, gpunb_name: str) -> Missing:
    """A numba.cuda API name that gpunb lacks: importable, failing with MissingInGpunb on use."""
    return Missing(numba_name, f"is not provided by gpunb ({gpunb_name} does not exist)",
                   MissingInGpunb)
