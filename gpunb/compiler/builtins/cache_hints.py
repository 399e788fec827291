"""Cache-hinted global loads and stores: cuda.ldca/ldcg/ldcs/ldlu/ldcv(array, index) and
cuda.stcg/stcs/stwb/stwt(array, index, value), as numba-cuda has them.

The index is an integer or a tuple of integers (one per axis); the element is addressed as an
ordinary subscript would be (negative indices wrap, bounds checked where the target checks). A C
pointer (numba's CPointer) takes one index, unchecked, as `p[i]`.
The CUDA target emits `ld.global.<hint>.b<bits>` / `st.global.<hint>.b<bits>`; the CPU target
has no cache hints and accesses the element plainly.
"""

from __future__ import annotations

from gpunb.compiler import arrays, promotion
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t
from gpunb.foundation.pointer_types import Pointer

LOADS = ("ca", "cg", "cs", "lu", "cv")
STORES = ("cg", "cs", "wb", "wt")
_BITS = (8, 16, 32, 64)


class CacheHinted(Builtin):
    def __init__(self, hint: str, store: bool):
        self.hint, self.store = hint, store
        self.name = f"cuda.{'st' if store else 'ld'}{hint}"

    def type_call(self, inf, node, argtypes, kwtypes):
        want = 3 if self.store else 2
        form = "(array, index, value)" if self.store else "(array, index)"
        if kwtypes or len(argtypes) != want:
            raise inf.error(node, f"{self.name}{form} takes {want} arguments")
        arr, index = argtypes[0], argtypes[1]
        short = self.name.removeprefix("cuda.")
        elem = arr.dtype if isinstance(arr, (t.Array, Pointer)) else None
        if not isinstance(elem, (t.Integer, t.Float)) or elem.bitwidth not in _BITS:
            # numba-cuda's words first
            raise inf.error(node.args[0], f"{short} requires array of integer or float type "
                            f"(of 8 to 64 bits), got {arr}")
        ndim = arr.ndim if isinstance(arr, t.Array) else 1  # a C pointer: one flat index
        self.check_index(inf, node.args[1], index, ndim)
        if self.store:
            if getattr(arr, "readonly", False):
                raise inf.error(node.args[0], f"{self.name} cannot store into a read-only "
                                "array")
            if not promotion.can_convert(argtypes[2], elem):
                raise inf.error(node.args[2], f"cannot store {argtypes[2]} into {arr}")
            return t.none
        return elem

    def check_index(self, inf, node, index: t.Type, ndim: int) -> None:
        """numba-cuda's checks and messages: one integer per axis, a tuple for several."""
        hint = "pass an int, or a tuple of ints (i, j) for a 2-d array"
        items = index.items if isinstance(index, t.Tuple) else (index,)
        if not isinstance(index, t.Tuple) and ndim > 1:
            raise inf.error(node, f"Expected {ndim} indices, got a scalar", hint)
        if len(items) != ndim:
            raise inf.error(node, f"Expected {ndim} indices, got {len(items)}", hint)
        for item in items:
            if not isinstance(item, (t.Integer, t.Boolean)):
                raise inf.error(node, f"{item} is not a valid index", hint)

    def lower_call(self, low, node, call):
        b = low.builder
        arr_t, index_t = call.argtypes[0], call.argtypes[1]
        arr = low.expr(node.args[0])
        index = low.expr(node.args[1])
        if isinstance(arr_t, Pointer):  # numba's CPointer: p + i, unchecked as p[i] is
            item = b.extract_value(index, 0) if isinstance(index_t, t.Tuple) else index
            item_t = index_t.items[0] if isinstance(index_t, t.Tuple) else index_t
            pointer = b.gep(arr, [ops.cast(b, item, item_t, t.int64)],
                            source_etype=dm.memory_type(arr_t.dtype))
        else:
            pointer = self.element_pointer(low, node, arr_t, arr, index_t, index)
        if not self.store:
            return low.target.hinted_load(low, pointer, arr_t.dtype, self.hint)
        value = ops.cast(b, low.expr(node.args[2]), call.argtypes[2], arr_t.dtype)
        low.target.hinted_store(low, pointer, arr_t.dtype, value, self.hint)
        return None

    def element_pointer(self, low, node, arr_t: t.Array, arr, index_t: t.Type, index):
        """The element's address, indexed (and bounds-checked) as a subscript would be."""
        b = low.builder
        data, shape, strides = arrays.parts(b, arr, arr_t.ndim)
        items = index_t.items if isinstance(index_t, t.Tuple) else (index_t,)
        indices = []
        for axis, item_t in enumerate(items):
            value = b.extract_value(index, axis) if isinstance(index_t, t.Tuple) else index
            idx = arrays.normalise_index(b, value, item_t, shape[axis])
            low.target.check_bounds(low, node, arr_t, axis, idx, shape[axis],
                                    arrays.signed_index(item_t))
            indices.append(idx)
        pointer = arrays.element_pointer(b, arr_t, data, shape, strides, indices)
        low.target.record_access(low, node, pointer, "write" if self.store else "read")
        return pointer


BUILTINS: dict = {f"cuda.ld{h}": CacheHinted(h, store=False) for h in LOADS}
BUILTINS.update({f"cuda.st{h}": CacheHinted(h, store=True) for h in STORES})
