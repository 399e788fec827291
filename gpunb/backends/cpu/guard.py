"""Stopping a CPU-target launch from outside, and surviving its faults: the guard's Python side.

Every launch runs through `gpunb_job` (guard_ir.py): a runaway kernel stops within a loop
iteration of its launch's cancel word being set - by Ctrl-C / a Jupyter interrupt (our SIGINT
handler, installed over Python's and calling it), or by the watchdog (monitor.py) - and a fault
in kernel code (invalid address, stack overflow) jumps back to the job instead of killing the
process. Python's own SIGINT handler only runs when the launching thread returns to Python, which
a spinning kernel never does: hence a handler of our own, in machine code, chained to Python's.

Handlers are installed when the guard is built (the process's first CPU launch) and checked again
by the monitor while launches run: IPython and ipykernel install Python's handler afresh around
every cell, which replaces ours. Ours goes over Python's handler only while Python's Python-level
handler is `signal.default_int_handler` (Ctrl-C means KeyboardInterrupt): a program that ignores
SIGINT or handles it itself keeps its own behaviour.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import sys
import threading

from gpunb.backends.cpu import abi
from gpunb.backends.cpu.abi import SLOT_BYTES, SLOT_LAUNCH, SLOTS

_JOB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_INIT = ctypes.CFUNCTYPE(ctypes.c_int32)
_SIG_DFL, _SIG_IGN = 0, 1


class _SigactionLinux(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_uint64 * 16),
                ("flags", ctypes.c_int32), ("restorer", ctypes.c_void_p)]


class _SigactionDarwin(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_uint32),
                ("flags", ctypes.c_int32)]


_Sigaction = _SigactionLinux if sys.platform.startswith("linux") else _SigactionDarwin


class Guard:
    """The process's guard module (machine code) and its signal handlers."""

    def __init__(self):
        import llvmlite.binding as llvm

        from gpunb.backends.cpu.target import host_target_machine
        from gpunb.backends.llvm_lock import LLVM_LOCK

        self.platform = abi.Platform.host()
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.ll")) as f:
            text = f.read()  # guard_ir.py's output (written there, not built at run time)
        with LLVM_LOCK:
            mod = llvm.parse_assembly(text)
            tm = host_target_machine.__wrapped__(opt=0)
            mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
            # no optimisation: nothing here is hot enough to pay for it at the first launch
            self.engine = llvm.create_mcjit_compiler(mod, tm)
            self.engine.finalize_object()
            function = self.engine.get_function_address
            variable = self.engine.get_global_value_address
            self.job_address = function("gpunb_job")
            self.sigint_handler = function("gpunb_guard_sigint")
            self.fault_handler = function("gpunb_guard_fault")
            init = _INIT(function("gpunb_guard_init"))
            platform_values = variable("gpunb_guard_platform")
            self.slots = variable("gpunb_guard_slots")
            self.previous = variable("gpunb_guard_previous")
            self.previous_info = variable("gpunb_guard_previous_info")
        for k, value in enumerate(self.platform.values()):
            ctypes.c_int64.from_address(platform_values + 8 * k).value = value
        if init() != 0:
            raise OSError("gpunb CPU guard: pthread_key_create failed")
        self.job = _JOB(self.job_address)
        self.pid = os.getpid()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.replaced: dict = {}  # signal -> the sigaction ours replaced (restored at exit)
        self.lock = threading.Lock()
        self.ensure_handlers()

    # ---- handlers ------------------------------------------------------------------------------

    def _current(self, signum: int) -> _Sigaction:
        current = _Sigaction()
        self.libc.sigaction(signum, None, ctypes.byref(current))
        return current

    def _install(self, signum: int, handler: int, current: _Sigaction) -> None:
        """Ours over `current`, which it calls for what is not ours (the previous handler is
        written where ours reads it before ours is installed)."""
        plat = self.platform
        ctypes.c_void_p.from_address(self.previous + 8 * signum).value = current.handler
        ctypes.c_int32.from_address(self.previous_info + 4 * signum).value = \
            int(bool(current.flags & plat.sa_siginfo))
        ours = _Sigaction()
        ours.handler = handler
        # SA_NODEFER: a handler that jumps out (the fault handler's _longjmp) must not leave
        # its signal blocked; SA_ONSTACK: a stack overflow is handled on the alternate stack
        ours.flags = plat.sa_siginfo | plat.sa_onstack | plat.sa_nodefer
        self.libc.sigaction(signum, ctypes.byref(ours), None)
        self.replaced[signum] = current

    def ensure_handlers(self) -> None:
        """Ours in front for the fault signals, and for SIGINT while Ctrl-C means
        KeyboardInterrupt. Cheap to repeat: a sigaction query per signal."""
        if os.getpid() != self.pid:
            return
        with self.lock:
            for name in abi.FAULT_SIGNALS:
                signum = int(getattr(signal, name))
                current = self._current(signum)
                if current.handler != self.fault_handler:
                    self._install(signum, self.fault_handler, current)
            self._ensure_sigint()

    def _ensure_sigint(self) -> None:
        if not _python_handles_sigint():
            return
        current = self._current(signal.SIGINT)
        handler = current.handler or _SIG_DFL
        if handler == self.sigint_handler or handler in (_SIG_DFL, _SIG_IGN):
            return  # ours already, or Ctrl-C kills or is ignored: nothing to chain to
        self._install(signal.SIGINT, self.sigint_handler, current)

    def restore(self) -> None:
        """At exit: the replaced handlers back, before this module's code is freed."""
        if os.getpid() != self.pid:
            return
        with self.lock:
            for signum, previous in sorted(self.replaced.items()):
                current = self._current(signum)
                if current.handler in (self.fault_handler, self.sigint_handler):
                    self.libc.sigaction(signum, ctypes.byref(previous), None)
                # else: replaced since - whoever did it keeps theirs
            self.replaced.clear()

    # ---- the registry, for the monitor ---------------------------------------------------------

    def active_launches(self) -> set:
        """Addresses of the Launch structures some host thread runs now."""
        found = set()
        for i in range(SLOTS):
            launch = ctypes.c_void_p.from_address(self.slots + i * SLOT_BYTES + SLOT_LAUNCH).value
            if launch:
                found.add(launch)
        return found

    def forget_threads(self) -> None:
        """In a forked child: the parent's other threads are gone; so are their entries."""
        ctypes.memset(self.slots, 0, SLOTS * SLOT_BYTES)
        self.pid = os.getpid()


def _python_handles_sigint() -> bool:
    """Whether Ctrl-C raises KeyboardInterrupt here (Python's default SIGINT handler)."""
    try:
        return signal.getsignal(signal.SIGINT) is signal.default_int_handler
    except (ValueError, TypeError):
        return False


_guard: Guard | None = None
_guard_lock = threading.Lock()
_guard_failed = False


def host_guard() -> Guard | None:
    """This process's guard, built on first use; None where it cannot be (no pthreads or
    signals: launches then run unguarded, as before)."""
    global _guard, _guard_failed
    guard = _guard
    if guard is not None or _guard_failed:
        return guard
    with _guard_lock:
        if _guard is None and not _guard_failed:
            if sys.platform == "win32":
                _guard_failed = True
                return None
            try:
                _guard = Guard()
            except (OSError, RuntimeError, AttributeError):
                _guard_failed = True
                return None
            atexit.register(_guard.restore)
            os.register_at_fork(after_in_child=_guard.forget_threads)
        return _guard
