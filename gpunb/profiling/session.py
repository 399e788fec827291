"""`with gpunb.profile() as prof:` - record every kernel launch of a block as a Profile.

A ProfileSession observes gpunb's launches for the block's duration (any thread). When the
launches' timer needs only what happened (CUPTI, the host clock) it records them
(`events.record_launches`): the native launchers keep running and a launch pays for one small
tuple appended to a list, made into a LAUNCH_AFTER event when the profile is read; the
CUDA-event timer and a replay snapshot subscribe to the events before and after each launch.
The records themselves (times, bytes, flops, occupancy, peaks) are made when the profile is
first read (build.py).
"""

from __future__ import annotations

import threading

from gpunb.foundation.events import EventKind, LaunchEvent, publish, record_launches, subscribe
from gpunb.profiling.build import Recording
from gpunb.profiling.records import Profile
from gpunb.runtime.target import active_target

_last: Profile | None = None


def last_profile() -> Profile | None:
    """The Profile of the last `%%gpuprofile` cell (or `gpunb.profile()` block), else None."""
    return _last


def remember(profile: Profile) -> None:
    global _last
    _last = profile


class ProfileSession:
    """Context manager recording launches; `.profile` is the Profile once the block has ended."""

    def __init__(self, *, timer: str = "auto", snapshot=None):
        if timer not in ("auto", "cupti", "events", "host"):
            raise ValueError(f"gpunb.profile: timer {timer!r}: expected auto, cupti, events "
                             "or host")
        self.prefer = timer
        self.snapshot = snapshot  # a replay Snapshot that copies each launch's inputs
        self.profile: Profile | None = None
        self._recording: Recording | None = None
        self._started: threading.local | None = None  # per thread: tokens of launches begun
        self._subscription = None

    def __enter__(self) -> ProfileSession:
        recording = self._recording = Recording(self.prefer)
        # the timer of the active target starts now, before the first launch (CUPTI records
        # from this instant). Listening to both events, a launch on another target gets its
        # timer at that launch; listening after launches only, a CPU-target launch is timed by
        # its event's host time and a GPU launch in a CPU-target profile is reported untimed
        timer = recording.timer_for(_default_target())
        if self.snapshot is None and not timer.needs_before:
            self._subscription = record_launches(recording.entries)
        else:
            self._started = threading.local()
            self._subscription = subscribe((EventKind.LAUNCH_BEFORE, EventKind.LAUNCH_AFTER),
                                           self._on_launch)
        return self

    def __exit__(self, *exc) -> None:
        self.finish(Profile())

    def finish(self, profile: Profile) -> Profile:
        """End the block: `profile` (empty until now) becomes its Profile, made when read."""
        self._subscription.close()
        recording = self._recording
        recording.stop()
        profile._recording = recording
        self.profile = profile
        remember(profile)
        # the notebook's side panel lists it; a subscriber that reads it makes its records
        publish(EventKind.PROFILE, profile)
        return profile

    def _on_launch(self, event: LaunchEvent) -> None:
        stack = getattr(self._started, "stack", None)
        if stack is None:
            stack = self._started.stack = []
        timer = self._recording.timer_for(event.target)
        if event.kind is EventKind.LAUNCH_BEFORE:
            if self.snapshot is not None:
                self.snapshot.add(event)
            stack.append(timer.before(event))
            return
        self._recording.add(event, timer.after(event, stack.pop() if stack else None))


def _default_target() -> str:
    try:
        return active_target(None)
    except Exception:  # noqa: BLE001
        return "cpu"


def profile(*, timer: str = "auto") -> ProfileBlock:
    """Record every kernel launch in the block: `with gpunb.profile() as prof: ...`, then
    `prof.launches`, `prof.summary()`, `prof.to_json()`, `prof.to_pandas()`.

    On a GPU, launches are timed by CUPTI (cupti-python, the `[profile]` extra; other libraries'
    kernels on the context are listed too) or by CUDA events when CUPTI cannot be used (a note
    says why); on the CPU target by the host clock, labelled `timing == "host"`. The records
    are made when first read, so the block itself pays only for recording each launch.
    """
    return ProfileBlock(ProfileSession(timer=timer))


class ProfileBlock:
    """The context manager `gpunb.profile()` returns (a class, not a generator: entering and
    leaving a block is part of what a profiled loop pays)."""

    __slots__ = ("_session", "_handle")

    def __init__(self, session: ProfileSession):
        self._session = session
        self._handle: Profile | None = None

    def __enter__(self) -> Profile:
        """What `with gpunb.profile() as prof` binds: a Profile, empty inside the block, whose
        records are the block's once it has ended."""
        self._session.__enter__()
        handle = self._handle = Profile()
        return handle

    def __exit__(self, *exc) -> None:
        self._session.finish(self._handle)
