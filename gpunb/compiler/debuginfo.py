"""Line-table debug metadata, so PTX carries `.loc` lines that map back to the Python source.

Only line tables are emitted (no variables or types): enough for the inspector's Source <-> PTX
map and for `lineinfo=True` profiling, at no cost to the generated code.
"""

from __future__ import annotations

import os

from llvmlite import ir


class DebugInfo:
    def __init__(self, module: ir.Module, full: bool = False):
        self.module = module
        # debug=True: a full compile unit (numba's FullDebug), so the PTX carries DWARF sections
        self.full = full
        self.files: dict = {}
        self.unit = None
        module.add_named_metadata("llvm.module.flags", module.add_metadata(
            [ir.Constant(ir.IntType(32), 2), "Debug Info Version", ir.Constant(ir.IntType(32), 3)]))
        module.add_named_metadata("llvm.module.flags", module.add_metadata(
            [ir.Constant(ir.IntType(32), 2), "Dwarf Version", ir.Constant(ir.IntType(32), 4)]))

    def file(self, filename: str):
        found = self.files.get(filename)
        if found is None:
            from gpunb.foundation.sources import debug_source_path

            # a notebook cell's text is written under the cache directory and named here, so
            # the PTX `.file` points at a file that ncu and nvdisasm can open
            path = debug_source_path(filename)
            found = self.files[filename] = self.make_file(os.path.basename(path) or path,
                                                          os.path.dirname(path))
        return found

    def make_file(self, name: str, directory: str):
        """A DIFile (the first one also makes the compile unit)."""
        found = self.module.add_debug_info("DIFile", {"filename": name, "directory": directory})
        if self.unit is None:
            self.unit = self.module.add_debug_info("DICompileUnit", {
                "language": ir.DIToken("DW_LANG_Python"),
                "file": found,
                "producer": "gpunb",
                "runtimeVersion": 0,
                "isOptimized": not self.full,
                "emissionKind": ir.DIToken(self.unit_kind()),
            }, is_distinct=True)
            self.module.add_named_metadata("llvm.dbg.cu", self.unit)
        return found

    def unit_kind(self) -> str:
        """What LLVM emits: `.loc` directives for PTX (the inspector's map, lineinfo), or
        everything (DWARF sections) with debug=True."""
        return "FullDebug" if self.full else "DebugDirectivesOnly"

    def statement(self, low, node):
        """The location of a statement's code (lowering sets it before each statement)."""
        return self.location(node.lineno, node.col_offset, low.subprogram)

    def entry(self, low):
        """The location of a function's first instructions."""
        return self.location(low.typed.source.first_line, 0, low.subprogram)

    def subprogram(self, fn: ir.Function, source):
        return self.make_subprogram(fn, source, source.first_line)

    def make_subprogram(self, fn: ir.Function, source, line: int):
        """fn's DISubprogram, its lines starting at `line`."""
        file = self.file(source.filename)
        subroutine = self.module.add_debug_info("DISubroutineType", {
            "types": self.module.add_metadata([]),
        })
        sp = self.module.add_debug_info("DISubprogram", {
            "name": source.name,
            "linkageName": fn.name,
            "scope": file,
            "file": file,
            "line": line,
            "type": subroutine,
            "isLocal": False,
            "isDefinition": True,
            "scopeLine": line,
            "unit": self.unit,
        }, is_distinct=True)
        fn.set_metadata("dbg", sp)
        return sp

    def location(self, line: int, col: int, scope):
        return self.module.add_debug_info("DILocation", {"line": line, "column": col + 1,
                                                         "scope": scope})
