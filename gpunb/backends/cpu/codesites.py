"""Line tables for CPU-target machine code, so that a fault names the kernel's source line.

Host objects carry DWARF line tables whose "line numbers" are code-site ids: site k is entry k
of the artifact's `code_sites`, (file, line, column, function) of a statement. Ids rather than
lines keep the object the same wherever the kernel sits in its file (cache keys leave line
numbers out, and a cached artifact is moved to its new lines by cache/relocate.py, sites and
all). At a fault, faults.py maps the faulting instruction back through the table
(`site_at`: the object's .debug_line, relocated and decoded here; pyelftools reads the ELF).
Line tables change no code: LLVM keeps debug locations beside the instructions.
"""

from __future__ import annotations

import functools

from llvmlite import ir

from gpunb.compiler.debuginfo import DebugInfo


class SiteDebugInfo(DebugInfo):
    """DebugInfo whose locations are code-site ids (collected in `sites`)."""

    def __init__(self, module: ir.Module):
        super().__init__(module)
        self.sites: list = []
        self._ids: dict = {}

    def site(self, filename: str, line: int, col: int, function: str,
             kind: str = "statement") -> int:
        """The id of a code site; `kind` "def" for a function's def line (its prologue, and
        code optimisation moved away from any one statement)."""
        key = (filename, int(line), int(col), function, kind)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.sites)
            self.sites.append(key)
        return found

    def unit_kind(self) -> str:
        # `.loc` directives only: the object still gets its .debug_line table (the assembler
        # makes it from them) but no .debug_info - measured: no compile cost, where full line
        # tables cost ~5% of a CPU compile
        return "DebugDirectivesOnly"

    def file(self, filename: str):
        # one made-up file: the table holds site ids, whose entries say the real file
        found = self.files.get("")
        if found is None:
            found = self.files[""] = self.make_file("gpunb-code-sites", "")
        return found

    def subprogram(self, fn: ir.Function, source, signature=None):
        # its prologue's rows say the def line's site (a stack overflow faults there); no
        # variables or types here (line tables only), so the signature is not described
        return self.make_subprogram(fn, source, self.def_site(source, source.name) + 1)

    def def_site(self, source, function: str) -> int:
        """The site of a function's `def` line (not its decorators')."""
        tree = source.tree
        return self.site(source.filename, getattr(tree, "lineno", source.first_line),
                         getattr(tree, "col_offset", 0), function, "def")

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


@functools.lru_cache(maxsize=64)
def _line_rows(binary: bytes) -> list:
    """(address, line, end of sequence) of the object's line table, sorted (the objects read
    last are kept: keyed by the bytes themselves, so two objects never share rows)."""
    try:
        return _read_rows(binary)
    except Exception:  # noqa: BLE001 - an unreadable table: the fault has no line
        return []


def _read_rows(binary: bytes) -> list:
    elf = _elf(binary)
    section = elf.get_section_by_name(".debug_line") if elf is not None else None
    if section is None:
        return []
    data = bytearray(section.data())
    _relocate(elf, ".rela.debug_line", data)
    rows: list = []
    offset = 0
    while offset < len(data):
        offset = _line_program(bytes(data), offset, rows)
    rows.sort()
    return rows


def _relocate(elf, name: str, data: bytearray) -> None:
    """Apply the 64-bit absolute relocations (R_X86_64_64, R_AARCH64_ABS64) of `data`: the
    addresses in the line program, as offsets into the code section."""
    relocations = elf.get_section_by_name(name)
    if relocations is None:
        return
    symbols = elf.get_section(relocations["sh_link"])
    absolute = {"EM_X86_64": 1, "EM_AARCH64": 257}.get(elf["e_machine"])
    for rel in relocations.iter_relocations():
        if rel["r_info_type"] != absolute:
            continue
        addend = rel["r_addend"] if relocations.is_RELA() else 0
        value = symbols.get_symbol(rel["r_info_sym"])["st_value"] + addend
        at = rel["r_offset"]
        data[at:at + 8] = (value & (2**64 - 1)).to_bytes(8, "little")


def _uleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _sleb(data: bytes, at: int) -> tuple[int, int]:
    start = at
    value, at = _uleb(data, at)
    bits = 7 * (at - start)
    return (value - (1 << bits) if value & (1 << (bits - 1)) else value), at


def _line_program(data: bytes, at: int, rows: list) -> int:
    """Decode the DWARF 2-4 line program at `at` into rows; returns where the next one
    starts (a DWARF 5 unit is skipped: gpunb's objects are DWARF 4)."""
    length = int.from_bytes(data[at:at + 4], "little")
    end = at + 4 + length
    version = int.from_bytes(data[at + 4:at + 6], "little")
    if version not in (2, 3, 4):
        return end
    header_length = int.from_bytes(data[at + 6:at + 10], "little")
    program = at + 10 + header_length
    h = at + 10
    min_length = data[h]
    h += 2 if version >= 4 else 1  # maximum_operations_per_instruction from v4
    line_base = int.from_bytes(data[h + 1:h + 2], "little", signed=True)
    line_range, opcode_base = data[h + 2], data[h + 3]
    arg_counts = list(data[h + 4:h + 4 + opcode_base - 1])
    _run_program(data, program, end, min_length, line_base, line_range, opcode_base,
                 arg_counts, rows)
    return end


def _run_program(data, at, end, min_length, line_base, line_range, opcode_base, arg_counts,
                 rows) -> None:
    address, line = 0, 1
    while at < end:
        op = data[at]
        at += 1
        if op >= opcode_base:  # special: advance address and line, add a row
            adjusted = op - opcode_base
            address += (adjusted // line_range) * min_length
            line += line_base + adjusted % line_range
            rows.append((address, line, False))
        elif op == 0:  # extended
            size, at = _uleb(data, at)
            sub, body = data[at], at + 1
            if sub == 1:  # end_sequence
                rows.append((address, line, True))
                address, line = 0, 1
            elif sub == 2:  # set_address
                address = int.from_bytes(data[body:body + size - 1], "little")
            at += size
        elif op == 1:  # copy
            rows.append((address, line, False))
        elif op == 2:
            advance, at = _uleb(data, at)
            address += advance * min_length
        elif op == 3:
            delta, at = _sleb(data, at)
            line += delta
        elif op == 8:  # const_add_pc
            address += ((255 - opcode_base) // line_range) * min_length
        elif op == 9:  # fixed_advance_pc
            address += int.from_bytes(data[at:at + 2], "little")
            at += 2
        else:  # file, column, isa (one operand), flags (none), unknown: by the header's counts
            for _ in range(arg_counts[op - 1] if op - 1 < len(arg_counts) else 0):
                _, at = _uleb(data, at)
