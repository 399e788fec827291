"""`kernel[grid, block, stream, shared]`: a launch configuration, and the path of its launches.

Calling one launches. On the fast path that is one call of its Launcher (jit/launcher.py), whose
native part checks the thread, the dispatcher's launch version, the watch list and the
arguments' kinds, packs them and, on a GPU, calls cuLaunchKernel, all in machine code. Where it
declines, or before a configuration has one, the Python path (`_launch`): the dispatcher finds
the specialisation (type keys, one dict lookup, the watch list; jit/slow_path.py compiles new
ones), and a Launcher is bound for it (kept and reused while it applies), which launches;
errors get the user's launch line and are noted for `%gpucache status` (jit/failures.py).
"""

from __future__ import annotations

import inspect

from gpunb.backends.base import DECLINED
from gpunb.foundation.errors import LaunchError
from gpunb.jit.launcher import Launcher
from gpunb.runtime import capture

# Python-path launches of a configuration before it binds a native launcher: a process's first
# launches never wait for one (the cold-start and disk-hit figures); then, where none could be
# had (a process that only loaded cached kernels has no llvmlite yet, which loads in the
# background), every launch tries up to GIVE_UP_AFTER, then every 256th
NATIVE_AFTER = 2
GIVE_UP_AFTER = 16


class LaunchConfiguration:
    """`kernel[grid, block, stream, shared]`: call it with the kernel's arguments.

    It keeps the Launcher of its last native launch (`launcher`: what a call tries first) and of
    its last Python-path launch (reused while the specialisation, the kinds and the version are
    the ones it was bound for)."""

    __slots__ = ("dispatcher", "grid", "block", "stream", "sharedmem", "_native", "_python",
                 "_python_launches", "_callbacks", "key", "key_kinds")

    def __init__(self, dispatcher, griddim, blockdim, stream, sharedmem):
        self.dispatcher = dispatcher
        self.grid = griddim  # as given: the launch path normalises (fast for plain ints)
        self.block = blockdim
        self.stream = stream
        self.sharedmem = sharedmem
        self._native: Launcher | None = None
        self._python: Launcher | None = None
        self._python_launches = 0  # since its last native launcher was bound
        self._callbacks = None  # numba-cuda's pre_launch_callbacks (see the property)
        # the `kernel[...]` key it was made for and its types (dispatcher.__getitem__: a key
        # equal as values is not enough, 2.0 == 2)
        self.key = self.key_kinds = None

    @property
    def launcher(self) -> Launcher | None:
        """The launcher a call tries first: the last one with a native part, if any."""
        return self._native

    @property
    def pre_launch_callbacks(self) -> list:
        """numba-cuda's `callback(kernel, launch_config)` list, run before each launch."""
        from gpunb.jit.numba_api import pre_launch_callbacks

        return pre_launch_callbacks(self)

    @property
    def griddim(self) -> tuple:
        """numba's form: the grid as (x, y, z)."""
        return _dim3_of(self.grid)

    @property
    def blockdim(self) -> tuple:
        """numba's form: the block as (x, y, z)."""
        return _dim3_of(self.block)

    def __reduce__(self):
        if self.stream or self._callbacks:
            import pickle

            raise pickle.PicklingError(
                "Cannot pickle configured launches with pre-launch callbacks" if
                self._callbacks else "cannot pickle a launch configuration with a stream")
        return (_configured, (self.dispatcher, self.grid, self.block, self.sharedmem))

    def __call__(self, *args, **kwargs) -> None:
        launcher = self._native
        if launcher is not None and not kwargs:
            try:
                call = launcher.call  # (LOAD_ATTR of a slot; a method-style call would not be)
                status = call(args)  # the machine code, or run() with hooks around it
                if status == 0:
                    return None
                if status != DECLINED:  # packed (the CPU target runs it now), or the driver
                    launcher.native.finish(status)  # failed: retry or raise
                    return None
            except LaunchError as exc:
                self._failed(exc, args)
                raise
        return self._launch(args, kwargs)

    def _launch(self, args: tuple, kwargs: dict) -> None:
        """The Python path: every check, the right error; a launcher bound for what it found."""
        dispatcher = self.dispatcher
        if capture.open_captures and (open_capture := capture.current()) is not None:
            return self._captured(open_capture, args, kwargs)
        cleanups = None
        try:
            if kwargs:
                _refuse_keywords(dispatcher, kwargs)
            if dispatcher.has_extensions:
                args, cleanups = dispatcher.prepare_arguments(args, self.stream)
            if self._callbacks:  # (a configuration with callbacks never binds a native part)
                from gpunb.jit.numba_api import run_pre_launch_callbacks

                run_pre_launch_callbacks(self, args)
            launcher, new = self._bind(args, cleanups is None and not self._callbacks)
            if launcher.run(args, new) == DECLINED:
                # its native part refused at once (the version moved in another thread
                # meanwhile, say): the Python packing launches them
                self._bind(args, False)[0].run(args, new)
        except LaunchError as exc:
            self._failed(exc, args)
            raise
        if dispatcher.failed_launch is not None:
            dispatcher.failed_launch = None  # this launch worked
        for cleanup in cleanups or ():
            cleanup()

    def _captured(self, open_capture, args: tuple, kwargs: dict) -> None:
        """This thread captures a graph: the launch becomes a record of it (nothing runs)."""
        from gpunb.jit.capture_launch import launch_into

        try:
            if kwargs:
                _refuse_keywords(self.dispatcher, kwargs)
            launch_into(open_capture, self, args)
        except LaunchError as exc:
            if exc.loc is None:
                from gpunb.jit.options import user_location

                exc.loc = user_location()
            raise

    def _bind(self, args: tuple, may_be_native: bool) -> tuple:
        """(the launcher for `args`, whether their specialisation was made just now)."""
        dispatcher = self.dispatcher
        # first: a bump after the checks below makes what is bound here decline
        version = dispatcher.version.value
        spec, key, new = dispatcher.specialization_for_launch(args)
        misses = self._python_launches = self._python_launches + 1
        previous = self._python
        reusable = previous is not None and previous.version == version and \
            previous.spec is spec and previous.kinds == key
        # a native launcher is tried for what is new here (a version, a specialisation, kinds)
        # once a configuration launched before or its specialisation has plans, and for the
        # same again at the Python path's launches up to GIVE_UP_AFTER, then every 256th
        retry = NATIVE_AFTER <= misses <= GIVE_UP_AFTER or misses % 256 == 0
        native = may_be_native and key is not None and \
            (retry or not reusable and (misses >= NATIVE_AFTER or bool(spec.plans)))
        if reusable and not native:
            return previous, new
        launcher = spec.bind(self, key, args, version=version, native=native,
                             previous=self._native)
        if launcher.native is not None:
            self._native = launcher
            self._python_launches = NATIVE_AFTER - 1  # the next miss (a new epoch) binds again
            return launcher, new
        if may_be_native:  # (arguments prepared by extensions are new objects each launch)
            self._python = launcher
        stale = self._native
        if stale is not None and stale.version != version:
            self._native = None  # it would only decline (a subscriber came, say)
        return launcher, new

    def _failed(self, exc: LaunchError, args: tuple | None) -> None:
        """Point `exc` at the user's launch line and note it for `%gpucache status`."""
        if exc.loc is None:  # (costs nothing without errors)
            from gpunb.jit.options import user_location

            exc.loc = user_location()
        from gpunb.jit.failures import note_launch_failure

        # for %gpucache status, the side panel, %gpudebug (which replays this configuration)
        note_launch_failure(self.dispatcher, exc, args, launch=self)


def _dim3_of(dim) -> tuple:
    items = tuple(int(n) for n in (dim if isinstance(dim, (tuple, list)) else (dim,)))
    return items + (1,) * (3 - len(items))


def _configured(dispatcher, grid, block, sharedmem) -> LaunchConfiguration:
    """pickle's constructor for `kernel[grid, block]`."""
    return dispatcher[grid, block, 0, sharedmem]


def _refuse_keywords(dispatcher, kwargs: dict) -> None:
    """numba launches take positional arguments only; say so at the user's launch line."""
    from gpunb.jit.options import user_location

    params = ", ".join(inspect.signature(dispatcher.py_func).parameters)
    raise LaunchError(f"kernel '{dispatcher.__name__}' was launched with keyword argument(s) "
                      f"{', '.join(kwargs)}", user_location(), function=dispatcher.__name__,
                      hint="kernels take every argument positionally, in order: "
                           f"{dispatcher.__name__}[grid, block]({params})")


def key_kinds(config) -> object:
    """The types in a `kernel[...]` key, nested tuples followed: keys equal as values (2.0 and
    2, True and 1) differ in them, and numba refuses the floats and bools."""
    if type(config) is not tuple:
        return type(config)
    return tuple(key_kinds(item) if type(item) is tuple else type(item) for item in config)
