"""A launch is one object: a Launcher, one specialisation bound to one launch configuration and
the kinds of its arguments, at one version of its dispatcher.

`Specialization.bind(config, kinds, args, version=..., native=...)` makes one; it is frozen.
`Launcher.run(args)` is the launch, written once: the hooks' `enter`, then the native part (the
machine code of runtime/native_pack.py: checks, packing and, on a GPU, cuLaunchKernel) or the
Python packing and `Program.launch`, then the hooks' `exit`. Hooks observe launches
(jit/launch_hooks.py: events for subscribers, entries for recorders); anything else that must see
each launch (CUDA-graph capture, say) passes hooks of its own to `bind`, and a launch on another
stream is a launcher of another configuration (`kernel[grid, block, stream]`), the stream's
handle bound into its native part.

A launcher launches only while its dispatcher's `LaunchVersion` reads the value it was bound at:
that number is the one thing that invalidates launchers. The dispatcher bumps it when anything a
launcher took as given changes - the target, who observes launches, the CUDA contexts (all three
announced by gpunb.events' RUNTIME_CHANGED), the kernel's numba extensions, a failed launch.
The native part reads the version word itself, with the watch list (a rebound global), the
thread and the arguments' kinds; a Python-packing launcher is used only by the dispatcher's
Python path, which checks all of that before it runs one.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from gpunb.backends.base import DECLINED
from gpunb.cache.fingerprint import MISSING
from gpunb.foundation import events
from gpunb.foundation.records import record
from gpunb.jit.launch_hooks import hooks_for

_bump_lock = threading.Lock()


class LaunchVersion:
    """A dispatcher's launch version: one i64 word that native launchers read at each launch."""

    __slots__ = ("word",)

    def __init__(self):
        self.word = ctypes.c_int64(0)

    @property
    def value(self) -> int:
        return self.word.value

    def bump(self) -> None:
        """Every launcher bound before launches no more (its dispatcher binds again)."""
        with _bump_lock:  # (two bumps at once must not write the same value)
            self.word.value += 1


def bump_all(versions: list) -> None:
    """Bump each of these launch versions (what changed concerns every launch)."""
    with _bump_lock:
        for version in versions:
            version.word.value += 1


if TYPE_CHECKING:  # (a Protocol class costs a module import milliseconds: types only)
    class LaunchHooks(Protocol):
        """What runs around each launch of a launcher bound with it. `enter` runs before the
        arguments are packed and returns a token; `exit` follows with it, with `declined` True
        where the native part refused the arguments (nothing launched: the dispatcher's Python
        path launches them through another launcher) and `error` the exception's text if one
        was raised ("" otherwise). jit/launch_hooks.py has the launch observers' two."""

        def enter(self, launcher: Launcher, args: tuple, new: bool) -> Any:
            ...

        def exit(self, launcher: Launcher, args: tuple, token: Any, new: bool, declined: bool,
                 error: str) -> None:
            ...


@record  # (a frozen, slotted dataclass made at half the import cost: foundation/records.py)
class NativePart:
    """A launcher's machine code: `builtin(args)` returns 0 (launched), DECLINED, PACKED (the
    CPU target: run the program) or the launch function's error code, which `finish` takes
    (it runs the program, or retries or raises); `launch` is the Program's description of the
    configuration it was bound to."""

    builtin: Any
    plan: Any  # the runtime/native_pack.NativePlan it follows (shared by the launchers of
    # one specialisation and argument kinds)
    launch: Any  # backends.base.NativeLaunch
    finish: Any  # status -> None


def _finisher(launch, params_address: int):
    """What follows a native part's non-zero status: with no launch function the machine code
    only packed, and `launch.run` launches; else the launch function failed."""
    if launch.launch_function == 0:
        run = launch.run

        def finish(status: int) -> None:
            run(params_address)
    else:
        failed = launch.failed

        def finish(status: int) -> None:
            failed(status, params_address)
    return finish


@record
class Launcher:
    """One specialisation bound to one launch configuration, argument kinds and dispatcher
    version, with the hooks that observe its launches and, where it has one, its native part.

    `run(args, new=False)` launches `args` (`new`: this launch made the specialisation) and
    returns 0, or DECLINED where the native part refused them and nothing was launched (the
    caller's Python path launches them). `call(args)` is what a configuration calls first: the
    bare machine code where nothing runs around it (it may also return PACKED or a driver error
    code, which `finish` takes), else `run`."""

    spec: Any  # jit.specialization.Specialization
    config: Any  # the kernel[grid, block, stream, shared] it launches with
    kinds: tuple | None  # the arguments' type keys (runtime/typeof.type_key)
    version: int  # its dispatcher's launch version when bound
    hooks: LaunchHooks | None = None
    native: NativePart | None = None
    run: Any = field(init=False, repr=False, compare=False)
    call: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        run = _body(self)
        object.__setattr__(self, "run", run)
        bare = self.native is not None and self.hooks is None
        object.__setattr__(self, "call", self.native.builtin if bare else run)

    def finish(self, status: int) -> None:
        """The native part returned `status` (neither 0 nor DECLINED): PACKED runs the program
        on the packed arguments (the CPU target); an error code is retried or raised."""
        self.native.finish(status)


def _body(launcher: Launcher):
    """`launcher.run`: the launch, written once - the hooks' `enter`, the native part or the
    Python packing and `Program.launch`, the hooks' `exit` - as a closure over what it reads
    (one launch reads locals, not attributes)."""
    hooks, native, spec, config = launcher.hooks, launcher.native, launcher.spec, launcher.config
    enter = exit_ = None
    if hooks is not None:
        enter, exit_ = hooks.enter, hooks.exit
    builtin = finish = None
    if native is not None:
        builtin, finish = native.builtin, native.finish
    packer, argtypes, program_launch = spec.packer, spec.argtypes, spec.launch
    grid, block, shared, stream = config.grid, config.block, config.sharedmem, config.stream

    def run(args: tuple, new: bool = False) -> int:
        token = enter(launcher, args, new) if enter is not None else None
        try:
            if builtin is not None:
                status = builtin(args)
                if status and status != DECLINED:
                    finish(status)
                    status = 0
            else:
                params, writeback = packer.pack(args, argtypes)
                program_launch(grid, block, shared, stream, params)
                for fn in writeback:
                    fn()
                status = 0
        except BaseException as exc:
            if exit_ is not None:
                exit_(launcher, args, token, new, False, f"{type(exc).__name__}: {exc}")
            raise
        if exit_ is not None:
            exit_(launcher, args, token, new, status == DECLINED, "")
        return status

    return run


def bind(spec, config, kinds: tuple | None, args: tuple, *, version: int, native: bool,
         previous: Launcher | None = None, hooks: LaunchHooks | None = None) -> Launcher:
    """`spec` bound to `config` for arguments of `kinds` (those of `args`), at the dispatcher
    version `version` (read before the caller checked the specialisation: a bump after that
    makes this launcher decline). With `native` it gets a native part where one applies: these
    kinds can be packed natively, the program can launch this configuration from machine code,
    the watch list is plain dicts', this thread owns the parameter buffer and nobody subscribes
    to launch events (subscribers get their events from the Python path). What `previous` (the
    configuration's last launcher) holds is reused where it still applies: a configuration
    binds again at every profile block's start and end. `hooks` of the caller's own (say, a
    capture into a CUDA graph) replace those of the launch observers."""
    part = None
    if native and kinds is not None and not events.launch_subscribers:
        part = _native_part(spec, config, kinds, args, version, previous)
    if hooks is None:
        hooks = hooks_for(spec, config, args, native=part is not None)
    return Launcher(spec, config, kinds, version, hooks, part)


PLANS_PER_SPECIALIZATION = 16  # argument kinds whose plans a specialisation keeps


def _native_part(spec, config, kinds: tuple, args: tuple, version: int,
                 previous: Launcher | None) -> NativePart | None:
    from gpunb.runtime import native_pack  # (not on a process's first launch)

    if not native_pack.available():
        native_pack.prepare_in_background()  # no compile in this process: no llvmlite yet
        return None
    if spec.packer.owner_thread != threading.get_ident():
        return None  # another thread's launches pack into buffers of their own
    launch = spec.program.native_launch(config.grid, config.block, config.sharedmem,
                                        config.stream)
    if launch is None:
        return None
    before = previous.native if previous is not None else None
    if before is not None and before.launch is launch and previous.spec is spec and \
            previous.kinds == kinds:  # the same plan and program launch: a new version only
        builtin = before.plan.bind(launch, config.dispatcher.version.word, version, spec.watch,
                                   MISSING)
        return None if builtin is None else NativePart(builtin, before.plan, launch,
                                                        before.finish)
    plan = spec.plans.get(kinds, False)
    if plan is False:
        try:
            plan = native_pack.NativePlan(spec.packer, spec.argtypes, args)
        except native_pack.Unsupported:
            plan = None  # these kinds cannot be native (say, host arrays copied to the GPU)
        if len(spec.plans) < PLANS_PER_SPECIALIZATION:
            spec.plans[kinds] = plan
    if plan is None:
        return None
    builtin = plan.bind(launch, config.dispatcher.version.word, version, spec.watch, MISSING)
    if builtin is None:
        return None
    return NativePart(builtin, plan, launch, _finisher(launch, spec.packer.params_address))
