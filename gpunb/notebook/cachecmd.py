"""`%gpucache` subcommands as plain functions: (shell, args) -> a view to display, or None.

They call the cache layer's public functions (`gpunb.cache.explain`, `clear`, `cache_dir`); the
views live in cache_panel. A missing cache layer is reported, never a traceback.
"""

from __future__ import annotations


class CacheCommandError(ValueError):
    """A %gpucache command that cannot run as written (unknown kernel, missing argument)."""


def cache_function(name: str):
    """A public function of gpunb.cache, or a CacheCommandError saying it is not there."""
    import importlib

    try:
        cache = importlib.import_module("gpunb.cache")
    except ModuleNotFoundError as exc:
        if exc.name != "gpunb.cache":
            raise
        cache = None
    fn = getattr(cache, name, None)
    if fn is None:
        raise CacheCommandError(f"this build's cache layer has no gpunb.cache.{name}()")
    return fn


def _kernel(shell, args: list, command: str):
    if not args:
        raise CacheCommandError(f"which kernel? e.g. %gpucache {command} saxpy")
    name = args[0]
    value = shell.user_ns.get(name)
    if value is None or not getattr(type(value), "__gpunb_function__", False):
        raise CacheCommandError(f"{name!r} is not a GPU function in this notebook")
    return name, value


def cache_dir() -> str:
    try:
        return str(cache_function("cache_dir")())
    except CacheCommandError:
        from gpunb.foundation import config

        return config.cache_dir()


def cmd_status(shell, args: list):
    from gpunb.notebook.cache_panel import CacheStatus, LiveCachePanel
    from gpunb.notebook.magics import cache_enabled

    def snapshot():
        return CacheStatus(shell.user_ns, cache_dir(), cache_enabled())

    if "--live" in args:
        from gpunb.notebook.widgets import in_kernel, widgets_available

        if in_kernel() and widgets_available():
            return LiveCachePanel(shell, snapshot).html
    return snapshot()


def cmd_explain(shell, args: list):
    from gpunb.notebook.cache_panel import Explanation

    name, kernel = _kernel(shell, args, "explain")
    return Explanation(name, cache_function("explain")(kernel))


def cmd_clear(shell, args: list):
    clear = cache_function("clear")
    if args:
        name, kernel = _kernel(shell, args, "clear")
        clear(kernel)
        print(f"cleared the cache entries of {name}")
    else:
        clear()
        print(f"cleared the gpunb cache ({cache_dir()})")
    return None


def cmd_dir(shell, args: list):
    print(cache_dir())
    return None


def cmd_on(shell, args: list):
    from gpunb.notebook.magics import set_cache_enabled

    set_cache_enabled(True)
    print("gpunb cache on")
    return None


def cmd_off(shell, args: list):
    from gpunb.notebook.magics import set_cache_enabled

    set_cache_enabled(False)
    print("gpunb cache off: every launch with new types compiles (GPUNB_CACHE=0)")
    return None
