"""Tensor-core operations as data: supported shapes and element kinds, the architecture each
needs, and which lane of the warp holds which matrix element.

The lane layouts of mma.sync and ldmatrix are the PTX ISA's (built from 8-row blocks: lane l holds
row l // 4 of a block, at column (l % 4) * per + i, `per` elements to a 32-bit register). WMMA's
fragment layout is unspecified by PTX; gpunb uses the same blocks (an m16n16k16 fragment is the
two m16n8k16 mma.sync fragments side by side), so `frag.x[i]` means one thing on every target.
Pure Python: typing checks against these tables, the CUDA target packs registers with them, the
CPU target builds the gather tables of its exact emulation from them, and the notebook draws them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpunb.foundation import types as t

# element kinds: bits per element and the kernel-language type a lane's element has
KIND_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8, "e4m3": 8, "e5m2": 8,
             "f32": 32, "s32": 32}
KIND_TYPES = {"f16": t.float16, "bf16": t.bfloat16, "tf32": t.float32, "s8": t.int8,
              "u8": t.uint8, "e4m3": t.fp8_e4m3, "e5m2": t.fp8_e5m2, "f32": t.float32,
              "s32": t.int32}
KIND_NAMES = {"f16": "float16", "bf16": "bfloat16", "tf32": "tf32", "s8": "int8", "u8": "uint8",
              "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2", "f32": "float32", "s32": "int32"}
INTEGER_KINDS = frozenset({"s8", "u8", "s32"})
FP8_KINDS = frozenset({"e4m3", "e5m2"})


def kind_of_type(ty: t.Type) -> str | None:
    """The multiplicand / accumulator kind of an element type (float32 reads as f32; as a
    multiplicand the caller takes it as tf32)."""
    for kind in ("f16", "bf16", "s8", "u8", "e4m3", "e5m2", "f32", "s32"):
        if KIND_TYPES[kind] == ty:
            return kind
    return None


def shape_dims(shape: str) -> tuple[int, int, int]:
    """"m16n8k16" -> (16, 8, 16)."""
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


# ---- what each instruction supports ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Support:
    """One supported multiplicand kind of a shape: the accumulator kinds and the minimum sm."""

    accumulators: tuple
    sm: int


# mma.sync (PTX ISA 9.7.14.5): shape -> multiplicand kind -> Support. s8/u8 and e4m3/e5m2 may
# be mixed between A and B (the table lists them under the A kind).
MMA_SYNC = {
    "m16n8k8": {"f16": Support(("f32", "f16"), 75), "bf16": Support(("f32",), 80),
                "tf32": Support(("f32",), 80)},
    "m16n8k16": {"f16": Support(("f32", "f16"), 80), "bf16": Support(("f32",), 80),
                 "s8": Support(("s32",), 80), "u8": Support(("s32",), 80)},
    "m16n8k32": {"s8": Support(("s32",), 80), "u8": Support(("s32",), 80),
                 "e4m3": Support(("f32",), 89), "e5m2": Support(("f32",), 89)},
}
MIXABLE = ({"s8", "u8"}, {"e4m3", "e5m2"})

# WMMA (nvcuda::wmma): shape -> multiplicand kind -> Support (A and B of one kind)
WMMA = {
    "m16n16k16": {"f16": Support(("f32", "f16"), 70), "bf16": Support(("f32",), 80),
                  "s8": Support(("s32",), 72), "u8": Support(("s32",), 72)},
    "m32n8k16": {"f16": Support(("f32", "f16"), 70), "bf16": Support(("f32",), 80),
                 "s8": Support(("s32",), 72), "u8": Support(("s32",), 72)},
    "m8n32k16": {"f16": Support(("f32", "f16"), 70), "bf16": Support(("f32",), 80),
                 "s8": Support(("s32",), 72), "u8": Support(("s32",), 72)},
    "m16n16k8": {"tf32": Support(("f32",), 80)},
}
LDMATRIX_SM, STMATRIX_SM = 75, 90
LDMATRIX_COUNTS = (1, 2, 4)


def mixable(a: str, b: str) -> bool:
    return a == b or any(a in group and b in group for group in MIXABLE)


def describe_mma_sync() -> str:
    """The supported mma.sync combinations, for error messages."""
    parts = []
    for shape, kinds in MMA_SYNC.items():
        listed = ", ".join(f"{KIND_NAMES[k]}->{'/'.join(KIND_NAMES[c] for c in s.accumulators)}"
                           for k, s in kinds.items())
        parts.append(f"{shape}: {listed}")
    return "; ".join(parts)


def describe_wmma() -> str:
    parts = []
    for shape, kinds in WMMA.items():
        listed = ", ".join(KIND_NAMES[k] for k in kinds)
        parts.append(f"{shape}: {listed}")
    return "; ".join(parts)


# ---- lane layouts ---------------------------------------------------------------------------

def _block(role: str, bits: int, lane: int) -> list:
    """(row, col) of lane `lane`'s elements in one block: an 8 x 4*per block of A, a 4*per x 8
    block of B (per = elements in a 32-bit register), an 8x8 block of an accumulator."""
    group, quad = lane >> 2, lane & 3
    if role == "c":
        return [(group, 2 * quad), (group, 2 * quad + 1)]
    per = 32 // bits
    if role == "a":
        return [(group, per * quad + i) for i in range(per)]
    return [(per * quad + i, group) for i in range(per)]


def _block_dims(role: str, bits: int) -> tuple[int, int]:
    per = 32 // bits
    return {"a": (8, 4 * per), "b": (4 * per, 8), "c": (8, 8)}[role]


@functools.cache
def fragment_map(role: str, rows: int, cols: int, bits: int) -> tuple:
    """Per lane, the (row, col) of each element it holds of a rows x cols operand ("a": M x K,
    "b": K x N, "c": M x N accumulator), in the order of its registers: A by 16-row groups, then
    K blocks, then 8-row blocks; B by 8-column blocks, then K blocks; C by 8-column blocks, then
    8-row blocks (mma.sync's a0..a7, b0..b3, c0..c3 for its shapes)."""
    block_rows, block_cols = _block_dims(role, bits if role != "c" else 32)
    origins = []
    if role == "a":
        group = min(rows, 16)
        for row_group in range(rows // group):
            for kb in range(cols // block_cols):
                for rb in range(group // block_rows):
                    origins.append((row_group * group + rb * block_rows, kb * block_cols))
    elif role == "b":
        for nb in range(cols // block_cols):
            for kb in range(rows // block_rows):
                origins.append((kb * block_rows, nb * block_cols))
    else:
        for nb in range(cols // block_cols):
            for rb in range(rows // block_rows):
                origins.append((rb * block_rows, nb * block_cols))
    return tuple(tuple((r0 + r, c0 + c) for r0, c0 in origins
                       for r, c in _block(role, bits, lane)) for lane in range(32))


def operand_dims(role: str, m: int, n: int, k: int) -> tuple[int, int]:
    return {"a": (m, k), "b": (k, n), "c": (m, n)}[role]


@functools.cache
def mma_sync_map(role: str, shape: str, kind: str) -> tuple:
    """mma.sync's layout of operand `role` ("a", "b", "c"/"d") for `shape` and element `kind`."""
    m, n, k = shape_dims(shape)
    role = "c" if role == "d" else role
    return fragment_map(role, *operand_dims(role, m, n, k), KIND_BITS[kind])


def wmma_num_elements(role: str, shape: str, kind: str) -> int:
    """nvcuda::wmma's fragment<...>::num_elements: float16 multiplicands are held twice over
    (eight f16x2 registers for every shape), everything else once."""
    m, n, k = shape_dims(shape)
    rows, cols = operand_dims(role, m, n, k)
    if role in ("a", "b") and kind == "f16":
        return 16
    return rows * cols // 32


@functools.cache
def wmma_map(role: str, shape: str, kind: str) -> tuple:
    """WMMA's layout: mma.sync's blocks, repeated to fill a float16 multiplicand fragment.
    m8n32k16 is m32n8k16 transposed (D^T = B^T A^T): its A is m32n8k16's B transposed, its B
    m32n8k16's A, its accumulator m32n8k16's (as an H100's tensor cores lay them out)."""
    if shape == "m8n32k16":
        other = {"a": "b", "b": "a", "c": "c"}[role]
        return tuple(tuple((c, r) for r, c in lane)
                     for lane in wmma_map(other, "m32n8k16", kind))
    m, n, k = shape_dims(shape)
    bits = KIND_BITS[kind] if role != "c" else 32
    base = fragment_map(role, *operand_dims(role, m, n, k), bits)
    count = wmma_num_elements(role, shape, kind)
    return tuple(tuple(lane[e % len(lane)] for e in range(count)) for lane in base)


def ldmatrix_map(count: int, trans: bool) -> tuple:
    """ldmatrix .x{count}: per lane, (matrix, row, col) of each element it receives, where row is
    the row whose address thread 8 * matrix + row supplied (PTX ISA 9.7.14.5.15)."""
    out = []
    for lane in range(32):
        group, quad = lane >> 2, lane & 3
        elems = []
        for matrix in range(count):
            for j in range(2):
                elems.append((matrix, 2 * quad + j, group) if trans
                             else (matrix, group, 2 * quad + j))
        out.append(tuple(elems))
    return tuple(out)


def inverse(layout: tuple, rows: int, cols: int) -> tuple:
    """For each (row, col): the first (lane, element) that holds it."""
    found: dict = {}
    for lane, elems in enumerate(layout):
        for e, pos in enumerate(elems):
            found.setdefault(pos, (lane, e))
    return tuple(found[(r, c)] for r in range(rows) for c in range(cols))


@dataclass(frozen=True, slots=True)
class MmaOp:
    """One warp-wide D = A x B + C as a target lowers it: WMMA's (fragments) or mma.sync's
    (per-lane register values), its shape, element kinds and operand layouts."""

    api: str  # "wmma" | "mma"
    shape: str  # "m16n16k16"
    a_kind: str
    b_kind: str
    c_kind: str
    d_kind: str
    a_layout: str = "row"  # how A and B sit in memory (WMMA: the fragments' layouts)
    b_layout: str = "col"
    satfinite: bool = False

    @property
    def dims(self) -> tuple[int, int, int]:
        return shape_dims(self.shape)

    def kind(self, role: str) -> str:
        return {"a": self.a_kind, "b": self.b_kind, "c": self.c_kind, "d": self.d_kind}[role]

    def layout(self, role: str) -> tuple:
        """Per lane, the (row, col) of each element of operand `role` it holds."""
        kind = self.kind(role)
        if self.api == "wmma":
            return wmma_map("c" if role == "d" else role, self.shape, kind)
        return mma_sync_map(role, self.shape, kind)

    def count(self, role: str) -> int:
        return len(self.layout(role)[0])

    @property
    def integer(self) -> bool:
        return self.a_kind in INTEGER_KINDS
