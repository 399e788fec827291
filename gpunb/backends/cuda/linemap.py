"""Python source line -> PTX lines, from the PTX `.loc` directives and the IR's DWARF inlinedAt.

A `.loc F L C` line says that the instructions after it came from line L of file F. Two things make
that raw map wrong for a reader of one kernel:
- an inlined device function's instructions carry the callee's line (and file, when the helper lives
  in another cell), so the kernel's call line shows none of them. The optimised LLVM IR says where
  each inlined location was called from (`!DILocation(..., inlinedAt: !N)`); following that chain
  to the outermost location gives the kernel line that called it, and the call line then lists the
  callee's instructions too (the callee's own line keeps them as well);
- LLVM writes line 0 for instructions that belong to no single line (merged or compiler-made code):
  those have no source line and get none.
Lines of other files are never mixed with the kernel's own file's lines of the same number.
"""

from __future__ import annotations

import os
import re

# PTX is text (no library parses it) and llvmlite cannot read debug metadata (DILocation fields):
# the `.loc`/`.file` directives and the IR's !DILocation lines are read with these patterns
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_META = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_FIELD = re.compile(r'(\w+):\s*("(?:[^"\\]|\\.)*"|![0-9]+|[^,]+)')


def ptx_line_map(ptx: str, source_file: str = "", llvm_ir: str = "") -> tuple:
    """((source_line, (ptx_line, ...)), ...), 1-based, sorted, for `source_file`'s lines (every
    file's when it is empty), call lines including the instructions of their inlined callees."""
    files = {m.group(1): m.group(2) for m in map(_FILE.match, ptx.splitlines()) if m}
    raw: dict = {}  # (file, line) -> [ptx line]
    current = None
    for number, line in enumerate(ptx.splitlines(), start=1):
        m = _LOC.match(line)
        if m:
            current = (files.get(m.group(1), ""), int(m.group(2))) if m.group(2) != "0" else None
            continue
        stripped = line.strip()
        if current is not None and stripped and not stripped.startswith(("//", "$L", "}", "{",
                                                                             ".loc", ".file")):
            raw.setdefault(current, []).append(number)
        if stripped == "}":
            current = None
    own = _norm(source_file) if source_file else None
    callers = inlined_call_lines(llvm_ir, source_file) if llvm_ir else {}
    mapping: dict = {}
    for (file, line), targets in raw.items():
        if own is None or _norm(file) == own:
            mapping.setdefault(line, set()).update(targets)
        for call_line in callers.get((_norm(file), line), ()):
            mapping.setdefault(call_line, set()).update(targets)
    return tuple((k, tuple(sorted(v))) for k, v in sorted(mapping.items()) if k > 0)


def inlined_call_lines(llvm_ir: str, source_file: str = "") -> dict:
    """{(callee file, callee line): {call line in `source_file`, ...}} from the IR's DILocations
    with `inlinedAt` (the outermost location of each chain is the kernel's own line)."""
    nodes: dict = {}
    for text in llvm_ir.splitlines():
        m = _META.match(text.strip())
        if m:
            nodes[m.group(1)] = (m.group(2), dict(_FIELD.findall(m.group(3))))
    own = _norm(source_file) if source_file else None
    out: dict = {}
    for kind, fields in nodes.values():
        if kind != "DILocation" or "inlinedAt" not in fields:
            continue
        outer = fields
        for _ in range(64):  # chains are short; a cycle in malformed IR must not hang
            parent = nodes.get(outer.get("inlinedAt", "").lstrip("!"))
            if parent is None or parent[0] != "DILocation":
                break
            outer = parent[1]
        call_line = int(outer.get("line", "0"))
        if call_line <= 0 or (own is not None and _scope_file(nodes, outer) != own):
            continue
        callee = (_scope_file(nodes, fields), int(fields.get("line", "0")))
        out.setdefault(callee, set()).add(call_line)
    return out


def _scope_file(nodes: dict, location: dict) -> str:
    """The file path of a location's scope (subprogram or lexical block), normalised."""
    scope = nodes.get(location.get("scope", "").lstrip("!"))
    for _ in range(64):
        if scope is None:
            return ""
        kind, fields = scope
        if "file" in fields:
            file = nodes.get(fields["file"].lstrip("!"))
            if file is not None and file[0] == "DIFile":
                name = _unquote(file[1].get("filename", ""))
                directory = _unquote(file[1].get("directory", ""))
                return _norm(os.path.join(directory, name) if directory else name)
        scope = nodes.get(fields.get("scope", "").lstrip("!"))
    return ""


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _norm(path: str) -> str:
    return os.path.normpath(path) if path else ""
