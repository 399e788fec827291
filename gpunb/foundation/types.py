"""The type lattice of the kernel language, with numba-compatible names and promotion rules.

Types are frozen, hashable values. Scalar types can be indexed to make array types the way numba
users write them (`float32[:, ::1]`) and called to make signatures (`void(float32[:], int32)`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class Type:
    """Base of every kernel-language type."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self)

    def __call__(self, *args):
        """`int32(int32, int32)` is a signature (types as arguments); `int16(x)` of a value
        casts it on the host, as numba's number types do (numpy's conversion, wrapping)."""
        if len(args) == 1 and not isinstance(args[0], Type) and \
                isinstance(self, (Integer, Float, Complex, Boolean, BFloat16, FP8)):
            return to_dtype(self).type(args[0])
        return Signature(self, tuple(args))

    def __getitem__(self, item) -> Array:
        return array_type_from_slices(self, item)


@dataclass(frozen=True, slots=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True, slots=True)
class Optional(Type):
    """A value or None (numba's types.Optional): a variable None on one path, a value on another"""
    type: Type
    def __str__(self) -> str:
        return f"OptionalType({self.type})"


@dataclass(frozen=True, slots=True)
class StringLiteral(Type):
    """A string (or bytes) constant: print() takes it, and stores into string arrays."""

    kind: str = "str"  # or "bytes"

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True, slots=True)
class Boolean(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class Integer(Type):
    bitwidth: int
    signed: bool = True

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'uint'}{self.bitwidth}"


def plain(ty: Type) -> Type:
    """A kind of integer (an IntEnum member, enum_types.py) as the integer it computes with."""
    return Integer(ty.bitwidth, ty.signed) if isinstance(ty, Integer) and \
        type(ty) is not Integer else ty


@dataclass(frozen=True, slots=True)
class Float(Type):
    bitwidth: int

    def __str__(self) -> str:
        return f"float{self.bitwidth}"


@dataclass(frozen=True, slots=True)
class BFloat16(Type):
    """bfloat16: float32's 8-bit exponent with 7 stored mantissa bits (numba-cuda's
    `__nv_bfloat16`). A number of its own kind, not a Float: numba-cuda types it apart (bf16 with
    bf16 stays bf16, bf16 with float32 is float32), and it rounds as CUDA's bf16 intrinsics do."""

    def __str__(self) -> str:
        return "bfloat16"


# the fp8 formats: (exponent bits, mantissa bits, bias), as CUDA's __nv_fp8_e5m2/e4m3/e8m0
FP8_FORMATS = {"e5m2": (5, 2, 15), "e4m3": (4, 3, 7), "e8m0": (8, 0, 127)}


@dataclass(frozen=True, slots=True)
class FP8(Type):
    """An 8-bit float storage type (CUDA's __nv_fp8_e5m2, __nv_fp8_e4m3, __nv_fp8_e8m0): values
    are constructed from numbers and converted back; there is no fp8 arithmetic (as in CUDA)."""

    kind: str  # "e5m2" | "e4m3" | "e8m0"

    def __str__(self) -> str:
        return f"fp8_{self.kind}"

    @property
    def __name__(self) -> str:  # noqa: PLW3201 - numba-cuda's fp8 types are classes; code names them
        return f"fp8_{self.kind}"


@dataclass(frozen=True, slots=True)
class Complex(Type):
    bitwidth: int  # of the whole number: complex64 holds two float32

    @property
    def component(self) -> Float:
        return Float(self.bitwidth // 2)

    @property
    def underlying_float(self) -> Float:
        """numba's name for the component type."""
        return self.component

    def __str__(self) -> str:
        return f"complex{self.bitwidth}"


@dataclass(frozen=True, slots=True)
class Array(Type):
    """An array view: element type, dimensions and layout (`C`, `F` or `A` for any strides)."""

    dtype: Type
    ndim: int
    layout: str = "A"
    readonly: bool = False  # a non-writeable numpy array: GPU code may read it, never store
    # False: elements may sit at addresses their type's alignment does not divide (a field of a
    # packed record array, a sub-array field at an odd offset); loads and stores then say so
    # (a GPU faults on a misaligned access, CUDA_ERROR_MISALIGNED_ADDRESS)
    aligned: bool = True

    def __str__(self) -> str:
        # the cache keys a specialisation by its signature's text, so every layout prints apart;
        # where slice notation cannot say it (0-d, a 1-d 'F'), numba's spelling does
        if not self.aligned:
            return f"unaligned {Array(self.dtype, self.ndim, self.layout, self.readonly)}"
        if self.readonly:
            return f"readonly {Array(self.dtype, self.ndim, self.layout)}"
        if self.ndim == 0 or (self.ndim == 1 and self.layout == "F"):
            return f"array({self.dtype}, {self.ndim}d, {self.layout})"
        dims = [":"] * self.ndim
        if self.layout == "C":
            dims[-1] = "::1"
        elif self.layout == "F":
            dims[0] = "::1"
        return f"{self.dtype}[{', '.join(dims)}]"

    def with_layout(self, layout: str) -> Array:
        return self.derived(self.ndim, layout)

    def derived(self, ndim: int, layout: str) -> Array:
        """A view of this array (an index, a slice, a row): same dtype and access flags."""
        return Array(self.dtype, ndim, layout, self.readonly, self.aligned)


@dataclass(frozen=True, slots=True)
class Tuple(Type):
    items: tuple
    names: tuple = ()  # a namedtuple's field names (read as attributes in kernels)

    def __post_init__(self):
        if not isinstance(self.items, tuple):  # numba's Tuple([a, b]) takes any sequence
            object.__setattr__(self, "items", tuple(self.items))

    # numba's: a sequence of item types (len, t[0], iteration), yet always true (`if ty:`)
    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return True

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, item):  # an item type; slices spell arrays, as for every Type
        return self.items[item] if isinstance(item, int) else Type.__getitem__(self, item)

    types = property(lambda self: self.items, doc="numba's name for the item types")
    count = property(lambda self: len(self.items), doc="numba's UniTuple.count")

    @property
    def dtype(self) -> Type:
        """A homogeneous tuple's item type (numba's UniTuple.dtype)."""
        if not self.items or any(i != self.items[0] for i in self.items):
            raise AttributeError(f"{self} is not homogeneous: it has no single dtype")
        return self.items[0]

    def __str__(self) -> str:
        if self.names:  # the names are part of the type: `p.x` means another item elsewhere
            inner = ", ".join(f"{n}: {t}" for n, t in zip(self.names, self.items, strict=True))
            return f"NamedTuple({inner})"
        inner = ", ".join(str(t) for t in self.items)
        return f"({inner},)" if len(self.items) == 1 else f"({inner})"


@dataclass(frozen=True, slots=True)
class Record(Type):
    """A numpy structured dtype: named fields at byte offsets."""

    fields: tuple  # ((name, Type, offset), ...)
    size: int
    align: int = 1
    readonly: bool = False  # an element of a read-only array: fields may be read, not stored

    def field(self, name: str):
        for fname, ftype, offset in self.fields:
            if fname == name:
                return ftype, offset
        return None

    def with_align(self, align: int) -> Record:
        """This layout placed where only `align` is guaranteed (inside a packed record, in an
        unaligned array): its fields are then accessed with what that guarantees."""
        return Record(self.fields, self.size, min(self.align, align), self.readonly)

    def as_readonly(self) -> Record:
        return Record(self.fields, self.size, self.align, True)

    def field_alignment(self, ftype: Type, offset: int) -> int | None:
        """The alignment to load/store a field with: None when its natural alignment holds,
        else what the layout guarantees (the record's own alignment and the offset's)."""
        natural = _natural_alignment(ftype)
        guaranteed = self.align & -self.align  # records sit at multiples of their alignment
        if offset:
            guaranteed = min(guaranteed, offset & -offset)
        return None if guaranteed >= natural else guaranteed

    def __str__(self) -> str:
        # complete, not just readable: the cache keys a specialisation by its signature's text,
        # so two layouts of the same field names and types (packed, aligned) must print apart
        # names are quoted unless they are identifiers: numpy allows any text ('a: int8 @0, b')
        inner = ", ".join(f"{n if n.isidentifier() else repr(n)}: {t} @{offset}"
                          for n, t, offset in self.fields)
        text = f"Record({inner}; size={self.size}, align={self.align})"
        return f"readonly {text}" if self.readonly else text


@dataclass(frozen=True, slots=True)
class InlineArray(Type):
    """A fixed-shape array stored inside a record: a numpy sub-array field such as
    `('v', np.float32, (3,))`. Reading the field gives a C-contiguous view of the record's own
    bytes (`rec.v[1] = x` writes the record), as numba does; the field itself is not assignable."""

    dtype: Type
    shape: tuple

    def view(self, aligned: bool = True) -> Array:
        return Array(self.dtype, len(self.shape), "C", aligned=aligned)

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


@dataclass(frozen=True, slots=True)
class DateTime(Type):
    """numpy's datetime64[unit] (kind 'M') or timedelta64[unit] (kind 'm'): numba's NPDatetime
    and NPTimedelta, an int64 count of units whose least value is NaT (compiler/datetimes.py)."""

    kind: str
    unit: str  # numpy's: 'Y', 'M', 'W', 'D', 'h', ..., 'as', or '' (generic)

    def __str__(self) -> str:
        return f"{'datetime64' if self.kind == 'M' else 'timedelta64'}[{self.unit}]"


@dataclass(frozen=True, slots=True)
class CharSeq(Type):
    """numpy's fixed-width strings: numba's CharSeq (`S12`, bytes) and UnicodeCharSeq (`<U12`,
    UCS-4 code points); foundation/string_types.py encodes constants into them."""

    kind: str  # 'S' or 'U'
    count: int

    def __str__(self) -> str:
        return f"[{'char' if self.kind == 'S' else 'unichr'} x {self.count}]"

    @property
    def char_bytes(self) -> int:
        return 1 if self.kind == "S" else 4

    @property
    def size(self) -> int:
        return self.count * self.char_bytes


@dataclass(frozen=True, slots=True)
class Group(Type):
    """A cooperative group handle: cuda.cg.this_grid(), this_thread_block(), this_cluster()."""

    kind: str  # "grid" | "block" | "cluster"

    def __str__(self) -> str:
        return {"grid": "GridGroup", "cluster": "ClusterGroup"}.get(self.kind, "ThreadBlockGroup")


@dataclass(frozen=True, slots=True)
class Signature:
    """A function signature; `return_type` None means "infer it"."""

    return_type: Type | None
    args: tuple

    def __str__(self) -> str:
        if self.return_type is None:
            ret = "?"
        elif isinstance(self.return_type, NoneType):
            ret = "void"  # how signatures are declared: "void(float32[:])"
        else:
            ret = str(self.return_type)
        return f"{ret}({', '.join(str(a) for a in self.args)})"


ScalarTypes = (Boolean, Integer, Float, Complex)

none = void = NoneType()
boolean = bool_ = b1 = Boolean()
int8 = i1 = Integer(8)
int16 = i2 = Integer(16)
int32 = i4 = Integer(32)
int64 = i8 = Integer(64)
uint8 = u1 = Integer(8, False)
uint16 = u2 = Integer(16, False)
uint32 = u4 = Integer(32, False)
uint64 = u8 = Integer(64, False)
float16 = f2 = Float(16)
float32 = f4 = Float(32)
float64 = f8 = Float(64)
bfloat16 = nv_bfloat16 = BFloat16()
fp8_e5m2 = FP8("e5m2")
fp8_e4m3 = FP8("e4m3")
fp8_e8m0 = FP8("e8m0")
complex64 = c8 = Complex(64)
complex128 = c16 = Complex(128)
intp = int64
uintp = uint64

TYPE_NAMES: dict[str, Type] = {
    "void": void, "none": none, "boolean": boolean, "bool_": boolean, "b1": boolean,
    "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float16": float16, "float32": float32, "float64": float64,
    "complex64": complex64, "complex128": complex128,
    "i1": int8, "i2": int16, "i4": int32, "i8": int64,
    "u1": uint8, "u2": uint16, "u4": uint32, "u8": uint64,
    "f2": float16, "f4": float32, "f8": float64, "c8": complex64, "c16": complex128,
    "intp": intp, "uintp": uintp, "int_": int64, "float_": float64, "double": float64,
    "bfloat16": bfloat16, "nv_bfloat16": bfloat16, "__nv_bfloat16": bfloat16,
    "fp8_e5m2": fp8_e5m2, "fp8_e4m3": fp8_e4m3, "fp8_e8m0": fp8_e8m0,
}


def array_type_from_slices(dtype: Type, item) -> Array:
    """`float32[:, ::1]` -> Array(float32, 2, 'C'); `float32[::1, :]` -> 'F'; else 'A'."""
    if not isinstance(dtype, (Boolean, Integer, Float, Complex, Record, BFloat16, FP8, DateTime,
                              CharSeq)):
        raise TypeError(f"cannot make an array of {dtype}")
    dims = item if isinstance(item, tuple) else (item,)
    for d in dims:
        if not isinstance(d, slice) or d.start is not None or d.stop is not None or \
                d.step not in (None, 1):
            raise TypeError("array types are written with ':' and '::1' only, e.g. float32[:, ::1]")
    ones = [d.step == 1 for d in dims]
    layout = "A"
    if ones[-1] and not any(ones[:-1]):  # a 1-d '::1' too
        layout = "C"
    elif ones[0] and not any(ones[1:]):
        layout = "F"
    return Array(dtype, len(dims), layout)


def parse_signature(text: str, names: dict | None = None) -> Signature:
    """Parse numba's string signatures: `void(float32[:], int32)`, `float32(float32, float32)`;
    `names` adds type constructors (tensor_types.SIGNATURE_NAMES: an artifact's own text)."""
    namespace = dict(TYPE_NAMES, **(names or {}))
    try:
        value = eval(text, {"__builtins__": {}}, namespace)  # noqa: S307 - names are types only
    except Exception as exc:
        raise TypeError(f"cannot parse signature {text!r}: {exc}") from None
    if isinstance(value, Signature):
        return value
    if isinstance(value, tuple) and all(isinstance(v, Type) for v in value):
        return Signature(None, value)
    if isinstance(value, Type):
        return Signature(None, (value,))
    raise TypeError(f"cannot parse signature {text!r}: expected e.g. 'void(float32[:], int32)'")


# ---- numpy dtypes -------------------------------------------------------------------------------

_DTYPE_TO_TYPE = {
    np.dtype(np.bool_): boolean,
    np.dtype(np.int8): int8, np.dtype(np.int16): int16,
    np.dtype(np.int32): int32, np.dtype(np.int64): int64,
    np.dtype(np.uint8): uint8, np.dtype(np.uint16): uint16,
    np.dtype(np.uint32): uint32, np.dtype(np.uint64): uint64,
    np.dtype(np.float16): float16, np.dtype(np.float32): float32, np.dtype(np.float64): float64,
    np.dtype(np.complex64): complex64, np.dtype(np.complex128): complex128,
}
_TYPE_TO_DTYPE = {v: k for k, v in _DTYPE_TO_TYPE.items()}


# ml_dtypes' scalar types (numpy's dtypes for bfloat16 and fp8), by name: ml_dtypes is imported
# only when one of these types meets a dtype, so `import gpunb` stays fast
_ML_DTYPES = {"bfloat16": bfloat16, "float8_e5m2": fp8_e5m2, "float8_e4m3fn": fp8_e4m3,
              "float8_e8m0fnu": fp8_e8m0}
_ML_DTYPE_NAMES = {v: k for k, v in _ML_DTYPES.items()}


def ml_dtype(t: Type) -> np.dtype:
    """The ml_dtypes numpy dtype of bfloat16 or an fp8 type (fp8_e4m3 is ml_dtypes'
    float8_e4m3fn: no infinities, NaN 0x7f, as CUDA's __nv_fp8_e4m3)."""
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(f"{t} arrays and scalars on the host need the ml_dtypes package "
                        "(pip install ml-dtypes)") from None
    return np.dtype(getattr(ml_dtypes, _ML_DTYPE_NAMES[t]))


def from_dtype(dtype) -> Type:
    """The kernel type of a numpy dtype (structured dtypes become Records)."""
    dtype = np.dtype(dtype)
    found = _DTYPE_TO_TYPE.get(dtype)
    if found is not None:
        return found
    if dtype.type.__module__.startswith("ml_dtypes") and dtype.name in _ML_DTYPES:
        return _ML_DTYPES[dtype.name]
    if dtype.kind in "mM" and np.datetime_data(dtype)[1] == 1:  # datetime64[D] & co
        unit = np.datetime_data(dtype)[0]
        return DateTime(dtype.kind, "" if unit == "generic" else unit)
    if dtype.kind in "SU" and dtype.itemsize:  # numpy's fixed-width strings
        return CharSeq(dtype.kind, dtype.itemsize // (1 if dtype.kind == "S" else 4))
    if dtype.fields:
        fields = tuple(
            (name, _field_type(dtype.fields[name][0]), dtype.fields[name][1])
            for name in dtype.names
        )
        return Record(fields, dtype.itemsize, _layout_alignment(fields, dtype.itemsize))
    raise TypeError(f"numpy dtype {dtype} is not supported in GPU kernels")


def _natural_alignment(ty: Type) -> int:
    if isinstance(ty, Record):
        return ty.align
    if isinstance(ty, InlineArray):
        return _natural_alignment(ty.dtype)
    if isinstance(ty, Complex):
        return ty.bitwidth // 16
    return ty.char_bytes if isinstance(ty, CharSeq) else sizeof(ty)


def _layout_alignment(fields: tuple, itemsize: int) -> int:
    """The alignment a record's layout itself guarantees: its widest field's when every field
    sits at a multiple of its own alignment and the size is a multiple of it, else 1. Read from
    the layout (what numpy's dtype equality compares), not from dtype.alignment, which differs
    between dtypes numpy calls equal (align=True vs the same explicit offsets): equal dtypes
    must give equal types, or the launch fast path (keyed by dtype) and typeof disagree."""
    widest = 1
    for _, ftype, offset in fields:
        natural = _natural_alignment(ftype)
        if offset % natural:
            return 1
        widest = max(widest, natural)
    return widest if itemsize % widest == 0 else 1


def _field_type(dtype: np.dtype) -> Type:
    """A record field's type: a sub-array field (`('v', 'f4', (2, 3))`) is an InlineArray."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        inner = from_dtype(base)
        if isinstance(inner, Record):
            raise TypeError(f"numpy dtype {dtype} (an array of records inside a record) is not "
                            "supported in GPU kernels")
        return InlineArray(inner, tuple(int(n) for n in shape))
    return from_dtype(dtype)


def to_dtype(t: Type) -> np.dtype:
    if isinstance(t, Record):
        return np.dtype({"names": [f[0] for f in t.fields],
                         "formats": [to_dtype(f[1]) for f in t.fields],
                         "offsets": [f[2] for f in t.fields], "itemsize": t.size})
    if isinstance(t, InlineArray):
        return np.dtype((to_dtype(t.dtype), t.shape))
    if isinstance(t, (BFloat16, FP8)):
        return ml_dtype(t)
    if isinstance(t, DateTime):
        return np.dtype(f"{t.kind}8[{t.unit}]" if t.unit else f"{t.kind}8")
    if isinstance(t, CharSeq):
        return np.dtype(f"{'S' if t.kind == 'S' else '<U'}{t.count}")
    try:
        return _TYPE_TO_DTYPE[plain(t)]
    except KeyError:
        raise TypeError(f"{t} has no numpy dtype") from None


def sizeof(t: Type) -> int:
    if isinstance(t, (Boolean, FP8)):
        return 1
    if isinstance(t, (Integer, Float, Complex)):
        return t.bitwidth // 8
    if isinstance(t, BFloat16):
        return 2
    if isinstance(t, DateTime):
        return 8
    if isinstance(t, (Record, CharSeq)):
        return t.size
    if isinstance(t, InlineArray):
        return sizeof(t.dtype) * math.prod(t.shape)
    raise TypeError(f"{t} has no fixed size")


# ---- promotion ----------------------------------------------------------------------------------


def is_int(t: Type) -> bool:
    return isinstance(t, (Integer, Boolean))


def is_number(t: Type) -> bool:
    return isinstance(t, (Integer, Boolean, Float, Complex, BFloat16))


def is_fp8(t: Type) -> bool:
    return isinstance(t, FP8)


def integer_result(a: Type, b: Type) -> Type:
    """numba's integer promotion: at least 64 bits; mixed signedness of 64 bits -> float64."""
    a, b = plain(a), plain(b)
    a = int64 if isinstance(a, Boolean) else a
    b = int64 if isinstance(b, Boolean) else b
    if a.signed == b.signed:
        return Integer(max(a.bitwidth, b.bitwidth, 64), a.signed)
    unsigned, signed = (a, b) if not a.signed else (b, a)
    if unsigned.bitwidth < 64:
        return int64
    return float64 if signed.bitwidth <= 64 else signed


def unify_numbers(a: Type, b: Type) -> Type:
    """The type both operands of arithmetic are converted to (numpy/numba rules)."""
    a, b = plain(a), plain(b)
    if isinstance(a, BFloat16) or isinstance(b, BFloat16):
        return _unify_with_bfloat16(a, b)
    small_int = isinstance(a, Integer) and a.bitwidth < 64
    if a == b and not isinstance(a, Boolean) and not small_int:
        return a
    if isinstance(a, Complex) or isinstance(b, Complex):
        width = max(_complex_width(a), _complex_width(b))
        return Complex(width)
    if isinstance(a, Float) or isinstance(b, Float):
        fa = a.bitwidth if isinstance(a, Float) else _int_as_float_width(a)
        fb = b.bitwidth if isinstance(b, Float) else _int_as_float_width(b)
        return Float(max(fa, fb))
    return integer_result(a, b)


def _unify_with_bfloat16(a: Type, b: Type) -> Type:
    """bfloat16 with itself, a byte-sized integer or a bool stays bfloat16 (they convert to it
    exactly); with anything else it counts as the float32 it widens to exactly."""
    other = b if isinstance(a, BFloat16) else a
    if isinstance(other, (BFloat16, Boolean)) or \
            (isinstance(other, Integer) and other.bitwidth == 8):
        return bfloat16
    return unify_numbers(float32, other)


def _complex_width(t: Type) -> int:
    if isinstance(t, Complex):
        return t.bitwidth
    if isinstance(t, Float):
        return 128 if t.bitwidth == 64 else 64
    return 128


def _int_as_float_width(t: Type) -> int:
    # numpy: int8/uint8 + float16 -> float16; int16 + float32 -> float32; int32/int64 -> float64
    if isinstance(t, Boolean) or t.bitwidth <= 8:
        return 16
    if t.bitwidth <= 16:
        return 32
    return 64
