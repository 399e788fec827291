"""The magics: %%gpukernel, %gpucache, %gpuinfo and %%gpuprofile.

Each magic parses its line, calls the layer below (dispatcher, cache, runtime) through public
functions, and displays a view object that renders as widget, HTML or text as the frontend allows.
"""

from __future__ import annotations

import contextlib

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display

GPUCACHE_USAGE = ("usage: %gpucache status [--live] | explain NAME | clear [NAME] | dir | on | off")


@magics_class
class GpuMagics(Magics):
    """Magics bound to one shell and to that shell's CellHooks."""

    def __init__(self, shell, hooks):
        super().__init__(shell)
        self.hooks = hooks

    # ---- %%gpukernel --------------------------------------------------------------------------

    @cell_magic
    def gpukernel(self, line: str, cell: str):
        """Every top-level def becomes a GPU function; other statements run as host Python.

        %%gpukernel [--target cpu|cuda|auto] [--arch sm_XX] [--show ptx|llvm|sass|types|all]
                    [--lineinfo] [--fastmath] [--no-cache] [--debug] [--max-registers N]
                    [--sanitize memcheck|racecheck|synccheck|initcheck] [--graph [NAME]]
                    [--timeout S]
                    [--break LINE [--thread x,y,z] [--block x,y,z]] [--trace [--threads T]]

        With --graph NAME the cell's launches and copies are captured into a graph (nothing
        runs), bound to NAME in the notebook and shown; NAME.replay() runs them.

        --timeout S: the watchdog for this cell - a launch on the CPU target, or a wait for the
        GPU, that takes longer than S seconds raises gpunb.LaunchTimeoutError (as
        GPUNB_LAUNCH_TIMEOUT does for a whole process).
        """
        __tracebackhide__ = True  # noqa: F841 - an error in the cell shows the cell, not this
        from gpunb.notebook.cellexec import run_cell
        from gpunb.notebook.options import OptionError, parse_kernel_options

        try:
            options = parse_kernel_options(line)
        except OptionError as exc:
            raise UsageError(str(exc)) from None
        from gpunb.notebook.hooks import current_cell_number

        wrap = make_wrapper(options)
        number = current_cell_number(self.shell)
        body = ipython_syntax(self.shell, cell)  # %timeit, !ls, x? work as in any cell

        def run():
            __tracebackhide__ = True  # noqa: F841
            with cell_errors_shown_from(body, line, number):
                return run_cell(body, line, self.shell.user_ns, wrap, number,
                                ipython_compiler=self.shell.compile)

        def run_watched():  # --timeout: the watchdog's limit while the cell runs
            if options.timeout is None:
                return run()
            from gpunb.foundation import config

            with config.launch_timeout_for(options.timeout):
                return run()

        if options.sanitize:  # run live, then replay the launches under compute-sanitizer
            from gpunb.profiling.api import capture_failure, sanitize_snapshot

            # a cell that crashed (an illegal address) still shows where, then fails
            result, snapshot, failure = capture_failure(run_watched)
            display(sanitize_snapshot(snapshot, options.sanitize, failure=failure))
            if failure is not None:
                raise failure
        elif options.graph:
            result = run_captured(run, options, self.shell.user_ns)
        else:
            result = run_watched()
        if options.show:
            for dispatcher in result.functions.values():
                self.hooks.after_cell.append(ShowWhenCompiled(self.shell, dispatcher,
                                                              options.show, options.arch))
        return result.value

    # ---- %gpucache ----------------------------------------------------------------------------

    @line_magic
    def gpucache(self, line: str):
        """%gpucache status [--live] | explain NAME | clear [NAME] | dir | on | off"""
        from gpunb.notebook import cachecmd

        words = line.split()
        command, args = (words[0], words[1:]) if words else ("status", [])
        handler = getattr(cachecmd, f"cmd_{command}", None)
        if handler is None:
            raise UsageError(f"%gpucache {command}: unknown command\n{GPUCACHE_USAGE}")
        try:
            shown = handler(self.shell, args)
        except cachecmd.CacheCommandError as exc:
            raise UsageError(f"%gpucache {command}: {exc}\n{GPUCACHE_USAGE}") from None
        if shown is not None:
            display(shown)

    # ---- %gpudebug ----------------------------------------------------------------------------

    @line_magic
    def gpudebug(self, line: str = ""):
        """Post-mortem: run the last failed launch again in the CPU target's debugger, stopped
        at the thread and line where it fails (a widget in notebooks, pdb-style commands in a
        terminal)."""
        from gpunb.jit.debug_launch import post_mortem
        from gpunb.notebook.widgets import in_kernel, widgets_available

        if line.strip():
            raise UsageError("%gpudebug takes no arguments: it replays the last failed launch")
        session = post_mortem()
        if in_kernel() and widgets_available():
            from gpunb.notebook.debug_display import show_session

            show_session(session)
            return
        from gpunb.debugger.terminal import drive_in_terminal

        drive_in_terminal(session, session.stop)

    # ---- %gpuinfo -----------------------------------------------------------------------------

    @line_magic
    def gpuinfo(self, line: str = ""):
        """Devices, arch, SMs, memory, driver and toolchain versions, and the target in use."""
        from gpunb.notebook.info import gather

        if line.strip():  # (a stray word was ignored, as if it had chosen something)
            raise UsageError(f"%gpuinfo takes no arguments; got {line.strip()}")
        display(gather())

    # ---- %%gpuprofile -------------------------------------------------------------------------

    @cell_magic
    def gpuprofile(self, line: str, cell: str):
        """Run the cell and profile every kernel launch in it.

        %%gpuprofile [--repeat N] [--warmup N] [--ncu] [--timer auto|events|host] [--timeout S]
        """
        __tracebackhide__ = True  # noqa: F841
        from gpunb.notebook import comm
        from gpunb.notebook.cellexec import run_cell
        from gpunb.notebook.hooks import current_cell_number
        from gpunb.notebook.profile import (
            ProfileOptionError,
            launches_message,
            parse_profile_options,
            profile_cell,
        )
        try:
            options = parse_profile_options(line)
        except ProfileOptionError as exc:
            raise UsageError(str(exc)) from None
        body = ipython_syntax(self.shell, cell)  # line magics inside the cell still work

        number = current_cell_number(self.shell)

        def run():
            __tracebackhide__ = True  # noqa: F841
            with cell_errors_shown_from(body, line, number, magic="gpuprofile"):
                return run_cell(body, line, self.shell.user_ns, None, number,
                                magic="gpuprofile", ipython_compiler=self.shell.compile).value

        value, profile = profile_cell(run, options)
        if comm.panel_connected():  # built only for a panel that reads it
            comm.publish(launches_message(profile))
        display(profile)
        return value


def ipython_syntax(shell, cell: str) -> str:
    """The cell with IPython's syntax (line magics, !shell, x?) turned into Python, line for
    line: a first line of code keeps IPython's cleanups (which drop leading blank lines and
    indentation) from moving the cell's lines, so errors name the lines the user sees."""
    if not any(mark in cell for mark in "%!?"):
        return cell  # plain Python (nearly every cell): nothing to transform
    transformed = shell.transform_cell("pass\n" + cell)
    first, _, rest = transformed.partition("\n")
    return rest if first == "pass" else cell


@contextlib.contextmanager
def cell_errors_shown_from(cell: str, line: str, number, magic: str = "gpukernel"):
    """An exception the cell's own Python raises is shown from the cell's line on (hooks.py
    trims the frames of the magic and of gpunb above it); gpunb's errors show themselves."""
    __tracebackhide__ = True  # noqa: F841
    from gpunb.foundation.errors import GpunbError
    from gpunb.notebook.cellexec import cell_filename_of
    from gpunb.notebook.hooks import CELL_FILE_ATTR

    try:
        yield
    except GpunbError:
        raise
    except Exception as exc:
        try:
            setattr(exc, CELL_FILE_ATTR, cell_filename_of(cell, line, number, magic))
        except AttributeError:  # an exception type with __slots__: keep IPython's view
            pass
        raise


def run_captured(run, options, user_ns: dict):
    """Run the cell inside `gpunb.graph()`; bind the graph to its name and show it."""
    import gpunb

    with gpunb.graph(target=options.target) as graph:
        result = run()
    user_ns[options.graph] = graph
    display(graph)
    return result


def make_wrapper(options):
    """The function that turns each def of a %%gpukernel cell into a GPU function (`--arch`
    becomes its inspection arch: what inspect() shows PTX/SASS for)."""
    from gpunb import cuda

    jit_options = options.jit_options()
    if options.arch:
        jit_options["inspection_arch"] = options.arch

    request = _debug_request(options)

    def wrap(func):
        if getattr(type(func), "__gpunb_function__", False):
            if request is None or func.device:
                return func  # already @cuda.jit: keep the user's own options
            from gpunb.jit.debug_launch import debug_twin, set_request

            twin = debug_twin(func)  # --break/--trace: its debug variant, options kept
            set_request(twin, request)
            return twin
        made = cuda.jit(func, **jit_options)
        if request is not None:
            from gpunb.jit.debug_launch import set_request

            set_request(made, request)
        return made

    return wrap


def _debug_request(options):
    """The DebugRequest of a --break / --trace cell (None otherwise)."""
    if not options.debugger:
        return None
    from gpunb.debugger.request import DebugRequest
    from gpunb.foundation import config

    if options.trace:
        return DebugRequest(trace=True, trace_threads=options.threads or (),
                            breakpoints=False, stop_on_error=False)
    return DebugRequest(breaks=tuple((None, line) for line in options.breaks),
                        thread=options.thread, block=options.block,
                        breakpoints=config.breakpoints_enabled())


class ShowWhenCompiled:
    """After-cell action: display the inspector once the kernel has been compiled."""

    def __init__(self, shell, dispatcher, tabs: tuple, arch: str | None = None):
        self.shell = shell
        self.dispatcher = dispatcher
        self.tabs = tabs
        self.arch = arch

    def __call__(self) -> bool:
        name = self.dispatcher.__name__
        if self.shell.user_ns.get(name) is not self.dispatcher:
            return False  # redefined or deleted: a newer cell owns this name now
        if not self.dispatcher.specializations:
            return True  # not launched yet: keep waiting
        from gpunb.notebook.inspector import inspector_for

        inspector = inspector_for(self.dispatcher, arch=self.arch, tab=self.tabs[0])
        inspector.text_tabs = self.tabs
        display(inspector)
        return False
