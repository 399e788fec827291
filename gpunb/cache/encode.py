"""Canonical, repr-free encodings of the values kernel code reads, for content keys.

The compiler freezes numbers, tuples, numpy scalars and arrays into code, so those are encoded by
value (with their type: `1`, `1.0` and `True` differ). Modules, classes, builtins, ufuncs, dtypes
and gpunb's own intrinsics and types are compile-time names, encoded by qualified name. Any other
object is encoded as `object:<module>.<type qualname>` - its content is not part of the key. That
is sound because the compiler cannot freeze such an object into code: it can only serve as the base
of an attribute chain (`cfg.N`), and every step of a chain is encoded on its own (fingerprint.py).
GPU functions are encoded by their fingerprint, which the caller supplies (`gpu` callback).
No encoding uses `repr` of an arbitrary object: reprs carry addresses and change between processes.
"""

from __future__ import annotations

import enum
import struct
import sys
import types

from gpunb.foundation import extending
from gpunb.foundation.memo import RecentlyUsed
from gpunb.foundation.pyobjects import MISSING, is_gpu_function

try:  # hashlib.blake2b is this C code; importing it directly skips loading OpenSSL, 2.5-8 ms of
    # a disk hit's 10 ms (benchmarks/library_costs.py)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b


_SCALARS = (bool, int, float, complex, str, bytes)
_MAX_TUPLE = 4096  # longer tuples are hashed, not spelled out, to bound key-part sizes

# arrays are hashed at most once per epoch: id -> (array, epoch object, digest)
_array_digests = RecentlyUsed(1024)  # id(array) -> (array, epoch marker, digest)


def qualified_name(obj) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', None) or getattr(obj, '__name__', '?')}"


def is_constant(value) -> bool:
    """Values the compiler freezes into code (attribute chains stop at them)."""
    if value is None or isinstance(value, _SCALARS + (tuple, list)):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, (np.ndarray, np.generic, np.dtype))


def encode(value, gpu, epoch_marker=None) -> str:
    """The canonical token of `value`; `gpu(obj) -> str` encodes GPU functions."""
    cls = type(value)
    if value is MISSING:
        return "missing"
    if value is None:
        return "None"
    if cls in _SCALARS:
        return f"{cls.__name__}:{_scalar_text(value)}"
    if cls is tuple or cls is list:
        return _sequence(cls.__name__, value, gpu, epoch_marker)
    if extending.has_overloads(value):  # (before its own body: overloads are what is called)
        return overloaded(value, gpu)
    if isinstance(value, extending.Intrinsic):  # its typing function and codegen, by content
        return f"intrinsic-defn:{value.prefer_literal}:{gpu(value._defn)}"
    if is_gpu_function(value):
        return gpu(value)
    if cls is types.ModuleType or isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    np = sys.modules.get("numpy")
    if np is not None and (cls.__module__ == "numpy" or isinstance(value, _numpy_types(np))):
        return _numpy(value, np, epoch_marker)
    if isinstance(value, enum.Enum):
        return _enum_member(value, gpu, epoch_marker)
    if isinstance(value, _SCALARS):  # subclasses of int, str, ...
        base = next(b for b in _SCALARS if isinstance(value, b))
        return f"{qualified_name(cls)}:{_scalar_text(base(value))}"
    if isinstance(value, tuple):  # namedtuples and other tuple subclasses
        return qualified_name(cls) + _sequence("", value, gpu, epoch_marker)
    if isinstance(value, type):
        if issubclass(value, tuple) and isinstance(getattr(value, "_fields", None), tuple):
            # a namedtuple class: kernels build it (`P(1)`), so its fields and defaults are
            # compiled in
            defaults = getattr(value, "_field_defaults", None) or {}
            return (f"class:{qualified_name(value)}{value._fields!r}" +
                    _sequence("", tuple(defaults.items()), gpu, epoch_marker))
        if issubclass(value, enum.Enum):  # kernels look members up by name: `Color['GREEN']`
            members = ",".join(f"{name}={member.name}:{encode(member.value, gpu, epoch_marker)}"
                               for name, member in value.__members__.items())
            return f"class:{qualified_name(value)}[{members}]"
        return f"class:{qualified_name(value)}"
    if cls.__module__.startswith("gpunb."):
        return _gpunb_object(value)
    numba_type = _numba_type(value)
    if numba_type is not None:
        return numba_type
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return f"builtin:{getattr(value, '__module__', None) or '?'}.{value.__qualname__}"
    if isinstance(value, types.FunctionType):
        return f"pyfunc:{qualified_name(value)}:{_code_digest(value.__code__)}"
    foreign = _cuda_array(value)
    if foreign is not None:  # kernels capture another library's GPU array by its address
        return foreign
    return f"object:{qualified_name(cls)}"


def overloaded(func, gpu) -> str:
    """A function given @overload / register_jitable: what kernels compile for a call of it is
    what its registrations generate, so each generator (or the jitable function itself) is
    fingerprinted like a GPU function, with the options that shape its code."""
    parts = [f"{o.options_text()}={gpu(o.implements or o.generator)}"
             for o in extending.function_overloads(func)]
    return f"overloaded:{qualified_name(func)}[{';'.join(parts)}]"


def member_overloads(attr: str, gpu) -> str:
    """The @overload_method / @overload_attribute registrations of a name (a kernel reading
    `.attr` of any value may resolve to one of them): "" when there is none."""
    parts = [f"{o.options_text()}:{encode(o.key, gpu)}={gpu(o.generator)}"
             for kind in ("method", "attribute") for o in extending.member_overloads(kind, attr)]
    return f"member-overloads:{attr}[{';'.join(parts)}]" if parts else ""


def _enum_member(member, gpu, epoch_marker) -> str:
    """An Enum member by its class's layout, its name and its value: kernels hold a plain Enum's
    member as its position in the class (`c == Color.GREEN` compares positions), so a class whose
    members were reordered, added or removed (a cell run again, another process's definition)
    must give another key; an IntEnum member computes with its value."""
    cls = type(member)
    names = ",".join(m.name for m in cls)
    return (f"enum:{qualified_name(cls)}[{names}]:{member.name}="
            f"{encode(member.value, gpu, epoch_marker)}")


def _numba_type(value) -> str | None:
    """numba's own type objects (`DT = numba.float32`: kernels take them as dtypes and casts)
    by their canonical name, which numba interns types by: as `object:<class>` float32 and
    float64 (both of class Float) shared a key."""
    if not type(value).__module__.startswith("numba."):
        return None
    name = getattr(value, "name", None)
    return f"numba-type:{qualified_name(type(value))}:{name}" if isinstance(name, str) else None


def _cuda_array(value) -> str | None:
    """Another library's GPU array (__cuda_array_interface__): kernels embed its address, so
    the key holds it (valid in this process only), with its geometry."""
    try:
        desc = getattr(value, "__cuda_array_interface__", None)
    except Exception:  # noqa: BLE001 - a failing property is no interface
        return None
    if not isinstance(desc, dict):
        return None
    import os

    return (f"cuda-array:{os.getpid()}:{desc.get('data')}:{desc.get('shape')}:"
            f"{desc.get('strides')}:{desc.get('typestr')}:{desc.get('descr')}")


_BY_VALUE = frozenset({int, bool, str, bytes})
_BY_TEXT = frozenset({float, complex})  # -0.0 == 0.0, yet copysign tells them apart


def same_constant(seen, obj) -> bool:
    """Whether `seen` is a new object holding the constant `obj` holds, as its key encodes it.

    A property (`params.scale`) or a module's `__getattr__` answers each read with a new object:
    by identity alone every launch of a kernel reading one took the slow path (hundreds of
    microseconds) and recorded a "re-checked" event. Only reached when identity fails."""
    cls = type(obj)
    if type(seen) is not cls:
        return False
    if cls in _BY_VALUE:
        return seen == obj
    if cls in _BY_TEXT:
        return _scalar_text(seen) == _scalar_text(obj)
    if cls is tuple:
        return len(seen) == len(obj) and all(
            a is b or same_constant(a, b) for a, b in zip(seen, obj, strict=True))
    if cls.__module__ == "numpy" and getattr(obj, "shape", None) == ():  # numpy scalars
        return seen.dtype == obj.dtype and seen.tobytes() == obj.tobytes()
    return False


def _scalar_text(value) -> str:
    """repr, but a NaN's sign and payload too: all NaNs print 'nan', yet a frozen -nan gives
    math.copysign(1.0, X) == -1.0, so nan and -nan must not share a key."""
    text = repr(value)
    if "nan" in text and isinstance(value, (float, complex)):
        parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
        text += ":" + struct.pack(f"<{len(parts)}d", *parts).hex()
    return text


def _sequence(name: str, items, gpu, epoch_marker) -> str:
    if len(items) > _MAX_TUPLE:
        text = "|".join(encode(v, gpu, epoch_marker) for v in items)
        return f"{name}#{len(items)}:{blake2b(text.encode(), digest_size=16).hexdigest()}"
    return f"{name}(" + ",".join(encode(v, gpu, epoch_marker) for v in items) + ")"


def _numpy_types(np) -> tuple:
    if np is None:
        return ()
    return (np.ndarray, np.generic, np.dtype, np.ufunc)


def _dtype_text(dtype) -> str:
    """Everything that shapes a dtype's layout, unambiguously. Not `descr`: numpy refuses it for
    out-of-order or overlapping fields, and a bare sub-array dtype's `str` is just `|V12`."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return f"{_dtype_text(base)}{list(shape)}"
    if dtype.fields is None:
        return dtype.str
    fields = [(name, _dtype_text(dtype.fields[name][0]), dtype.fields[name][1],
               dtype.fields[name][2] if len(dtype.fields[name]) > 2 else None)
              for name in dtype.names]
    return f"struct{fields!r}:{dtype.itemsize}:{int(dtype.isalignedstruct)}"


def _numpy(value, np, epoch_marker) -> str:
    if isinstance(value, np.ndarray):
        content = _array_digest(value, np, epoch_marker)
        return f"ndarray:{_dtype_text(value.dtype)}:{value.shape}:{content}"
    if isinstance(value, np.generic):
        return f"np:{_dtype_text(value.dtype)}:{value.tobytes().hex()}"
    if isinstance(value, np.dtype):
        return f"dtype:{_dtype_text(value)}"
    if isinstance(value, np.ufunc):
        return f"ufunc:numpy.{value.__name__}"
    if isinstance(value, type):
        return f"class:{qualified_name(value)}"
    if callable(value):
        return f"builtin:{qualified_name(value)}"
    return f"object:{qualified_name(type(value))}"


def _array_digest(array, np, epoch_marker) -> str:
    """Content digest of an array in C order; memoised per epoch (in-place edits need a bump)."""
    found = _array_digests.get(id(array))
    if found is not None and found[0] is array and found[1] is epoch_marker \
            and epoch_marker is not None:
        return found[2]
    if array.dtype.hasobject:  # not a kernel constant, but keyed by content all the same
        text = "|".join(encode(v, lambda f: "gpu") for v in array.flat).encode()
    else:
        contiguous = np.ascontiguousarray(array)
        text = contiguous.view(np.uint8).reshape(-1) if contiguous.size else b""
    digest = blake2b(text, digest_size=16).hexdigest()
    _array_digests[id(array)] = (array, epoch_marker, digest)
    return digest


def _gpunb_object(value) -> str:
    owner = getattr(type(value), "__gpunb_device_array__", None)
    if isinstance(owner, str):  # kernels embed its address: valid in this process only
        import os

        return (f"device-array:{owner}:{os.getpid()}:{value._ptr:#x}:{value.shape}:"
                f"{value.strides}:{value.dtype.str}")
    intrinsic = getattr(value, "_gpunb_intrinsic", None)
    if isinstance(intrinsic, str):
        return f"intrinsic:{intrinsic}"
    content = getattr(value, "_gpunb_content_key", None)  # foreign code: its declaration + bytes
    if isinstance(content, str):
        return f"gpunb-content:{qualified_name(type(value))}:{content}"
    if type(value).__module__ == "gpunb.foundation.types":
        return f"gpunb-type:{value}"  # types print as their canonical numba-style names
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return f"gpunb:{qualified_name(type(value))}" + (f":{name}" if isinstance(name, str) else "")


def _code_digest(code) -> str:
    """A plain Python function (not callable from GPU code) by bytecode, names and constants."""
    h = blake2b(digest_size=12)
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        h.update((_code_digest(const) if isinstance(const, types.CodeType)
                  else encode(const, lambda f: "gpu")).encode())
    return h.hexdigest()


def preview(value) -> str:
    """A short human-readable value for provenance (`N = 256`), or '' when there is none."""
    if value is None or type(value) in (bool, int, float, complex):
        text = repr(value)
        if type(value) is float and text == "nan" and struct.pack("<d", value)[7] & 0x80:
            text = "-nan"  # the sign is content (copysign), so a change of it is shown
    elif type(value) is str:
        text = repr(value)
    elif isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    elif _numba_type(value) is not None:
        text = f"numba {value.name}"  # `DT = numba.float32` -> numba.float64 names both
    elif isinstance(value, enum.Enum):  # its position is content: the class's order shown
        members = ", ".join(m.name for m in type(value))
        text = f"{type(value).__name__}.{value.name} = {value.value!r} of ({members})"
    elif isinstance(value, type) and issubclass(value, enum.Enum):
        text = f"{value.__name__}({', '.join(f'{m.name}={m.value!r}' for m in value)})"
    else:
        np = sys.modules.get("numpy")
        if np is not None and isinstance(value, np.generic):
            # numpy 2's repr is `np.float32(1.5)`: shown as float32(1.5)
            item = value.item() if value.dtype.kind in "biufc" else value
            text = f"{value.dtype.name}({item!r})" if value.dtype.fields is None else ""
        elif np is not None and isinstance(value, np.ndarray):
            if value.size > 8 or value.dtype.fields is not None or value.dtype.hasobject:
                return f"array {value.dtype} {value.shape}"
            text = f"array {value.dtype} {value.tolist()}"  # small: an edit shows its values
        elif type(value) is tuple and len(value) <= 8:
            parts = [preview(v) for v in value]
            text = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")" \
                if all(parts) else ""
        else:
            return ""
    return text if len(text) <= 60 else text[:57] + "..."
