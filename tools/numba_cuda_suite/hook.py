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

from .shims.missing import MissingModule, missing_in_gpunb

ENV_SRC = "NUMBA_CUDA_SUITE_TESTS"  # the upstream `numba/cuda/tests` directory, set by the runner

# name → (kind, target). kinds:
#   "proxy":   numba.cuda itself, a module that forwards to gpunb.cuda (see CudaProxy)
#   "shim":    a module of this harness: numba-cuda's test infrastructure, numba's settings and
#              exception names, or a private module whose names gpunb has under public names
#   "package": an upstream test package: its directory, without running its __init__
#   "missing": a MissingModule on purpose (numba's extension API, out of scope)
# Every other numba.cuda.X.Y is what a user who changed `numba` to `gpunb` in the import gets:
# the module gpunb.cuda.X.Y when gpunb has it; else, for a module of numba-cuda's public API
# (PUBLIC_MODULES), a MissingModule whose names fail with MissingInGpunb (a gap gpunb counts);
# else numba-cuda internals: importable, failing with NotProvidedByGpunb when used.
MODULES: dict[str, tuple[str, str]] = {
    "numba.cuda": ("proxy", "gpunb.cuda"),
    # numba-cuda's test infrastructure
    "numba.cuda.testing": ("shim", "shims.testing"),
    "numba.cuda.tests": ("package", ""),
    "numba.cuda.tests.cudapy": ("package", "cudapy"),
    "numba.cuda.tests.cudadrv": ("package", "cudadrv"),
    "numba.cuda.tests.doc_examples": ("package", "doc_examples"),
    "numba.cuda.tests.doc_examples.ffi": ("package", "doc_examples/ffi"),
    "numba.cuda.tests.support": ("shim", "shims.support"),
    # numba's settings (tests set them; gpunb reads its own config) and numba's exception
    # names mapped to the gpunb classes raised for the same mistakes
    "numba.cuda.config": ("shim", "shims.config"),
    "numba.cuda.core.config": ("shim", "shims.config"),
    "numba.cuda.errors": ("shim", "shims.errors"),
    "numba.cuda.core.errors": ("shim", "shims.errors"),
    # private generated bindings that numba.cuda.bf16 / fp8 re-export; tests import CUDA's own
    # spellings (nv_bfloat16, __hadd) from them: each is gpunb.cuda.bf16 / fp8's public function
    "numba.cuda._internal.cuda_bf16": ("shim", "shims.cuda_bf16"),
    "numba.cuda._internal.cuda_fp8": ("shim", "shims.cuda_fp8"),
    # a custom type with a numba data model, imported at the top of test_localmem, test_sm and
    # test_sm_creation: the extension API; its tests are out of scope, the files' others are not
    "numba.cuda.tests.cudapy.extensions_usecases": ("missing", ""),
}

# numba-cuda's modules that its documentation or its users import public names from: when gpunb
# lacks one, the tests that use it count as host-API gaps (MissingInGpunb), not internals
PUBLIC_MODULES = {
    "numba.cuda.api", "numba.cuda.bf16", "numba.cuda.fp8", "numba.cuda.cg", "numba.cuda.random",
    "numba.cuda.types", "numba.cuda.compiler", "numba.cuda.libdevice",
    "numba.cuda.libdevicefuncs", "numba.cuda.vector_types", "numba.cuda.np",
    "numba.cuda.np.numpy_support", "numba.cuda.kernels", "numba.cuda.kernels.transpose",
    "numba.cuda.kernels.reduction", "numba.cuda.cudadrv", "numba.cuda.cudadrv.devicearray",
    "numba.cuda.cudadrv.driver", "numba.cuda.cudadrv.error", "numba.cuda.misc",
    "numba.cuda.misc.special", "numba.cuda.typing", "numba.cuda.typing.typeof",
    "numba.cuda.simulator", "numba.cuda.simulator.vector_types",
}

# attributes of numba.cuda that numba-cuda defines as test or packaging facts, not host API
# HAS_NUMBA is True: numba is installed beside gpunb (the tests of numba CPU functions called
# from kernels run); the exception classes tests then import from numba.core.errors are mapped
# to gpunb's (shims.errors.map_numba_error_names)
PROXY_OWN = {"HAS_NUMBA": True}
# submodules that `numba.cuda.<name>` reaches as attributes without an import in numba-cuda
PROXY_SUBMODULES = {"types", "random", "testing", "config", "errors", "core", "np", "compiler",
                    "typing", "misc", "cudadrv", "tests", "kernels", "api", "launchconfig",
                    "extending", "vector_types", "descriptor", "utils", "args", "simulator"}


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
            pass
        if gpunb_counterpart(f"{self.__name__}.{name}") is not None:  # a submodule
            return importlib.import_module(f"{self.__name__}.{name}")
        return missing_in_gpunb(f"{self.__name__}.{name}", f"{self._target}.{name}")

    def __dir__(self):
        return dir(importlib.import_module(self._target))


def _alias(target: str):
    return lambda spec: ForwardingModule(spec.name, target)


def _shim(target: str):
    return lambda spec: importlib.import_module(f"{__package__}.{target}")


def _missing(spec) -> pytypes.ModuleType:
    return MissingModule(spec.name)


def _missing_public(spec) -> pytypes.ModuleType:
    return MissingModule(spec.name, public=True)


def gpunb_counterpart(fullname: str) -> str | None:
    """`numba.cuda.X.Y` -> `gpunb.cuda.X.Y` when gpunb has that module (the import a user who
    replaced `numba` with `gpunb` writes), else None."""
    name = "gpunb" + fullname[len("numba"):]
    try:
        importlib.import_module(name)  # a module, or a namespace gpunb registers as one (bf16)
    except ImportError:
        return None
    return name


class NumbaCudaFinder(importlib.abc.MetaPathFinder):
    """Answers numba.cuda.* from MODULES, else from gpunb.cuda's module of the same path;
    upstream test modules load from their files."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "numba.cuda" and not fullname.startswith("numba.cuda."):
            return None
        entry = MODULES.get(fullname)
        if entry is None:
            if fullname.startswith("numba.cuda.tests."):
                # an upstream test module, found on its package's __path__ here: a later finder
                # (numba-cuda's own redirector, where numba-cuda is installed) must not see it
                return importlib.machinery.PathFinder.find_spec(fullname, path, target)
            counterpart = gpunb_counterpart(fullname)
            if counterpart is not None:
                entry = ("alias", counterpart)
            else:
                make = _missing_public if fullname in PUBLIC_MODULES else _missing
                return importlib.util.spec_from_loader(fullname, _ModuleLoader(make),
                                                       is_package=True)
        kind, value = entry
        make = {"proxy": lambda _: _make_proxy, "alias": _alias, "shim": _shim,
                "package": _make_package, "missing": lambda _: _missing}[kind](value)
        return importlib.util.spec_from_loader(fullname, _ModuleLoader(make),
                                               is_package=kind in ("proxy", "package", "alias"))


def install() -> None:
    """Put the finder first on sys.meta_path (idempotent) and import real numba beside it."""
    if any(isinstance(f, NumbaCudaFinder) for f in sys.meta_path):
        return
    for name in [m for m in sys.modules if m == "numba.cuda" or m.startswith("numba.cuda.")]:
        del sys.modules[name]  # a legacy numba.cuda imported before us must not be seen
    # numba-cuda's wheel installs a finder (via a .pth file) that sends numba.cuda imports to its
    # own package, the opposite of this mapping; for paths outside site-packages it recursed
    # into itself (RecursionError importing upstream helper modules where numba-cuda is installed)
    sys.meta_path[:] = [f for f in sys.meta_path
                        if type(f).__module__ != "_numba_cuda_redirector"]
    sys.meta_path.insert(0, NumbaCudaFinder())
