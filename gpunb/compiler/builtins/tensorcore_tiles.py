"""Tile views for tensor-core loads and stores: a pointer plus leading dimension written as a 2-D
array view (`A[r:r + 16, k:k + 16]`). Checked at compile time where the view's extents are
known from its slices, and at run time on the CPU target (and with debug=True on a GPU): shape,
contiguity, the leading dimension and the alignment the PTX ISA requires."""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler.memory_spaces import Views, one_space
from gpunb.compiler.values import NotConstant
from gpunb.foundation import types as t


def _linear(node, resolve) -> dict | None:
    """`node` as {term: coefficient} with the constant under key None (terms are the dumps of
    opaque sub-expressions), or None when it is not linear in them."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {None: node.value}
    if isinstance(node, (ast.Name, ast.Attribute)):
        try:
            value = resolve(node)
        except NotConstant:
            value = None
        if type(value) is int:
            return {None: value}
        return {ast.dump(node): 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _linear(node.operand, resolve)
        return None if inner is None else {k: -v for k, v in inner.items()}
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _linear(node.left, resolve), _linear(node.right, resolve)
        if left is None or right is None:
            return None
        sign = 1 if isinstance(node.op, ast.Add) else -1
        out = dict(left)
        for k, v in right.items():
            out[k] = out.get(k, 0) + sign * v
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _linear(node.left, resolve), _linear(node.right, resolve)
        if left is None or right is None:
            return {ast.dump(node): 1}
        for scalar, other in ((left, right), (right, left)):
            if set(scalar) == {None}:
                return {k: v * scalar[None] for k, v in other.items()}
        return {ast.dump(node): 1}
    return {ast.dump(node): 1}


def static_extent(item, resolve) -> int | None:
    """The number of elements a slice `lo:hi` selects when its bounds differ by a constant
    (`r:r + 16`, `i * 16:(i + 1) * 16`, `0:16`), else None (a step, an open bound)."""
    if not isinstance(item, ast.Slice) or item.upper is None:
        return None
    if item.step is not None:
        return None
    upper = _linear(item.upper, resolve)
    lower = {None: 0} if item.lower is None else _linear(item.lower, resolve)
    if upper is None or lower is None:
        return None
    diff = dict(upper)
    for k, v in lower.items():
        diff[k] = diff.get(k, 0) - v
    if any(v for k, v in diff.items() if k is not None):
        return None
    return diff.get(None, 0)


def check_tile_statically(inf, what: str, tile_node, tile_type, dtype: t.Type, rows: int,
                          cols: int, row_major: bool) -> None:
    """The compile-time checks of a tile view: a 2-D array of the fragment's element type, its
    extents where the slices say them, contiguous along the memory layout's fast axis."""
    if not isinstance(tile_type, t.Array) or tile_type.ndim != 2:
        raise inf.error(tile_node, f"{what} needs a 2-D array view as its tile, got {tile_type}",
                        f"pass the {rows} x {cols} tile as a view, e.g. A[r:r + {rows}, "
                        f"c:c + {cols}]")
    if tile_type.dtype != dtype:
        raise inf.error(tile_node, f"{what}: the tile holds {tile_type.dtype}, the fragment "
                        f"{dtype}", f"use an array of {dtype} for this fragment")
    fast = 1 if row_major else 0
    order = "row-major" if row_major else "column-major"
    if tile_type.layout == ("F" if row_major else "C"):
        raise inf.error(tile_node, f"{what}: a {order} tile needs its "
                        f"{'rows' if row_major else 'columns'} contiguous, and this array is "
                        f"{'Fortran' if row_major else 'C'}-ordered",
                        f"use the {'col' if row_major else 'row'}_major layout for it")
    if not isinstance(tile_node, ast.Subscript):
        return
    items = tile_node.slice.elts if isinstance(tile_node.slice, ast.Tuple) else \
        [tile_node.slice]
    for axis, (item, want) in enumerate(zip(items, (rows, cols), strict=False)):
        if isinstance(item, ast.Slice) and item.step is not None and axis == fast:
            try:
                step = inf.const(item.step, "the step")
            except Exception:  # noqa: BLE001 - a run-time step: checked at run time
                step = None
            if step != 1:
                raise inf.error(item, f"{what}: a {order} tile must be contiguous along axis "
                                f"{axis}; a step there leaves gaps",
                                "copy the elements into a contiguous (shared) array first")
        extent = static_extent(item, inf.resolve_constant)
        if extent is not None and extent != want:
            raise inf.error(item, f"{what}: this view selects {extent} "
                            f"{'rows' if axis == 0 else 'columns'}; the fragment's tile is "
                            f"{rows} x {cols}", f"select {want}, e.g. "
                            f"{'r:r' if axis == 0 else 'c:c'} + {want}")


def tile_parts(low, node, tile_value, tile_type: t.Array, rows: int, cols: int, row_major: bool,
               what: str):
    """(address of the tile's first element, leading dimension in elements as i32), after the
    run-time checks of the shape, contiguity, leading dimension and alignment (the CPU target
    always; a GPU with debug=True)."""
    b = low.builder
    data, shape, strides = arrays.parts(b, tile_value, 2)
    itemsize = t.sizeof(tile_type.dtype)
    fast, slow = (strides[1], strides[0]) if row_major else (strides[0], strides[1])
    if low.target.checks_always or low.mb.options.get("debug"):
        i64 = dm.i64
        bad_shape = b.or_(b.icmp_signed("!=", shape[0], ir.Constant(i64, rows)),
                          b.icmp_signed("!=", shape[1], ir.Constant(i64, cols)))
        check(low, node, bad_shape, f"{what}: the tile must be a {rows} x {cols} view of the "
              "matrix")
        check(low, node, b.icmp_signed("!=", fast, ir.Constant(i64, itemsize)),
              f"{what}: the tile's {'rows' if row_major else 'columns'} must be contiguous "
              f"({'row' if row_major else 'column'}-major memory)")
        address = b.ptrtoint(data, i64)
        misaligned = b.or_(b.icmp_signed("!=", b.srem(slow, ir.Constant(i64, 16)),
                                         ir.Constant(i64, 0)),
                           b.icmp_signed("!=", b.and_(address, ir.Constant(i64, 15)),
                                         ir.Constant(i64, 0)))
        check(low, node, misaligned, f"{what}: the leading dimension must be a multiple of 16 "
              "bytes and the tile's first element 16-byte aligned")
    ldm = b.trunc(b.sdiv(slow, ir.Constant(dm.i64, itemsize)), dm.i32)
    return data, ldm


def check(low, node, failed, message: str) -> None:
    """End the thread with a reported error `message` (ValueError) where `failed` holds."""
    b = low.builder
    fail, ok = low.new_block("tile.bad"), low.new_block("tile.ok")
    b.cbranch(failed, fail, ok)
    b.position_at_end(fail)
    low.raise_exception(node, "ValueError", message, report=True)
    b.position_at_end(ok)


def memory_space(low, node) -> str | None:
    """"shared" or "global" when the view `node` provably lies in that memory (a view of a
    cuda.shared.array, of a kernel's array argument: on every path, a name assigned in two
    branches included), "local" or "const" for a view of a cuda.local.array or
    cuda.const.array_like, else None: the CUDA target then uses the instruction's shared
    (ld.shared) or global form instead of a generic address, and operations defined on shared
    memory alone refuse the others at compile time (memory_spaces.py walks the views)."""
    return one_space(Views.of_typed(low.typed).origins(node))
