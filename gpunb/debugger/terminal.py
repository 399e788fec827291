"""pdb-style commands for a stopped kernel: the terminal front end (also any stdin, e.g. tests).

`n`ext, `s`tep, `r`eturn, `c`ontinue, `sync` (continue to the next barrier), `p expr`, `l`ist,
`w`here, `u`p/`d`own, `vars`, `thread x,y,z`, `block x,y,z`, `warp NAME` / `across NAME` (a
variable across the focused warp / block, divergent lanes marked), `threads`, `shared`,
`barriers`, `b`reak LINE, `cl`ear, `q`uit. Ctrl-C while the launch runs pauses it at the next
line any thread reaches; a second Ctrl-C abandons it.
"""

from __future__ import annotations

import cmd
import sys

from gpunb.debugger.errors import DebuggerError
from gpunb.debugger.session import DebugSession, Finished
from gpunb.debugger.values import format_value, short_value


class KernelDebugger(cmd.Cmd):
    """The command loop over one stopped session; returns when a command resumes it."""

    prompt = "(gpunb) "
    doc_header = "commands (help <command> for one)"

    def __init__(self, session: DebugSession, stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.session = session
        self.resumed = None  # the command that resumed the launch (a bound method)

    # ---- plumbing ------------------------------------------------------------------------------

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def onecmd(self, line: str) -> bool:
        try:
            return super().onecmd(line)
        except DebuggerError as exc:
            self.say(f"*** {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
        except Exception as exc:  # noqa: BLE001 - `p` of a bad expression, as pdb prints it
            self.say(f"*** {type(exc).__name__}: {exc}")
        return False

    def emptyline(self) -> bool:
        return False

    def default(self, line: str) -> bool:
        self.say(f"*** unknown command {line.split()[0]!r}: `help` lists them")
        return False

    def _resume(self, action) -> bool:
        self.resumed = action
        return True

    def announce(self) -> None:
        view = self.session.view()
        self.say(view.headline())
        self._show_line()

    def _show_line(self) -> None:
        for line, text, current in self.session.view().source(0):
            self.say(f"{line:4d} {'->' if current else '  '} {text}")

    # ---- moving --------------------------------------------------------------------------------

    def do_next(self, arg: str) -> bool:
        """n(ext): run the focused thread to its next line in this function."""
        return self._resume(self.session.next)

    def do_step(self, arg: str) -> bool:
        """s(tep): to its next line, into a device function it calls."""
        return self._resume(self.session.step)

    def do_return(self, arg: str) -> bool:
        """r(eturn): until the device function it is in returns."""
        return self._resume(self.session.step_out)

    def do_continue(self, arg: str) -> bool:
        """c(ont(inue)): until a breakpoint, an error or the launch's end."""
        return self._resume(self.session.continue_)

    def do_sync(self, arg: str) -> bool:
        """sync: until the focused thread reaches its next barrier or warp collective."""
        return self._resume(self.session.continue_to_barrier)

    def do_quit(self, arg: str) -> bool:
        """q(uit): abandon the launch (its outputs are undefined) and raise DebugQuit."""
        return self._resume(self._quit)

    def _quit(self, timeout: float | None = None) -> Finished:
        self.session.abort("quit")
        return Finished(self.session.state, self.session.error)

    do_n, do_s, do_r, do_c, do_cont, do_q, do_exit = (do_next, do_step, do_return, do_continue,
                                                      do_continue, do_quit, do_quit)

    def do_EOF(self, arg: str) -> bool:
        """End of input: quit, as pdb does."""
        self.say("")
        return self.do_quit(arg)

    # ---- looking -------------------------------------------------------------------------------

    def do_p(self, arg: str) -> None:
        """p expr: a Python expression over the focused thread's variables."""
        if not arg.strip():
            self.say("*** p needs an expression, e.g. p a[i]")
            return
        self.say(format_value(self.session.view().evaluate(arg)))

    do_pp = do_p

    def do_vars(self, arg: str) -> None:
        """vars: the focused thread's variables with their numba types."""
        view = self.session.view()
        note = view.focus_note()
        if note:
            self.say(note)
            return
        variables = view.variables()
        if not variables:
            self.say("(no variable holds a value yet)")
        for variable in variables:
            self.say(variable.describe())

    do_locals = do_args = do_a = do_vars

    def do_list(self, arg: str) -> None:
        """l(ist): the source around the focused thread's line."""
        for line, text, current in self.session.view().source(5):
            self.say(f"{line:4d} {'->' if current else '  '} {text}")

    do_l = do_list

    def do_where(self, arg: str) -> None:
        """w(here): the focused thread's call stack (the kernel first)."""
        view = self.session.view()
        stack = view.where()
        if not stack:
            self.say(view.focus_note() or "(the thread has not reached a line)")
        level = self.session.frame_level
        current = len(stack) - 1 if level is None else level
        for k, frame in enumerate(stack):
            self.say(f"{'>' if k == current else ' '} {frame.describe()}")

    do_w = do_bt = do_where

    def do_up(self, arg: str) -> None:
        """u(p): look at the caller's frame."""
        self._move_frame(-1)

    def do_down(self, arg: str) -> None:
        """d(own): back toward the innermost frame."""
        self._move_frame(+1)

    do_u, do_d = do_up, do_down

    def _move_frame(self, delta: int) -> None:
        stack = self.session.view().where()
        level = self.session.frame_level
        level = (len(stack) - 1 if level is None else level) + delta
        if not 0 <= level < len(stack):
            self.say("*** oldest frame" if delta < 0 else "*** newest frame")
            return
        self.session.frame_level = level
        self.say(f"> {stack[level].describe()}")

    def do_thread(self, arg: str) -> None:
        """thread x,y,z: focus that thread of the focused block (nothing runs)."""
        self.session.switch(thread=arg or None)
        self._after_switch()

    def do_block(self, arg: str) -> None:
        """block x,y,z: focus the same thread of that block (nothing runs)."""
        self.session.switch(block=arg or None)
        self._after_switch()

    def _after_switch(self) -> None:
        view = self.session.view()
        state = view.focus_state()
        self.say(f"thread {state.thread} of block {state.block}: {state.where()}")
        note = view.focus_note()
        if note:
            self.say(note)

    def do_threads(self, arg: str) -> None:
        """threads: where each thread of the focused block is."""
        for state in self.session.view().block_threads():
            mark = "*" if state.global_index == self.session.focus else " "
            self.say(f"{mark} {state.thread}  {state.where()}")

    def do_warp(self, arg: str) -> None:
        """warp NAME: NAME in each lane of the focused warp (! a lane elsewhere in the code,
        * another value than the focused thread's)."""
        self._table(arg, self.session.view().warp())

    def do_across(self, arg: str) -> None:
        """across NAME: NAME in each thread of the focused block (marks as for warp)."""
        self._table(arg, self.session.view().block_threads())

    def _table(self, name: str, threads: list) -> None:
        name = name.strip()
        if not name:
            self.say("*** give a variable name, e.g. warp i")
            return
        for row in self.session.view().across(name, threads):
            shown = "-" if row.value is None else short_value(row.value)
            mark = "!" if row.diverged else ("*" if row.differs else " ")
            self.say(f"{mark} {row.state.thread}  {shown:>14}  {row.state.where()}")

    def do_shared(self, arg: str) -> None:
        """shared: the block's shared arrays the focused thread holds."""
        arrays = self.session.view().shared_arrays()
        if not arrays:
            self.say("(the focused thread holds no shared array)")
        for name, value in arrays:
            self.say(f"{name} = {value!r}")

    def do_barriers(self, arg: str) -> None:
        """barriers: how many threads of the focused block wait at each barrier."""
        for what, line, count in self.session.view().barrier_waits():
            where = f"{what} (line {line})" if line else what
            self.say(f"{count:6d}  {where}")

    def do_break(self, arg: str) -> None:
        """b(reak) LINE: stop at LINE (of the kernel's file) in any thread."""
        line = arg.strip()
        if not line.isdigit():
            self.say("*** break needs a line number, e.g. b 12")
            return
        self.session.set_breakpoint(int(line))
        self.say(f"breakpoint at line {line}")

    def do_clear(self, arg: str) -> None:
        """cl(ear): remove every breakpoint (breakpoint() calls stop no more either)."""
        self.session.clear_breakpoints()
        self.say("breakpoints cleared")

    do_b, do_cl = do_break, do_clear


def run_in_terminal(session: DebugSession, stdin=None, stdout=None) -> None:
    """Start a session and drive it with commands read from stdin until the launch ends; then
    raise its error as a plain launch would (DebugQuit when it was abandoned)."""
    event = _waiting(session, session.start, stdout or sys.stdout)
    drive_in_terminal(session, event, stdin, stdout)


def drive_in_terminal(session: DebugSession, event, stdin=None, stdout=None) -> None:
    """Drive a started session from its current event (a Stop or Finished) to its end."""
    out = stdout or sys.stdout
    while not isinstance(event, Finished):
        shell = KernelDebugger(session, stdin=stdin, stdout=stdout)
        shell.announce()
        try:
            shell.cmdloop()
        except KeyboardInterrupt:  # at the prompt: as quit
            shell.resumed = shell._quit
        except Exception as exc:  # noqa: BLE001 - e.g. no stdin in this process (nbclient)
            session.abort("no input")
            raise DebuggerError(
                f"'{session.kernel}' stopped in the debugger, but commands cannot be read "
                f"here ({type(exc).__name__}: {exc})", function=session.kernel,
                hint="run it where you can type (a terminal or notebook), drive it with "
                     "gpunb.debug(...), or set PYTHONBREAKPOINT=0 to run without stopping"
            ) from None
        event = _waiting(session, shell.resumed, out)
    if session.trace is not None:
        print(repr(session.trace), file=out)
    session.result()


def _waiting(session: DebugSession, action, out):
    """Run `action` (start or a resume command), then wait for the next event; Ctrl-C pauses
    the launch, a second one abandons it."""
    event = action(0.25)
    interrupts = 0
    while event is None:
        try:
            event = session.wait(0.25)
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts == 1:
                print(f"pausing '{session.kernel}' at the next line a thread reaches "
                      "(Ctrl-C again to abandon the launch)", file=out)
                session.pause(interrupt=True)
            else:
                session.abort("interrupted")
                event = Finished(session.state, session.error)
    return event
