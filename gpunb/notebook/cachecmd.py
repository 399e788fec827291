"""`%gpucache` subcommands as plain functions: (shell, args) -> a view to display, or None.

They call the cache layer's public functions (`gpunb.cache.explain`, `clear`, `cache_dir`,
`set_enabled`); the views live in cache_panel.
"""

from __future__ import annotations


class CacheCommandError(ValueError):
    """A %gpucache command that cannot run as written (unknown kernel, missing argument)."""


def _at_most(args: list, allowed: tuple, command: str) -> None:
    """Refuse words a command does not take (a typo'd option was silently ignored)."""
    extra = [word for word in args if word not in allowed]
    if extra:
        takes = f"takes only {' '.join(allowed)}" if allowed else "takes no arguments"
        raise CacheCommandError(f"{command} {takes}; got {' '.join(extra)}")


def _kernel(shell, args: list, command: str):
    if not args:
        raise CacheCommandError(f"which kernel? e.g. %gpucache {command} saxpy")
    if len(args) > 1:
        raise CacheCommandError(f"{command} takes one kernel name; got {' '.join(args)}")
    name = args[0]
    head, *attributes = name.split(".")
    value = shell.user_ns.get(head)
    for attribute in attributes:  # `%gpucache explain mymod.saxpy`: a module's kernel
        value = getattr(value, attribute, None)
    if value is None or not getattr(type(value), "__gpunb_function__", False) and \
            not callable(getattr(type(value), "compiled_kernels", None)):
        raise CacheCommandError(f"{name!r} is not a GPU function in this notebook")
    return name, value


def _compiled_by(name: str, value) -> list | None:
    """The kernels a ufunc, reduction or fused function compiled (None for a GPU function);
    a CacheCommandError when it has compiled none yet."""
    if getattr(type(value), "__gpunb_function__", False):
        return None
    kernels = value.compiled_kernels()
    if not kernels:
        raise CacheCommandError(f"{name!r} ({type(value).__name__}) has compiled no kernel yet: "
                                "call it, then ask again")
    return kernels


def cmd_status(shell, args: list):
    """The status table (a live panel, refreshed after every cell, with --live)."""
    from gpunb import cache
    from gpunb.notebook.cache_panel import CacheStatus, LiveCachePanel

    def snapshot():
        return CacheStatus(shell.user_ns, cache.cache_dir(), cache.enabled())

    _at_most(args, ("--live",), "status")
    if "--live" in args:
        from gpunb.notebook.widgets import in_kernel, widgets_available

        if in_kernel() and widgets_available():
            return LiveCachePanel(shell, snapshot)
    return snapshot()


def cmd_explain(shell, args: list):
    from gpunb import cache
    from gpunb.notebook.cache_panel import Explanation, failure_rows

    name, kernel = _kernel(shell, args, "explain")
    made = _compiled_by(name, kernel)
    if made is not None:  # a ufunc, reduction or fused function: each kernel it compiled
        return Explanation(name, "\n".join(f"{name}: {cache.explain(k)}" for k in made))
    explained = str(cache.explain(kernel))
    own = getattr(kernel, "cache_info", None)
    if callable(own) and not own():  # a device function: its code is in its callers' entries
        from gpunb.notebook.cache_panel import callers_of, find_kernels

        callers = callers_of(kernel, find_kernels(shell.user_ns))
        if callers:
            explained += (f"\n  compiled into: {', '.join(callers)} (%gpucache explain "
                          f"{callers[0]} shows its cache events)")
    failures = [f"    {row[3]} for {row[1]}: {row[4]}" for row in failure_rows(name, kernel)]
    if failures:  # the cache saw no event for them: say what did happen
        explained += "\n  failed since its last successful launch:\n" + "\n".join(failures)
    return Explanation(name, explained)


def cmd_clear(shell, args: list):
    from gpunb import cache

    if args:
        name, kernel = _kernel(shell, args, "clear")
        for each in _compiled_by(name, kernel) or [kernel]:
            cache.clear(each)
        print(f"cleared the cache entries of {name}")
    else:
        cache.clear()
        print(f"cleared the gpunb cache ({cache.cache_dir()})")
    return None


def cmd_dir(shell, args: list):
    from gpunb import cache

    _at_most(args, (), "dir")
    print(cache.cache_dir())
    return None


def cmd_on(shell, args: list):
    from gpunb import cache

    _at_most(args, (), "on")
    cache.set_enabled(True)
    print("gpunb cache on")
    return None


def cmd_off(shell, args: list):
    from gpunb import cache

    _at_most(args, (), "off")
    cache.set_enabled(False)
    print("gpunb cache off: every launch with new types compiles (as with GPUNB_CACHE=0)")
    return None
