"""NVPTX lowering of wgmma (sm_90a), mixed into CudaAsyncOps: fence / commit_group / wait_group
and setmaxnreg through LLVM 22's intrinsics, wgmma.mma_async as inline PTX (LLVM has no
intrinsic for it). The accumulator array is loaded into the asm's tied operands and stored back,
so once the array is indexed only with constants (cuda.literal_unroll) LLVM's SROA keeps it in
registers, as CUTLASS's `+f` operands are."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cuda.async_common import SM90A
from gpunb.compiler import datamodel as dm


class WgmmaLowering:
    def wgmma_fence(self, low, node) -> None:
        self.need(low, node, SM90A, "cuda.wgmma.fence")
        self.call(low, "llvm.nvvm.wgmma.fence.sync.aligned", dm.void, [], [])

    def wgmma_commit(self, low, node) -> None:
        self.need(low, node, SM90A, "cuda.wgmma.commit_group")
        self.call(low, "llvm.nvvm.wgmma.commit_group.sync.aligned", dm.void, [], [])

    def wgmma_wait(self, low, node, n: int) -> None:
        self.need(low, node, SM90A, "cuda.wgmma.wait_group")
        self.call(low, "llvm.nvvm.wgmma.wait_group.sync.aligned", dm.void, [dm.i64],
                  [ir.Constant(dm.i64, n)])

    def setmaxnreg(self, low, node, count: int, inc: bool) -> None:
        which = "inc" if inc else "dec"
        self.need(low, node, SM90A, f"cuda.setmaxnreg_{which}")
        self.call(low, f"llvm.nvvm.setmaxnreg.{which}.sync.aligned.u32", dm.void, [dm.i32],
                  [ir.Constant(dm.i32, count)])

    def wgmma_mma(self, low, node, spec, acc_ptr, acc_len, a: tuple, b_desc, scale_d) -> None:
        self.need(low, node, SM90A, "cuda.wgmma.mma_async")
        b = low.builder
        count = spec.acc_count
        elem = dm.i32 if spec.acc == "s32" else ir.FloatType()
        slots = [b.gep(acc_ptr, [ir.Constant(dm.i64, i)], source_etype=elem)
                 for i in range(count)]
        # D = A x B when scale_d is a constant False: the old values are no operands, so they
        # need not stay live (in registers) up to this instruction
        fresh = isinstance(scale_d, ir.Constant) and not scale_d.constant
        old = [] if fresh else [b.load(p, typ=elem) for p in slots]
        if a[0] == "desc":
            a_values, a_constraints = [a[1]], ["l"]
            a_text = f"${count}"
        else:
            a_values, a_constraints = _packed_registers(b, a[1], a[3]), ["r"] * 4
            a_text = "{" + ", ".join(f"${count + j}" for j in range(4)) + "}"
        b_index = count + len(a_values)
        text = ("{\n.reg .pred p;\n"
                f"setp.ne.b32 p, ${b_index + 1}, 0;\n"
                f"{spec.ptx()} {{{', '.join(f'${i}' for i in range(count))}}}, {a_text}, "
                f"${b_index}, p{_immediates(spec)};\n}}")
        out = "=r" if spec.acc == "s32" else "=f"
        tied = [str(i) for i in range(len(old))]
        constraints = [out] * count + a_constraints + ["l", "r"] + tied
        values = a_values + [b_desc, b.zext(scale_d, dm.i32)] + old
        result = b.asm(ir.FunctionType(ir.LiteralStructType([elem] * count),
                                       [v.type for v in values]),
                       text, ",".join(constraints), values, side_effect=True)
        for i, slot in enumerate(slots):
            b.store(b.extract_value(result, i), slot)


def _immediates(spec) -> str:
    """imm-scale-a, imm-scale-b (and imm-trans-a/b for 16-bit inputs) of the instruction."""
    if spec.acc == "s32":
        return ""
    scales = f", {-1 if spec.neg_a else 1}, {-1 if spec.neg_b else 1}"
    if spec.ab not in ("f16", "bf16"):
        return scales
    trans_b = f", {int(spec.trans_b)}"
    return scales + trans_b if spec.a_regs else scales + f", {int(spec.trans_a)}" + trans_b


def _packed_registers(b: ir.IRBuilder, pointer, packed: bool) -> list:
    """8 16-bit values of the A fragment as 4 .b32 registers (element 2j in the low half), or
    the 4 registers as the kernel packed them."""
    if packed:
        return [b.load(b.gep(pointer, [ir.Constant(dm.i64, j)], source_etype=dm.i32), typ=dm.i32)
                for j in range(4)]
    half = ir.IntType(16)
    out = []
    for j in range(4):
        lo, hi = (b.load(b.gep(pointer, [ir.Constant(dm.i64, 2 * j + k)], source_etype=half),
                         typ=half) for k in (0, 1))
        out.append(b.or_(b.zext(lo, dm.i32), b.shl(b.zext(hi, dm.i32), ir.Constant(dm.i32, 16))))
    return out
