"""Native launch plans: one specialisation's argument checks and packing, for the argument kinds
of one launch, written as plain memory that the process's compiled plan follower runs
(backends/native_launch/: plan_code.py, in layout.py's structures).

Why: a launch's Python steps before the driver call (type keys, the specialisation lookup, the
watch list, packing) cost more than the driver call's own Python wrapper; as machine code they
cost a fraction of it, so a repeated `kernel[grid, block](args)` costs one call.

A `NativePlan` is made once per specialisation and argument kinds, from the arguments of a
launch, and never changes. It accepts an argument of the kind seen: its exact class, and for a
gpunb array its interned type key, for a numpy array its dtype object, ndim and flags, for a
plain PyTorch tensor on the target's device its dtype, ndim, kernel layout and what else
runtime/torch_tensors.py reads (backends/native_launch/tensor_code.py reads them at each
launch); numbers are read from the object. `bind` makes the builtin `f(args) -> int` for one
launch configuration (a Program's `NativeLaunch`) at one dispatcher version with one watch
list: the builtin a native `jit.launcher.Launcher` calls. Nothing here launches on its own or
raises from machine code: a declined launch takes the Python path, which checks everything and
raises the right error.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import threading

import numpy as np

from gpunb.backends.base import NativeLaunch
from gpunb.backends.native_launch import layout
from gpunb.foundation import types as t
from gpunb.runtime import torch_tensors


class Unsupported(Exception):
    """This launch's arguments or this process cannot have a native launcher (not an error: the
    Python path launches them)."""


class _Availability:
    """Whether this process can build plans: once llvmlite is loaded (a compile loads it;
    nothing on a launch's path loads it) and the object layouts were checked."""

    def __init__(self):
        self.verdict: bool | None = None  # the layout check's answer, once asked
        self.loader: threading.Thread | None = None  # loads llvmlite for a process that never
        # compiled (only loaded cached kernels)


_availability = _Availability()


def available() -> bool:
    """Whether native launchers can be built now: llvmlite already loaded, the object layouts
    verified, not turned off (GPUNB_NATIVE_LAUNCH=0, read until the layouts were checked)."""
    verdict = _availability.verdict
    if verdict is not None:
        return verdict
    if "llvmlite.binding" not in sys.modules:
        return False
    from gpunb.foundation import config

    if not config.native_launch_enabled():
        return False
    _availability.verdict = layout.object_layouts_hold()
    return _availability.verdict


def prepare_in_background() -> None:
    """A process that only loaded cached kernels has no llvmlite: load it and compile the plan
    follower on a daemon thread (once), so launchers come later without a pause on any launch.
    Called from a configuration's second launch on, never from a process's first launch."""
    from gpunb.foundation import config

    if _availability.loader is not None or not config.native_launch_enabled():
        return

    def load() -> None:
        try:
            import llvmlite.binding  # noqa: F401 - what available() looks for

            if available():
                from gpunb.backends.native_launch.plan_code import plan_code

                plan_code()
        except Exception:  # noqa: BLE001 - no launchers is only slower: the Python path stays
            pass

    thread = threading.Thread(target=load, name="gpunb-native-launch", daemon=True)
    _availability.loader = thread
    thread.start()


class NativePlan:
    """The checks and packing of `argtypes`-typed arguments of the kinds seen in `args`, into
    `packer`'s buffer (its thread's). Unsupported when the kinds cannot be packed natively."""

    __slots__ = ("kinds", "packer", "_records", "_more", "_header", "_code", "_watched")

    def __init__(self, packer, argtypes: tuple, args: tuple):
        from gpunb.backends.native_launch.plan_code import plan_code

        slots = packer.argument_slots(argtypes)
        self.kinds = tuple(_kind(value, ty, [fmt for _, fmt in owned], packer.target)
                           for value, ty, owned in zip(args, argtypes, slots, strict=True))
        self.packer = packer
        self._records = (layout.ArgRecord * max(1, len(argtypes)))()
        self._more = [_fill(record, kind, owned)  # (what records point at: kept with them)
                      for record, kind, owned in zip(self._records, self.kinds, slots,
                                                     strict=False)]
        self._header = layout.PlanHeader(owner_thread=packer.owner_thread, nargs=len(argtypes),
                                         args=ctypes.addressof(self._records),
                                         params=packer.params_address)
        self._code = plan_code()
        self._watched: tuple = ((), _watch_entries((), None))  # (watch, its entries), the last

    def bind(self, launch: NativeLaunch, version_word: ctypes.c_int64, version: int,
             watch: tuple, missing: object):
        """The builtin `f(args) -> int` launching `launch`'s configuration while `version_word`
        reads `version` and every watch entry (cache/fingerprint.py: namespace.get, name,
        object seen, or `missing` for an unbound name) still holds; None when an entry is not
        a plain dict's (a closure cell, an object's attributes), which only Python checks."""
        watched, entries = self._watched
        if watched is not watch:  # a specialisation's watch list changes in a new epoch only
            entries = _watch_entries(watch, missing)
            if entries is None:
                return None
            self._watched = (watch, entries)
        grid, block = launch.grid, launch.block
        binding = _BINDING.pack(
            ctypes.addressof(self._header), ctypes.addressof(version_word), version,
            ctypes.addressof(entries), len(watch), launch.launch_function,
            launch.kernel_function, launch.last_launch_word, grid[0], grid[1], grid[2],
            block[0], block[1], block[2], launch.shared_bytes, launch.stream)
        # alive as long as the builtin: the plan, the entries, and the watched namespaces and
        # objects whose addresses the entries hold (an address must not be reused meanwhile)
        return self._code.bind(binding, (self, entries, watch, version_word))


_BINDING = layout.packer_of(layout.Binding)  # a Binding's bytes, made fast (~0.3 us)


def _watch_entries(watch: tuple, missing: object):
    """The WatchEntries of `watch` (None where one is not a plain dict's)."""
    words = []
    for get, name, seen in watch:
        namespace = getattr(get, "__self__", None)
        if type(namespace) is not dict or type(name) is not str:
            return None
        words += (id(namespace), id(name), 0 if seen is missing else id(seen))
    entries = (layout.WatchEntry * max(1, len(watch)))()
    ctypes.memmove(entries, struct.pack(f"<{len(words)}Q", *words), 8 * len(words))
    return entries


# ---- argument kinds ----------------------------------------------------------------------------

def _kind(value, ty: t.Type, formats: list, target: str) -> tuple:
    """How the machine code checks and packs this argument, or Unsupported."""
    from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray

    cls = value.__class__
    if isinstance(ty, t.Array):
        if cls is (DeviceArray if target == "cuda" else HostDeviceArray):
            # gpunb's arrays: an interned type key and a slot tuple, both made with the array
            return ("slots", cls, value._key, ty.ndim)
        if torch_tensors.is_tensor_class(cls):
            return _tensor_kind(value, ty, target)
        if cls is np.ndarray and target == "cpu":
            from gpunb.runtime.typeof import typeof

            if typeof(value) != ty:
                raise Unsupported("the array's type differs from the compiled one")
            return ("ndarray", value.dtype, value.ndim, layout.numpy_flags(value))
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
    if cls in layout.NUMPY_SCALARS and struct.calcsize("<" + "".join(formats)) == value.itemsize:
        return ("raw", cls, value.itemsize)
    raise Unsupported(f"a {cls.__name__} argument is passed the Python way")


def _tensor_kind(value, ty: t.Array, target: str) -> tuple:
    """A torch tensor's kind: read by the machine code through its attributes (tensor_code.py)
    where it is a plain tensor on the target's device, of exactly the compiled type."""
    from gpunb.runtime.typeof import typeof

    ordinal = -1  # (no tensor on another GPU to tell apart: get_device() is not called)
    if target == "cuda" and value.is_cuda:
        from gpunb.backends.cuda import driver

        if driver.device_count() > 1:
            ordinal = driver.current_token().device_id  # the context the plan launches in
    facts = torch_tensors.plan_facts(value, target, ordinal)
    if facts is None:
        raise Unsupported("this tensor is passed the Python way (copied, or refused)")
    if not layout.tuple_layout_holds(value.shape):  # the code reads torch.Size as a tuple
        raise Unsupported("torch.Size is not laid out as a tuple in this process")
    if typeof(value) != ty:
        raise Unsupported("the tensor's type differs from the compiled one")
    return ("tensor", value.__class__, facts)


def _tensor_facts(facts: torch_tensors.PlanFacts) -> layout.TensorFacts:
    return layout.TensorFacts(strided=id(facts.strided), size_class=id(facts.size_class),
                              device_flag=id(facts.device_flag), itemsize=facts.itemsize,
                              layout=layout.LAYOUT_CODES[facts.layout],
                              complex=int(facts.dtype.is_complex), ordinal=facts.ordinal)


def _fill(record: layout.ArgRecord, kind: tuple, slots: tuple):
    """One ArgRecord for an argument of `kind` whose parameter slots are `slots`; returns what
    the record points at that must live as long as it (a TensorFacts), or None."""
    addresses = [address for address, _ in slots]
    sizes = [struct.calcsize("<" + fmt) for _, fmt in slots]
    op = kind[0]
    record.cls, record.dest = id(kind[1]), addresses[0]
    if op == "raw":
        if addresses[-1] + sizes[-1] - addresses[0] != kind[2]:
            raise Unsupported("the value's slots are not contiguous")
        record.op, record.count = layout.OP_RAW, kind[2]
    elif op == "int64":
        record.op = layout.OP_INT64
    elif op == "bool":
        record.op = layout.OP_BOOL
    elif any(b - a != 8 for a, b in zip(addresses, addresses[1:], strict=False)):
        raise Unsupported("the array's slots are not contiguous")
    elif op == "slots":
        record.op, record.extra, record.count = layout.OP_SLOTS, id(kind[2]), 1 + 2 * kind[3]
    elif op == "tensor":
        facts = kind[2]
        more = _tensor_facts(facts)
        record.op, record.extra, record.count = layout.OP_TENSOR, id(facts.dtype), facts.ndim
        record.aux = ctypes.addressof(more)
        return more
    else:
        _, dtype, ndim, flags = kind
        record.op, record.cls, record.extra = layout.OP_NDARRAY, id(np.ndarray), id(dtype)
        record.count, record.flags = ndim, flags
