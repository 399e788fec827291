"""Helpers for the cache tests: a stand-in GPU function, notebook-style cells, a mini dispatcher.

The stand-in has exactly what the cache relies on (`__gpunb_function__`, `py_func`, `__name__`,
`options`); the mini dispatcher follows the protocol the real dispatcher uses (fast path:
`still_valid(watch)`; slow path: `collect` -> `lookup` -> compile -> `store`), with a fake
compiler whose "binary" is the fingerprint digest, so a stale artifact is visible as a wrong value.
"""

from __future__ import annotations

import itertools
import linecache
import os
import uuid

from gpunb.cache import collect, still_valid
from gpunb.foundation.artifact import KernelArtifact

TOOLCHAIN = {"gpunb": "test", "compiler": "c0", "llvm": "LLVM test"}
SIGNATURE = "(float32[::1], float32)"


class GpuFunction:
    """Stand-in for the dispatcher: what the cache may rely on, nothing more."""

    __gpunb_function__ = True

    def __init__(self, py_func, **options):
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.options = options

    def __repr__(self) -> str:
        return f"<stand-in GPU function {self.__name__}>"


def jit(func=None, **options):
    """`@jit`, `@jit(fastmath=True)`: a stand-in GPU function."""
    if func is None:
        return lambda f: GpuFunction(f, **options)
    return GpuFunction(func, **options)


def fake_artifact(fingerprint, target: str = "cpu", arch: str = "test-arch",
                  size: int = 0) -> KernelArtifact:
    payload = fingerprint.digest.encode()
    binary = payload + b"\0" * max(0, size - len(payload))
    return KernelArtifact(name=fingerprint.name, symbol=f"{fingerprint.name}_sym", target=target,
                          arch=arch, signature=SIGNATURE, param_slots=(("array", 0),),
                          binary=binary, ptx=f"// {fingerprint.digest}\n",
                          source_file=fingerprint.filename, first_line=fingerprint.first_line,
                          line_map=((fingerprint.first_line + 1, (3, 4)),),
                          error_sites=((fingerprint.filename, fingerprint.first_line + 1, 4,
                                        "x[0]", fingerprint.name),))


class MiniDispatcher(GpuFunction):
    """A kernel with one specialisation, launched through the cache protocol."""

    def __init__(self, py_func, kernel_cache=None, **options):
        super().__init__(py_func, **options)
        self.cache = kernel_cache
        self.spec = None  # (key, watch, artifact, event)
        self.compiles = 0

    def launch(self) -> KernelArtifact:
        spec = self.spec
        if spec is not None and still_valid(spec[1]):  # the fast path
            return spec[2]
        fingerprint = collect(self)
        if spec is not None and spec[0] == self.cache.key_for(
                fingerprint, SIGNATURE, self.options, "cpu", "test-arch", TOOLCHAIN):
            self.spec = (spec[0], fingerprint.watch, spec[2], spec[3])  # nothing changed
            return spec[2]
        artifact, pending = self.cache.lookup(self.__name__, fingerprint, SIGNATURE,
                                              self.options, "cpu", "test-arch", TOOLCHAIN)
        if artifact is None:
            self.compiles += 1
            try:
                artifact = self.compile(fingerprint)
            except BaseException:
                self.cache.abandon(pending)
                raise
            event = self.cache.store(pending, artifact, fingerprint, 1.5)
        else:
            event = pending.event
        self.spec = (pending.key, fingerprint.watch, artifact, event)
        return artifact

    def compile(self, fingerprint) -> KernelArtifact:
        """The fake compiler (tests replace it to fail or to take time)."""
        return fake_artifact(fingerprint)

    @property
    def event(self):
        return self.spec[3] if self.spec else None


_counter = itertools.count(1)


class Cells:
    """Runs cell text the way IPython does: a unique filename in linecache, one namespace."""

    def __init__(self, **names):
        self.ns: dict = {"__name__": "__main__", **names}
        self.pid = os.getpid()

    def run(self, text: str) -> dict:
        from gpunb.foundation.sources import register_cell

        number = next(_counter)
        filename = f"/tmp/ipykernel_{self.pid}/{uuid.uuid4().hex[:12]}.py"
        lines = text.splitlines(keepends=True)
        linecache.cache[filename] = (len(text), None, lines, filename)
        register_cell(filename, number)
        self.last_label = f"Cell In[{number}]"
        exec(compile(text, filename, "exec"), self.ns)  # noqa: S102 - that is what IPython does
        return self.ns
