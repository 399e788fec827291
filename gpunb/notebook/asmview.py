"""How PTX and SASS read in the inspector: file names as the user knows them, SASS in columns.

Line info names a notebook cell by the copy of its text in the cache (`<cache>/sources/<sha1>.py`,
foundation/sources.py), which means nothing to a reader: the listings show `Cell In[3]` instead.
nvdisasm indents each instruction by ~35 columns (address, then a right-aligned predicate field),
which pushes the opcodes off a narrow pane: the SASS listing puts the address, the predicate (when
the kernel has any) and the instruction one space apart. Every function keeps the line count, so
the line maps (python line -> listing lines) stay true.
"""

from __future__ import annotations

import os
import re

_SASS_INSTRUCTION = re.compile(r"^\s*(/\*[0-9a-fA-F]+\*/)\s+(@!?U?P[T0-9]+\s+)?(\S.*)$")
_SASS_FILE = re.compile(r'^(\s*//## File )"([^"]*)"(.*)$')
_PTX_FILE = re.compile(r'^(\s*\.file\s+\d+\s+)"([^"]*)"(.*)$')


def source_label(path: str) -> str:
    """What a reader calls the file line info names: `Cell In[3]` for a cell (or the cache's
    copy of one), the file's name otherwise."""
    from gpunb.foundation.errors import describe_filename
    from gpunb.foundation.sources import cell_label, debug_path_origin, is_cell

    origin = debug_path_origin(path) or path
    if cell_label(origin) or is_cell(origin):
        return describe_filename(origin)
    if os.sep + "sources" + os.sep in path and path.endswith(".py") and origin == path:
        return "a notebook cell"  # a copy made by another process (a disk-cache hit)
    return os.path.basename(path) or path


def tidy_sass(sass: str) -> str:
    """nvdisasm's listing with file names readable and each instruction as
    `/*0090*/ @P0 EXIT ;` (predicates padded to one width), directives indented by two."""
    lines = (sass or "").splitlines()
    predicates = [m.group(2).strip() for m in map(_SASS_INSTRUCTION.match, lines)
                  if m and m.group(2)]
    width = max((len(p) for p in predicates), default=0)
    out = []
    for line in lines:
        instruction = _SASS_INSTRUCTION.match(line)
        named = _SASS_FILE.match(line)
        if instruction:
            address, predicate, rest = instruction.groups()
            pad = f"{(predicate or '').strip():<{width}} " if width else ""
            out.append(f"{address} {pad}{rest.rstrip()}")
        elif named:
            out.append(f"  //## {source_label(named.group(2))}{named.group(3)}")
        elif line[:1].isspace() and line.strip():
            out.append("  " + " ".join(line.split()))
        else:
            out.append(line)
    return "\n".join(out)


def tidy_ptx(ptx: str) -> str:
    """The PTX with each `.file` directive naming the cell or file, not the cache's copy."""
    if ".file" not in (ptx or ""):
        return ptx
    out = []
    for line in ptx.splitlines():
        named = _PTX_FILE.match(line)
        out.append(f'{named.group(1)}"{source_label(named.group(2))}"{named.group(3)}'
                   if named else line)
    return "\n".join(out)
