"""Native launchers: one specialisation's argument checks, packing and (on a GPU) cuLaunchKernel
call as machine code, so a repeated `kernel[grid, block](args)` costs one call.

Why: a launch's Python steps before the driver call (type keys, the specialisation lookup, the
watch list, packing) cost more than the driver call's own Python wrapper. A `NativeLauncher`
writes a *plan* (native_plan_code.py: plain memory) for one specialisation, one thread's parameter
buffer and the argument kinds of a launch that went through the Python path; the process's one
compiled plan follower runs it. `bind(grid3, block3, shared, stream)` gives a builtin
`f(args) -> int` for one launch configuration that

- declines (-1) unless it runs on the buffer's thread, the launch gate (foundation/launch_gate)
  reads what `arm` saw, every watched name is still bound to the object seen (PyDict_GetItem and
  an identity compare per entry) and each argument is of the kind seen: its exact class, and for
  a gpunb array its interned type key, for a numpy array its dtype object, ndim and flags;
- writes every argument into its parameter slot (numbers read from the object, arrays from their
  precomputed slot tuple or the numpy header);
- returns -2 (packed: the caller runs the CPU program), or calls the launch function with the
  bound configuration, the GIL released, and returns its CUresult.

A declined launch takes the Python path, which checks everything and raises the right error, so
the native code never raises. The object layouts it reads (ob_type, tuple items, float, complex
and numpy scalar values, the numpy array header, bytes data) are CPython's and numpy's stable
ones; each is verified on live objects before the first launcher is built, and a mismatch means
no launchers (the Python path), never a wrong read.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import threading

import numpy as np

from gpunb.foundation import launch_gate
from gpunb.foundation import types as t
from gpunb.runtime import native_plan_code as code
from gpunb.runtime.native_plan_code import DECLINED, DIMS, NPY_FLAGS, PACKED  # noqa: F401

_FLAG_BITS = {"c_contiguous": 0x1, "f_contiguous": 0x2, "aligned": 0x100, "writeable": 0x400}
# numpy scalar classes whose value sits right after the object header (PyArrayScalar_VAL)
_NUMPY_SCALARS = frozenset(
    np.dtype(c).type for c in "?bBhHiIlLqQefdFD" if np.dtype(c).type is not np.void)


class Unsupported(Exception):
    """This launch's arguments or this process cannot have a native launcher (not an error: the
    Python path launches them)."""


# ---- what this process's object layouts are ------------------------------------------------------

def _word(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


def _layouts_ok() -> bool:
    """Check each layout the generated code reads on live objects (once per process)."""
    try:
        sample = (1.5, "x")
        floats = 2.25
        cplx = complex(1.5, -2.0)
        arr = np.zeros((3, 4), np.float32)[:, 1:]
        data = DIMS.pack(9, 1, 2, 3, 4, 5, 6, 7, 0, 8)
        ok = (_word(id(sample) + 8) == id(tuple) and _word(id(sample) + 16) == 2
              and _word(id(sample) + 24) == id(sample[0])
              and ctypes.c_double.from_address(id(floats) + 16).value == floats
              and ctypes.string_at(id(cplx) + 16, 16) == struct.pack("<dd", 1.5, -2.0)
              and ctypes.string_at(id(data) + 32, len(data)) == data
              and _word(id(arr) + 16) == arr.ctypes.data
              and ctypes.c_int32.from_address(id(arr) + 24).value == arr.ndim
              and _word(id(arr) + 56) == id(arr.dtype)
              and _array_flags(arr) == ctypes.c_int32.from_address(id(arr) + 64).value
              & NPY_FLAGS)
        dims = ctypes.cast(_word(id(arr) + 32), ctypes.POINTER(ctypes.c_int64))
        strides = ctypes.cast(_word(id(arr) + 40), ctypes.POINTER(ctypes.c_int64))
        ok = ok and tuple(dims[:2]) == arr.shape and tuple(strides[:2]) == arr.strides
        for cls in _NUMPY_SCALARS:
            value = cls(1)
            ok = ok and ctypes.string_at(id(value) + 16, value.itemsize) == value.tobytes()
        return bool(ok)
    except Exception:  # noqa: BLE001 - any surprise means: no native launchers here
        return False


def _array_flags(arr: np.ndarray) -> int:
    flags = arr.flags
    return sum(bit for name, bit in _FLAG_BITS.items() if getattr(flags, name))


_layout_verdict: list = []
_ready: list = []  # [True] once launchers can be built (then available() is one test)
_background: list = []  # the thread loading llvmlite for a process that never compiled


def available() -> bool:
    """Whether native launchers can be built now: llvmlite already loaded (a compile loads it;
    launchers never load it on a launch's path), layouts verified, not turned off
    (GPUNB_NATIVE_LAUNCH=0, read until the first launcher is possible)."""
    if _ready:
        return True
    if "llvmlite.binding" not in sys.modules:
        return False
    from gpunb.foundation import config

    if not config.native_launch_enabled():
        return False
    if not _layout_verdict:
        _layout_verdict.append(_layouts_ok())
    if _layout_verdict[0]:
        _ready.append(True)
    return _layout_verdict[0]


def prepare_in_background() -> None:
    """A process that only loaded cached kernels has no llvmlite: load it and compile the plan
    follower on a daemon thread (once), so launchers come later without a pause on any launch.
    Called from the second launch of a configuration, never from a process's first launch."""
    from gpunb.foundation import config

    if _background or not config.native_launch_enabled():
        return

    def load() -> None:
        try:
            import llvmlite.binding  # noqa: F401 - what available() looks for

            if available():
                code.plan_code(launch_gate.address)
        except Exception:  # noqa: BLE001 - no launchers is only slower: the Python path stays
            pass

    thread = threading.Thread(target=load, name="gpunb-native-launch", daemon=True)
    _background.append(thread)
    thread.start()


# ---- argument kinds ----------------------------------------------------------------------------

def _kind(value, ty: t.Type, formats: list, target: str):
    """How the native code checks and packs this argument, or Unsupported."""
    from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

    cls = value.__class__
    if isinstance(ty, t.Array):
        if cls is (DeviceArray if target == "cuda" else HostDeviceArray):
            # gpunb's arrays: an interned type key and a slot tuple, both made with the array
            return ("slots", cls, value._key, ty.ndim)
        if cls is np.ndarray and target == "cpu":
            from gpunb.runtime.typeof import typeof

            if typeof(value) != ty:
                raise Unsupported("the array's type differs from the compiled one")
            return ("ndarray", value.dtype, value.ndim, _array_flags(value))
        raise Unsupported(f"a {cls.__name__} array is passed the Python way")
    from gpunb.runtime.typeof import typeof

    try:
        exact = typeof(value) == ty  # a declared signature may convert (int -> float32)
    except TypeError:
        exact = False
    if not exact:
        raise Unsupported("the value needs converting")
    if cls is int and formats == ["q"]:
        return ("int64", cls)
    if cls is bool and formats == ["?"]:
        return ("bool", cls)
    if cls is float and formats == ["d"]:
        return ("raw", cls, 8)
    if cls is complex and formats == ["d", "d"]:
        return ("raw", cls, 16)
    if cls in _NUMPY_SCALARS and struct.calcsize("<" + "".join(formats)) == value.itemsize:
        return ("raw", cls, value.itemsize)
    raise Unsupported(f"a {cls.__name__} argument is passed the Python way")


# ---- the generated code ------------------------------------------------------------------------


class NativeLauncher:
    """A launch plan for one specialisation's arguments of the kinds seen in `args`, packing into
    `packer`'s buffer (its thread's); with `launch_address` (a cuLaunchKernel-shaped C function)
    and `function_address` the builtins launch too. Unsupported when the kinds cannot be packed
    natively. Starts disarmed: `set_watch` and `arm` make it launch."""

    def __init__(self, packer, argtypes: tuple, args: tuple, launch_address: int | None = None,
                 function_address: int = 0, last_launch: list | None = None,
                 name: str = "kernel"):
        if packer._argtypes is not argtypes:
            packer._prepare(argtypes)
        formats = [[] for _ in argtypes]
        slots = [[] for _ in argtypes]
        for k, (fmt, owner) in enumerate(zip(packer._slot_formats, packer._slot_args,
                                              strict=True)):
            formats[owner].append(fmt)
            slots[owner].append(k)
        self.kinds = tuple(_kind(value, ty, fmts, packer.target)
                           for value, ty, fmts in zip(args, argtypes, formats, strict=True))
        self.packer = packer
        self.owner = packer._owner
        self.watch = None
        self.watch_ok = False  # whether `watch` is checked natively (else every launch declines)
        self._watch_block = None
        self._keep = [self.kinds, last_launch, name]
        plan = [self.owner, -1, 0, len(argtypes), packer.params_address, launch_address or 0,
                function_address, id(last_launch) if last_launch is not None else 0, id(name)]
        base = ctypes.addressof(packer._buffer)
        for kind, owned in zip(self.kinds, slots, strict=True):
            plan += _record(kind, [base + packer.offsets[k] for k in owned],
                            [struct.calcsize("<" + packer._slot_formats[k]) for k in owned])
        self._plan = (ctypes.c_int64 * len(plan))(*[_signed(w) for w in plan])
        self._plan_address = ctypes.addressof(self._plan)
        self._code = code.plan_code(launch_gate.address)

    def bind(self, grid3: tuple = (1, 1, 1), block3: tuple = (1, 1, 1), shared: int = 0,
             stream: int = 0):
        """The builtin `f(args) -> int` for one launch configuration (validated by the caller)."""
        dims = DIMS.pack(self._plan_address, *grid3, *block3, shared, 0, stream)
        return self._code.bind(dims, self)

    def set_watch(self, watch: tuple, missing: object) -> bool:
        """Check these watch entries (cache/fingerprint.py: namespace.get, name, object seen, or
        `missing` for an unbound name) natively from now on; False (and every launch declines)
        when one is not a plain dict's (a closure cell, an object's attributes)."""
        entries = []
        for get, name, obj in watch:
            namespace = getattr(get, "__self__", None)
            if type(namespace) is not dict or type(name) is not str:
                self._plan[2] = 0
                self._watch_block = None
                self.watch, self.watch_ok = watch, False
                return False
            entries += [id(namespace), id(name), 0 if obj is missing else id(obj)]
        block = (ctypes.c_int64 * (1 + len(entries)))(len(watch), *map(_signed, entries))
        # one store switches blocks; the native code reads them only while holding the GIL
        self._plan[2] = ctypes.addressof(block)
        self._watch_block = block
        self.watch, self.watch_ok = watch, True  # keeps the watched namespaces and objects alive
        return True

    def arm(self, gate_value: int) -> None:
        """Launch while the gate still reads `gate_value` (read before the caller's checks)."""
        self._plan[1] = gate_value

    def disarm(self) -> None:
        self._plan[1] = -1

    @property
    def armed_at(self) -> int:
        """The gate value it launches at (`arm`'s), -1 when disarmed."""
        return self._plan[1]


def _record(kind: tuple, addresses: list, sizes: list) -> list:
    """One plan record: op, exact class, key or dtype, count, flags, destination."""
    op = kind[0]
    if op == "raw":
        end = addresses[-1] + sizes[-1]
        if end - addresses[0] != kind[2]:
            raise Unsupported("the value's slots are not contiguous")
        return [code.OP_RAW, id(kind[1]), 0, kind[2], 0, addresses[0]]
    if op == "int64":
        return [code.OP_INT64, id(kind[1]), 0, 0, 0, addresses[0]]
    if op == "bool":
        return [code.OP_BOOL, id(kind[1]), 0, 0, 0, addresses[0]]
    if any(b - a != 8 for a, b in zip(addresses, addresses[1:], strict=False)):
        raise Unsupported("the array's slots are not contiguous")
    if op == "slots":
        return [code.OP_SLOTS, id(kind[1]), id(kind[2]), 1 + 2 * kind[3], 0, addresses[0]]
    _, dtype, ndim, flags = kind
    return [code.OP_NDARRAY, id(np.ndarray), id(dtype), ndim, flags, addresses[0]]


def _signed(word: int) -> int:
    return word - (1 << 64) if word >= 1 << 63 else word
