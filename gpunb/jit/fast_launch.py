"""When `kernel[grid, block]` gets a native launcher, and keeping it armed.

A launch configuration (`_LaunchConfig`) calls its native launcher first (runtime/native_pack.py:
type checks, watch list, packing and, on a GPU, cuLaunchKernel in machine code). When that
declines - new argument kinds, a rebound global, a new epoch, another thread, a listener, a
target change, a recorder starting or stopping - the launch takes the Python path
(Dispatcher.launch, which checks everything and raises the right errors), and `refresh` then
(re)binds a launcher for the specialisation and argument kinds just launched. A process's
first launches never wait for one: a configuration gets its launcher after NATIVE_AFTER
launches through the Python path; a process that only loaded cached kernels (no llvmlite yet)
loads llvmlite on a background thread from then on, and its configurations get launchers on a
later retry (every launch up to GIVE_UP_AFTER, then every 256th).
While `gpunb.events` has launch recorders (a profile timed by CUPTI or the host clock), the
launcher bound is a separate one (plain launchers stay disarmed meanwhile), wrapped to append an
entry per launch to each recorder (jit/observe.py); subscribers to launch events keep every
launch on the Python path.

A configuration keeps the last launcher it bound in each mode (plain, recording) for one
specialisation and argument kinds (`Bound`, `config._native[2]`). A profile block's start or
end moves the launch gate for the recorders only (launch_gate.bump_recorders), so the first
launch in (or after) a block re-arms the launcher of the mode that now applies as it is
(`rearm`): the checks it was armed after still hold. Anything else that moves the gate
(launch_gate.bump) sends the next launch through `rebind` or the Python path, as before.
"""

from __future__ import annotations

import threading

from gpunb.cache.fingerprint import MISSING, still_valid
from gpunb.foundation import events, launch_gate
from gpunb.foundation.events import LaunchSite
from gpunb.jit.observe import recording_launcher, shape_positions, type_names
from gpunb.runtime import native_pack
from gpunb.runtime.typeof import type_key

# Python-path launches of a configuration before it gets a native launcher; at least 2: the
# dispatcher counts a configuration's first launch itself, without importing this module
NATIVE_AFTER = 2
GIVE_UP_AFTER = 16  # a configuration that could not get one then tries every 256th launch


class Bound:
    """One native launcher bound for a configuration: `config._native` is `(fn, after, bound)`.

    `launcher` is the NativeLauncher whose plan `fn` follows; `recording` whether `fn` records
    (a plan of its own: a plain plan is never armed while recorders are active, nor is a
    recording one used while none is); `other` the configuration's launcher of the other mode
    for the same specialisation and argument kinds, when it has had one."""

    __slots__ = ("fn", "after", "launcher", "recording", "spec", "key", "other")

    def __init__(self, fn, after, launcher, recording: bool, spec, key: tuple):
        self.fn, self.after, self.launcher = fn, after, launcher
        self.recording, self.spec, self.key = recording, spec, key
        self.other: Bound | None = None


def rearm(config):
    """`config`'s native launcher declined: when only launch recorders came or went since its
    launcher of the mode that applies now (recording while any records, else plain) was armed,
    arm that one at the gate's current value and return the new `config._native`; else None
    (`rebind` or the Python path decide). This is a profile block's first launch, and the first
    after it: no type keys, no watch-list walk, no binding."""
    native = config._native
    if native is None:
        return None
    gate = launch_gate.current()  # first: a bump after the checks disarms what we arm
    bound = native[2]
    recording = events.launch_recorders != ()
    if bound.recording is not recording:
        bound = bound.other
        if bound is None:
            return None
    elif bound.launcher.armed_at == gate:
        return None  # armed now and declined all the same: new kinds, a rebound name, a thread
    launcher = bound.launcher
    if not launch_gate.unchanged_since(launcher.armed_at) or \
            launcher.watch is not bound.spec.watch:
        return None
    launcher.arm(gate)
    native = config._native = (bound.fn, bound.after, bound)
    return native


def rebind(config, args: tuple):
    """`config`'s native launcher declined `args`: when they are of kinds whose specialisation
    the dispatcher knows and it is still valid, nobody subscribes to launch events and this
    thread owns its buffer (what declining most often means then: the launch gate moved, as
    it does when a profile begins or ends), bind a fresh launcher and return the new
    `config._native`; else None (the caller takes the Python path, which checks everything).
    Where only recorders came or went (a profile block began or ended) and the configuration
    has a launcher of the mode that applies, `rearm` arms that one again instead."""
    if events.launch_subscribers:
        return None  # every launch takes the Python path, which publishes
    native = rearm(config)
    if native is not None:
        return native
    dispatcher = config.dispatcher
    if dispatcher.__dict__.get("_extensions"):
        return None
    try:
        key = tuple([type_key(a) for a in args])
    except TypeError:
        return None
    spec = dispatcher._fast.get(key)
    if spec is None or spec.packer._owner != threading.get_ident() or \
            not still_valid(spec.watch):
        return None
    before = config._native
    refresh(config, spec, args)
    native = config._native
    return native if native is not before else None


def refresh(config, spec, args: tuple) -> None:
    """After `config` launched `spec` with `args` through the Python path: bind a native
    launcher for the next launches of the same kinds where one applies."""
    misses = config._native_misses + 1
    config._native_misses = misses
    if misses > GIVE_UP_AFTER and misses % 256 or misses < NATIVE_AFTER and not spec.natives:
        return  # (a specialisation that has launchers gives a new configuration one at once)
    gate = launch_gate.current()  # before the checks: a bump after them disarms what we bind
    recorders = events.launch_recorders  # (a recorder's start or stop bumps the gate too)
    if not native_pack.available():
        native_pack.prepare_in_background()  # no compile in this process: no llvmlite yet
        return
    if events.launch_subscribers or \
            spec.packer._owner != threading.get_ident() or \
            config.dispatcher.__dict__.get("_extensions"):
        return
    try:
        key = tuple([type_key(a) for a in args])
    except TypeError:
        return
    natives = spec.natives
    if recorders:
        # a launcher of its own (its own plan, so its own arming): the configurations of one
        # specialisation share a launcher, and arming the recording one must not re-arm the
        # plain launchers other configurations hold, which would launch unrecorded
        key = ("recording", key)
    launcher = natives.get(key, False)
    if launcher is None:
        return  # these kinds cannot be native (say, host arrays copied to the GPU)
    plan = spec.program.native_config(config.grid, config.block, config.sharedmem,
                                      config.stream)
    if plan is None:
        return
    grid3, block3, shared, handle, launch_address, function, last_launch, run = plan
    if launcher is False:
        try:
            launcher = native_pack.NativeLauncher(spec.packer, spec.argtypes, args,
                                                  launch_address, function, last_launch,
                                                  spec.program.name)
        except native_pack.Unsupported:
            launcher = None
        if len(natives) < 16:
            natives[key] = launcher
        if launcher is None:
            return
    if launcher.watch is not spec.watch:
        launcher.set_watch(spec.watch, MISSING)
    if not launcher.watch_ok:
        return  # a watched name lives in a closure cell or an object: the Python path checks
    launcher.arm(gate)
    params = spec.packer.params_address
    program = spec.program
    if run is not None:
        def after(status: int) -> None:  # packed: run the grid
            run(params)
    else:
        def after(status: int) -> None:  # the driver refused: retry or raise as launch_cuda
            program.native_failed(status, grid3, block3, shared, handle, params)
    native = launcher.bind(grid3, block3, shared, handle)
    recording = bool(recorders)
    if recording:  # a profile records: the launcher also appends an entry per launch
        site = LaunchSite(config.dispatcher.__name__, spec, config.grid, config.block,
                          config.stream, config.sharedmem, type_names(spec), spec.target,
                          False, shape_positions(args))
        native = recording_launcher(native, after, site)
        key = key[1]
    bound = Bound(native, after, launcher, recording, spec, key)
    _keep_other(bound, config._native)
    config._native = (native, after, bound)
    config._native_misses = NATIVE_AFTER - 1  # the next miss (a new epoch) rebinds at once


def _keep_other(bound: Bound, previous) -> None:
    """Pair `bound` with the configuration's launcher of the other mode for the same
    specialisation and argument kinds, if the binding it replaces is (or was paired with) one."""
    if previous is None:
        return
    for candidate in (previous[2], previous[2].other):
        if candidate is not None and candidate.recording is not bound.recording and \
                candidate.spec is bound.spec and candidate.key == bound.key:
            bound.other, candidate.other = candidate, bound
            return
