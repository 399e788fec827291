"""Typing of subscripts: array elements and views (an IndexPlan each), record fields, tuples."""

from __future__ import annotations

import ast
import enum

from gpunb.compiler import promotion
from gpunb.compiler.infer.expressions import field_value_type
from gpunb.compiler.typed import IndexPlan, IntIndex, SliceIndex
from gpunb.compiler.values import NotConstant, PyValue, const_eval
from gpunb.foundation import enum_types
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer


class IndexTyping:
    def expr_Subscript(self, node: ast.Subscript) -> t.Type:
        base = self.expr(node.value)
        index = node.slice
        if isinstance(base, t.Array):
            return self.array_index_type(node, base, index)
        if isinstance(base, t.Record):
            return self.record_field_type(base, index)
        if isinstance(base, Pointer):
            return self.pointer_item_type(base, index)
        if isinstance(base, t.Tuple) and isinstance(index, ast.Slice):
            return self.tuple_slice_type(index, base)
        if isinstance(base, t.Tuple):
            return self.tuple_item_type(base, index)
        if isinstance(base, PyValue) and isinstance(base.obj, t.Type):
            raise self.error(node, "array types cannot be built inside GPU code")
        if isinstance(base, PyValue) and isinstance(base.obj, enum.EnumMeta):
            return self.enum_by_name(node, base.obj, index)
        raise self.error(node, f"{base} cannot be indexed", _index_hint(base))

    def enum_by_name(self, node, cls, index) -> t.Type:
        """`Color["red"]`: the member named by a constant string, a compile-time constant."""
        name = self.const(index, "an Enum class's subscript")
        if not isinstance(name, str) or name not in cls.__members__:
            raise self.error(index, f"{cls.__qualname__} has no member {name!r}",
                             f"its members: {', '.join(cls.__members__)}")
        member = cls[name]
        self.constants[node] = member
        return enum_types.enum_type(member)

    def pointer_item_type(self, base: Pointer, index) -> t.Type:
        """p[i] of a C pointer: the element i places on, unchecked (numba's CPointer)."""
        if base.dtype is None:
            raise self.error(index, "a void* cannot be indexed",
                             "view it with carray(ptr, shape, dtype) first")
        found = self.expr(index)
        if not isinstance(found, (t.Integer, t.Boolean)):
            raise self.error(index, f"a pointer index must be an integer, got {found}")
        return base.dtype

    def record_field_type(self, base: t.Record, index) -> t.Type:
        if isinstance(index, ast.Constant) and type(index.value) is int:  # rec[0]: by position
            n = len(base.fields)
            if not -n <= index.value < n:
                raise self.error(index, f"record index {index.value} out of range",
                                 f"the record has {n} fields")
            self.record(index, t.int64)
            name, ftype, offset = base.fields[index.value]
            return field_value_type(base, ftype, offset)
        if not (isinstance(index, ast.Constant) and isinstance(index.value, str)):
            raise self.error(index, "a record field is selected with a string or integer "
                             "constant, e.g. rec['x'], rec.x or rec[0]")
        found = base.field(index.value)
        if found is None:
            names = ", ".join(f[0] for f in base.fields)
            raise self.error(index, f"record has no field {index.value!r}", f"fields: {names}")
        self.record(index, t.StringLiteral())
        return field_value_type(base, *found)

    def tuple_item_type(self, base: t.Tuple, index) -> t.Type:
        try:
            i = const_eval(index, self.resolve_constant)
        except NotConstant:
            found = self.expr(index)
            if not isinstance(found, (t.Integer, t.Boolean)) or len(set(base.items)) != 1:
                raise self.error(index, "a tuple of mixed types needs a constant index",
                                 "index it with a literal or a module-level constant") from None
            return base.items[0]
        if isinstance(i, slice):  # a slice object known at compile time: t[s]
            return self.tuple_slice_object(index, base, i)
        self.record(index, t.int64)
        if not isinstance(i, int) or isinstance(i, bool):
            raise self.error(index, "tuple indices must be integers",
                             "use a slice (t[1:]) or an integer constant (t[0])")
        self.constants[index] = i  # lowering needs it for t[-1], t[N - 1]
        if not -len(base.items) <= i < len(base.items):
            raise self.error(index, f"tuple index {i} out of range for {base}",
                             f"the tuple has {len(base.items)} items: use an index from "
                             f"{-len(base.items)} to {len(base.items) - 1}")
        return base.items[i]

    def tuple_slice_object(self, index, base: t.Tuple, picked: slice) -> t.Type:
        bounds = (picked.start, picked.stop, picked.step)
        if not all(b is None or isinstance(b, int) for b in bounds) or picked.step == 0:
            raise self.error(index, "tuple slice bounds must be integer constants (step not 0)")
        self.record(index, PyValue(picked))
        self.constants[index] = picked
        return t.Tuple(base.items[picked])

    def tuple_slice_type(self, index: ast.Slice, base: t.Tuple) -> t.Type:
        """t[1:], t[::-1]: numba slices tuples at compile time, so the bounds are constants."""
        bounds = [None if s is None else self.const(s, "a tuple slice bound")
                  for s in (index.lower, index.upper, index.step)]
        if not all(b is None or isinstance(b, int) for b in bounds) or bounds[2] == 0:
            raise self.error(index, "tuple slice bounds must be integer constants (step not 0)")
        picked = slice(*bounds)
        self.constants[index] = picked
        return t.Tuple(base.items[picked])

    def check_slice_store(self, target, vt: t.Type, slot: t.Array) -> None:
        """a[1:3] = x and a[:, j] = b[...]: a number fills the view; an array is copied
        element by element, broadcast as numpy does (trailing axes, extents of 1)."""
        if t.is_number(vt) and promotion.can_convert(vt, slot.dtype):
            return
        if isinstance(vt, t.Array) and vt.ndim <= slot.ndim and \
                promotion.can_convert(vt.dtype, slot.dtype):
            return
        raise self.error(target, f"cannot assign {vt} to a slice {slot}",
                         f"assign a number, or an array of at most {slot.ndim} dimension(s)")

    # ---- arrays --------------------------------------------------------------------------------

    def index_items(self, index, ndim: int) -> list:
        """The items of an array index with `...` expanded into full slices."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        dots = [p for p in items if isinstance(p, ast.Constant) and p.value is Ellipsis]
        if not dots:
            return items
        if len(dots) > 1:
            raise self.error(dots[1], "an index can only have a single ellipsis ('...')")
        at = items.index(dots[0])
        fill = [ast.copy_location(ast.Slice(), dots[0])
                for _ in range(max(ndim - (len(items) - 1), 0))]
        return items[:at] + fill + items[at + 1:]

    def array_index_type(self, node, base: t.Array, index) -> t.Type:
        parts, layout_kept = [], True
        for item in self.index_items(index, base.ndim):
            if isinstance(item, ast.Slice):
                parts.append(self.slice_part(item))
                if item.step is not None or item.lower is not None or item.upper is not None:
                    layout_kept = layout_kept and (len(parts) == 1 and item.step is None)
                continue
            found = self.expr(item)
            if isinstance(found, PyValue) and isinstance(found.obj, slice):
                # a slice object known at compile time (a global, slice(1, 5)): its bounds
                item = self.constant_slice(item, found.obj)
                parts.append(self.slice_part(item))
                if found.obj != slice(None):
                    layout_kept = layout_kept and (len(parts) == 1 and item.step is None)
                continue
            if isinstance(found, t.Tuple) and all(isinstance(i, (t.Integer, t.Boolean))
                                                  for i in found.items):
                # a[idx] with idx = (i, j): each item indexes one axis, as numba allows
                for k, item_type in enumerate(found.items):
                    parts.append(IntIndex(item, item_type, k))
                continue
            if isinstance(found, t.Array) and found.ndim == 0 and \
                    isinstance(found.dtype, t.Integer):  # a 0-d integer array: its value
                parts.append(IntIndex(item, found.dtype, -1))
                continue
            if not isinstance(found, (t.Integer, t.Boolean)):
                raise self.error(item, f"array index must be an integer, got {found}",
                                 "convert with int(...)")
            if any(isinstance(p, SliceIndex) for p in parts):
                layout_kept = False
            parts.append(IntIndex(item, found))
        if isinstance(index, ast.Tuple):
            self.record(index, t.Tuple(tuple(self.types.get(e, t.none) for e in index.elts)))
        if len(parts) > base.ndim:
            raise self.error(node, f"too many indices: {len(parts)} for a {base.ndim}-d array",
                             f"index a {base.ndim}-d array with at most {base.ndim} "
                             f"integer{'s' if base.ndim != 1 else ''} or slices")
        plan = IndexPlan(tuple(parts))
        self.indexes[node] = plan
        n_int = sum(1 for p in parts if isinstance(p, IntIndex))
        if n_int == base.ndim:
            element = base.dtype
            if isinstance(element, t.Record) and not base.aligned:
                element = element.with_align(1)  # a record at any address: byte accesses
            if isinstance(element, t.Record) and base.readonly:
                element = element.as_readonly()
            return element
        layout = base.layout if base.layout == "C" and layout_kept else "A"
        return base.derived(base.ndim - n_int, layout)

    def constant_slice(self, item, value: slice) -> ast.Slice:
        """The `lo:hi:step` node of a slice object known at compile time, standing where the
        object is read (made once: its nodes keep their types across passes)."""
        bad = [b for b in (value.start, value.stop, value.step)
               if b is not None and (not isinstance(b, int) or isinstance(b, bool))]
        if bad:
            raise self.error(item, f"slice bounds must be integers or None, got {bad[0]!r}")
        if value.step == 0:
            raise self.error(item, "slice step cannot be zero")

        def make() -> ast.Slice:
            bound = [None if b is None else ast.copy_location(ast.Constant(b), item)
                     for b in (value.start, value.stop, value.step)]
            return ast.copy_location(ast.Slice(*bound), item)

        return self.synthetic(("slice object", item, value.start, value.stop, value.step), make)

    def slice_part(self, item: ast.Slice) -> SliceIndex:
        bounds = []
        for s in (item.lower, item.upper, item.step):
            if s is None:
                bounds.append(None)
                continue
            found = self.expr(s)
            if not isinstance(found, (t.Integer, t.Boolean, t.NoneType)):
                raise self.error(s, "slice bounds must be integers (or None)")
            bounds.append(None if isinstance(found, t.NoneType) else s)
        if item.step is not None and _folded(item.step, self.resolve_constant) == 0:
            raise self.error(item.step, "slice step cannot be zero",
                             "use a step of 1 or more (or negative to go backwards)")
        return SliceIndex(*bounds)


def _folded(node, resolve):
    """The compile-time value of an expression, or None when it is only known at run time."""
    try:
        return const_eval(node, resolve)
    except NotConstant:
        return None


def _index_hint(base: t.Type) -> str | None:
    """What to do about a value GPU code cannot index (a global list or dict, a kernel)."""
    obj = getattr(base, "obj", None)
    if isinstance(obj, dict):
        return "a Python dict is not available in GPU code: use module-level constants (one " \
               "per key), a tuple or a numpy array, or pass the values as arguments"
    if isinstance(obj, (list, set)):
        return (f"a Python {type(obj).__name__} is not available in GPU code: make the global a "
                "tuple (W = (0.25, 0.5, 0.25)) or a numpy array (frozen into the kernel when it "
                "compiles), or pass an array argument")
    if getattr(obj, "py_func", None) is not None:
        return "kernels cannot launch kernels in gpunb (no dynamic parallelism): call a " \
               "device function, or launch from the host"
    if isinstance(base, (t.Integer, t.Float, t.Boolean, t.Complex)):
        return "this is a number, not an array: was an array argument rebound to a number?"
    return None
