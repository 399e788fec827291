"""The CUDA target's tensor-core lowering: WMMA through LLVM's llvm.nvvm.wmma.* intrinsics,
ldmatrix / stmatrix through llvm.nvvm.{ld,st}matrix.*, mma.sync and inline PTX as inline
assembly (the PTX ISA's own spelling, which ptxas schedules as well as an intrinsic). Each
instruction is gated on the compute capability it needs: above the target's, a CompileError at
the call names both."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cuda import ptx_check
from gpunb.compiler import datamodel as dm
from gpunb.compiler.builtins import tensorcore_layouts as tl
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import Fragment

_HALF2 = ir.VectorType(ir.HalfType(), 2)
_SHARED = ir.PointerType(addrspace=3)


def _reg_type(kind: str, vectors: bool) -> ir.Type:
    """The LLVM type of one 32-bit register of `kind` elements: float for f32, <2 x half> for
    float16 pairs in the wmma intrinsics, i32 otherwise."""
    if kind == "f32":
        return ir.FloatType()
    if kind == "f16" and vectors:
        return _HALF2
    return dm.i32


def _bits_of(b: ir.IRBuilder, value, kind: str):
    """An element's bit pattern as an integer of its width."""
    width = tl.KIND_BITS[kind]
    if kind in ("f16", "bf16", "tf32", "f32"):
        return b.bitcast(value, ir.IntType(width))
    return value  # integers and fp8 codes (i8) already are


def pack(b: ir.IRBuilder, values: list, kind: str, vectors: bool) -> list:
    """A lane's elements as 32-bit registers, low element in the low bits (PTX's packing)."""
    reg = _reg_type(kind, vectors)
    if kind == "f32":
        return list(values)
    if reg is _HALF2:
        regs = []
        for k in range(0, len(values), 2):
            v = ir.Constant(_HALF2, ir.Undefined)
            v = b.insert_element(v, values[k], ir.Constant(dm.i32, 0))
            regs.append(b.insert_element(v, values[k + 1], ir.Constant(dm.i32, 1)))
        return regs
    per = 32 // tl.KIND_BITS[kind]
    regs = []
    for k in range(0, len(values), per):
        word = ir.Constant(dm.i32, 0)
        for j in range(per):
            part = b.zext(_bits_of(b, values[k + j], kind), dm.i32) if per > 1 else \
                _bits_of(b, values[k + j], kind)
            word = b.or_(word, b.shl(part, ir.Constant(dm.i32, j * 32 // per))) if j else part
        regs.append(word)
    return regs


def unpack(b: ir.IRBuilder, regs: list, kind: str) -> list:
    """The inverse of pack: registers back to elements of `kind`."""
    if kind == "f32":
        return list(regs)
    width = tl.KIND_BITS[kind]
    per = 32 // width
    elem = dm.value_type(tl.KIND_TYPES[kind])
    out = []
    for reg in regs:
        if reg.type == _HALF2:
            out += [b.extract_element(reg, ir.Constant(dm.i32, j)) for j in range(2)]
            continue
        word = b.bitcast(reg, dm.i32) if reg.type != dm.i32 else reg
        for j in range(per):
            part = b.trunc(b.lshr(word, ir.Constant(dm.i32, j * width)), ir.IntType(width)) \
                if per > 1 else word
            out.append(b.bitcast(part, elem) if kind in ("f16", "bf16", "tf32") else part)
    return out


def _struct_values(b: ir.IRBuilder, value, count: int) -> list:
    if count == 1 and not isinstance(value.type, ir.LiteralStructType):
        return [value]
    return [b.extract_value(value, k) for k in range(count)]


class CudaTensorCores:
    """Lowering of the tensorcore builtins for one CudaTarget."""

    def __init__(self, target, arch: str, ptx_version: int):
        self.target = target
        self.arch = arch  # "sm_90a"
        self.ptx_version = ptx_version  # 78: PTX ISA 7.8
        self.sm = target.cc[0] * 10 + target.cc[1]

    def require(self, low, node, sm: int, what: str) -> None:
        if self.sm >= sm:
            return
        raise low.error(node, f"{what} needs sm_{sm} or newer; this kernel compiles for "
                        f"{self.arch}",
                        f"compile for a GPU of compute capability {sm // 10}.{sm % 10} or "
                        "later (cc=...), or run the kernel on the CPU target, which has every "
                        "tensor-core instruction")

    def _call(self, low, name: str, ret: ir.Type, args: list):
        fn = self.target.intrinsic(low.mb.module, name, ret, [a.type for a in args])
        return low.builder.call(fn, args)

    # ---- WMMA ------------------------------------------------------------------------------

    def _wmma_sm(self, frag: Fragment) -> int:
        shape = f"m{frag.m}n{frag.n}k{frag.k}"
        kinds = tl.WMMA[shape]
        if frag.use != "accumulator":
            return kinds[frag.kind].sm
        return min(s.sm for s in kinds.values() if frag.kind in s.accumulators)

    def wmma_load(self, low, node, frag: Fragment, base, ldm, row_major: bool,
                  space: str | None = None) -> list:
        self.require(low, node, self._wmma_sm(frag), f"wmma.load_matrix_sync of {frag}")
        role = {"matrix_a": "a", "matrix_b": "b", "accumulator": "c"}[frag.use]
        reg = _reg_type(frag.kind, True)
        count = frag.num_elements * tl.KIND_BITS[frag.kind] // 32
        name = (f"llvm.nvvm.wmma.m{frag.m}n{frag.n}k{frag.k}.load.{role}."
                f"{'row' if row_major else 'col'}.stride.{frag.kind}")
        name, base = _in_space(low.builder, name, base, space)
        ret = reg if count == 1 else ir.LiteralStructType([reg] * count)
        regs = _struct_values(low.builder, self._call(low, name, ret, [base, ldm]), count)
        return unpack(low.builder, regs, frag.kind)

    def wmma_store(self, low, node, frag: Fragment, base, ldm, row_major: bool,
                   values: list, space: str | None = None) -> None:
        self.require(low, node, self._wmma_sm(frag), f"wmma.store_matrix_sync of {frag}")
        regs = pack(low.builder, values, frag.kind, True)
        name = (f"llvm.nvvm.wmma.m{frag.m}n{frag.n}k{frag.k}.store.d."
                f"{'row' if row_major else 'col'}.stride.{frag.kind}")
        name, base = _in_space(low.builder, name, base, space)
        self._call(low, name, dm.void, [base, *regs, ldm])

    def mma(self, low, node, op: tl.MmaOp, a: list, b: list, c: list) -> list:
        table = tl.WMMA if op.api == "wmma" else tl.MMA_SYNC
        self.require(low, node, table[op.shape][op.a_kind].sm,
                     f"{'wmma.mma_sync' if op.api == 'wmma' else 'mma.sync'} {op.shape} with "
                     f"{tl.KIND_NAMES[op.a_kind]}")
        if op.api == "wmma":
            return self._wmma_mma(low, op, a, b, c)
        return self._mma_sync(low, op, a, b, c)

    def _wmma_mma(self, low, op: tl.MmaOp, a: list, b: list, c: list) -> list:
        bld = low.builder
        if op.a_kind == "f16":
            suffix = f"{op.d_kind}.{op.c_kind}"
        else:
            suffix = op.a_kind + (".satfinite" if op.satfinite else "")
        name = f"llvm.nvvm.wmma.{op.shape}.mma.{op.a_layout}.{op.b_layout}.{suffix}"
        args = pack(bld, a, op.a_kind, True) + pack(bld, b, op.b_kind, True) + \
            pack(bld, c, op.c_kind, True)
        d_count = op.count("d") * tl.KIND_BITS[op.d_kind] // 32
        ret = ir.LiteralStructType([_reg_type(op.d_kind, True)] * d_count)
        return unpack(bld, _struct_values(bld, self._call(low, name, ret, args), d_count),
                      op.d_kind)

    # ---- mma.sync ---------------------------------------------------------------------------

    def _mma_sync(self, low, op: tl.MmaOp, a: list, b: list, c: list) -> list:
        bld = low.builder
        a_regs = pack(bld, a, op.a_kind, False)
        b_regs = pack(bld, b, op.b_kind, False)
        c_regs = pack(bld, c, op.c_kind, False)
        d_type = _reg_type(op.d_kind, False)
        d_count = len(c_regs)
        letter = "f" if op.d_kind == "f32" else "r"

        def operands(start: int, count: int) -> str:
            return "{" + ", ".join(f"${k}" for k in range(start, start + count)) + "}"

        groups, start = [], 0
        for count in (d_count, len(a_regs), len(b_regs), len(c_regs)):
            groups.append(operands(start, count))
            start += count
        sat = ".satfinite" if op.satfinite else ""
        text = (f"mma.sync.aligned.{op.shape}.row.col{sat}.{op.d_kind}.{op.a_kind}."
                f"{op.b_kind}.{op.c_kind} {', '.join(groups)};")
        constraints = ",".join([f"={letter}"] * d_count + ["r"] * (len(a_regs) + len(b_regs)) +
                               [letter] * len(c_regs))
        ret = ir.LiteralStructType([d_type] * d_count)
        args = a_regs + b_regs + c_regs
        asm = ir.InlineAsm(ir.FunctionType(ret, [x.type for x in args]), text, constraints,
                           side_effect=False)
        out = bld.call(asm, args)
        return unpack(bld, [bld.extract_value(out, k) for k in range(d_count)], op.d_kind)

    # ---- ldmatrix / stmatrix ---------------------------------------------------------------

    def ldmatrix(self, low, node, pointer, ok, num: int, trans: bool, dtype: t.Type) -> list:
        self.require(low, node, tl.LDMATRIX_SM, "ldmatrix")
        b = low.builder
        name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.b16.p3"
        ret = dm.i32 if num == 1 else ir.LiteralStructType([dm.i32] * num)
        regs = _struct_values(b, self._call(low, name, ret, [b.addrspacecast(pointer, _SHARED)]),
                              num)
        return _unpack_b16(b, regs, dtype)

    def stmatrix(self, low, node, pointer, ok, num: int, trans: bool, dtype: t.Type,
                 values: list) -> None:
        self.require(low, node, tl.STMATRIX_SM, "stmatrix")
        b = low.builder
        regs = []
        for k in range(0, len(values), 2):
            if isinstance(dtype, (t.Float, t.BFloat16)):
                # a <2 x half> (or bfloat) bitcast: where the pair came from one packed
                # conversion, the backend keeps its register instead of repacking the halves
                pair = ir.Constant(ir.VectorType(values[k].type, 2), ir.Undefined)
                for j in range(2):
                    pair = b.insert_element(pair, values[k + j], ir.Constant(dm.i32, j))
                regs.append(b.bitcast(pair, dm.i32))
                continue
            lo, hi = (_b16_bits(b, v, dtype) for v in values[k:k + 2])
            regs.append(b.or_(b.zext(lo, dm.i32), b.shl(b.zext(hi, dm.i32),
                                                        ir.Constant(dm.i32, 16))))
        name = f"llvm.nvvm.stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.b16.p3"
        self._call(low, name, dm.void, [b.addrspacecast(pointer, _SHARED), *regs])

    # ---- inline PTX -------------------------------------------------------------------------

    def inline_ptx(self, low, node, template: str, outputs: tuple, inputs: tuple, values: list,
                   volatile: bool, memory: bool) -> list:
        from gpunb.compiler.builtins.inline_ptx import CONSTRAINT_TYPES

        problem = ptx_check.check_inline_ptx(template, outputs, inputs, self.arch,
                                             divmod(self.ptx_version, 10))
        if problem is not None:
            line, message = problem
            where = f" (line {line} of the template)" if template.count("\n") else ""
            raise low.error(_template_line(node.args[0], template, line),
                            f"ptxas rejects this inline PTX{where}: {message}",
                            "check the instruction and its operand types in the PTX ISA; "
                            "%0, %1 ... are the operands in constraint order")
        b = low.builder
        out_types = [dm.value_type(CONSTRAINT_TYPES[o]) for o in outputs]
        ret = dm.void if not outputs else out_types[0] if len(outputs) == 1 else \
            ir.LiteralStructType(out_types)
        constraints = [f"={o}" for o in outputs] + list(inputs)
        if memory:
            constraints.append("~{memory}")
        asm = ir.InlineAsm(ir.FunctionType(ret, [v.type for v in values]),
                           ptx_check.llvm_asm_text(template), ",".join(constraints),
                           side_effect=volatile or not outputs)
        result = b.call(asm, values)
        if not outputs:
            return []
        return [result] if len(outputs) == 1 else \
            [b.extract_value(result, k) for k in range(len(outputs))]


def _in_space(b: ir.IRBuilder, name: str, pointer, space: str | None):
    """The intrinsic's name and pointer for a tile known to be in shared (p3) or global (p1)
    memory: ld.shared / ld.global instead of a generic address."""
    if space == "shared":
        return name + ".p3", b.addrspacecast(pointer, _SHARED)
    if space == "global":
        return name + ".p1", b.addrspacecast(pointer, ir.PointerType(addrspace=1))
    return name + ".p0", pointer


def _b16_bits(b: ir.IRBuilder, value, dtype: t.Type):
    return b.bitcast(value, ir.IntType(16)) if isinstance(dtype, (t.Float, t.BFloat16)) else value


def _unpack_b16(b: ir.IRBuilder, regs: list, dtype: t.Type) -> list:
    out = []
    for reg in regs:
        for j in range(2):
            half = b.trunc(b.lshr(reg, ir.Constant(dm.i32, 16 * j)), ir.IntType(16))
            out.append(b.bitcast(half, dm.value_type(dtype))
                       if isinstance(dtype, (t.Float, t.BFloat16)) else half)
    return out


def _template_line(literal, template: str, line: int):
    """Where line `line` of a template is in the source: its own line when the template is a
    multi-line string literal written out line for line, else the literal."""
    import ast

    lines = template.split("\n")
    if not isinstance(literal, ast.Constant) or len(lines) == 1 or line > len(lines) or \
            getattr(literal, "end_lineno", None) != literal.lineno + len(lines) - 1:
        return literal
    text = lines[line - 1]
    marker = ast.Constant(value=None)
    marker.lineno = marker.end_lineno = literal.lineno + line - 1
    marker.col_offset = len(text) - len(text.lstrip()) if line > 1 else literal.col_offset
    marker.end_col_offset = len(text) if line > 1 else literal.end_col_offset
    return marker
