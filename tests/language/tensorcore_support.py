"""Shared by the tensor-core tests: the PTX ISA's lane layouts written out independently of
gpunb's tables, numpy references with their tolerances, and kernel factories."""

from __future__ import annotations

import numpy as np

from gpunb import cuda

md = __import__("ml_dtypes")

NP_TYPES = {"f16": np.float16, "bf16": md.bfloat16, "tf32": np.float32, "s8": np.int8,
            "u8": np.uint8, "e4m3": md.float8_e4m3fn, "e5m2": md.float8_e5m2,
            "f32": np.float32, "s32": np.int32}


# ---- the PTX ISA's fragment layouts (section "Matrix fragments for mma.m16nNkK") ------------

def ptx_a(lane: int, i: int, kind: str, k: int) -> tuple[int, int]:
    """Row and column of element a_i of lane `lane` in A (16 x k)."""
    group, quad = lane >> 2, lane % 4
    if kind in ("f16", "bf16"):  # a0,a1: (g, 2q+i); a2,a3: row + 8; a4..a7: col + 8
        row = group + 8 * ((i >> 1) & 1)
        return row, quad * 2 + (i & 1) + 8 * (i >> 2)
    if kind == "tf32":  # a0: (g, q), a1: (g+8, q), a2: (g, q+4), a3: (g+8, q+4)
        return group + 8 * (i & 1), quad + 4 * (i >> 1)
    # 8-bit: a0..a3: (g, 4q+i), a4..a7: (g+8, ...), a8..a15: columns + 16
    return group + 8 * ((i >> 2) & 1), quad * 4 + (i & 3) + 16 * (i >> 3)


def ptx_b(lane: int, i: int, kind: str, k: int) -> tuple[int, int]:
    """Row (k index) and column of element b_i of lane `lane` in B (k x 8)."""
    group, quad = lane >> 2, lane % 4
    if kind in ("f16", "bf16"):
        return quad * 2 + (i & 1) + 8 * (i >> 1), group
    if kind == "tf32":
        return quad + 4 * i, group
    return quad * 4 + (i & 3) + 16 * (i >> 2), group


def ptx_c(lane: int, i: int) -> tuple[int, int]:
    group, quad = lane >> 2, lane % 4
    return group + 8 * (i >> 1), quad * 2 + (i & 1)


def mma_counts(shape: str, kind: str) -> tuple[int, int]:
    m, rest = shape[1:].split("n")
    n, k = (int(x) for x in rest.split("k"))
    return int(m) * k // 32, k * n // 32


# ---- references ------------------------------------------------------------------------------

def as_f64(x: np.ndarray, kind: str) -> np.ndarray:
    """The exact value the tensor cores multiply (tf32: the top 19 bits of the float32)."""
    if kind == "tf32":
        bits = np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
        return bits.view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def reference(a, b, c, a_kind, b_kind):
    """D = A x B + C in float64 (exact for every input kind), and the error bound of float32
    accumulation in any order: (K + 1) * 2**-24 * (|A| x |B| + |C|) (the documented tolerance)."""
    a64, b64, c64 = as_f64(a, a_kind), as_f64(b, b_kind), c.astype(np.float64)
    k = a.shape[1]
    bound = (k + 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + np.abs(c64))
    return a64 @ b64 + c64, bound


def random_operand(rng, shape, kind: str) -> np.ndarray:
    if kind in ("s8", "u8"):
        lo, hi = (-128, 128) if kind == "s8" else (0, 256)
        return rng.integers(lo, hi, shape).astype(NP_TYPES[kind])
    if kind == "s32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    values = rng.standard_normal(shape) * 2
    return values.astype(np.float32).astype(NP_TYPES[kind])


# ---- kernels ---------------------------------------------------------------------------------

_MMA_TEMPLATE = '''
def mma_kernel(d, a, b, c, ar, ac, br, bc, cr, cc):
    lane = cuda.laneid
    av = ({a_items},)
    bv = ({b_items},)
    cv = ({c_items},)
    out = cuda.mma_sync("{shape}", av, bv, cv{extra})
{stores}
'''


def mma_kernel(shape: str, na: int, nb: int, nc: int = 4, satfinite: bool = False):
    """A kernel where each lane gathers its A, B, C elements by the given index tables, runs
    one mma.sync and scatters D by C's table."""
    def items(name, count):
        return ", ".join(f"{name}[{name}r[lane, {i}], {name}c[lane, {i}]]" for i in range(count))

    stores = "\n".join(f"    d[cr[lane, {i}], cc[lane, {i}]] = out[{i}]" for i in range(nc))
    src = _MMA_TEMPLATE.format(a_items=items("a", na), b_items=items("b", nb),
                               c_items=items("c", nc), shape=shape, stores=stores,
                               extra=", satfinite=True" if satfinite else "")
    namespace = {"cuda": cuda}
    exec(compile(src, f"<mma_kernel {shape}>", "exec"), namespace)
    return cuda.jit(namespace["mma_kernel"])


def index_tables(layout) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) int32 arrays [32, count] from a per-lane list of (row, col)."""
    rows = np.array([[rc[0] for rc in lane] for lane in layout], np.int32)
    cols = np.array([[rc[1] for rc in lane] for lane in layout], np.int32)
    return rows, cols
