"""The debug variant's tables, read back: line sites, inlined bodies, their variables.

An artifact's `debug_sites` name each line check's place (file, line, column, body); its
`debug_frames` describe each body compiled into the kernel (the kernel's own and each inlined
call of a device function): the call's place, the function, its depth, and where every SSA
definition of every variable is kept in a thread's debug area. The cache stores them as JSON,
so lists and tuples are both accepted.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass

from gpunb.debugger.errors import DebuggerError
from gpunb.foundation.errors import SourceLocation, describe_filename


@dataclass(frozen=True, slots=True)
class Site:
    """A line check: where it is and in which body."""

    index: int
    filename: str
    line: int
    col: int
    body: int


@dataclass(frozen=True, slots=True)
class Definition:
    """One SSA definition of a variable (numba types each definition apart)."""

    name: str
    type: str
    kind: str  # "param", "def" or "phi"
    layout: object  # debug_lower.plan_value's layout


@dataclass(frozen=True, slots=True)
class Body:
    """The kernel's body or one inlined call of a device function."""

    index: int
    function: str
    call_file: str
    call_line: int
    parent: int
    depth: int
    names: dict  # variable name -> offset of its "current definition" number
    definitions: tuple  # Definition by number - 1


@dataclass(frozen=True, slots=True)
class Frame:
    """One level of a stopped thread's call stack."""

    function: str
    filename: str
    line: int
    body: int

    def describe(self) -> str:
        return f"{self.function}, {describe_filename(self.filename)}, line {self.line}"


class DebugTables:
    """An artifact's debug tables with the look-ups the debugger needs."""

    def __init__(self, artifact):
        self.kernel = artifact.name
        self.area_bytes = artifact.debug_area
        self.sites = tuple(Site(k, str(s[0]), int(s[1]), int(s[2]), int(s[3]))
                           for k, s in enumerate(artifact.debug_sites))
        self.bodies = tuple(_body(k, f) for k, f in enumerate(artifact.debug_frames))
        self.barrier_sites = tuple(tuple(s) for s in artifact.barrier_sites)
        self.error_sites = tuple(tuple(s) for s in artifact.error_sites)

    def site(self, index: int) -> Site:
        return self.sites[index] if 0 < index < len(self.sites) else self.sites[0]

    def depth(self, site: int) -> int:
        s = self.site(site)
        return self.bodies[s.body].depth if s.body >= 0 else 0

    def stack(self, site: int) -> list[Frame]:
        """The call stack at a line site, outermost (the kernel) first."""
        s = self.site(site)
        if s.body < 0:
            return []
        frames = [Frame(self.bodies[s.body].function, s.filename, s.line, s.body)]
        body = self.bodies[s.body]
        while body.parent >= 0:
            parent = self.bodies[body.parent]
            frames.append(Frame(parent.function, body.call_file, body.call_line, parent.index))
            body = parent
        return frames[::-1]

    def files(self) -> list[str]:
        return list(dict.fromkeys(s.filename for s in self.sites[1:]))

    def sites_at(self, filename: str | None, line: int) -> list[int]:
        """The line sites on `line` of `filename` (None: the kernel's own file)."""
        wanted = self.resolve_file(filename)
        return [s.index for s in self.sites[1:] if s.line == line and s.filename == wanted]

    def resolve_file(self, filename: str | None) -> str:
        """A file the kernel's code comes from: None is the kernel's own; a base name matches."""
        files = self.files()
        if filename is None:
            return self.kernel_file()
        if filename in files:
            return filename
        matches = [f for f in files if os.path.basename(f) == os.path.basename(filename)]
        if len(matches) == 1:
            return matches[0]
        raise DebuggerError(f"no code of kernel '{self.kernel}' comes from {filename!r}",
                            function=self.kernel,
                            hint="its code comes from: " + ", ".join(
                                describe_filename(f) for f in files))

    def kernel_file(self) -> str:
        for s in self.sites[1:]:
            if s.body == 0:
                return s.filename
        return ""

    def code_lines(self, filename: str) -> list[int]:
        return sorted({s.line for s in self.sites[1:] if s.filename == filename})

    def check_line(self, filename: str | None, line: int) -> list[int]:
        """The sites of a breakpoint line, or a DebuggerError at that line (with a caret when
        the line has text) naming the lines that have code."""
        found = self.sites_at(filename, line)
        if found:
            return found
        wanted = self.resolve_file(filename)
        lines = self.code_lines(wanted)
        text = linecache.getline(wanted, line) if line > 0 else ""
        stripped, loc = text.strip(), None
        if not text:
            count = len(linecache.getlines(wanted))
            what = f"is past its end (it has {count} lines)" if count else "cannot be read"
        elif not stripped:
            what = "is empty"
        else:
            what = "is a comment" if stripped.startswith("#") else \
                f"has no statement of kernel '{self.kernel}' (or of a device function it calls)"
            loc = SourceLocation(wanted, line, len(text) - len(text.lstrip()),
                                 len(text.rstrip()))
        hint = None
        if lines:
            after = [n for n in lines if n > line]
            hint = "lines with code: " + _ranges(lines) + \
                (f" (the next after line {line}: {after[0]})" if after else "")
        raise DebuggerError(f"line {line} of {describe_filename(wanted)} {what}: a breakpoint "
                            "there never stops", loc, function=self.kernel, hint=hint)

    def barrier(self, site: int) -> tuple:
        """(file, line, col, what) of a barrier site."""
        return self.barrier_sites[site] if 0 <= site < len(self.barrier_sites) else \
            ("", 0, 0, "a barrier")


def _body(index: int, entry) -> Body:
    call_file, call_line, function, parent, depth, names, definitions = entry
    return Body(index, str(function), str(call_file), int(call_line), int(parent), int(depth),
                {str(n): int(off) for n, off in names},
                tuple(Definition(str(d[0]), str(d[1]), str(d[2]), d[3]) for d in definitions))


def _ranges(lines: list[int]) -> str:
    """[3, 4, 5, 9] -> "3-5, 9"."""
    out, start = [], None
    for k, line in enumerate(lines):
        if start is None:
            start = line
        if k + 1 == len(lines) or lines[k + 1] != line + 1:
            out.append(str(start) if start == line else f"{start}-{line}")
            start = None
    return ", ".join(out)
