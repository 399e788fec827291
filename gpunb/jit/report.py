"""Everything `kernel.inspect()` shows about one specialisation, gathered once as plain data.

Each section (types, LLVM, PTX, SASS, resources) is produced through jit/inspection.py; a section
that cannot be produced (no nvdisasm, a compile error) carries its message instead of failing the
whole report, because a learner should still see the parts that work. The report renders itself
as text; the notebook layer registers richer views (the inspector widget) for it with IPython.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

from gpunb.foundation.errors import GpunbError
from gpunb.foundation.sources import debug_source_path

_SASS_LINE = re.compile(r'//## File "(?P<file>[^"]*)", line (?P<line>\d+)')
_SASS_INSTR = re.compile(r"/\*(?P<addr>[0-9a-f]{4,})\*/\s*(?P<text>.*?)\s*;")
_SASS_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
TABS = ("source", "types", "llvm", "ptx", "sass")
TAB_TITLES = {"source": "Source", "types": "Types", "llvm": "LLVM", "ptx": "PTX", "sass": "SASS"}


@dataclass(frozen=True, slots=True)
class KernelReport:
    """One specialisation of one kernel: its code at every stage and how they map to each other."""

    name: str
    signature: str
    target: str  # where the kernel runs ("cpu" or "cuda")
    arch: str  # the PTX/SASS arch shown
    source: str
    source_file: str
    first_line: int
    types: str
    llvm_ir: str
    ptx: str
    sass: str
    line_map: dict  # python line -> [ptx line, ...] (1-based)
    sass_map: dict  # python line -> [sass line, ...] (1-based)
    resources: dict
    problems: dict = field(default_factory=dict)  # section -> why it is missing
    cache: str = ""  # the cache's decision for this specialisation: "miss (new)", "hit (disk)"
    cache_why: str = ""  # that decision's reason as a sentence
    compile_ms: float = 0.0
    # python line -> (SASS instructions, most registers live at one of them, or None when
    # nvdisasm's life ranges are not available)
    sass_counts: dict = field(default_factory=dict)

    @property
    def source_lines(self) -> range:
        return range(self.first_line, self.first_line + len(self.source.splitlines()))

    @property
    def mapped_lines(self) -> list[int]:
        """Source lines of this kernel that produced PTX (the ones a view can link)."""
        own = set(self.source_lines)
        return sorted(line for line in self.line_map if line in own)

    def ptx_to_source(self) -> dict:
        """ptx line -> python line (the inverse of line_map; the last mapping wins)."""
        return _invert(self.line_map)

    def sass_to_source(self) -> dict:
        return _invert(self.sass_map)

    def sass_note(self, line: int) -> str:
        """`5 instr, 9 regs live`: a source line's SASS instructions and the most registers
        live at one of them ("" for a line without SASS)."""
        if line not in self.sass_counts:
            return ""
        count, live = self.sass_counts[line]
        regs = f", {live} reg{'s' if live != 1 else ''} live" if live is not None else ""
        return f"{count} instr{regs}"

    def section(self, tab: str) -> str:
        """The text of one tab: source, types, llvm, ptx or sass."""
        return {"source": self.source, "types": self.types, "llvm": self.llvm_ir,
                "ptx": self.ptx, "sass": self.sass}[tab]

    def text(self, tabs: tuple = ()) -> str:
        """A summary (signature, target, resources, cache, line map), then `tabs` in full."""
        res = ", ".join(f"{k}={v}" for k, v in self.resources.items())
        if not res:  # say why (no ptxas, a bad GPUNB_ARCH...), not only that they are missing
            why = self.problems.get("resources") or self.problems.get("ptx") or ""
            res = f"unknown ({why.splitlines()[0]})" if why.strip() else "unknown"
        out = [f"{self.name} {self.signature}  [runs on {self.target}; PTX for "
               f"{self.arch or '?'}]",
               f"resources: {res}",
               f"cache: {self.cache} (compiled in {self.compile_ms:.0f} ms)",
               f"line map: {len(self.mapped_lines)} source line(s) -> "
               f"{sum(len(v) for v in self.line_map.values())} PTX line(s)"]
        own = [line for line in sorted(self.sass_counts) if line in self.source_lines]
        if own:
            out.append("SASS by line: " + "; ".join(
                f"{line}: {self.sass_note(line)}" for line in own))
        for tab in tabs:
            body = self.section(tab) or self.problems.get(tab, "")
            out.append(f"---- {TAB_TITLES[tab]} ----\n{body.rstrip()}")
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())


def _invert(mapping: dict) -> dict:
    """target line -> source line; a target listed under several lines (an inlined callee's
    instruction is under its own line and its call line) goes to the most specific one."""
    out: dict = {}
    for src, targets in sorted(mapping.items(), key=lambda item: -len(item[1])):
        for target in targets:
            out[target] = src
    return out


def _section(problems: dict, name: str, produce, default=""):
    """Run one inspection step; record a readable reason instead of raising."""
    try:
        return produce()
    except GpunbError as exc:
        problems[name] = str(exc)
    except Exception as exc:  # noqa: BLE001 - one broken tab must not hide the others
        problems[name] = f"{type(exc).__name__}: {exc}"
    return default


def build_report(dispatcher, signature=None, arch: str | None = None) -> KernelReport:
    """Gather a KernelReport; compiles the kernel for `signature` if it was never launched.

    `arch` (sm_XX) asks for PTX/SASS of another architecture than the default inspection arch
    (the current GPU's, else GPUNB_ARCH).
    """
    from gpunb.jit import inspection

    spec = pick_specialization(dispatcher, signature)
    argtypes = spec.argtypes
    problems: dict = {}
    source, first_line, source_file = _source_of(dispatcher)
    types = _section(problems, "types", lambda: dispatcher.inspect_types(argtypes))
    ptx_artifact = _section(problems, "ptx", lambda: inspection.ptx_for(dispatcher, argtypes, arch),
                            None)
    ptx = ptx_artifact.ptx if ptx_artifact is not None else ""
    line_map = {int(line): list(lines) for line, lines in ptx_artifact.line_map} \
        if ptx_artifact is not None else {}
    sass = _section(problems, "sass", lambda: inspection.sass_for(dispatcher, spec, arch))
    own_lines = range(first_line, first_line + len(source.splitlines()))
    sass_map = sass_line_map(sass, debug_source_path(source_file), ptx, line_map, own_lines)
    live = _section(problems, "registers",
                    lambda: inspection.live_registers_for(dispatcher, spec, arch), None) \
        if sass else None
    resources = _section(problems, "resources",
                         lambda: inspection.resources_for(dispatcher, spec, arch), {})
    # the LLVM tab shows the IR the PTX/SASS tabs were made from (the device's), not the host's
    llvm_ir = (ptx_artifact.llvm_ir if ptx_artifact is not None else "") or _section(
        problems, "llvm", lambda: dispatcher.inspect_llvm(argtypes))
    event = spec.cache_event
    return KernelReport(
        name=dispatcher.__name__, signature=str(spec.artifact.signature), target=spec.target,
        arch=arch or _ptx_arch(ptx), source=source, source_file=source_file,
        first_line=first_line, types=types, llvm_ir=llvm_ir, ptx=ptx, sass=sass,
        line_map=line_map, sass_map=sass_map, sass_counts=sass_line_counts(sass, sass_map, live),
        resources=dict(resources or {}), problems=problems,
        cache=event.outcome if event is not None else "", cache_why=event.why if event else "",
        compile_ms=float(spec.compile_ms or 0.0))


def pick_specialization(dispatcher, signature=None):
    """The specialisation to show: the given signature's, else the most recently compiled one."""
    if signature is not None:
        return dispatcher.compile(signature)
    if dispatcher.specializations:
        return next(reversed(dispatcher.specializations.values()))
    if dispatcher.declared_signatures:
        return dispatcher.compile(dispatcher.declared_signatures[0])
    from gpunb.foundation.errors import CompileError

    raise CompileError(f"'{dispatcher.__name__}' has not been compiled yet",
                       hint="launch it once, or pass argument types, e.g. "
                            "kernel.inspect('void(float32[:], float32)')")


def _source_of(dispatcher) -> tuple[str, int, str]:
    func = dispatcher.py_func
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return "# source not available", 1, func.__code__.co_filename
    return "".join(lines), max(first, 1), func.__code__.co_filename


def _ptx_arch(ptx: str) -> str:
    m = re.search(r"^\.target\s+(sm_\w+)", ptx or "", re.M)
    return m.group(1) if m else ""


def sass_line_map(sass: str, source_file: str, ptx: str = "", line_map: dict | None = None,
                  own_lines: range | None = None) -> dict:
    """python line -> [sass line, ...] from nvdisasm -g's `//## File "...", line N` markers.

    The function's padding (NOPs, the closing branch-to-itself) belongs to no line. With the PTX
    and its line map, a call line also gets the SASS that ptxas attributes to the lines of the
    device functions inlined into it (in this file or another cell's; `own_lines` are the
    kernel's), as the PTX view does:
    SASS marked (file, line) came from the PTX under `.loc file line`, and the line map says
    which of this kernel's lines those PTX lines belong to.
    """
    by_loc = _sass_by_location(sass)
    out: dict = {}
    for (path, line), numbers in by_loc.items():
        if not source_file or path == source_file:
            out.setdefault(line, []).extend(numbers)
    if ptx and line_map and own_lines is not None:
        own = set(own_lines)
        ptx_by_loc = _ptx_by_location(ptx)
        for (path, line), numbers in by_loc.items():
            if (not source_file or path == source_file) and line in own:
                continue  # the kernel's own line: not an inlined callee's
            ptx_lines = set(ptx_by_loc.get((path, line), ()))
            for caller, targets in line_map.items():
                if caller in own and ptx_lines & set(targets):
                    out[caller] = sorted(set(out.get(caller, ())) | set(numbers))
    return out


def _sass_by_location(sass: str) -> dict:
    """(file, line) -> [sass line, ...] of the instructions under each nvdisasm -g marker."""
    out: dict = {}
    current = None
    label = None
    for number, text in enumerate((sass or "").splitlines(), start=1):
        m = _SASS_LINE.search(text)
        if m:
            current = (m.group("file"), int(m.group("line")))
            continue
        found = _SASS_LABEL.match(text)
        if found:
            label = found.group(1)
            continue
        instr = _SASS_INSTR.search(text)
        if instr is None:
            continue
        body = instr.group("text")
        padding = body == "NOP" or (label is not None and body == f"BRA `({label})")
        label = None
        if current is not None and not padding:
            out.setdefault(current, []).append(number)
    return out


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")


def _ptx_by_location(ptx: str) -> dict:
    """(file, line) -> [ptx line, ...]: the lines under each `.loc` (files by `.file` index)."""
    lines = ptx.splitlines()
    files = {m.group(1): m.group(2) for text in lines if (m := _PTX_FILE.match(text))}
    out: dict = {}
    current = None
    for number, text in enumerate(lines, start=1):
        m = _PTX_LOC.match(text)
        if m:
            path = files.get(m.group(1))
            current = (path, int(m.group(2))) if path is not None else None
        elif current is not None and text.strip() and not text.lstrip().startswith(("$", "//")):
            out.setdefault(current, []).append(number)
    return out


def sass_line_counts(sass: str, sass_map: dict, live: dict | None) -> dict:
    """python line -> (its SASS instructions, the most registers live at one of them or None),
    joining the -g listing's lines to nvdisasm's life ranges by instruction address."""
    lines = (sass or "").splitlines()
    out = {}
    for source_line, numbers in sass_map.items():
        most = None
        if live is not None:
            found = [live[int(m.group("addr"), 16)] for n in numbers
                     if (m := _SASS_INSTR.search(lines[n - 1])) is not None
                     and int(m.group("addr"), 16) in live]
            most = max(found) if found else None
        out[source_line] = (len(numbers), most)
    return out
