"""gpunb's compiled-kernel cache: content keys, memory + disk store, and why each hit or miss.

Public API: `events()`, `last_event(name)`, `explain(kernel)`, `invalidate()`, `clear(name)`,
`prune()`, `cache_dir()`, `enabled()`, `set_enabled(on)`, `configure(shared=, key_file=)` (the
trust model: README "Cache security"), and for the dispatcher
`default_cache()` (a KernelCache), `collect`, `still_valid`, `cache_key`. Importing this package
imports no submodule (and so no numpy or llvmlite); each loads on first use.
"""

from __future__ import annotations

import importlib

__all__ = ["CacheDirWarning", "CacheEvent", "FunctionFingerprint", "StaleSourceWarning",
           "UntrustedCacheWarning", "KernelCache", "cache_dir", "cache_key", "clear",
           "collect", "configure", "default_cache", "enabled", "events", "explain", "host_arch",
           "invalidate", "last_event", "prune", "set_enabled", "still_valid"]

_LAZY = {
    "CacheEvent": "gpunb.foundation.events",
    "CacheDirWarning": "gpunb.foundation.user_warnings",
    "UntrustedCacheWarning": "gpunb.foundation.user_warnings",
    "StaleSourceWarning": "gpunb.foundation.user_warnings",
    "FunctionFingerprint": "gpunb.cache.fingerprint",
    "Dependency": "gpunb.cache.fingerprint",
    "collect": "gpunb.cache.fingerprint",
    "still_valid": "gpunb.cache.fingerprint",
    "cache_key": "gpunb.cache.keys",
    "KernelCache": "gpunb.cache.kernel_cache",
    "Lookup": "gpunb.cache.kernel_cache",
    "host_arch": "gpunb.cache.toolchain_id",
    "toolchain_identity": "gpunb.cache.toolchain_id",
}

_default: list = [None]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gpunb.cache' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def cache_dir() -> str:
    """The disk cache's directory ($GPUNB_CACHE_DIR, else the platformdirs user cache dir)."""
    from gpunb.foundation import config

    return config.cache_dir()


def enabled() -> bool:
    """Whether compiled kernels are cached (set_enabled, else GPUNB_CACHE)."""
    from gpunb.foundation import config

    return config.cache_enabled()


def set_enabled(on: bool | None) -> None:
    """Cache compiled kernels (True) or not (False) in this process, whatever GPUNB_CACHE says;
    None goes back to GPUNB_CACHE. A disabled cache stores nothing, but a redefinition is still
    noticed (that is the epoch's job, not the cache's)."""
    from gpunb.foundation import config

    if on is not None and not isinstance(on, (bool, int)):  # set_enabled("no") would enable it
        raise TypeError(f"gpunb.cache.set_enabled: expected True, False or None, got {on!r}")
    config.set_cache_enabled(on)


def configure(shared: bool | None = None, key_file: str | None = None) -> None:
    """Share the disk cache with other users (`shared=True`: entries of any owner are loaded when
    their MAC verifies with the key in `key_file`), or keep it private (`False`: the default;
    only this user's files that nobody else can write are loaded). None goes back to
    GPUNB_CACHE_SHARED / GPUNB_CACHE_KEY_FILE. Takes effect at the next lookup."""
    from gpunb.foundation import config

    config.set_cache_sharing(shared, key_file)


def default_cache():
    """The process's KernelCache for the current cache settings (a new one if they moved)."""
    from gpunb.cache.kernel_cache import KernelCache
    from gpunb.foundation import config

    directory = cache_dir()
    shared = config.cache_shared()
    key_file = config.cache_key_file() if shared else None
    cache = _default[0]
    if cache is None or cache.directory != directory or cache.shared != shared \
            or cache.disk.key_file != key_file:
        cache = _default[0] = KernelCache()  # settings from config: its home anchor too
    return cache


def events(function: str | None = None) -> list:
    """Cache events (CacheEvent records), oldest first; those of one function if named."""
    from gpunb.cache import provenance

    return provenance.events(function)


def _own_last_event(kernel):
    """The latest cache event of this GPU function's own specialisations (its cache_info()),
    not of another live function of the same name (a kernel `k` redefined in a later cell)."""
    records = getattr(kernel, "cache_info", None)
    if isinstance(kernel, str) or not callable(records):
        return None
    events = [r.get("event") for r in records() if r.get("event") is not None]
    return max(events, key=lambda e: e.timestamp) if events else None


def last_event(name: str):
    from gpunb.cache import provenance

    return provenance.last_event(name)


def invalidate() -> int:
    """Start a new epoch: every kernel re-checks its dependencies at its next launch."""
    from gpunb.cache import epoch

    return epoch.bump()


def _name_of(kernel) -> str | None:
    if kernel is None or isinstance(kernel, str):
        return kernel
    return getattr(kernel, "__name__", None) or str(kernel)


def clear(name=None) -> int:
    """Remove cached entries of one function (a name: every function of that name; the GPU
    function itself: those of its module only), or all."""
    module = None
    if name is not None and not isinstance(name, str):
        module = getattr(getattr(name, "py_func", name), "__module__", None)
    return default_cache().clear(_name_of(name), module)


def prune(max_bytes: int | None = None) -> int:
    """Prune the disk cache to its size cap (or `max_bytes`); the number of entries removed."""
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
                                  or max_bytes < 0):  # -1 once removed every entry
        raise ValueError(f"gpunb.cache.prune: max_bytes must be a size in bytes (0 or more), "
                         f"got {max_bytes!r}; clear() removes every entry")
    return default_cache().disk.prune(max_bytes)


def explain(kernel) -> str:
    """A readable account of a kernel's cache state: key parts, dependencies, last event (an
    Explanation: a str that notebooks and the REPL show as its text)."""
    from gpunb.cache import epoch, provenance
    from gpunb.cache.fingerprint import Dependency, collect
    from gpunb.cache.keys import explain_change

    if not isinstance(kernel, str) and not callable(getattr(kernel, "py_func", kernel)):
        raise TypeError(f"gpunb.cache.explain: expected a GPU function or its name, got "
                        f"{kernel!r}")
    name = _name_of(kernel)
    fingerprint, error = None, ""
    if not isinstance(kernel, str):
        try:
            fingerprint = collect(kernel)
        except Exception as exc:  # noqa: BLE001 - explain must always answer
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    last = _own_last_event(kernel)
    if last is None and not callable(getattr(kernel, "cache_info", None)):
        # a name, or a plain function: the latest event of that name; a GPU function's own
        # events are its specialisations' (none for a device function: another function of
        # its name's are not its own)
        last = provenance.last_event(name)

    body = default_cache().body_of(last.key) if last is not None and last.key else None
    parts = body.get("parts") if body else None
    pending = []
    if fingerprint is not None and parts and parts.get("function") != fingerprint.digest:
        now = dict(parts, function=fingerprint.digest)
        old_deps = [Dependency.from_json(d) for d in body.get("dependencies", ())]
        pending = explain_change(parts, old_deps, str(body.get("code_digest", "")), now,
                                 fingerprint)
    files = {loc[1] for loc in fingerprint.locations} if fingerprint is not None else set()
    stale = tuple(f for f in epoch.check_module_files() if f in files)
    return provenance.render_explanation(name, fingerprint, last, parts, pending, stale, error)
