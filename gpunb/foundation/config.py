"""Every environment variable gpunb reads, read and documented here and nowhere else.

Values are read when asked for (not frozen at import), so tests and notebooks can change them.

- GPUNB_TARGET: `cuda`, `cpu` or `auto` (cuda when a usable GPU exists, else cpu). Default auto.
- GPUNB_CACHE: `0` disables the compiled-kernel cache (memory and disk). Default 1;
  `gpunb.cache.set_enabled` (and `%gpucache on|off`) overrides it for the process.
- GPUNB_CACHE_DIR: directory of the disk cache. Default: platformdirs' user cache dir (never
  created when the HOME it lies in does not exist). Set but empty: the default, with a warning.
- GPUNB_CACHE_SHARED: `1` opts into a cache directory that other users may write (a team's
  cache): entries are then loaded whoever owns them, but only when authenticated with the key
  in GPUNB_CACHE_KEY_FILE (cache/trust.py, cache/auth.py). Default 0: only a directory and
  files owned by this user (or root) and writable by nobody else are read.
  `gpunb.cache.configure(shared=..., key_file=...)` overrides both for the process.
- GPUNB_CACHE_KEY_FILE: the shared cache's key (readable only by those who may write entries).
  Default: `$XDG_CONFIG_HOME/gpunb/cache.key`, else `~/.config/gpunb/cache.key`.
- GPUNB_CACHE_MAX_BYTES: size cap of the disk cache; LRU entries pruned. Default 1 GiB.
- GPUNB_CACHE_WAIT_SECONDS: how long a miss waits for another process sharing the cache
  directory (or another thread) already compiling the same kernel, before compiling it itself.
  `0` turns the coordination off: every process and thread compiles its own misses. Default 300.
- GPUNB_CACHE_LOCK_STALE_SECONDS: a compiling process touches its lock file every fifth of this;
  a lock that has not been touched for this long (its holder was killed, or its node is gone) is
  taken over. A holder on the same machine whose process is gone is taken over at once. Default 30.
- GPUNB_BOUNDSCHECK: the CPU target checks every array access: an index out of range raises
  gpunb's KernelIndexError (an IndexError) naming the line instead of reading or writing outside
  the array. `0` turns the checks off (kernels compiled with debug=True still check;
  boundscheck=False turns them off for one kernel). Default 1.
- GPUNB_CPU_MODE: how the CPU target runs a block's threads: `auto` (work-group loops where
  they are proven safe, coroutines elsewhere) or `coroutine` (always coroutines, as a race
  detector needs). The `cpu_mode` option of @cuda.jit overrides it. Default auto.
- GPUNB_CPU_INTERRUPT: `0` compiles CPU-target kernels without their stopping points (loop
  back-edges, barriers), so Ctrl-C and the watchdog cannot stop them: only for measuring what
  the points cost (benchmarks/bench_cpu_target.py). Default 1.
- GPUNB_LAUNCH_TIMEOUT: seconds a launch may run on the CPU target, or the host may wait for a
  GPU kernel (a synchronize, a copy back, an event wait), before the watchdog abandons it with a
  gpunb.LaunchTimeoutError. `%%gpukernel --timeout S` sets it for one cell; `0` or unset: no
  limit. Default unset.
- GPUNB_ARCH: the architecture PTX is made for when no GPU is present: sm_XY, or sm_90a /
  sm_100a (arch-specific) / sm_100f (family) as nvcc spells them (foundation/arch.py).
  Default sm_90.
- GPUNB_CPU_THREADS: host threads that run blocks in parallel on the CPU target. Default: the
  CPUs this process may run on (its affinity mask, as numba's NUMBA_NUM_THREADS), not every
  core of the host.
- GPUNB_NOTICES: `0` silences one-line notices (target fallback, host copies). Default 1.
- GPUNB_LOW_OCCUPANCY_WARNINGS: `1` warns (PerformanceWarning) for grids under 128 blocks, as
  numba-cuda does by default. Default 0.
- GPUNB_NATIVE_LAUNCH: `0` launches through the Python path and cuda.bindings instead of
  gpunb's machine code (backends/native_launch/: native launchers and the cuLaunchKernel
  trampoline). Default 1.
- GPUNB_WARMUP: `0` turns off the threads that import the compiler and warm LLVM while the
  driver makes the first CUDA context (backends/cuda/preload.py), and that a process's first
  compile starts to load LLVM's library and the driver's PTX linker (backends/warmup.py).
  Default 1.
- GPUNB_FIGURES: the file of measured GPU figures the teaching notebooks show beside their
  CPU-target runs (gpunb.notebook.figures). Default: notebooks/figures/h100.json, looked for
  from the working directory and from the source checkout gpunb is imported from.
- GPUNB_RECORD_FIGURES: a file; when set, notebooks running on a GPU add what they measure to
  it (tests/notebook/test_gpu_teaching_notebooks.py sets it). Default unset: nothing recorded.
- GPUNB_NVRTC_INCLUDE: extra header directories (a path list, like PATH) for CUDA C++ compiled
  by NVRTC for cuda.declare_device / link= (numba-cuda: CUDA_NVRTC_EXTRA_SEARCH_PATHS).
- CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM (cuda.bindings' own): when set, the trampoline
  calls the per-thread-default-stream entry points, as cuda.bindings then does.
"""

from __future__ import annotations

import os
import sys

_process_target: str | None = None
_process_cache: bool | None = None  # set_cache_enabled's override of GPUNB_CACHE
_process_sharing: dict = {}  # set_cache_sharing's overrides: "shared", "key_file"


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def requested_target() -> str:
    """The target the user asked for: the process-wide setter first, then GPUNB_TARGET."""
    if _process_target is not None:
        return _process_target
    value = os.environ.get("GPUNB_TARGET", "auto").strip().lower() or "auto"
    if value not in ("auto", "cpu", "cuda"):
        raise ValueError(f"GPUNB_TARGET={value!r}: expected one of auto, cpu, cuda")
    return value


def set_process_target(target: str | None) -> None:
    """Set (or clear with None) the target for the whole process; overrides GPUNB_TARGET."""
    global _process_target
    if target is not None and target not in ("auto", "cpu", "cuda"):
        raise ValueError(f"target {target!r}: expected one of auto, cpu, cuda")
    _process_target = target
    from gpunb.foundation import events

    events.runtime_changed(events.RuntimeChange.TARGET)  # launchers bound for the old one stop


def cache_enabled() -> bool:
    """Whether compiled kernels are cached: the process-wide setter first, then GPUNB_CACHE."""
    if _process_cache is not None:
        return _process_cache
    return _flag("GPUNB_CACHE", True)


def set_cache_enabled(on: bool | None) -> None:
    """Turn the cache on or off for the whole process (None: back to GPUNB_CACHE). Read on
    every lookup, so it takes effect at the next compile."""
    global _process_cache
    _process_cache = None if on is None else bool(on)


def cache_dir() -> str:
    """The disk cache's directory: GPUNB_CACHE_DIR, else the user cache dir."""
    explicit = os.environ.get("GPUNB_CACHE_DIR")
    if explicit is not None and not explicit.strip():
        _warn_cache_setting(
            "GPUNB_CACHE_DIR is set but empty; using the default cache directory "
            f"{_default_cache_dir()} (unset it, or set it to a directory)", "empty-dir")
    elif explicit:
        expanded = os.path.expanduser(explicit)
        if not expanded.startswith("~"):
            return os.path.abspath(expanded)
        # "~nosuchuser/x" stays unexpanded: abspath would make a "~nosuchuser" folder here
        _warn_cache_setting(
            f"GPUNB_CACHE_DIR={explicit!r} names a home directory that does not exist; using "
            f"the default cache directory {_default_cache_dir()} (set it to an existing "
            "user's ~ or to an absolute path)", "unknown-home")
    return _default_cache_dir()


def _default_cache_dir() -> str:
    fast = _linux_user_cache_dir()
    if fast is not None:
        return fast
    import platformdirs

    return platformdirs.user_cache_dir("gpunb", appauthor=False)


def _linux_user_cache_dir() -> str | None:
    """platformdirs' user cache dir on Linux in its two plain cases (XDG_CACHE_HOME absolute,
    else an absolute HOME's ~/.cache), without importing platformdirs: importing and asking it
    costs a process's first disk-cache hit 5-40 ms (benchmarks/library_costs.py), against a
    10 ms target. None: ask platformdirs (every other case, every other system).
    tests/foundation/test_config_cache_dir.py checks both cases against platformdirs."""
    if not sys.platform.startswith("linux"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "gpunb")
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return os.path.join(home, ".cache", "gpunb")
    return None


def cache_dir_anchor() -> str | None:
    """A directory that must already exist for the cache directory to be created: the home
    directory when the cache directory is the default one below it (gpunb never creates a home
    directory: HOME=/nonexistent means no disk cache, with a warning); None otherwise."""
    if os.environ.get("GPUNB_CACHE_DIR", "").strip():
        return None
    if os.path.isabs(os.environ.get("XDG_CACHE_HOME", "")) and sys.platform.startswith("linux"):
        return None  # XDG says: create it when missing
    home = os.path.expanduser("~")
    return home if os.path.isabs(home) else None


def _warn_cache_setting(message: str, what: str) -> None:
    from gpunb.foundation.user_warnings import CacheDirWarning, warn_user

    warn_user(f"gpunb cache: {message}", CacheDirWarning, once=("config", what, message))


def cache_shared() -> bool:
    """Whether the cache directory may be shared with other users (entries authenticated)."""
    found = _process_sharing.get("shared")
    return _flag("GPUNB_CACHE_SHARED", False) if found is None else found


def cache_key_file() -> str:
    """Where the shared cache's key is (GPUNB_CACHE_KEY_FILE, else the user config dir)."""
    found = _process_sharing.get("key_file") or os.environ.get("GPUNB_CACHE_KEY_FILE", "").strip()
    if found:
        return os.path.abspath(os.path.expanduser(found))
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "gpunb", "cache.key")


def set_cache_sharing(shared: bool | None, key_file: str | None = None) -> None:
    """Override GPUNB_CACHE_SHARED / GPUNB_CACHE_KEY_FILE for the process (None: back to the
    environment)."""
    _process_sharing.clear()
    if shared is not None:
        _process_sharing["shared"] = bool(shared)
    if key_file:
        _process_sharing["key_file"] = str(key_file)


def cache_max_bytes() -> int:
    value = os.environ.get("GPUNB_CACHE_MAX_BYTES")
    return int(value) if value else 1 << 30


def _seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a number of seconds") from None
    if seconds < 0 or seconds != seconds:
        raise ValueError(f"{name}={value!r}: expected a number of seconds >= 0")
    return seconds


def cache_wait_seconds() -> float:
    """How long a miss waits for another compile of the same key (0: no waiting)."""
    return _seconds("GPUNB_CACHE_WAIT_SECONDS", 300.0)


def cache_lock_stale_seconds() -> float:
    """How long a key lock may go untouched before waiters take it over (at least 0.1 s)."""
    return max(0.1, _seconds("GPUNB_CACHE_LOCK_STALE_SECONDS", 30.0))


def cpu_mode() -> str:
    """GPUNB_CPU_MODE: "auto" or "coroutine" (see the module docstring)."""
    value = os.environ.get("GPUNB_CPU_MODE", "auto").strip().lower() or "auto"
    if value not in ("auto", "coroutine", "workgroup"):
        raise ValueError(f"GPUNB_CPU_MODE={value!r}: expected auto or coroutine")
    return value


def boundscheck() -> bool:
    """CPU-target bounds checks: on unless GPUNB_BOUNDSCHECK=0 (kernels may still say
    boundscheck=False). The GPU checks only with debug=True or boundscheck=True."""
    return _flag("GPUNB_BOUNDSCHECK", True)


def racecheck() -> bool:
    """GPUNB_RACECHECK=1: every kernel compiled from now on records its memory accesses on the
    CPU target and reports data races (gpunb.RaceError), as @cuda.jit(racecheck=True) does."""
    return _flag("GPUNB_RACECHECK", False)


def breakpoints_enabled() -> bool:
    """breakpoint() in kernels stops the CPU target's debugger unless PYTHONBREAKPOINT=0 (the
    variable that turns Python's own breakpoint() off); launches then run without stopping."""
    return os.environ.get("PYTHONBREAKPOINT", "").strip() != "0"


def cpu_interrupt_checks() -> bool:
    """GPUNB_CPU_INTERRUPT: whether CPU-target kernels are compiled with stopping points."""
    return _flag("GPUNB_CPU_INTERRUPT", True)


_launch_timeout_override: list = []  # launch_timeout_for's stack (innermost last)


def launch_timeout() -> float | None:
    """Seconds a launch (CPU) or a host wait for a kernel (GPU) may take; None: no limit.
    `launch_timeout_for` (a cell's --timeout) wins over GPUNB_LAUNCH_TIMEOUT."""
    if _launch_timeout_override:
        seconds = _launch_timeout_override[-1]
    else:
        seconds = _seconds("GPUNB_LAUNCH_TIMEOUT", 0.0)
    return seconds if seconds and seconds > 0 else None


class launch_timeout_for:
    """`with config.launch_timeout_for(seconds):` the watchdog's limit inside the block (None
    or 0: no limit there), whatever GPUNB_LAUNCH_TIMEOUT says."""

    def __init__(self, seconds: float | None):
        if seconds is not None and (seconds != seconds or seconds < 0):
            raise ValueError(f"launch timeout {seconds!r}: expected seconds >= 0")
        self.seconds = float(seconds or 0.0)

    def __enter__(self) -> launch_timeout_for:
        _launch_timeout_override.append(self.seconds)
        return self

    def __exit__(self, *exc) -> None:
        _launch_timeout_override.pop()


def record_limit() -> int:
    """GPUNB_RECORD_LIMIT: the most access records one recording launch keeps (32 bytes each);
    a longer log is truncated and says so."""
    value = os.environ.get("GPUNB_RECORD_LIMIT")
    if not value:
        return 1 << 22
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"GPUNB_RECORD_LIMIT={value!r}: expected a positive number of records")
    return int(value)


def default_arch() -> tuple:
    """GPUNB_ARCH as (major, minor), or (major, minor, "a" | "f") for sm_90a, sm_100f."""
    from gpunb.foundation.arch import parse_arch

    value = os.environ.get("GPUNB_ARCH", "sm_90")
    try:
        return parse_arch(value).key
    except ValueError as exc:
        raise ValueError(f"GPUNB_ARCH={value!r}: {exc}") from None


def cpu_threads() -> int:
    value = os.environ.get("GPUNB_CPU_THREADS")
    if value:
        return max(1, int(value))
    # a process pinned to some cores (taskset, a container's cpuset) gets only those: more
    # threads than that would take turns on them, each launch waiting for the slowest
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def notices_enabled() -> bool:
    return _flag("GPUNB_NOTICES", True)


def low_occupancy_warnings() -> bool:
    """GPUNB_LOW_OCCUPANCY_WARNINGS=1: a launch configuration of fewer than 128 blocks warns
    (numba-cuda's NumbaPerformanceWarning, which numba-cuda turns on by default). Default 0."""
    return _flag("GPUNB_LOW_OCCUPANCY_WARNINGS", False)


def native_launch_enabled() -> bool:
    return _flag("GPUNB_NATIVE_LAUNCH", True)


def warmup_enabled() -> bool:
    return _flag("GPUNB_WARMUP", True)


def per_thread_default_stream() -> bool:
    return _flag("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", False)


def nvrtc_include_dirs() -> tuple:
    """GPUNB_NVRTC_INCLUDE as a tuple of directories."""
    value = os.environ.get("GPUNB_NVRTC_INCLUDE", "")
    return tuple(d for d in value.split(os.pathsep) if d)


def figures_file() -> str | None:
    """GPUNB_FIGURES: the measured-figures file the notebooks render, or None (look it up)."""
    return os.environ.get("GPUNB_FIGURES") or None


def record_figures_file() -> str | None:
    """GPUNB_RECORD_FIGURES: where notebooks on a GPU record their figures, or None."""
    return os.environ.get("GPUNB_RECORD_FIGURES") or None
