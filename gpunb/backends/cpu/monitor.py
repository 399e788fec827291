"""The launch monitor: a thread that watches running CPU-target launches.

While launches run it ticks every TICK seconds: it puts the guard's signal handlers back in
front (IPython and ipykernel install Python's SIGINT handler afresh around each cell, which
replaces ours: a launch is interruptible from the monitor's first tick on) and it is the
watchdog - a launch still running GPUNB_LAUNCH_TIMEOUT seconds (a cell's --timeout) after the
monitor first saw it is told to stop (its cancel word), and its launcher raises
LaunchTimeoutError; the time a debugger holds a launch stopped (Launch.held) does not count.
With no launch for IDLE_TICKS ticks it sleeps until a launch wakes it (`launch_started`: one
attribute read per launch while it is awake).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

from gpunb.backends.cpu import abi

TICK = 0.05
IDLE_TICKS = 40
_CANCEL = abi.Launch.cancel.offset
_SERIAL = abi.Launch.serial.offset
_HELD = abi.Launch.held.offset


class LaunchMonitor:
    def __init__(self, guard):
        self.guard = guard
        self.asleep = True  # read by every launch: True means "wake me"
        self.event = threading.Event()
        self.thread: threading.Thread | None = None
        self.pid = os.getpid()
        self.first_seen: dict = {}  # (Launch address, serial) -> monotonic time, less held time
        self.last_check = 0.0
        # a forked child has no monitor thread: its first launch starts one
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self.thread, self.asleep, self.event = None, True, threading.Event()

    def launch_started(self) -> None:
        """Called by a launch that found the monitor asleep (or in a forked child)."""
        if self.thread is None or not self.thread.is_alive() or self.pid != os.getpid():
            self.pid = os.getpid()
            self.first_seen.clear()
            self.thread = threading.Thread(target=self._run, name="gpunb-launch-monitor",
                                           daemon=True)
            self.asleep = False
            self.thread.start()
            return
        self.asleep = False
        self.event.set()

    def _run(self) -> None:
        idle = 0
        while True:
            active = self.guard.active_launches()
            if active:
                idle = 0
                self.guard.ensure_handlers()
                self._check_deadlines(active)
            else:
                idle += 1
                self.first_seen.clear()
            if idle <= IDLE_TICKS:
                time.sleep(TICK)
                continue
            self.asleep = True
            self.event.clear()
            # a launch that looked just before `asleep` was set has not woken us: look again
            # now and then rather than sleep through it
            self.event.wait(0.5)
            idle = 0 if self.event.is_set() else IDLE_TICKS + 1
            self.asleep = False

    def _check_deadlines(self, active: set) -> None:
        from gpunb.foundation import config

        now = time.monotonic()
        current = {}
        for address in active:
            key = (address, ctypes.c_uint64.from_address(address + _SERIAL).value)
            since = self.first_seen.get(key)
            if since is None:
                since = now
            elif ctypes.c_int32.from_address(address + _HELD).value:
                since += now - self.last_check  # stopped in a debugger: its clock stands still
            current[key] = since
        self.first_seen, self.last_check = current, now
        limit = config.launch_timeout()
        if limit is None:
            return
        for (address, serial), since in current.items():
            if now - since < limit or ctypes.c_int32.from_address(address + _HELD).value:
                continue
            cancel = ctypes.c_int32.from_address(address + _CANCEL)
            # the same launch still (a Launch is reused by its thread's next launch)
            if cancel.value == abi.CANCEL_NONE and \
                    ctypes.c_uint64.from_address(address + _SERIAL).value == serial:
                cancel.value = abi.CANCEL_TIMEOUT
