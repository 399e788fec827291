"""Per-phase breakdown of a first launch in a fresh process (profile_cold, profile_disk_hit).

Runs inside the child process. `install()` wraps the slow path's steps from the outside (the
fingerprint, the cache lookup and store, the compile and each of its stages, loading the
program, building the argument packer), counts the imports each step triggers and their time
(a meta-path hook timing every module's execution, nested imports counted once) and the
garbage collector's pauses. `report()` prints one line per phase; `as_dict()` gives the same
figures for a parent that aggregates several processes. Nothing here is imported by gpunb.

With `fake_driver=True` the CUDA target runs against tests/runtime/fake_cuda_driver.py (device
memory is host memory, cuLink returns the PTX as the "cubin"): the host's share of a cold
compile or a disk hit on a machine without a GPU. The driver's own work (PTX JIT, module load)
is then absent.
"""

from __future__ import annotations

import gc
import importlib.abc
import os
import sys
import time

# phase name -> [wall ms, import ms, modules imported]; the order they first ran in
_phases: dict = {}
_stack: list = []  # the phases running now (innermost last)
_imports = {"depth": 0, "ms": 0.0}
_gc = {"started": 0.0, "count": 0, "ms": 0.0, "on": False}
_total = {"ms": 0.0}


def _charge(phase: str, ms: float, import_ms: float, modules: int) -> None:
    entry = _phases.setdefault(phase, [0.0, 0.0, 0])
    entry[0] += ms
    entry[1] += import_ms
    entry[2] += modules


class _TimedLoader(importlib.abc.Loader):
    """Wraps a module's loader to time its execution (outermost import only)."""

    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        _imports["depth"] += 1
        started = time.perf_counter()
        try:
            self.inner.exec_module(module)
            patch = _PATCHES.get(module.__name__)
            if patch is not None:
                patch(module)
        finally:
            _imports["depth"] -= 1
            if _imports["depth"] == 0:
                _imports["ms"] += (time.perf_counter() - started) * 1e3
            _imports.setdefault("count", 0)
            _imports["count"] += 1

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _TimingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _TimedLoader(spec.loader)
                return spec
        return None


def _gc_callback(phase, info):
    if phase == "start":
        _gc["started"] = time.perf_counter()
    elif _gc["on"]:
        _gc["count"] += 1
        _gc["ms"] += (time.perf_counter() - _gc["started"]) * 1e3


def _timed(phase: str, fn):
    """fn wrapped: its wall time, and the imports it triggered, charged to `phase` (time spent
    in an inner timed phase is charged there, not twice)."""

    def wrapper(*args, **kwargs):
        _stack.append([phase, 0.0, 0.0, 0])  # name, inner ms, inner import ms, inner modules
        imports_before = (_imports["ms"], _imports.get("count", 0))
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            ms = (time.perf_counter() - started) * 1e3
            import_ms = _imports["ms"] - imports_before[0]
            modules = _imports.get("count", 0) - imports_before[1]
            _, inner_ms, inner_import, inner_mods = _stack.pop()
            _charge(phase, ms - inner_ms, import_ms - inner_import, modules - inner_mods)
            if _stack:
                _stack[-1][1] += ms
                _stack[-1][2] += import_ms
                _stack[-1][3] += modules

    wrapper.__wrapped__ = fn
    return wrapper


def _patch_fingerprint(module) -> None:
    module.collect = _timed("fingerprint", module.collect)


def _patch_kernel_cache(module) -> None:
    module.KernelCache.lookup = _timed("cache lookup (key, read entry)", module.KernelCache.lookup)
    module.KernelCache.store = _timed("cache store", module.KernelCache.store)


def _patch_pipeline(module) -> None:
    module.compile = _timed("compile: imports + setup", module.compile)
    stage = module._Report.stage

    def timed_stage(self, which, fn, *args):
        return _timed(f"compile: stage {which}", lambda: stage(self, which, fn, *args))()

    module._Report.stage = timed_stage


def _patch_slow_path(module) -> None:
    module._specialization = _timed("argument packer", module._specialization)
    module.build_specialization = _timed("slow path: rest (cache object, arch)",
                                         module.build_specialization)


def _patch_backend(class_name: str):
    def patch(module) -> None:
        cls = getattr(module, class_name)
        cls.load = _timed("load program (module, attributes)", cls.load)
    return patch


# applied when the module is first imported (or at install() when it already is), so the
# modules' own import time stays inside the measured launch
_PATCHES = {
    "gpunb.cache.fingerprint": _patch_fingerprint,
    "gpunb.cache.kernel_cache": _patch_kernel_cache,
    "gpunb.backends.pipeline": _patch_pipeline,
    "gpunb.jit.slow_path": _patch_slow_path,
    "gpunb.backends.cuda.backend": _patch_backend("CudaBackend"),
    "gpunb.backends.cpu.backend": _patch_backend("CpuBackend"),
}


def install(fake_driver: bool = False) -> None:
    """Wrap the slow path's steps (call after `import gpunb`, before the first launch)."""
    sys.meta_path.insert(0, _TimingFinder())
    gc.callbacks.append(_gc_callback)
    if fake_driver:
        _use_fake_driver()
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])


def _use_fake_driver() -> None:
    """The simulated driver of the runtime tests in place of cuda.bindings (no GPU here)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "tests", "runtime"))
    from fake_cuda_driver import FakeDriver

    from gpunb.backends.cuda import driver, launch

    launch.driver_calls.trampolines = None  # no trampoline into a libcuda that is not there
    driver.state = driver.DriverState(cu=FakeDriver())


def measure(launch) -> float:
    """ms of `launch()` (the first launch + synchronize), with the phases recorded."""
    _gc["on"] = True
    _imports["ms"], _imports["count"] = 0.0, 0  # only the launch's imports count
    started, cpu = time.perf_counter(), time.process_time()
    launch()
    _total["ms"] = (time.perf_counter() - started) * 1e3
    # every thread's CPU time: on a loaded machine a steadier figure than the wall clock
    _total["cpu_ms"] = (time.process_time() - cpu) * 1e3
    _gc["on"] = False
    return _total["ms"]


def as_dict() -> dict:
    accounted = [sum(entry[k] for entry in _phases.values()) for k in range(3)]
    phases = {name: {"ms": e[0], "import_ms": e[1], "modules": e[2]}
              for name, e in _phases.items()}
    phases["rest (dispatcher, launch, synchronize)"] = {
        "ms": _total["ms"] - accounted[0], "import_ms": _imports["ms"] - accounted[1],
        "modules": _imports.get("count", 0) - accounted[2]}
    return {"total_ms": _total["ms"], "cpu_ms": _total["cpu_ms"], "phases": phases,
            "gc_count": _gc["count"],
            "gc_ms": _gc["ms"], "import_ms": _imports["ms"],
            "modules": _imports.get("count", 0)}


def report(title: str, data: dict | None = None) -> None:
    data = data or as_dict()
    print(f"{title}: {data['total_ms']:.1f} ms (process CPU time {data['cpu_ms']:.1f} ms)")
    print(f"  {'phase':<40}{'ms':>8}{'imports ms':>12}{'modules':>9}")
    for name, entry in data["phases"].items():
        print(f"  {name:<40}{entry['ms']:8.1f}{entry['import_ms']:12.1f}{entry['modules']:9.0f}")
    print(f"  all imports: {data['import_ms']:.1f} ms, {data['modules']:.0f} modules; "
          f"garbage collector: {data['gc_count']:.0f} pauses, {data['gc_ms']:.1f} ms "
          "(inside the phases above)")
