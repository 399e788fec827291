"""Line tables for CPU-target machine code, so that a fault names the kernel's source line.

Host objects carry DWARF line tables whose "line numbers" are code-site ids: site k is entry k
of the artifact's `code_sites`, (file, line, column, function) of a statement. Ids rather than
lines keep the object the same wherever the kernel sits in its file (cache keys leave line
numbers out, and a cached artifact is moved to its new lines by cache/relocate.py, sites and
all). At a fault, faults.py maps the faulting instruction back through the table
(`site_at`). Line tables change no code: LLVM keeps debug locations beside the instructions.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler.debuginfo import DebugInfo


class SiteDebugInfo(DebugInfo):
    """DebugInfo whose locations are code-site ids (collected in `sites`)."""

    def __init__(self, module: ir.Module):
        super().__init__(module)
        self.sites: list = []
        self._ids: dict = {}

    def site(self, filename: str, line: int, col: int, function: str) -> int:
        key = (filename, int(line), int(col), function)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.sites)
            self.sites.append(key)
        return found

    def unit_kind(self) -> str:
        return "LineTablesOnly"  # an object file needs .debug_line (directives alone: asm only)

    def file(self, filename: str):
        # one made-up file: the table holds site ids, whose entries say the real file
        found = self.files.get("")
        if found is None:
            found = self.files[""] = self.make_file("gpunb-code-sites", "")
        return found

    def subprogram(self, fn: ir.Function, source):
        # its prologue's rows say the def line's site (a stack overflow faults there)
        return self.make_subprogram(fn, source, self.def_site(source, source.name) + 1)

    def def_site(self, source, function: str) -> int:
        """The site of a function's `def` line (not its decorators')."""
        tree = source.tree
        return self.site(source.filename, getattr(tree, "lineno", source.first_line),
                         getattr(tree, "col_offset", 0), function)

    def site_location(self, site: int, scope):
        return self.module.add_debug_info("DILocation", {"line": site + 1, "column": 0,
                                                         "scope": scope})

    def statement(self, low, node):
        src = low.typed.source
        site = self.site(src.filename, getattr(node, "lineno", src.first_line),
                         getattr(node, "col_offset", 0), low.typed.name)
        return self.site_location(site, low.subprogram)

    def entry(self, low):
        return self.site_location(self.def_site(low.typed.source, low.typed.name),
                                  low.subprogram)


def runner_location(debug: SiteDebugInfo, fn: ir.Function, source, name: str):
    """A subprogram for the runner (which the kernel's body is inlined into) and the location of
    its code: the kernel's `def` line. Without a subprogram, code inlined into the runner would
    leave the line table."""
    site = debug.def_site(source, name)
    return debug.site_location(site, debug.make_subprogram(fn, source, site + 1))


def site_at(binary: bytes, offset: int) -> int | None:
    """The code site of the instruction `offset` bytes into the object's text section, from its
    line table; None when the object has none or the offset is outside it."""
    import bisect

    rows = _line_rows(binary)
    if not rows:
        return None
    k = bisect.bisect_right(rows, (offset, float("inf"), True)) - 1
    if k < 0 or rows[k][2]:  # before the table, or past the end of a sequence
        return None
    return _nearest_statement(rows, k)


def _nearest_statement(rows: list, k: int) -> int | None:
    """Row k's site; for a row of line 0 (code of no statement: a prologue, where a stack
    overflow faults) the nearest statement before it in its sequence, else after it."""
    for j in range(k, -1, -1):
        if rows[j][2] and j < k:
            break  # the previous sequence (function) ended here
        if rows[j][1] > 0:
            return rows[j][1] - 1
    for j in range(k + 1, len(rows)):
        if rows[j][2]:
            break
        if rows[j][1] > 0:
            return rows[j][1] - 1
    return None


def symbol_offset(binary: bytes, symbol: str) -> int | None:
    """`symbol`'s offset in its section of the object file (ELF), or None."""
    elf = _elf(binary)
    if elf is None:
        return None
    symtab = elf.get_section_by_name(".symtab")
    found = symtab.get_symbol_by_name(symbol) if symtab is not None else None
    return found[0]["st_value"] if found else None


def _elf(binary: bytes):
    if not binary.startswith(b"\x7fELF"):
        return None  # Mach-O (macOS) objects: faults are reported without a line
    try:
        import io

        from elftools.elf.elffile import ELFFile
    except ImportError:  # pyelftools is a dependency; a broken install loses lines only
        return None
    return ELFFile(io.BytesIO(binary))


_rows_cache: dict = {}


def _line_rows(binary: bytes) -> list:
    """(address, line, end of sequence) of the object's line table, sorted (cached)."""
    key = (hash(binary), len(binary))
    found = _rows_cache.get(key)
    if found is None:
        try:
            found = _read_rows(binary)
        except Exception:  # noqa: BLE001 - an unreadable table: the fault has no line
            found = []
        if len(_rows_cache) > 64:
            _rows_cache.clear()
        _rows_cache[key] = found
    return found


def _read_rows(binary: bytes) -> list:
    elf = _elf(binary)
    if elf is None or not elf.has_dwarf_info():
        return []
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=True)
    rows = []
    for cu in dwarf.iter_CUs():
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        for entry in program.get_entries():
            state = entry.state
            if state is not None:
                rows.append((state.address, state.line, bool(state.end_sequence)))
    rows.sort()
    return rows
