"""Bytes moved and floating-point operations of one launch, counted from the compiled kernel.

The kernel is compiled for the CUDA target up to optimised LLVM (no GPU needed, so the CPU target
gets the same counts). LLVM's memory-effect attributes on each array's data pointer say what the
kernel does with that array: `readonly` (loaded), `writeonly` (stored), neither (both), `readnone`
(untouched). A launch then moves each loaded array's extent once and each stored array's extent
once: saxpy on n float32 moves 4n (x) + 4n (y) + 4n (out) = 12n bytes. Flops are counted only
where that is exact enough to be useful: a kernel without loops runs its floating-point
instructions (fma counts two) once per thread that does the work, i.e. once per element of the
largest array it stores to; a kernel with loops reports None (not countable statically).
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

from gpunb.foundation import abi
from gpunb.foundation import types as t

_FLOP_OPCODES = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem"})
_FMA_CALLEE = re.compile(r"llvm\.(?:fma|fmuladd|nvvm\.fma\.[a-z.0-9]+)\b")  # two flops each


@dataclass(frozen=True, slots=True)
class ArrayAccess:
    """What one kernel argument's data pointer is used for."""

    index: int  # the argument's position
    reads: bool
    writes: bool


@dataclass(frozen=True, slots=True)
class KernelCounts:
    """Static facts of one specialisation, from its optimised NVPTX LLVM IR."""

    accesses: tuple  # of ArrayAccess, one per array argument
    flops_per_thread: int | None  # None: the kernel loops (not countable statically)
    has_loops: bool
    tensor: object = None  # tensor_flops.TensorCounts: its tensor-core operations
    argtypes: tuple = ()

    def bytes_for(self, args_meta: tuple) -> int:
        """Bytes a launch moves, given (itemsize, size) per argument (None for non-arrays)."""
        total = 0
        for access in self.accesses:
            meta = args_meta[access.index] if access.index < len(args_meta) else None
            if meta is None:
                continue
            itemsize, size = meta
            total += itemsize * size * (int(access.reads) + int(access.writes))
        return total

    def flops_for(self, args_meta: tuple, threads: int, shapes: tuple | None = None,
                  grid: tuple = (1, 1, 1), block: tuple = (1, 1, 1)) -> int | None:
        """Floating-point operations of a launch: per-thread count times the threads that
        work (capped by the largest stored array: threads past its end take the guard). A
        kernel with tensor-core operations counts their FLOPs (tensor_flops.py), looping or
        not, and with loops nothing else."""
        if self.tensor is not None and self.tensor.sites and shapes is not None:
            from gpunb.profiling.tensor_flops import slot_values

            per_thread = self.tensor.flops_for(
                slot_values(self.tensor.params, self.argtypes, shapes, grid, block))
            if per_thread is None:
                return None
            scalar = 0 if self.flops_per_thread is None else self.flops_per_thread
            return (per_thread + scalar) * threads
        if self.flops_per_thread is None:
            return None
        written = [args_meta[a.index][1] for a in self.accesses
                   if a.writes and a.index < len(args_meta) and args_meta[a.index] is not None]
        working = min(threads, max(written)) if written else threads
        return self.flops_per_thread * working


def count_llvm(llvm_ir: str, argtypes: tuple) -> KernelCounts:
    """KernelCounts from a kernel's optimised LLVM IR (NVPTX) and its argument types."""
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(llvm_ir)
    kernel = next((f for f in module.functions if not f.is_declaration), None)
    if kernel is None:
        return KernelCounts((), None, False)
    params = list(kernel.arguments)
    accesses = []
    slot = 0
    for index, ty in enumerate(argtypes):
        width = len(abi.param_slots(ty))
        if isinstance(ty, t.Array) and slot < len(params):
            attrs = {a.decode() if isinstance(a, bytes) else str(a)
                     for a in params[slot].attributes}
            untouched = "readnone" in attrs
            reads = not untouched and "writeonly" not in attrs
            writes = not untouched and "readonly" not in attrs
            accesses.append(ArrayAccess(index, reads, writes))
        slot += width
    loops = _has_back_edge(kernel)
    flops = None if loops else _flops(kernel)
    tensor = None
    body = str(kernel)
    if "mma" in body:
        from gpunb.profiling.tensor_flops import find_sites

        tensor = find_sites(body, tuple(f"%{p.name}" for p in params))
    return KernelCounts(tuple(accesses), flops, loops, tensor, tuple(argtypes))


def _flops(kernel) -> int:
    """Floating-point instructions of the kernel (llvmlite's view of its IR), fma as two."""
    count = 0
    for block in kernel.blocks:
        for instruction in block.instructions:
            opcode = instruction.opcode
            if opcode in _FLOP_OPCODES:
                count += 1
            elif opcode == "call":
                callee = list(instruction.operands)[-1].name  # (a call's last operand)
                if _FMA_CALLEE.match(callee):
                    count += 2
    return count


def _has_back_edge(kernel) -> bool:
    """Whether a branch jumps to a block at or before its own (LLVM keeps blocks in an order
    where every loop has such a branch: its latch jumps back to its header)."""
    blocks = list(kernel.blocks)
    order = {_block_key(block): k for k, block in enumerate(blocks)}
    for k, block in enumerate(blocks):
        for instruction in block.instructions:
            if instruction.opcode not in ("br", "switch", "indirectbr", "callbr"):
                continue
            for operand in instruction.operands:
                if str(operand.type) == "label" and order.get(_block_key(operand), k + 1) <= k:
                    return True
    return False


def _block_key(value) -> str:
    """A block's identity as llvmlite shows it: its name, or its text where it has none."""
    return value.name or str(value)


# specialisation -> its KernelCounts (or None), for as long as the specialisation lives
_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NOT_YET = object()


def counts_for(dispatcher, spec) -> KernelCounts | None:
    """KernelCounts of a specialisation, computed once per specialisation (None if its CUDA
    LLVM cannot be produced, e.g. a feature the CUDA target lacks)."""
    found = _counts.get(spec, _NOT_YET)
    if found is not _NOT_YET:
        return found
    from gpunb.jit import inspection

    try:
        artifact = spec.artifact
        if spec.target != "cuda" or not artifact.llvm_ir.startswith("; ModuleID") \
                or "nvptx" not in artifact.llvm_ir[:400]:
            artifact = inspection.ptx_for(dispatcher, spec.argtypes)
        counts = count_llvm(artifact.llvm_ir, spec.argtypes)
    except Exception:  # noqa: BLE001 - counts are an extra; a profile never fails for them
        counts = None
    _counts[spec] = counts
    return counts


def argument_meta(args: tuple) -> tuple:
    """(itemsize, size) of each array argument, None for anything else."""
    out = []
    for value in args:
        dtype = getattr(value, "dtype", None)
        shape = getattr(value, "shape", None)
        if dtype is None or shape is None or not hasattr(value, "__len__") and shape == ():
            out.append(None)
            continue
        size = 1
        for extent in shape:
            size *= int(extent)
        out.append((int(getattr(dtype, "itemsize", 0)), size))
    return tuple(out)


def meta_from_types(argtypes: tuple, shapes: tuple) -> tuple:
    """argument_meta from the launch event's shapes and the specialisation's argument types,
    so a launch is not inspected while it is being made."""
    out = []
    for ty, shape in zip(argtypes, shapes, strict=False):
        if not isinstance(ty, t.Array):
            out.append(None)
            continue
        size = 1
        for extent in shape:
            size *= int(extent)
        out.append((t.to_dtype(ty.dtype).itemsize, size))
    return tuple(out)
