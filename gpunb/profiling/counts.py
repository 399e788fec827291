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
from dataclasses import dataclass

from gpunb.foundation import abi
from gpunb.foundation import types as t

_FLOP_OPS = re.compile(r"=\s*(?:(?:fast|contract|reassoc|nnan|ninf|nsz|arcp|afn)\s+)*"
                       r"(fadd|fsub|fmul|fdiv|frem)\b")
_FMA_CALL = re.compile(r"call\b[^@]*@llvm\.(?:fma|fmuladd|nvvm\.fma\.[a-z.0-9]+)\b")
_LABEL = re.compile(r"^([\w.\-]+):")
_BRANCH_TARGETS = re.compile(r"label %([\w.\-]+)")


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
    body = str(kernel)
    loops = _has_back_edge(body)
    flops = None if loops else _flops(body)
    tensor = None
    if "mma" in body:
        from gpunb.profiling.tensor_flops import find_sites

        tensor = find_sites(body, tuple(f"%{p.name}" for p in params))
    return KernelCounts(tuple(accesses), flops, loops, tensor, tuple(argtypes))


def _flops(body: str) -> int:
    count = 0
    for line in body.splitlines():
        if _FMA_CALL.search(line):
            count += 2
        elif _FLOP_OPS.search(line):
            count += 1
    return count


def _has_back_edge(body: str) -> bool:
    """Whether a branch jumps to a block at or before its own (LLVM prints blocks in an order
    where every loop has such a branch: its latch jumps back to its header)."""
    order: dict = {"entry": 0}
    current = "entry"
    for line in body.splitlines():
        label = _LABEL.match(line)
        if label:
            current = label.group(1)
            order.setdefault(current, len(order))
            continue
        stripped = line.strip()
        if stripped.startswith(("br ", "switch ")):
            for target in _BRANCH_TARGETS.findall(stripped):
                if target in order and order[target] <= order[current]:
                    return True
    return False


_cache: dict = {}


def counts_for(dispatcher, spec) -> KernelCounts | None:
    """KernelCounts of a specialisation, computed once per specialisation (None if its CUDA
    LLVM cannot be produced, e.g. a feature the CUDA target lacks)."""
    key = id(spec)
    found = _cache.get(key)
    if found is not None and found[0] is spec:
        return found[1]
    from gpunb.jit import inspection

    try:
        artifact = spec.artifact
        if spec.target != "cuda" or not artifact.llvm_ir.startswith("; ModuleID") \
                or "nvptx" not in artifact.llvm_ir[:400]:
            artifact = inspection.ptx_for(dispatcher, spec.argtypes)
        counts = count_llvm(artifact.llvm_ir, spec.argtypes)
    except Exception:  # noqa: BLE001 - counts are an extra; a profile never fails for them
        counts = None
    _cache[key] = (spec, counts)
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
