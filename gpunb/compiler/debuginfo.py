"""Debug metadata: line tables, so PTX carries `.loc` lines that map back to the Python source
(the inspector's Source <-> PTX map, `lineinfo=True` profiling, at no cost to the code), and with
debug=True the variables a debugger shows (cuda-gdb's `info locals`, `print x`): numbers and
bools, as numba-cuda describes them. Arrays, tuples, records and group handles get none yet.
"""

from __future__ import annotations

import os

from llvmlite import ir

from gpunb.foundation import types as t


class DebugInfo:
    def __init__(self, module: ir.Module, full: bool = False):
        self.module = module
        # debug=True: a full compile unit (numba's FullDebug), so the PTX carries DWARF sections
        self.full = full
        self.files: dict = {}
        self.unit = None
        self.basic_types: dict = {}
        self.sizes: dict = {}  # type -> bits, of the described types
        self.scope_files: dict = {}  # id(DISubprogram) -> its DIFile
        self.variables: dict = {}  # (subprogram, name) -> DILocalVariable
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

    def subprogram(self, fn: ir.Function, source, signature=None):
        return self.make_subprogram(fn, source, source.first_line, signature)

    def make_subprogram(self, fn: ir.Function, source, line: int, signature=None):
        """fn's DISubprogram, its lines starting at `line`; with debug=True and `signature`
        (return type, argument types), its DISubroutineType lists them (null: void or a type
        without a description)."""
        file = self.file(source.filename)
        types = []
        if self.full and signature is not None:
            ret, args = signature
            types = [None if isinstance(ret, t.NoneType) else self.type_of(ret)]
            types += [self.type_of(a) for a in args]
        subroutine = self.module.add_debug_info("DISubroutineType", {
            "types": self.module.add_metadata(types),
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
        self.scope_files[id(sp)] = file
        return sp

    def location(self, line: int, col: int, scope):
        return self.module.add_debug_info("DILocation", {"line": line, "column": col + 1,
                                                         "scope": scope})

    # ---- variables (debug=True) ----------------------------------------------------------------

    def type_of(self, ty):
        """The DIBasicType of a number or bool (numba-cuda's encodings); None for a type this
        module does not describe."""
        if ty in self.basic_types:
            return self.basic_types[ty]
        if isinstance(ty, t.Boolean):
            fields = ("DW_ATE_boolean", 8)
        elif isinstance(ty, t.Integer):
            fields = ("DW_ATE_signed" if ty.signed else "DW_ATE_unsigned", ty.bitwidth)
        elif isinstance(ty, t.Float):
            fields = ("DW_ATE_float", ty.bitwidth)
        else:  # (a group handle too: gpunb's holds no bits, numba-cuda's is a 64-bit one)
            fields = None
        found = None
        if fields is not None:
            found = self.module.add_debug_info("DIBasicType", {
                "name": str(ty), "size": fields[1], "encoding": ir.DIToken(fields[0])})
            self.sizes[ty] = fields[1]
        self.basic_types[ty] = found
        return found

    def variable(self, scope, name: str, types: tuple, line: int, arg: int = 0):
        """The DILocalVariable `name` of one function (one per name: SSA versions share it);
        a name holding values of several types is numba's union of them. None when a type has
        no description."""
        key = (id(scope), name)
        if key in self.variables:
            return self.variables[key]
        described = [self.type_of(ty) for ty in types]
        found = None
        if described and None not in described:
            found = self.module.add_debug_info("DILocalVariable", {
                "name": name, "arg": arg, "scope": scope, "file": self.scope_files[id(scope)],
                "line": line,
                "type": described[0] if len(types) == 1 else self.union(types, described)})
        self.variables[key] = found
        return found

    def union(self, types: tuple, described: list):
        """numba's description of a variable that holds values of several types: a union with
        one member per type, named `_<type>`, the largest member's size."""
        members = [self.module.add_debug_info("DIDerivedType", {
            "tag": ir.DIToken("DW_TAG_member"), "name": f"_{ty}", "baseType": d,
            "size": self.sizes[ty]})
            for ty, d in sorted(zip(types, described, strict=True), key=lambda p: str(p[0]))]
        return self.module.add_debug_info("DICompositeType", {
            "tag": ir.DIToken("DW_TAG_union_type"), "elements": self.module.add_metadata(members),
            "size": max(self.sizes[ty] for ty in types)}, is_distinct=True)

    def declare(self, builder: ir.IRBuilder, slot, variable) -> None:
        """llvm.dbg.declare: the variable lives in `slot` (a parameter's stack slot, stable for
        the whole function, as numba-cuda describes parameters)."""
        self._intrinsic(builder, "llvm.dbg.declare", slot, variable)

    def value(self, builder: ir.IRBuilder, value, variable) -> None:
        """llvm.dbg.value: from here on the variable holds `value` (numba-cuda's locals)."""
        self._intrinsic(builder, "llvm.dbg.value", value, variable)

    def _intrinsic(self, builder, name: str, operand, variable) -> None:
        fn = self.module.globals.get(name)
        if fn is None:
            fnty = ir.FunctionType(ir.VoidType(), [ir.MetaDataType()] * 3)
            fn = ir.Function(self.module, fnty, name)
        expression = self.module.add_debug_info("DIExpression", {})
        builder.call(fn, [operand, variable, expression])
