"""The hooks of launches someone observes: events before and after for subscribers, one compact
entry per launch for recorders (`gpunb.events`).

A launcher is bound with hooks while `gpunb.events` has launch observers, and without any
otherwise (a launch nobody observes runs nothing around it); observers coming or going bump every
dispatcher's launch version, so launchers are bound again with the hooks that apply.

- `Recording`: only recorders (a profile timed by CUPTI or the host clock). The launcher keeps
  its native part: a recorded launch costs the native launch, two clock reads and one
  `(site, shapes, start_ns, end_ns, error)` tuple appended to each recorder's list.
- `Publishing`: subscribers too (the replay snapshot, the CUDA-event timer, a user's hook). They
  get a LAUNCH_BEFORE event before the arguments are packed, so the launcher packs in Python.

Each event is built only when its kind has a subscriber, as a named tuple made with
`tuple.__new__`; the two events and the entry share what they describe (the arguments' types
are spelled once per specialisation, their shapes read once per launch). The recorders an entry
goes to are those active when the launch ends (read before its end clock): a launch wholly
inside a recorder's block is recorded by it, and no launch by a block it does not overlap.
"""

from __future__ import annotations

import time

import numpy as np

from gpunb.foundation import events
from gpunb.foundation.events import EventKind, LaunchEvent, LaunchSite

_BEFORE, _AFTER = EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER
_new = tuple.__new__
_clock = time.perf_counter_ns
_subscriptions = events.subscriptions  # kind -> tuple of Subscriptions (read, never mutated)


HOOKS_PER_SPECIALIZATION = 16  # configurations whose hooks a specialisation keeps


def hooks_for(spec, config, args: tuple, native: bool):
    """The hooks of a launcher of `spec` for `config` bound now, for arguments like `args`
    (`native`: it has a native part, which accepts only arguments of their exact classes);
    None while nobody observes launches. Kept per specialisation for its last configurations:
    a configuration binds again at every profile block's start and end."""
    if not events.launch_observers:
        return None
    wanted = Publishing if events.launch_subscribers else Recording
    key = (wanted, config.grid, config.block, config.stream, config.sharedmem, native)
    try:
        found = spec.hooks.get(key)
    except TypeError:  # an unhashable configuration (lists): made each time
        found, key = None, None
    if found is not None:
        return found
    name = config.dispatcher.__name__
    # a native part's launches have arrays at the positions these args have (arrays of the
    # specialisation's types: the same positions for every launch it accepts)
    positions = shape_positions(args) if native and wanted is Recording else None
    made = wanted(LaunchSite(name, spec, config.grid, config.block, config.stream,
                             config.sharedmem, type_names(spec), spec.target, False, positions))
    if key is not None:
        if len(spec.hooks) >= HOOKS_PER_SPECIALIZATION:
            del spec.hooks[next(iter(spec.hooks))]  # the oldest
        spec.hooks[key] = made
    return made


class Recording:
    """Launch recorders only: an entry per launch, no events (see the module docstring)."""

    __slots__ = ("site", "new_site", "shapes_of")

    def __init__(self, site: LaunchSite):
        self.site = site
        self.new_site = site._replace(new_specialization=True)
        self.shapes_of = _shape_reader(site.shape_at)

    def enter(self, launcher, args: tuple, new: bool) -> int:
        return _clock()

    def exit(self, launcher, args: tuple, started: int, new: bool, declined: bool,
             error: str) -> None:
        append = events.launch_append
        if append is not None and not declined:
            append((self.new_site if new else self.site, self.shapes_of(args), started,
                    _clock(), error))


class Publishing:
    """Launch subscribers (and recorders, if any): LAUNCH_BEFORE and LAUNCH_AFTER events, and
    the entry for each recorder, describing the launch alike."""

    __slots__ = ("site",)

    def __init__(self, site: LaunchSite):
        self.site = site

    def enter(self, launcher, args: tuple, new: bool) -> tuple:
        site = self.site
        shapes = tuple([getattr(value, "shape", ()) for value in args])  # nothing kept alive
        subscriptions = _subscriptions.get(_BEFORE)
        if subscriptions:
            event = _new(LaunchEvent, (_BEFORE, site.kernel, site.specialization, site.grid,
                                       site.block, site.stream, site.shared_bytes, site.types,
                                       shapes, site.target, new, 0.0, "", args, 0))
            _publish(subscriptions, _BEFORE, event)
        return shapes, _clock()

    def exit(self, launcher, args: tuple, token: tuple, new: bool, declined: bool,
             error: str) -> None:
        shapes, started = token
        append = events.launch_append
        ended = _clock()
        site = self.site
        if append is not None:
            append((site._replace(new_specialization=True) if new else site, shapes, started,
                    ended, error))
        subscriptions = _subscriptions.get(_AFTER)
        if subscriptions:
            event = _new(LaunchEvent, (_AFTER, site.kernel, site.specialization, site.grid,
                                       site.block, site.stream, site.shared_bytes, site.types,
                                       shapes, site.target, new, (ended - started) / 1e6,
                                       error, (), started))
            _publish(subscriptions, _AFTER, event)


def _publish(subscriptions: tuple, kind: EventKind, event: LaunchEvent) -> None:
    for subscription in subscriptions:  # events.publish, inline
        try:
            subscription.fn(event)
        except Exception as exc:  # noqa: BLE001 - a listener must not break a launch
            events.report_failure(subscription.fn, kind, exc)  # (it finds the user's line)


def type_names(spec) -> tuple:
    """The specialisation's argument types as text, spelled once."""
    types = spec.type_names
    if types is None:
        types = spec.type_names = tuple(str(ty) for ty in spec.argtypes)
    return types


def shape_positions(args: tuple) -> tuple:
    """Which of a launch's arguments have a shape to record: arrays, not scalars (a native
    part accepts only arguments of the exact classes it was built for, so these positions hold
    for every launch it makes)."""
    return tuple(k for k, value in enumerate(args)
                 if hasattr(value, "shape") and not isinstance(value, np.generic))


def _shape_reader(positions: tuple | None):
    """A function `args -> the shapes at positions` (every argument's for None): indexing and
    attribute reads only (a comprehension over the arguments costs several times as much)."""
    if positions is None:
        return lambda args: tuple([getattr(value, "shape", ()) for value in args])
    if not positions:
        return lambda args: ()
    if len(positions) == 1:
        (p,) = positions
        return lambda args: (args[p].shape,)
    if len(positions) == 2:
        p, q = positions
        return lambda args: (args[p].shape, args[q].shape)
    if len(positions) == 3:
        p, q, r = positions
        return lambda args: (args[p].shape, args[q].shape, args[r].shape)
    if len(positions) == 4:
        p, q, r, u = positions
        return lambda args: (args[p].shape, args[q].shape, args[r].shape, args[u].shape)
    return lambda args: tuple([args[k].shape for k in positions])
