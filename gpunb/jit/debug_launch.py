"""Launches under the debugger: the debug variant of a kernel, its session, its front end.

Three ways in: a kernel whose code calls breakpoint() (its CPU-target specialisation *is* the
debug variant, and its launches go through `launch_under_debugger`); `gpunb.debug(kernel[grid,
block], *args, ...)` for scripts and tests (returns the DebugSession, stopped or finished); and
kernels a `%%gpukernel --break/--trace` cell made (dispatchers with the `debugger` option and a
request attached here). A kernel without any of these compiles and launches as it always did.
"""

from __future__ import annotations

import inspect
import weakref

from gpunb.debugger.errors import DebuggerError
from gpunb.debugger.request import DebugRequest
from gpunb.debugger.session import DebugSession
from gpunb.foundation import config
from gpunb.foundation.errors import LaunchError

# dispatcher -> the DebugRequest its launches use (a %%gpukernel --break cell's kernels)
_requests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def set_request(dispatcher, request: DebugRequest | None) -> None:
    """The breakpoints (or trace) every debug launch of `dispatcher` gets."""
    if request is None:
        _requests.pop(dispatcher, None)
    else:
        _requests[dispatcher] = request


def request_for(dispatcher) -> DebugRequest:
    found = _requests.get(dispatcher)
    if found is None:
        found = DebugRequest()
    if not config.breakpoints_enabled():
        from dataclasses import replace

        found = replace(found, breakpoints=False, breaks=())
    return found


def launch_under_debugger(dispatcher_ref, spec, griddim, blockdim, sharedmem: int, stream,
                          params: int) -> None:
    """A specialisation's `launch` when its code is the debug variant: a session driven by the
    current front end (debugger/frontend.py); raises the launch's error as a plain launch
    would, once the front end lets the launch finish."""
    from gpunb.backends.launch_config import validate_config
    from gpunb.debugger import frontend

    dispatcher = dispatcher_ref()
    program = spec.program
    grid3, block3 = validate_config(griddim, blockdim, program.limits,
                                    sharedmem + program.artifact.resources.shared_bytes,
                                    program.name)
    if grid3[0] * grid3[1] * grid3[2] == 0:
        return
    request = request_for(dispatcher) if dispatcher is not None else DebugRequest()
    session = DebugSession(program, grid3, block3, int(sharedmem), params, request,
                           _arg_names(dispatcher))
    frontend.current()(session)


def debug(launch, *args, breaks=(), thread=None, block=None, trace: bool = False,
          threads=None, stop_on_error: bool = True, timeout: float | None = None,
          trace_bytes: int = 64 << 20) -> DebugSession:
    """Launch `kernel[grid, block]` with `args` under the debugger (the CPU target, whatever the
    active target) and return its session once it stops or ends.

    breaks: lines (of the kernel's file) or (file, line) pairs to stop at, in any thread or only
    in `thread`/`block` ((x, y, z)); breakpoint() calls in the code stop too. trace=True records
    the lines of `threads` ("warp 0" by default, "block 1", "all", "0-63", a thread tuple) and
    runs to the end: the session's `trace` then holds them.
    """
    dispatcher, config_ = _configured(launch)
    request = DebugRequest(breaks=tuple(_break(b) for b in breaks), thread=thread, block=block,
                           breakpoints=config.breakpoints_enabled(),
                           stop_on_error=stop_on_error, trace=trace,
                           trace_threads=_threads_spec(threads), trace_bytes=trace_bytes)
    return start_session(dispatcher, config_, args, request, timeout)


def trace(launch, *args, threads=None, trace_bytes: int = 64 << 20):
    """Run `kernel[grid, block](*args)` once, recording the lines of `threads`; the Trace.
    When the launch fails its error is raised, with the trace up to then as `error.trace`."""
    session = debug(launch, *args, trace=True, threads=threads, trace_bytes=trace_bytes)
    while not session.finished:
        session.wait()
    if session.error is not None:
        session.error.trace = session.trace
        raise session.error
    return session.trace


_POST_MORTEM_HINT = ("fix the launch as its error says; %gpudebug (gpunb.post_mortem()) replays a "
                     "launch that failed inside its kernel: an index out of bounds, a raise "
                     "(debug=True), a launch the watchdog stopped")


def post_mortem(timeout: float | None = None) -> DebugSession:
    """Run the last failed launch again under the debugger (CPU target), stopping at the thread
    and line where it fails (`%gpudebug` in notebooks; pdb.pm() for kernels).

    The replay reads the arguments as they are now: a launch that changed its own inputs
    before failing may not fail the same way again (then a DebuggerError says so)."""
    from gpunb.jit.failures import last_replay

    replay = last_replay()
    if replay is None:
        raise DebuggerError("no kernel launch has failed yet in this process (or its failure "
                            "was in its configuration, before any thread ran)",
                            hint="post-mortem debugging replays the last launch that failed "
                                 "inside its kernel")
    dispatcher, args = replay.dispatcher(), replay.arguments()
    name = replay.failure.describe().split(":", 1)[0]
    if dispatcher is None or args is None:
        raise DebuggerError(f"the failed launch cannot be replayed: its kernel or one of its "
                            f"arrays is gone ({name})",
                            hint="launch it again, then run %gpudebug / gpunb.post_mortem()")
    _refuse_unstoppable(replay.failure, dispatcher.__name__)
    if replay.failure.kind in ("DebuggerError", "DebugQuit"):  # a request it could not meet
        raise DebuggerError(
            f"the last failed launch of '{dispatcher.__name__}' failed in the debugger itself "
            f"({replay.failure.describe()}): no thread of it failed, so there is none to stop at",
            function=dispatcher.__name__, hint=_POST_MORTEM_HINT)
    request = DebugRequest(breakpoints=False, stop_on_error=True)
    runaway = replay.failure.kind == "LaunchTimeoutError"  # no thread fails: it never ends
    try:
        session = start_session(dispatcher, replay.config, args, request,
                                _runaway_wait(timeout) if runaway else timeout)
    except LaunchError as exc:  # its configuration or arguments: refused before threads ran
        if isinstance(exc, DebuggerError):
            raise
        first = (getattr(exc, "message", None) or str(exc)).splitlines()[0]
        raise DebuggerError(
            f"the failed launch of '{dispatcher.__name__}' fails before any of its threads run "
            f"({type(exc).__name__}: {first}): there is no failing thread to stop at",
            function=dispatcher.__name__, hint=_POST_MORTEM_HINT) from None
    if session.state == "stopped" and session.stop.reason in ("error", "raise"):
        return session
    if runaway and not session.finished and _paused(session):
        return session  # stopped where a thread spins, as Ctrl-C in a debug launch does
    session.abort("post-mortem replay")
    what = f"{type(session.error).__name__}: {getattr(session.error, 'message', '')}" \
        if session.error is not None else "it ran to its end without error"
    raise DebuggerError(
        f"replaying the failed launch of '{dispatcher.__name__}' under the debugger did not "
        f"stop at a failing thread ({what})", function=dispatcher.__name__,
        hint=f"the failure was: {replay.failure.describe()}; if the kernel writes an array it "
             "also reads, its inputs have changed since - launch it again with fresh inputs "
             "under gpunb.debug(...)")


# failures no thread of a replay stops at, and why: what to do instead
_UNSTOPPABLE = {
    "RaceError": "a race is found from the launch's record of accesses once it has ended, not "
                 "at a thread",
    "InitcheckError": "an uninitialised read is found from the launch's record of accesses "
                      "once it has ended, not at a thread",
    "KernelFaultError": "a fault ends the launch where it happens, before the debugger can "
                        "stop there",
}


def _refuse_unstoppable(failure, kernel: str) -> None:
    """A DebuggerError for a failure the replay cannot stop at (rather than replaying it and
    blaming changed inputs), showing how to stop at its line instead."""
    why = _UNSTOPPABLE.get(failure.kind)
    if why is None:
        return
    line = failure.loc.line if failure.loc is not None else None
    at = f"breaks=[{line}]" if line else "breaks=[LINE]"
    fix = f"gpunb.debug({kernel}[grid, block], *args, {at}, thread=(x, y, z)) or %%gpukernel " \
          f"--break {line or 'LINE'} --thread x,y,z stops a thread there"
    if failure.kind == "KernelFaultError":
        fix += "; with bounds checks on (the default) an index out of bounds stops at its line"
    raise DebuggerError(f"post-mortem debugging (%gpudebug) cannot stop at the last failure "
                        f"({failure.describe()}): {why}",
                        function=kernel, hint=fix)


# how long the replay of a launch the watchdog stopped runs before it is paused where it spins
# (half the watchdog's limit when one is set, so that the watchdog does not end it first)
RUNAWAY_REPLAY_SECONDS = 2.0


def _runaway_wait(timeout: float | None) -> float:
    limit = config.launch_timeout()
    wait = RUNAWAY_REPLAY_SECONDS if limit is None else min(RUNAWAY_REPLAY_SECONDS, limit / 2)
    return wait if timeout is None else min(wait, timeout)


def _paused(session: DebugSession) -> bool:
    """Pause a running replay at the next line a thread reaches; whether it stopped there."""
    from gpunb.debugger.session import ABANDON_SECONDS

    session.pause()
    if session.stop is None or session.state != "stopped":
        session.wait(ABANDON_SECONDS)
    return session.state == "stopped" and not session.finished


def debug_session():
    """The open debug session (stopped or running: the one a debugger widget drives), or
    None when no debug launch is open."""
    from gpunb.debugger.session import open_sessions

    sessions = open_sessions()
    return sessions[-1] if sessions else None


def last_trace():
    """The Trace of the last tracing launch (%%gpukernel --trace, gpunb.trace), or None."""
    from gpunb.debugger.trace import last

    return last()


def start_session(dispatcher, launch_config, args: tuple, request: DebugRequest,
                  timeout: float | None = None) -> DebugSession:
    """Specialise the debug twin of `dispatcher` for `args`, pack them, start the session."""
    from gpunb.backends.launch_config import validate_config

    twin = debug_twin(dispatcher)
    spec, _ = twin._specialize_for_args(args, None)
    params, writeback = spec.packer.pack(args, spec.argtypes)
    program = spec.program
    griddim, blockdim, _stream, shared = launch_config
    grid3, block3 = validate_config(griddim, blockdim, program.limits,
                                    shared + program.artifact.resources.shared_bytes,
                                    program.name)
    session = DebugSession(program, grid3, block3, int(shared), params, request,
                           _arg_names(dispatcher))
    if writeback:
        session.listeners.append(lambda s, event: s.finished and [fn() for fn in writeback])
    session.start(timeout)
    return session


def debug_twin(dispatcher):
    """The same kernel compiled as the CPU target's debug variant (kept per kernel)."""
    twin = getattr(dispatcher, "_gpunb_debug_twin", None)
    if twin is None or twin.py_func is not dispatcher.py_func:
        options = {k: v for k, v in dispatcher.options.items() if k not in ("debugger",)}
        # the dispatcher's own class: this module is below dispatcher.py (slow_path uses it)
        twin = type(dispatcher)(dispatcher.py_func, target="cpu", debugger=True,
                                signatures=list(dispatcher.declared_signatures), **options)
        dispatcher._gpunb_debug_twin = twin
    return twin


def _configured(launch) -> tuple:
    dispatcher = getattr(launch, "dispatcher", None)
    if dispatcher is None or not hasattr(launch, "griddim"):
        raise DebuggerError("gpunb.debug needs a configured launch: "
                            "gpunb.debug(kernel[grid, block], *args)",
                            hint="index the kernel with its grid and block first")
    return dispatcher, (launch.grid, launch.block, launch.stream, launch.sharedmem)


def _break(item) -> tuple:
    """12 -> (None, 12); ("file.py", 12) -> itself; (device_function, 3) -> its file."""
    if isinstance(item, int):
        return None, item
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], int):
        where = item[0]
        if hasattr(where, "py_func"):
            where = inspect.getsourcefile(where.py_func) or where.py_func.__code__.co_filename
        elif callable(where):
            where = where.__code__.co_filename
        return where, item[1]
    raise DebuggerError(f"breakpoint {item!r}: expected a line number or (file, line)",
                        hint="e.g. breaks=[12] or breaks=[('helpers.py', 7)]")


def _threads_spec(threads):
    if threads is None or isinstance(threads, str):
        return threads or ()
    if isinstance(threads, tuple) and threads and all(isinstance(v, int) for v in threads):
        return (threads,)
    return tuple(threads)


def _arg_names(dispatcher) -> tuple:
    if dispatcher is None:
        return ()
    try:
        return tuple(inspect.signature(dispatcher.py_func).parameters)
    except (TypeError, ValueError):
        return ()
