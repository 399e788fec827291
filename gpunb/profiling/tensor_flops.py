"""Tensor-core FLOPs of a launch, counted from the kernel's optimised NVPTX LLVM IR.

Each tensor-core operation is found by its form in the IR: a `llvm.nvvm.wmma.<shape>.mma`
call, or inline PTX `mma.sync.aligned.<shape>` / `wgmma.mma_async...m64n<N>k<K>`. It does
2 m n k FLOPs per warp (per warpgroup for wgmma). Its launch count is the product of the trip
counts of the loops around it. A trip count is evaluated from the loop's exit test over the
launch's values: array shapes, and the grid and block sizes. A loop whose trip count depends on
anything else (a scalar argument, a loaded value) makes the count unknown (None). A tensor-core
operation under an `if` inside the loops is counted as if every iteration took it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WMMA = re.compile(r"@llvm\.nvvm\.wmma\.m(\d+)n(\d+)k(\d+)\.mma\.")
_MMA_SYNC = re.compile(r"mma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)\.")
_WGMMA = re.compile(r"wgmma\.mma_async[.\w:]*?\.m64n(\d+)k(\d+)\.")
_LABEL = re.compile(r"^([\w.\-]+):")
_DEF = re.compile(r"^\s*(%[\w.\-]+) = (.*)$")
_BR_COND = re.compile(r"br i1 (%[\w.\-]+), label %([\w.\-]+), label %([\w.\-]+)")
_BR = re.compile(r"\bbr\b.*")
_TARGETS = re.compile(r"label %([\w.\-]+)")


@dataclass(frozen=True, slots=True)
class TensorSite:
    """One tensor-core operation: FLOPs per thread per execution, and the loops around it."""

    flops_per_thread: float
    loops: tuple  # (header label, latch label) of each enclosing loop, outermost first


@dataclass(frozen=True, slots=True)
class TensorCounts:
    sites: tuple
    body: str  # the kernel's IR (for evaluating trip counts)
    params: tuple  # the kernel's LLVM parameter names, in order

    def flops_for(self, slot_values: dict) -> int | None:
        """FLOPs per thread of one launch, given values of parameter slots (by name) and of
        the special registers; None when a trip count cannot be evaluated."""
        if not self.sites:
            return None
        evaluator = _Evaluator(self.body, slot_values)
        total = 0.0
        for site in self.sites:
            trips = 1
            for header, latch in site.loops:
                count = evaluator.trip_count(header, latch)
                if count is None:
                    return None
                trips *= count
            total += site.flops_per_thread * trips
        return int(round(total))


def _site_flops(line: str) -> float | None:
    for pattern, lanes in ((_WMMA, 32), (_MMA_SYNC, 32)):
        found = pattern.search(line)
        if found:
            m, n, k = (int(x) for x in found.groups())
            return 2.0 * m * n * k / lanes
    found = _WGMMA.search(line)
    if found:
        n, k = (int(x) for x in found.groups())
        return 2.0 * 64 * n * k / 128
    return None


def find_sites(kernel_ir: str, params: tuple) -> TensorCounts:
    """The tensor-core operations of one kernel function's IR and the loops around each."""
    lines = kernel_ir.splitlines()
    order, block_of, current = {"entry": 0}, [], "entry"
    for line in lines:
        label = _LABEL.match(line)
        if label:
            current = label.group(1)
            order.setdefault(current, len(order))
        block_of.append(current)
    blocks = _blocks(kernel_ir)
    loops = []  # (header, latch) of each back edge to a block whose phis name the latch
    for line, block in zip(lines, block_of, strict=True):
        if line.strip().startswith("br "):
            for target in _TARGETS.findall(line):
                if target in order and order[target] <= order[block] and \
                        f"%{block} ]" in blocks.get(target, ""):
                    loops.append((target, block))
    sites = []
    for line, block in zip(lines, block_of, strict=True):
        flops = _site_flops(line)
        if flops is None:
            continue
        here = order[block]
        around = [(h, latch) for h, latch in loops if order[h] <= here <= order[latch]]
        around.sort(key=lambda loop: order[loop[0]])
        sites.append(TensorSite(flops, tuple(around)))
    return TensorCounts(tuple(sites), kernel_ir, params)


_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "shl": lambda a, b: a << b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
           "xor": lambda a, b: a ^ b, "lshr": lambda a, b: a >> b, "ashr": lambda a, b: a >> b,
           "sdiv": lambda a, b: int(a / b) if b else None,
           "udiv": lambda a, b: a // b if b else None,
           "srem": lambda a, b: a - b * int(a / b) if b else None,
           "urem": lambda a, b: a % b if b else None}
_INTRINSICS = {"smax": max, "umax": max, "smin": min, "umin": min}
_SREGS = {"tid": "tid", "ntid": "ntid", "ctaid": "ctaid", "nctaid": "nctaid"}


class _Evaluator:
    """Values of integer SSA names computed from parameters and constants (a small interpreter
    of the instructions loop bounds are made of)."""

    def __init__(self, body: str, slot_values: dict):
        self.defs = {}
        for line in body.splitlines():
            found = _DEF.match(line)
            if found:  # (without trailing metadata: ", !dbg !12")
                self.defs[found.group(1)] = found.group(2).split(", !")[0]
        self.blocks = _blocks(body)
        self.values = dict(slot_values)

    def value(self, token: str, depth: int = 0):
        token = token.strip()
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        if token in ("true", "false"):
            return int(token == "true")
        if token in self.values:
            return self.values[token]
        if depth > 40 or token not in self.defs:
            return None
        result = self._instruction(self.defs[token], depth + 1)
        self.values[token] = result
        return result

    def _instruction(self, text: str, depth: int):
        words = text.replace(",", " ").split()
        op = words[0]
        if op in _BINARY:
            operands = [w for w in words[1:] if w not in ("nuw", "nsw", "exact", "disjoint")]
            a, b = self.value(operands[-2], depth), self.value(operands[-1], depth)
            return None if a is None or b is None else _BINARY[op](a, b)
        if op in ("trunc", "zext", "sext", "freeze"):
            return self.value(words[2], depth)
        if op == "select":
            cond = self.value(words[2], depth)
            if cond is None:
                return None
            return self.value(words[4] if cond else words[6], depth)
        if op == "icmp":
            a, b = self.value(words[3], depth), self.value(words[4], depth)
            return None if a is None or b is None else int(_compare(words[1], a, b))
        if op in ("call", "tail"):
            return self._call(text, depth)
        return None

    def _call(self, text: str, depth: int):
        found = re.search(r"@llvm\.(smax|umax|smin|umin)\.i\d+\((.*)\)", text)
        if found:
            args = [a.split()[-1] for a in found.group(2).split(",")]
            values = [self.value(a, depth) for a in args]
            return None if None in values else _INTRINSICS[found.group(1)](*values)
        found = re.search(r"@llvm\.nvvm\.read\.ptx\.sreg\.(\w+)\.([xyz])", text)
        if found:
            return self.values.get(f"sreg.{found.group(1)}.{found.group(2)}")
        return None

    def trip_count(self, header: str, latch: str) -> int | None:
        """Iterations of the loop from `header` to `latch` (a rotated loop: the latch tests)."""
        branch = _BR_COND.search(self.blocks.get(latch, ""))
        if branch is None:
            return None
        cond, taken, other = branch.groups()
        test = self.defs.get(cond, "")
        continues = taken == header
        if test.startswith("phi i1"):  # a flag: the first pass's value, then the latch's
            incoming = dict((b, v.strip()) for v, b in
                            re.findall(r"\[\s*([^,\]]+),\s*%([\w.\-]+)\s*\]", test))
            later = self.value(incoming.pop(latch, "x"))
            first = self.value(next(iter(incoming.values()), "x")) if len(incoming) == 1 \
                else None
            if first is None or later is None:
                return None
            if bool(first) != continues:
                return 1
            return 2 if bool(later) != continues else None
        if not test.startswith("icmp"):
            return None
        words = test.replace(",", " ").split()
        pred, lhs, rhs = words[1], words[3], words[4]
        induction = self._induction(header, lhs) or self._induction(header, rhs)
        if induction is None:
            return None
        start, step, next_name = induction
        bound = self.value(rhs if lhs == next_name else lhs)
        if start is None or bound is None or not step:
            return None
        forward = lhs == next_name

        def exits(i: int) -> bool:  # the latch's test after iteration i
            value = start + step * i
            holds = _compare(pred, value, bound) if forward else _compare(pred, bound, value)
            return holds != continues

        if pred in ("eq", "ne"):  # leaves exactly when the induction variable meets the bound
            if (bound - start) % step:
                return None
            i = (bound - start) // step
            return i if i >= 1 and exits(i) else (1 if exits(1) else None)
        lo, hi = 1, 1
        while not exits(hi):
            hi *= 2
            if hi > 1 << 40:
                return None
        while lo < hi:  # the first iteration after which the loop leaves
            mid = (lo + hi) // 2
            if exits(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _induction(self, header: str, name: str):
        """(start, step, name) when `name` is `add %phi, step` of a phi in `header`."""
        text = self.defs.get(name, "")
        words = text.replace(",", " ").split()
        if not words or words[0] != "add":
            return None
        operands = [w for w in words[1:] if w not in ("nuw", "nsw")][1:]
        if len(operands) != 2:
            return None
        for phi, step in (operands, operands[::-1]):
            phi_text = self.defs.get(phi, "")
            if phi_text.startswith("phi") and re.fullmatch(r"-?\d+", step):
                starts = [v for v, block in re.findall(r"\[\s*([^,\]]+),\s*%([\w.\-]+)\s*\]",
                                                       phi_text) if v.strip() != name]
                start = self.value(starts[0]) if len(starts) == 1 else None
                return start, int(step), name
        return None


def _compare(pred: str, a: int, b: int) -> bool:
    return {"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b,
            "sge": a >= b, "ult": a < b, "ule": a <= b, "ugt": a > b, "uge": a >= b}[pred]


def _blocks(body: str) -> dict:
    out, current, lines = {}, "entry", []
    for line in body.splitlines():
        label = _LABEL.match(line)
        if label:
            out[current] = "\n".join(lines)
            current, lines = label.group(1), []
        else:
            lines.append(line)
    out[current] = "\n".join(lines)
    return out


def slot_values(params: tuple, argtypes: tuple, shapes: tuple, grid: tuple,
                block: tuple) -> dict:
    """Values of the kernel's parameter slots that a launch record knows (each array's extents,
    and its strides if it is C-contiguous), and of the grid and block special registers."""
    from gpunb.foundation import abi
    from gpunb.foundation import types as t

    values: dict = {}
    slot = 0
    for ty, shape in zip(argtypes, shapes, strict=False):
        width = len(abi.param_slots(ty))
        if isinstance(ty, t.Array) and shape is not None and len(shape) == ty.ndim:
            names = params[slot + 1:slot + 1 + 2 * ty.ndim]
            stride = t.sizeof(ty.dtype)
            strides = []
            for extent in reversed(shape):
                strides.append(stride)
                stride *= int(extent)
            for name, value in zip(names, [*map(int, shape), *reversed(strides)], strict=False):
                values[name] = value
            if ty.layout != "C":  # strides of a non-C view are not known from its shape
                for name in names[ty.ndim:]:
                    values.pop(name, None)
        slot += width
    for k, axis in enumerate("xyz"):
        values[f"sreg.ntid.{axis}"] = int(block[k])
        values[f"sreg.nctaid.{axis}"] = int(grid[k])
    return values
