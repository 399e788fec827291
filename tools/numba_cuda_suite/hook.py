"""The import hook that makes numba-cuda's test files import gpunb: `numba.cuda` → `gpunb.cuda`.

A meta-path finder answers every `numba.cuda` and `numba.cuda.*` import from the table in
`MODULES`; plain `numba` (njit, numba.core.errors, numba.tests.support) stays real numba. Each
entry says what a name resolves to and why, so the mapping is visible in one place.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types as pytypes
from pathlib import Path

from . import whatif
from .shims.missing import MissingModule, missing_in_gpunb

ENV_SRC = "NUMBA_CUDA_SUITE_TESTS"  # the upstream `numba/cuda/tests` directory, set by the runner

# name → (kind, target). kinds:
#   "proxy":   numba.cuda itself, a module that forwards to gpunb.cuda (see CudaProxy)
#   "alias":   the named gpunb module's attributes, unchanged
#   "shim":    a module of this harness (test infrastructure, or a thin rename of a gpunb name)
#   "package": an upstream test package: its directory, without running its __init__
#   "upstream": a module of the numba-cuda checkout loaded as it is (a data table tests read)
#   "missing": a MissingModule on purpose (numba's extension API, out of scope)
# Every other numba.cuda.* name is a MissingModule: numba-cuda internals that gpunb does not
# provide; importing one works, using anything from it raises NotProvidedByGpunb.
MODULES: dict[str, tuple[str, str]] = {
    "numba.cuda": ("proxy", "gpunb.cuda"),
    "numba.cuda.random": ("alias", "gpunb.random"),
    "numba.cuda.api": ("alias", "gpunb.cuda"),  # where numba-cuda defines its host API
    # numba-cuda's public bfloat16 / fp8 intrinsic modules (gpunb.cuda.bf16 / .fp8)
    "numba.cuda.bf16": ("alias", "gpunb.cuda.bf16"),
    "numba.cuda.fp8": ("alias", "gpunb.cuda.fp8"),
    # the generated bindings those re-export, under CUDA's own names (nv_bfloat16, __hadd)
    "numba.cuda._internal.cuda_bf16": ("shim", "shims.cuda_bf16"),
    "numba.cuda._internal.cuda_fp8": ("shim", "shims.cuda_fp8"),
    "numba.cuda.testing": ("shim", "shims.testing"),
    "numba.cuda.tests": ("package", ""),
    "numba.cuda.tests.cudapy": ("package", "cudapy"),
    "numba.cuda.tests.support": ("shim", "shims.support"),
    "numba.cuda.config": ("shim", "shims.config"),
    "numba.cuda.core.config": ("shim", "shims.config"),
    "numba.cuda.errors": ("shim", "shims.errors"),
    "numba.cuda.core.errors": ("shim", "shims.errors"),
    "numba.cuda.types": ("shim", "shims.types"),
    "numba.cuda.np.numpy_support": ("shim", "shims.numpy_support"),
    "numba.cuda.compiler": ("shim", "shims.compiler"),
    "numba.cuda.kernels.transpose": ("shim", "shims.transpose"),
    "numba.cuda.cudadrv.driver": ("shim", "shims.driver"),
    "numba.cuda.cudadrv.devicearray": ("shim", "shims.devicearray"),
    # the libdevice function table test_libdevice generates one test per function from
    "numba.cuda.libdevicefuncs": ("upstream", "libdevicefuncs.py"),
    "numba.cuda.typing": ("shim", "shims.typing"),
    "numba.cuda.typing.templates": ("shim", "shims.typing"),
    "numba.cuda.typing.typeof": ("shim", "shims.typeof"),
    "numba.cuda.misc.special": ("shim", "shims.special"),
    # a custom type with a numba data model, imported at the top of test_localmem, test_sm and
    # test_sm_creation: the extension API; its tests are out of scope, the files' others are not
    "numba.cuda.tests.cudapy.extensions_usecases": ("missing", ""),
}

# attributes of numba.cuda that numba-cuda defines as test or packaging facts, not host API
# HAS_NUMBA is False: gpunb is a standalone numba.cuda, so the tests take TypingError & co from
# numba.cuda.core.errors (mapped to gpunb's classes) instead of numba.core.errors
PROXY_OWN = {"HAS_NUMBA": False}
# submodules that `numba.cuda.<name>` reaches as attributes without an import in numba-cuda
PROXY_SUBMODULES = {"types", "random", "testing", "config", "errors", "core", "np", "compiler",
                    "typing", "misc", "cudadrv", "tests", "kernels"}


def tests_dir() -> Path:
    value = os.environ.get(ENV_SRC)
    if not value:
        raise ImportError(f"{ENV_SRC} is not set: the runner sets it to numba-cuda's tests dir")
    return Path(value)


class CudaProxy(pytypes.ModuleType):
    """`numba.cuda`: every attribute is gpunb.cuda's, except PROXY_OWN and submodule shims.

    A separate module (not gpunb.cuda itself) so that importing `numba.cuda.types` sets the
    attribute here, and a name gpunb.cuda lacks stays missing instead of being papered over.
    """

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in PROXY_OWN:
            return PROXY_OWN[name]
        if name in PROXY_SUBMODULES:  # before gpunb.cuda, whose module may hold e.g. `config`
            return importlib.import_module(f"numba.cuda.{name}")
        try:
            return getattr(importlib.import_module("gpunb.cuda"), name)
        except AttributeError:
            # bound, not raised: `from numba.cuda import X` at a test module's top must not
            # fail the whole file; each test that uses X fails with MissingInGpunb naming it
            return missing_in_gpunb(f"numba.cuda.{name}", f"gpunb.cuda.{name}")

    def __dir__(self):
        return sorted(set(dir(importlib.import_module("gpunb.cuda"))) | set(PROXY_OWN))


class _ModuleLoader(importlib.abc.Loader):
    """Loads a module built by `make()`; the import system then binds it in sys.modules."""

    def __init__(self, make):
        self._make = make

    def create_module(self, spec):
        return self._make(spec)

    def exec_module(self, module) -> None:
        pass


def _make_proxy(spec) -> pytypes.ModuleType:
    _route_numba_ufunc_builders()
    module = CudaProxy(spec.name, "numba.cuda resolved to gpunb.cuda by the parity harness")
    module.__path__ = []
    return module


def _route_numba_ufunc_builders() -> None:
    """`numba.vectorize(..., target="cuda")` is numba-cuda's target registered in numba; here that
    target is gpunb: the call goes to gpunb.cuda.vectorize / guvectorize (other targets: numba)."""
    import numba

    for name in ("vectorize", "guvectorize"):
        original = getattr(numba, name)
        if getattr(original, "_routed_to_gpunb", False):
            continue

        @functools.wraps(original)
        def routed(*args, _original=original, _name=name, **kwargs):
            if kwargs.get("target") != "cuda":
                return _original(*args, **kwargs)
            del kwargs["target"]
            return getattr(importlib.import_module("gpunb.cuda"), _name)(*args, **kwargs)

        routed._routed_to_gpunb = True
        setattr(numba, name, routed)


def _make_package(subdir: str):
    def make(spec) -> pytypes.ModuleType:
        module = pytypes.ModuleType(spec.name)
        module.__path__ = [str(tests_dir() / subdir) if subdir else str(tests_dir())]
        return module

    return make


class ForwardingModule(pytypes.ModuleType):
    """A module whose attributes are another module's, so the target keeps its own __spec__."""

    def __init__(self, name: str, target: str):
        super().__init__(name, f"{name} resolved to {target} by the parity harness")
        self._target = target

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(importlib.import_module(self._target), name)
        except AttributeError:
            return missing_in_gpunb(f"{self.__name__}.{name}", f"{self._target}.{name}")

    def __dir__(self):
        return dir(importlib.import_module(self._target))


def _alias(target: str):
    return lambda spec: ForwardingModule(spec.name, target)


def _shim(target: str):
    return lambda spec: importlib.import_module(f"{__package__}.{target}")


def _missing(spec) -> pytypes.ModuleType:
    return MissingModule(spec.name)


def _upstream(relative: str):
    def make(spec) -> pytypes.ModuleType:
        path = tests_dir().parent / relative
        source = importlib.machinery.SourceFileLoader(spec.name, str(path))
        module = pytypes.ModuleType(spec.name)
        module.__file__ = str(path)
        source.exec_module(module)
        return module

    return make


class NumbaCudaFinder(importlib.abc.MetaPathFinder):
    """Answers numba.cuda.* from MODULES; upstream test modules load from their files."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "numba.cuda" and not fullname.startswith("numba.cuda."):
            return None
        entry = MODULES.get(fullname)
        if entry is None:
            if fullname.startswith("numba.cuda.tests."):
                return None  # an upstream test module: found on the package's __path__
            return importlib.util.spec_from_loader(fullname, _ModuleLoader(_missing),
                                                   is_package=True)
        kind, value = entry
        make = {"proxy": lambda _: _make_proxy, "alias": _alias, "shim": _shim,
                "package": _make_package, "upstream": _upstream,
                "missing": lambda _: _missing}[kind](value)
        return importlib.util.spec_from_loader(fullname, _ModuleLoader(make),
                                               is_package=kind in ("proxy", "package"))


def install() -> None:
    """Put the finder first on sys.meta_path (idempotent) and import real numba beside it."""
    if any(isinstance(f, NumbaCudaFinder) for f in sys.meta_path):
        return
    for name in [m for m in sys.modules if m == "numba.cuda" or m.startswith("numba.cuda.")]:
        del sys.modules[name]  # a legacy numba.cuda imported before us must not be seen
    sys.meta_path.insert(0, NumbaCudaFinder())
    if whatif.enabled():
        whatif.apply_to_gpunb()
