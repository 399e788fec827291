"""`%%gpukernel` option line -> frozen KernelCellOptions; bad options become a UsageError.

Kept apart from the magics so the parsing rules (and their error messages) are testable alone.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

SHOW_CHOICES = ("ptx", "llvm", "sass", "types", "source", "all")


class OptionError(ValueError):
    """An unusable option line; the magic turns it into IPython's UsageError (no traceback)."""


@dataclass(frozen=True, slots=True)
class KernelCellOptions:
    """What a `%%gpukernel` line asked for."""

    target: str | None = None  # None: the process default (GPUNB_TARGET / gpunb.set_target)
    arch: str | None = None  # PTX arch used by the inspector, e.g. "sm_80"
    show: tuple = ()  # inspector tabs to open after the first compile
    lineinfo: bool = False
    fastmath: bool = False
    no_cache: bool = False
    debug: bool = False
    max_registers: int | None = None
    sanitize: str | None = None  # replay the cell's launches under compute-sanitizer --tool
    racecheck: bool = False  # CPU target: record accesses, raise gpunb.RaceError on races
    graph: str | None = None  # capture the cell's launches and copies into a graph of this name
    timeout: float | None = None  # the watchdog's limit for the cell's launches and GPU waits
    breaks: tuple = ()  # lines of the cell where launches of its kernels stop (the debugger)
    thread: str | None = None  # ... only in this thread ("x,y,z")
    block: str | None = None  # ... of this block
    trace: bool = False  # record the lines of `threads` in each launch (record and replay)
    threads: str | None = None  # which threads --trace records ("warp 0", "block 1", "0-63")

    @property
    def debugger(self) -> bool:
        """The cell's kernels compile as the CPU target's debug variant."""
        return bool(self.breaks) or self.trace

    def jit_options(self) -> dict:
        """Keyword arguments for `gpunb.cuda.jit`: only what was asked for, so defaults stay."""
        options: dict = {}
        if self.target is not None:
            options["target"] = self.target
        if self.lineinfo:
            options["lineinfo"] = True
        if self.fastmath:
            options["fastmath"] = True
        if self.debug:
            options["debug"] = True
        if self.racecheck:
            options["racecheck"] = True
        if self.no_cache:
            options["cache"] = False
        if self.max_registers is not None:
            options["max_registers"] = self.max_registers
        if self.debugger:
            options["debugger"] = True
            options["target"] = "cpu"
        return options

    @property
    def arch_cc(self) -> tuple[int, int] | None:
        return parse_arch(self.arch) if self.arch else None


def parse_arch(arch: str) -> tuple[int, int]:
    """"sm_80" -> (8, 0); "sm_100" -> (10, 0); "sm_90a" -> (9, 0) (foundation/arch.py reads
    every spelling); raises OptionError otherwise."""
    from gpunb.foundation.arch import check_known as read_arch

    try:
        cc = read_arch(arch).cc
    except ValueError as exc:
        raise OptionError(f"arch {arch!r}: {exc}") from None
    return cc


@magic_arguments()
@argument("--target", choices=("cpu", "cuda", "auto"))
@argument("--arch", help="PTX architecture for the inspector, e.g. sm_80")
@argument("--show", action="append", default=[],
          help="open the inspector after the first compile: " + "|".join(SHOW_CHOICES) +
               " (comma-separated or repeated)")
@argument("--lineinfo", action="store_true")
@argument("--fastmath", action="store_true")
@argument("--no-cache", dest="no_cache", action="store_true")
@argument("--debug", action="store_true")
@argument("--racecheck", action="store_true",
          help="CPU target: report data races (gpunb.RaceError)")
@argument("--max-registers", dest="max_registers", type=int)
@argument("--sanitize", choices=("memcheck", "racecheck", "synccheck", "initcheck"))
@argument("--graph", nargs="?", const="graph", metavar="NAME",
          help="capture the cell's launches and copies into a graph bound to NAME (default: "
               "graph); NAME.replay() runs them")
@argument("--timeout", type=float, metavar="S",
          help="abandon a launch (CPU target) or a wait for the GPU that takes longer than S "
               "seconds in this cell (gpunb.LaunchTimeoutError); 0: no limit")
@argument("--break", dest="breaks", action="append", type=int, default=[], metavar="LINE",
          help="stop launches at this line of the cell (repeatable; CPU target)")
@argument("--thread", help="with --break: only in this thread, x[,y[,z]]")
@argument("--block", help="with --break: only in this block, x[,y[,z]]")
@argument("--trace", action="store_true",
          help="record the lines of --threads in each launch (CPU target)")
@argument("--threads", help="with --trace: 'warp W', 'block x,y,z', 'all', 'lo-hi' "
                            "(default: warp 0)")
def gpukernel(line: str = "", cell: str = ""):
    """%%gpukernel: every top-level def in the cell becomes a GPU function (its options, for
    IPython's magic_arguments: `gpukernel.parser` parses them, `gpukernel.__doc__` lists them)."""


def usage(magic) -> str:
    """`usage: %%gpukernel [--target ...] ...` of a magic_arguments stub, on one line."""
    words = magic.parser.format_usage().replace("::", "").split()
    return "usage: %" + " ".join(words)


def parse_kernel_options(line: str) -> KernelCellOptions:
    """Parse a `%%gpukernel` option line; raises OptionError with the usage on any mistake."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise OptionError(f"%%gpukernel: {exc}") from None
    try:
        ns = gpukernel.parser.parse_args(argv)  # IPython's MagicArgumentParser: raises, never exits
    except UsageError as exc:
        raise OptionError(f"%%gpukernel: {exc}\n{usage(gpukernel)}") from None
    show: list[str] = []
    for item in ns.show:
        for name in filter(None, (s.strip().lower() for s in item.split(","))):
            if name not in SHOW_CHOICES:
                raise OptionError(f"%%gpukernel: --show {name}: expected one of "
                                  f"{', '.join(SHOW_CHOICES)}")
            show.append(name)
    if "all" in show:
        show = ["source", "types", "llvm", "ptx", "sass"]
    arch = ns.arch.strip().lower() if ns.arch else None
    if arch is not None:
        try:
            parse_arch(arch)
        except OptionError as exc:
            raise OptionError(f"%%gpukernel: --{exc}") from None
    if ns.graph is not None and not ns.graph.isidentifier():
        raise OptionError(f"%%gpukernel: --graph {ns.graph}: expected a Python name to bind "
                          "the graph to")
    if ns.graph is not None and ns.sanitize:
        raise OptionError("%%gpukernel: --graph and --sanitize cannot go together: a captured "
                          "cell runs nothing to sanitize (sanitize the graph's replay instead)")
    if ns.max_registers is not None and not 16 <= ns.max_registers <= 255:
        raise OptionError(f"%%gpukernel: --max-registers {ns.max_registers}: expected 16..255")
    if ns.timeout is not None and not ns.timeout >= 0:  # also rejects nan
        raise OptionError(f"%%gpukernel: --timeout {ns.timeout}: expected seconds >= 0")
    _check_debugger_options(ns)
    return KernelCellOptions(target=ns.target, arch=arch, show=tuple(dict.fromkeys(show)),
                             lineinfo=ns.lineinfo, fastmath=ns.fastmath, no_cache=ns.no_cache,
                             debug=ns.debug, max_registers=ns.max_registers,
                             sanitize=ns.sanitize, racecheck=ns.racecheck, graph=ns.graph,
                             timeout=ns.timeout,
                             breaks=tuple(ns.breaks), thread=ns.thread, block=ns.block,
                             trace=ns.trace, threads=ns.threads)


def _check_debugger_options(ns) -> None:
    """--break/--trace run on the CPU target; --thread/--block narrow a --break."""
    asked = bool(ns.breaks) or ns.trace
    if asked and ns.target == "cuda":
        raise OptionError("%%gpukernel: --break and --trace run kernels in the CPU target's "
                          "debugger; drop --target cuda (or use --target cpu)")
    if (ns.thread or ns.block) and not ns.breaks:
        raise OptionError("%%gpukernel: --thread and --block choose where a --break stops; "
                          "add --break LINE")
    if ns.threads and not ns.trace:
        raise OptionError("%%gpukernel: --threads chooses what --trace records; add --trace")
    if ns.threads:
        from gpunb.debugger.errors import DebuggerError
        from gpunb.debugger.request import check_threads_spec

        try:
            check_threads_spec(ns.threads)
        except DebuggerError as exc:
            raise OptionError(f"%%gpukernel: --threads {ns.threads!r}: "
                              f"{exc.message.split(': ', 1)[-1]}") from None
    if asked and ns.graph is not None:
        raise OptionError("%%gpukernel: --graph captures the cell's launches without running "
                          "them, and --break/--trace run them in the debugger; use one of them")
    if ns.breaks and ns.trace:
        raise OptionError("%%gpukernel: --break stops a launch and --trace records one without "
                          "stopping; use one of them")
    if any(line < 1 for line in ns.breaks):
        raise OptionError("%%gpukernel: --break LINE: cell lines start at 1")
    for what in ("thread", "block"):
        value = getattr(ns, what)
        if value is not None and not all(p.strip().isdigit() for p in value.split(",")):
            raise OptionError(f"%%gpukernel: --{what} {value!r}: expected x[,y[,z]] "
                              "(non-negative integers)")
