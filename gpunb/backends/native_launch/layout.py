"""Every memory layout the launch machine code reads or writes, declared once as ctypes structures.

Two kinds: gpunb's own (a launch plan, a binding, a watch entry), which runtime/native_pack.py
fills in and plan_code.py's generated code follows; and CPython's and numpy's object headers,
which the generated code reads arguments from. The generator takes every offset from the
structures below (`offset(Struct, "field")`), and `object_layouts_hold()` checks the object
headers against live objects before any launcher is built: a mismatch means no native launchers
(the Python path), never a wrong read.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from gpunb.backends import base

U64, I64, U32, I32 = ctypes.c_uint64, ctypes.c_int64, ctypes.c_uint32, ctypes.c_int32

# ---- gpunb's own -----------------------------------------------------------------------------


class PlanHeader(ctypes.Structure):
    """How one specialisation's arguments of one set of kinds are checked and packed, into one
    thread's parameter buffer (immutable once built)."""

    _fields_ = [
        ("owner_thread", U64),  # the thread whose parameter buffer it packs into
        ("nargs", I64),
        ("args", U64),  # address of `nargs` ArgRecords
        ("params", U64),  # the void*[] cuLaunchKernel (or the CPU runner) reads
    ]


class ArgRecord(ctypes.Structure):
    """How one argument is checked and packed: `op` (OP_* below), its exact class, and per op a
    key/dtype object, a count, numpy flags and the address of more facts (`aux`), and where its
    parameter slots start."""

    _fields_ = [("op", I64), ("cls", U64), ("extra", U64), ("count", I64), ("flags", I64),
                ("aux", U64), ("dest", U64)]


# ArgRecord.op: RAW copies `count` bytes of the object's value; INT64 is PyLong_AsLongLong;
# BOOL compares with True; SLOTS checks a gpunb array's interned `_key` and copies its `_slots`
# tuple (`count` items); NDARRAY checks a numpy header's dtype object, ndim and flags and copies
# data pointer, shape and strides; TENSOR reads a torch tensor through its own attributes and
# methods (dtype object `extra`, ndim `count`, the rest in the TensorFacts at `aux`: see
# tensor_code.py) and writes data pointer, shape and strides as NDARRAY does
OP_RAW, OP_INT64, OP_BOOL, OP_SLOTS, OP_NDARRAY, OP_TENSOR = 1, 2, 3, 4, 5, 6


class TensorFacts(ctypes.Structure):
    """What a torch tensor argument must show beyond its dtype and ndim: torch's objects (known
    only once torch is imported, so never compiled into the code), the name of the boolean
    attribute that says it is on the target's device, its element size and kernel layout."""

    _fields_ = [("strided", U64),  # torch.strided: the layout object
                ("size_class", U64),  # torch.Size: what `tensor.shape` is
                ("device_flag", U64),  # an interned str, "is_cuda" or "is_cpu"
                ("itemsize", I64),
                ("layout", I64),  # LAYOUT_CODES' value of the kernel type's layout
                ("complex", I64),  # 1: a complex dtype, the only kind a conjugate bit is on
                ("ordinal", I64)]  # the context's GPU where get_device() is compared, else -1


LAYOUT_CODES = {"C": 0, "F": 1, "A": 2}  # the kernel layouts as TensorFacts.layout holds them
# numpy's C_CONTIGUOUS | F_CONTIGUOUS | ALIGNED | WRITEABLE: the flags a plan compares
NPY_FLAGS = 0x1 | 0x2 | 0x100 | 0x400


class WatchEntry(ctypes.Structure):
    """A watched global: still bound to `seen` (0: still unbound) in the dict `namespace`."""

    _fields_ = [("namespace", U64), ("name", U64), ("seen", U64)]


class Binding(ctypes.Structure):
    """A plan bound to one launch configuration at one dispatcher version: the bytes of a bound
    builtin's `self` (a bytes object, so nothing can change them)."""

    _fields_ = [
        ("plan", U64),  # address of a PlanHeader
        ("version_word", U64),  # address of the dispatcher's launch version (an i64)
        ("version", I64),  # the value it launches at
        ("watch", U64),  # address of `nwatch` WatchEntries
        ("nwatch", I64),
        ("launch_function", U64),  # a C function shaped like cuLaunchKernel; 0: pack only
        ("kernel_function", U64),  # its first argument (a CUfunction)
        ("last_launch", U64),  # address of a u64 the code stores kernel_function in; 0: none
        ("grid", U32 * 3),
        ("block", U32 * 3),
        ("shared_bytes", U32),
        ("stream", U64),
    ]


# what the generated code returns besides a CUresult (declared with NativeLaunch, the contract)
DECLINED, PACKED = base.DECLINED, base.PACKED

# ---- CPython's and numpy's object headers (64-bit builds) --------------------------------------


class ObjectHead(ctypes.Structure):
    """PyObject: every object starts so."""

    _fields_ = [("refcnt", I64), ("type", U64)]


class TupleHead(ctypes.Structure):
    """PyTupleObject up to its items (which follow)."""

    _fields_ = [("refcnt", I64), ("type", U64), ("size", I64)]


class BytesHead(ctypes.Structure):
    """PyBytesObject up to its data (which follows)."""

    _fields_ = [("refcnt", I64), ("type", U64), ("size", I64), ("hash", I64)]


class ValueHead(ctypes.Structure):
    """float, complex and numpy scalars: the value follows the object header."""

    _fields_ = [("refcnt", I64), ("type", U64)]


class NumpyArrayHead(ctypes.Structure):
    """numpy's PyArrayObject_fields up to its flags."""

    _fields_ = [("refcnt", I64), ("type", U64), ("data", U64), ("nd", I32), ("dimensions", U64),
                ("strides", U64), ("base", U64), ("descr", U64), ("flags", I32)]


def offset(structure: type, field: str) -> int:
    """The byte offset of `field` in `structure` (what the generated code adds)."""
    return getattr(structure, field).offset


_STRUCT_CODES = {U64: "Q", I64: "q", U32: "I", I32: "i"}


def packer_of(structure: type) -> struct.Struct:
    """A struct.Struct writing `structure`'s bytes from its fields' values in order (an array
    field takes one value per item): the fast way to make one, with the same layout."""
    layout, position = "<", 0
    for name, ctype in structure._fields_:
        field = getattr(structure, name)
        if field.offset > position:
            layout += f"{field.offset - position}x"
        array = hasattr(ctype, "_length_")  # an array field: a value per item
        count = ctype._length_ if array else 1
        layout += f"{count}{_STRUCT_CODES[ctype._type_ if array else ctype]}"
        position = field.offset + field.size
    layout += f"{ctypes.sizeof(structure) - position}x" if ctypes.sizeof(structure) > position \
        else ""
    made = struct.Struct(layout)
    assert made.size == ctypes.sizeof(structure), structure
    return made


TUPLE_ITEMS = ctypes.sizeof(TupleHead)
BYTES_DATA = ctypes.sizeof(BytesHead)
VALUE_DATA = ctypes.sizeof(ValueHead)

_FLAG_BITS = {"c_contiguous": 0x1, "f_contiguous": 0x2, "aligned": 0x100, "writeable": 0x400}
# numpy scalar classes whose value sits right after the object header (PyArrayScalar_VAL)
NUMPY_SCALARS = frozenset(
    np.dtype(c).type for c in "?bBhHiIlLqQefdFD" if np.dtype(c).type is not np.void)


def numpy_flags(array: np.ndarray) -> int:
    """The NPY_FLAGS bits of `array`, as the generated code reads them from its header."""
    flags = array.flags
    return sum(bit for name, bit in _FLAG_BITS.items() if getattr(flags, name))


def tuple_layout_holds(sample: tuple) -> bool:
    """Whether `sample`, a tuple or an instance of a tuple subclass made in C (torch.Size),
    holds its size and items where a tuple does (checked before code reads one so)."""
    try:
        head = TupleHead.from_address(id(sample))
        items = (U64 * len(sample)).from_address(id(sample) + TUPLE_ITEMS)
        return head.type == id(type(sample)) and head.size == len(sample) and \
            list(items) == [id(item) for item in sample]
    except Exception:  # noqa: BLE001 - any surprise means: not read so
        return False


def object_layouts_hold() -> bool:
    """Whether this process's objects are laid out as declared above (checked on live objects,
    once per process, before the first launcher is built)."""
    try:
        return _check_layouts()
    except Exception:  # noqa: BLE001 - any surprise means: no native launchers here
        return False


def _check_layouts() -> bool:
    sample = (1.5, "x")
    tuple_head = TupleHead.from_address(id(sample))
    items = (U64 * 2).from_address(id(sample) + TUPLE_ITEMS)
    ok = (tuple_head.type == id(tuple) and tuple_head.size == 2 and items[0] == id(sample[0]))
    number = 2.25
    ok = ok and ctypes.c_double.from_address(id(number) + VALUE_DATA).value == number
    cplx = complex(1.5, -2.0)
    ok = ok and ctypes.string_at(id(cplx) + VALUE_DATA, 16) == struct.pack("<dd", 1.5, -2.0)
    data = bytes(range(40))
    ok = ok and ctypes.string_at(id(data) + BYTES_DATA, len(data)) == data
    array = np.zeros((3, 4), np.float32)[:, 1:]
    head = NumpyArrayHead.from_address(id(array))
    ok = ok and (head.data == array.ctypes.data and head.nd == array.ndim
                 and head.descr == id(array.dtype)
                 and head.flags & NPY_FLAGS == numpy_flags(array)
                 and tuple((I64 * 2).from_address(head.dimensions)) == array.shape
                 and tuple((I64 * 2).from_address(head.strides)) == array.strides)
    for cls in NUMPY_SCALARS:
        value = cls(1)
        ok = ok and ctypes.string_at(id(value) + VALUE_DATA, value.itemsize) == value.tobytes()
    return bool(ok)
