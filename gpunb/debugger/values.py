"""A thread's variables, decoded from its debug area into Python values.

The debug variant copies each definition's value into the thread's debug area as it is
computed (debug_lower.plan_value says where each part goes); this turns those bytes back into
numpy scalars, tuples, and array views. An array's elements are read only where the debugger
knows the memory is live: the launch's argument arrays, the block's shared memory, and the
stopped thread's own local arrays; elsewhere only its address, shape and strides are shown.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from gpunb.foundation import types as t


def read_bytes(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size) if size else b""


def read_i64(address: int) -> int:
    return ctypes.c_int64.from_address(address).value


def read_i32(address: int) -> int:
    return ctypes.c_int32.from_address(address).value


def scalar_dtype(name: str) -> np.dtype:
    """The numpy dtype of a kernel scalar type's name ("float32", "bool", "bfloat16"...)."""
    if name == "bool":
        return np.dtype(np.bool_)
    return t.to_dtype(t.TYPE_NAMES[name])


def element_dtype(layout) -> np.dtype:
    if isinstance(layout, (list, tuple)) and layout and layout[0] == "record":
        descr = layout[1]
        return np.lib.format.descr_to_dtype(_tuples(descr) if isinstance(descr, list)
                                            else descr)
    return scalar_dtype(str(layout))


def _tuples(descr):
    """JSON turned the descr's tuples into lists; numpy wants them back."""
    if isinstance(descr, list):
        return [tuple(_tuples(x) for x in item) if isinstance(item, list) else item
                for item in descr]
    return descr


@dataclass(frozen=True, slots=True)
class Region:
    """Memory the debugger may read while the launch is stopped."""

    lo: int
    hi: int
    space: str  # "global" (an argument array), "shared", "local"
    label: str


class Readable:
    """The regions readable at one stop; `local` (the stopped thread's own stack and frame)
    is trusted for the stopped thread only."""

    def __init__(self, regions: list[Region], local: bool, unreadable: str = "not readable here"):
        self.regions = regions
        self.local = local
        self.unreadable = unreadable  # what an array whose elements cannot be read says

    def space_of(self, lo: int, hi: int) -> Region | None:
        for region in self.regions:
            if region.lo <= lo and hi <= region.hi:
                return region
        if self.local and lo > 4096:
            return Region(lo, hi, "local", "the thread's local memory")
        return None


class ArrayValue:
    """An array variable as the kernel sees it: data address, shape, strides, element type,
    and the memory it lies in (None when the debugger cannot tell and will not read it)."""

    def __init__(self, data: int, shape: tuple, strides: tuple, dtype: np.dtype, type_name: str,
                 region: Region | None, unreadable: str = "not readable here"):
        self.data, self.shape, self.strides = data, shape, strides
        self.dtype, self.type_name, self.region = dtype, type_name, region
        self.unreadable = unreadable

    @property
    def space(self) -> str:
        return self.region.space if self.region is not None else "unknown"

    def numpy(self) -> np.ndarray | None:
        """A read-only view of the elements (valid while the launch stays stopped), or None."""
        if self.region is None:
            return None
        lo, hi = span(self.data, self.shape, self.strides, self.dtype.itemsize)
        if hi <= lo:
            return np.empty(self.shape, self.dtype)
        buffer = (ctypes.c_char * (hi - lo)).from_address(lo)
        view = np.ndarray(self.shape, self.dtype, buffer=buffer, offset=self.data - lo,
                          strides=self.strides)
        view.flags.writeable = False
        return view

    def __repr__(self) -> str:
        where = self.region.label if self.region is not None else \
            f"at {self.data:#x}, {self.unreadable}"
        head = f"{self.type_name} shape {self.shape} ({where})"
        values = self.numpy()
        if values is None:
            return head
        return f"{head}\n{np.array2string(values, threshold=20, edgeitems=4)}"


class RecordValue:
    """A record (a row of a structured array) the kernel holds a reference to."""

    def __init__(self, address: int, dtype: np.dtype, region: Region | None):
        self.address, self.dtype, self.region = address, dtype, region

    def numpy(self):
        if self.region is None:
            return None
        buffer = (ctypes.c_char * self.dtype.itemsize).from_address(self.address)
        return np.ndarray((), self.dtype, buffer=buffer)[()]

    def record(self):
        """A read-only numpy record whose fields read as attributes (`r.x`, as the kernel
        writes them) and items (`r['x']`), or None where the memory is not readable."""
        if self.region is None:
            return None
        buffer = (ctypes.c_char * self.dtype.itemsize).from_address(self.address)
        one = np.ndarray((1,), self.dtype, buffer=buffer).view(np.recarray)
        one.flags.writeable = False
        return one[0]

    def __repr__(self) -> str:
        value = self.numpy()
        return repr(value) if value is not None else f"record at {self.address:#x}"


def span(data: int, shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    lo = hi = data
    for n, s in zip(shape, strides, strict=True):
        if n == 0:
            return data, data
        lo += min(0, (n - 1) * s)
        hi += max(0, (n - 1) * s)
    return lo, hi + itemsize


def decode(layout, area: int, readable: Readable, type_name: str = ""):
    """The Python value of one definition stored at `area` (a thread's debug area)."""
    kind = layout[0]
    if kind == "s":
        dtype = scalar_dtype(layout[1])
        value = np.frombuffer(read_bytes(area + layout[2], dtype.itemsize), dtype)[0]
        return bool(value) if dtype == np.bool_ else value
    if kind == "a":
        _, elem, ndim, offset, _layout = layout[:5]
        data = read_i64(area + offset) & (2**64 - 1)
        shape = tuple(read_i64(area + offset + 8 * (1 + k)) for k in range(ndim))
        strides = tuple(read_i64(area + offset + 8 * (1 + ndim + k)) for k in range(ndim))
        dtype = element_dtype(elem)
        lo, hi = span(data, shape, strides, dtype.itemsize)
        region = readable.space_of(lo, hi) if data else None
        return ArrayValue(data, shape, strides, dtype, type_name, region, readable.unreadable)
    if kind == "t":
        return tuple(decode(item, area, readable) for item in layout[1])
    if kind == "r":
        dtype = element_dtype(layout[1])
        address = read_i64(area + layout[2]) & (2**64 - 1)
        return RecordValue(address, dtype, readable.space_of(address, address + dtype.itemsize))
    return NotShown(layout[1] if len(layout) > 1 else "?")


@dataclass(frozen=True, slots=True)
class NotShown:
    """A value of a type the debugger does not display (e.g. a cooperative group)."""

    type: str

    def __repr__(self) -> str:
        return f"<{self.type}>"


@dataclass(frozen=True, slots=True)
class Variable:
    """A variable of a stopped thread: its value and numba type (that of the definition
    holding it now), and the kind of definition ("param", "def", "phi")."""

    name: str
    type: str
    value: object
    kind: str
    function: str

    def describe(self) -> str:
        return f"{self.name}: {self.type} = {format_value(self.value)}"


def format_value(value) -> str:
    """One line for tables (arrays: a summary), or several for an array's elements."""
    if isinstance(value, np.generic):
        return repr(value.item()) if not isinstance(value, np.floating) else \
            np.format_float_positional(value, trim="-") if np.isfinite(value) else str(value)
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def short_value(value) -> str:
    """A compact cell for the block and warp tables."""
    if isinstance(value, ArrayValue):
        return f"{value.type_name}{list(value.shape)}"
    if isinstance(value, RecordValue):
        return f"record@{value.address:#x}"
    return format_value(value)


def same_value(a, b) -> bool:
    """Equal for the divergence highlight (arrays by address and shape; NaN equals NaN)."""
    if isinstance(a, ArrayValue) and isinstance(b, ArrayValue):
        return (a.data, a.shape, a.strides) == (b.data, b.shape, b.strides)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.floating) and isinstance(b, np.floating):
        return bool(a == b or (np.isnan(a) and np.isnan(b)))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b
