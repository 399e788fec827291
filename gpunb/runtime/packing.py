"""Launching: argument packing into a persistent buffer, launch-configuration checks, the launch.

The hot path of every launch is `ArgPacker.pack` + `validate_config` + `launch_cuda`. The packer is
built once per specialisation: one contiguous ctypes block with a slot per parameter (laid out
like a C struct of the slots' types), a `void*[n]` array of the slots' addresses (what
cuLaunchKernel and the CPU runner read), a precompiled `struct.Struct` that writes every slot in
one call, and one getter per argument. A launch then allocates only the list of slot values.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
import weakref

import numpy as np

from gpunb.backends.cuda import driver
from gpunb.foundation import abi, enum_types
from gpunb.foundation import types as t
from gpunb.foundation.errors import LaunchError
from gpunb.foundation.pointer_types import Pointer, pointer_address
from gpunb.foundation.tensor_types import TensorMap
from gpunb.runtime import host_copy_warning, torch_tensors
from gpunb.runtime.arghints import ArgHint
from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray
from gpunb.runtime.scalar_args import convert as _convert
from gpunb.runtime.scalar_args import datetime_count
from gpunb.runtime.scalar_args import low_precision_bits as _low_precision_bits

_get_ident = threading.get_ident
_CTYPES = {"ptr": ctypes.c_uint64, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
           "i32": ctypes.c_int32, "i64": ctypes.c_int64, "f16": ctypes.c_uint16,
           "f32": ctypes.c_float, "f64": ctypes.c_double, "bf16": ctypes.c_uint16}
_SIGNED = {8: "b", 16: "h", 32: "i", 64: "q"}
_UNSIGNED = {8: "B", 16: "H", 32: "I", 64: "Q"}
_FLOAT = {16: "e", 32: "f", 64: "d"}


class ArgPacker:
    """Writes launch arguments into the parameter slots of one specialisation.

    `target` says how arrays are passed: "cuda" (device pointers; host arrays are copied in and
    out) or "cpu" (host pointers; device arrays are refused). None means the active target.
    The buffer belongs to the thread that made the packer (the one that compiled the kernel,
    usually the only one launching it); any other thread packs into a packer of its own, made on
    its first launch and kept in a thread-local, so launches of one specialisation from several
    threads never share a buffer. The CPU target reads the parameters while the kernel runs,
    so a buffer must stay untouched until the launch returns. The fast path pays one thread-id
    comparison for this.
    """

    def __init__(self, param_slots: tuple, target: str | None = None, kernel: str | None = None):
        if target is None:
            from gpunb.runtime.target import active_target

            target = active_target()
        self.slots = tuple(param_slots)
        self.target = target
        self.kernel = kernel
        fields = [(f"s{i}", _slot_ctype(slot, target)) for i, slot in enumerate(self.slots)]
        self._buffer = type("ParamSlots", (ctypes.Structure,), {"_fields_": fields})()
        base = ctypes.addressof(self._buffer)
        self.offsets = tuple(getattr(type(self._buffer), name).offset for name, _ in fields)
        self._pointers = (ctypes.c_void_p * max(len(fields), 1))(
            *[base + offset for offset in self.offsets])
        self.params_address = ctypes.addressof(self._pointers) if fields else 0
        self._result_without_writeback = (self.params_address, ())
        self._argtypes = None
        self._fast_class = DeviceArray if target == "cuda" else HostDeviceArray
        self._writeback = None
        self._warned_host_copy = False  # once per kernel (and thread), not every launch
        self._sync_after_copies = False
        self._owner = threading.get_ident()  # the thread whose launches use this buffer
        self._others = threading.local()  # .packer: this packer's twin for another thread

    # ---- the hot path --------------------------------------------------------------------------

    def pack(self, args: tuple, argtypes: tuple) -> tuple:
        """Write `args` into the slots; return (address of the void* array, writeback callables).

        The caller launches, then calls each writeback function (host arrays copied back)."""
        if self._owner != _get_ident():
            return self._packer_of_this_thread().pack(args, argtypes)
        if argtypes is not self._argtypes:
            self._prepare(argtypes)
        if len(args) != self._nargs:
            raise self._count_error(args)
        if driver.several_contexts and self.target == "cuda":
            self._check_contexts(args)  # several GPUs or a reset: arrays of this context only
        self._writeback = None
        values = []
        fast = self._fast_class  # DeviceArray (cuda) or HostDeviceArray (cpu): slots precomputed
        for get, arg in zip(self._getters, args, strict=False):
            if get is None:
                values.append(arg)  # a scalar: struct converts it
            elif arg.__class__ is fast:
                values += arg._slots
            else:
                values += get(arg)
        try:
            self._write(*values)
        except (struct.error, OverflowError, TypeError, ValueError):
            self._pack_converting(values)
        if self._writeback is None:
            return self._result_without_writeback
        if self._sync_after_copies:
            self._sync_after_copies = False
            driver.synchronize()  # host copies complete before a launch on any stream
        return self.params_address, self._writeback

    def _packer_of_this_thread(self) -> ArgPacker:
        """This thread's own packer for the same slots (made once per thread)."""
        twin = getattr(self._others, "packer", None)
        if twin is None:
            twin = ArgPacker(self.slots, self.target, self.kernel)
            self._others.packer = twin
        return twin

    def _check_contexts(self, args: tuple) -> None:
        """Device arrays must live in the context the kernel launches in: another GPU's array
        (or one from before gpunb.cuda.reset()) would be an illegal address on the GPU."""
        from gpunb.runtime.devicearray import dead_memory_error

        token = driver.current_token()
        for index, arg in enumerate(args):
            memory = getattr(arg, "gpu_data", None) if isinstance(arg, DeviceArray) else None
            if memory is None or memory.token is token:
                continue
            if not memory.token.alive:
                raise dead_memory_error(f"argument {index + 1} of '{self.kernel}'",
                                        memory.device_id)
            here, there = token.device_id, memory.device_id
            raise self._arg_error(
                index, f"is an array on GPU {there}, but this launch runs on GPU {here}",
                hint=f"launch inside `with cuda.gpus[{there}]:` (where the array is), or copy it "
                     f"to GPU {here} first: inside `with cuda.gpus[{here}]:`, "
                     "copy = cuda.device_array_like(ary); copy.copy_to_device(ary)")

    # ---- parameters kept for a graph (runtime/capture.py) --------------------------------------

    def snapshot(self, args: tuple, argtypes: tuple) -> PackedParams:
        """Pack `args` and return a copy of the packed parameters that stays as it is (what a
        captured graph replays); arguments that are copied for each launch (host arrays on the
        GPU, records, DLPack imports) cannot be kept and raise GraphError."""
        if self._owner != _get_ident():
            return self._packer_of_this_thread().snapshot(args, argtypes)
        _address, writeback = self.pack(args, argtypes)
        if writeback:
            raise _copied_argument_error(self.kernel)
        return PackedParams(self._buffer, self.offsets)

    def write_argument(self, params: PackedParams, index: int, value, argtypes: tuple) -> None:
        """Write `value` as argument `index` into `params` (made by `snapshot`): a graph
        update. The value's type was checked by the caller; its slots are packed as a launch
        packs them."""
        if self._owner != _get_ident():
            return self._packer_of_this_thread().write_argument(params, index, value, argtypes)
        if argtypes is not self._argtypes:
            self._prepare(argtypes)
        get = self._getters[index]
        self._writeback = None
        values = [value] if get is None else list(
            value._slots if value.__class__ is self._fast_class else get(value))
        if self._writeback is not None:
            self._writeback = None
            raise _copied_argument_error(self.kernel)
        slots = [k for k, owner in enumerate(self._slot_args) if owner == index]
        for k, item in zip(slots, values, strict=True):
            layout = "<" + self._slot_formats[k]
            try:
                struct.pack_into(layout, params.buffer, self.offsets[k], item)
            except (struct.error, OverflowError, TypeError, ValueError):
                try:
                    item = _convert(item, self._slot_dtypes[k])
                except (OverflowError, TypeError, ValueError) as exc:
                    raise self._arg_error(index, f"value {item!r} cannot be passed as "
                                          f"{self._slot_dtypes[k]}: {exc}") from None
                struct.pack_into(layout, params.buffer, self.offsets[k], item)
        return None

    # ---- what native launch plans read (runtime/native_pack.py) -------------------------------

    @property
    def owner_thread(self) -> int:
        """The thread whose launches pack into this packer's buffer (others get their own)."""
        return self._owner

    def argument_slots(self, argtypes: tuple) -> tuple:
        """Where each argument's values go: per argument, its parameter slots as
        (address in this packer's buffer, struct format), in order."""
        if argtypes is not self._argtypes:
            self._prepare(argtypes)
        base = ctypes.addressof(self._buffer)
        out: list = [[] for _ in argtypes]
        for offset, fmt, owner in zip(self.offsets, self._slot_formats, self._slot_args,
                                      strict=True):
            out[owner].append((base + offset, fmt))
        return tuple(tuple(slots) for slots in out)

    # ---- building the plan ---------------------------------------------------------------------

    def _prepare(self, argtypes: tuple) -> None:
        slots = abi.signature_slots(argtypes)
        if slots != self.slots:
            raise LaunchError(f"internal error: argument types {argtypes} give parameter slots "
                              f"{slots}, but the kernel was built with {self.slots}",
                              function=self.kernel)
        formats, dtypes, owners = [], [], []
        for index, ty in enumerate(argtypes):
            for fmt, dtype in _slot_formats(ty, self.target):
                formats.append(fmt)
                dtypes.append(dtype)
                owners.append(index)
        layout = "<"
        position = 0
        for fmt, offset in zip(formats, self.offsets, strict=False):
            if offset > position:
                layout += f"{offset - position}x"
            layout += fmt
            position = offset + struct.calcsize("<" + fmt)
        self._struct = struct.Struct(layout)
        self._write = functools.partial(self._struct.pack_into, self._buffer, 0)
        self._slot_dtypes = tuple(dtypes)
        self._slot_formats = tuple(formats)
        self._slot_args = tuple(owners)
        self._getters = tuple(self._getter(ty, i) for i, ty in enumerate(argtypes))
        self._nargs = len(argtypes)
        self._argtypes = argtypes

    def _getter(self, ty: t.Type, index: int):
        """None for a scalar (its value goes straight into its slot), else arg -> slot values."""
        if isinstance(ty, t.Array):
            return self._array_getter(ty, index)
        if isinstance(ty, t.Complex):
            return _complex_parts
        if isinstance(ty, t.Tuple):
            items = [self._getter(item, index) for item in ty.items]
            return lambda value: _flatten_tuple(items, value, index, self.kernel)
        if isinstance(ty, t.Record):
            return lambda value: self._record_slots(value, ty)
        if isinstance(ty, (t.BFloat16, t.FP8)):
            return lambda value: (_low_precision_bits(value, ty),)
        if isinstance(ty, enum_types.EnumMember):
            return lambda value: (ty.index_of(value),)
        if isinstance(ty, Pointer):
            return lambda value: (self._pointer_slot(value, ty, index),)
        if isinstance(ty, t.DateTime):  # datetime64/timedelta64: the count in its unit
            return lambda value: (datetime_count(value, ty),)
        if isinstance(ty, TensorMap):
            return lambda value: (self._tensor_map_slot(value, index),)
        return None

    def _pointer_slot(self, value, ty: Pointer, index: int) -> int:
        address = pointer_address(value)
        if address is None:
            raise self._arg_error(index, f"expects a pointer ({ty}): an integer address or a "
                                  f"ctypes pointer, got {type(value).__name__}")
        return address

    def _tensor_map_slot(self, value, index: int):
        """A TMA descriptor's slot: its 128 bytes on the GPU, their address on the CPU."""
        from gpunb.runtime.tma import TensorMap

        if not isinstance(value, TensorMap):
            raise self._arg_error(index, f"is a {type(value).__name__}, not a TMA descriptor",
                                  hint="make one with cuda.tma.descriptor(array, box, swizzle)")
        if value.target != self.target:
            made = "a device array" if value.target == "cuda" else "a host (numpy) array"
            raise self._arg_error(index, f"is a TMA descriptor of {made}, but this kernel runs "
                                  f"on the {self.target} target",
                                  hint="make the descriptor from an array of the target the "
                                       "kernel runs on")
        self._keep_alive(value)
        return value.cuda_bytes() if self.target == "cuda" else value.cpu_address()

    def _array_getter(self, ty: t.Array, index: int):
        expected = 1 + 2 * ty.ndim
        if self.target == "cuda":
            def get(value):
                if value.__class__ is DeviceArray:
                    return value._slots
                return _checked(self._cuda_array_slots(value, index), expected, index, self)
        else:
            def get(value):
                if value.__class__ is np.ndarray:
                    return (_data_pointer(value),) + value.shape + value.strides
                return _checked(self._cpu_array_slots(value, index), expected, index, self)
        return get

    # ---- arrays that are not the fast-path kind ------------------------------------------------

    def _cuda_array_slots(self, value, index: int) -> tuple:
        if isinstance(value, ArgHint):
            return self._hinted_array(value, index)
        if isinstance(value, DeviceArray):
            return value._slots
        if isinstance(value, HostDeviceArray):
            value = value._array
        geo = self._tensor_geometry(value, index)
        if geo is not None:
            if not geo.on_cuda:
                return self._copy_host_array(torch_tensors.host_view(value, geo), index)
            wrong = torch_tensors.wrong_gpu(value, driver.current_token().device_id)
            if wrong is not None:  # another GPU's address: illegal in this context
                raise self._arg_error(index, *wrong)
            return (geo.pointer,) + geo.shape + geo.strides
        cai = getattr(value, "__cuda_array_interface__", None)
        if cai is not None:
            return _interface_slots(cai)
        if isinstance(value, np.ndarray):
            return self._copy_host_array(value, index)
        if hasattr(value, "__dlpack__"):
            return self._dlpack_slots(value, index, on_cpu=False)
        raise self._arg_error(index, f"cannot pass a {type(value).__name__} as an array")

    def _cpu_array_slots(self, value, index: int) -> tuple:
        if isinstance(value, ArgHint):
            host = self._hinted_host(value.value, index)
            if not isinstance(host, np.ndarray):
                return self._cpu_array_slots(host, index)
            if not value.copy_out:  # cuda.In: the kernel's writes must not reach the array
                copy = host.copy(order="K")  # (the layout the kernel was typed for: F stays F)
                self._keep_alive(copy)
                return (copy.ctypes.data,) + copy.shape + copy.strides
            return self._cpu_array_slots(value.value, index)
        if isinstance(value, HostDeviceArray):
            return value._slots
        geo = self._tensor_geometry(value, index)
        if geo is not None and not geo.on_cuda:
            return (geo.pointer,) + geo.shape + geo.strides
        if isinstance(value, DeviceArray) or geo is not None or \
                hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
            raise self._arg_error(
                index, f"is a CUDA device array ({type(value).__name__}), but this kernel runs on "
                "the CPU target", hint="copy it to the host first (d.copy_to_host(), "
                "cupy.asnumpy(x), t.cpu()), or run on the GPU: gpunb.set_target('cuda')")
        if isinstance(value, np.ndarray):
            return (value.ctypes.data,) + value.shape + value.strides
        if hasattr(value, "__dlpack__"):
            return self._dlpack_slots(value, index, on_cpu=True)
        raise self._arg_error(index, f"cannot pass a {type(value).__name__} as an array")

    def _hinted_host(self, value, index: int):
        """A CPU torch tensor under cuda.In/Out/InOut as the numpy view of its memory, copied
        as the hint says like any host array; anything else as it is."""
        geo = self._tensor_geometry(value, index)
        return torch_tensors.host_view(value, geo) if geo is not None and not geo.on_cuda \
            else value

    def _tensor_geometry(self, value, index: int):
        """torch_tensors.geometry; its refusal (no reachable data) named, at every launch."""
        try:
            return torch_tensors.geometry(value)
        except TypeError as exc:
            raise self._arg_error(index, f"cannot be passed: {exc}") from None

    def _dlpack_slots(self, value, index: int, on_cpu: bool) -> tuple:
        from gpunb.runtime import dlpack

        device_type = value.__dlpack_device__()[0] if hasattr(value, "__dlpack_device__") else 1
        host = device_type in (dlpack.kDLCPU, dlpack.kDLCUDAHost)
        if host:
            view = np.from_dlpack(value)
            self._keep_alive(view)
            if on_cpu:
                return (view.ctypes.data,) + view.shape + view.strides
            return self._copy_host_array(view, index)
        if on_cpu:
            raise self._arg_error(index, "is a GPU array (DLPack), but this kernel runs on the "
                                  "CPU target", hint="copy it to the host first")
        tensor = dlpack.import_capsule(value.__dlpack__(stream=1))
        self._keep_alive(tensor)
        return (tensor.data,) + tensor.shape + tensor.strides

    def _hinted_array(self, hint: ArgHint, index: int) -> tuple:
        """cuda.In / Out / InOut of a host array on the GPU: copies in the directions named."""
        from gpunb.runtime.memory import device_array_like, to_device

        host = self._hinted_host(hint.value, index)
        if not isinstance(host, np.ndarray):  # a device array needs no copies
            return self._cuda_array_slots(host, index)
        device = to_device(host, target="cuda") if hint.copy_in else \
            device_array_like(host, target="cuda")
        self._sync_after_copies = True
        if hint.copy_out and host.flags.writeable:
            def copy_back():
                driver.synchronize()
                device.copy_to_host(host)
            self._add_writeback(copy_back)
        else:
            self._keep_alive(device)
        return device._slots

    def _copy_host_array(self, host: np.ndarray, index: int) -> tuple:
        """numba semantics for host arrays on the GPU: copy in now, copy back after the launch."""
        from gpunb.runtime.memory import to_device

        if not self._warned_host_copy:
            self._warned_host_copy = True
            host_copy_warning.warn_host_copy(self.kernel)
        device = to_device(host, target="cuda")
        self._sync_after_copies = True
        if host.flags.writeable:
            def copy_back():
                driver.synchronize()
                device.copy_to_host(host)
            self._add_writeback(copy_back)
        else:
            self._keep_alive(device)  # read-only: nothing to copy back, but alive until then
        return device._slots

    def _record_slots(self, value, ty: t.Record) -> tuple:
        """A record travels by pointer to a copy of its bytes; the copy is written back after."""
        host = np.array(value, dtype=t.to_dtype(ty)).reshape(1)
        if self.target == "cuda":
            from gpunb.runtime.memory import to_device

            device = to_device(host, target="cuda")
            self._sync_after_copies = True

            def copy_back():
                driver.synchronize()
                _store_record(value, device.copy_to_host()[0])
            self._add_writeback(copy_back)
            return (device._ptr,)
        self._add_writeback(lambda: _store_record(value, host[0]))
        return (host.ctypes.data,)

    def _keep_alive(self, obj) -> None:
        self._add_writeback(lambda: obj)

    def _add_writeback(self, fn) -> None:
        if self._writeback is None:
            self._writeback = []
        self._writeback.append(fn)

    # ---- errors and the converting path --------------------------------------------------------

    def _pack_converting(self, values: list) -> None:
        """numpy's conversions for values struct would not take (float -> float32 overflow gives
        inf, a float into an int slot truncates); LaunchError for what cannot convert."""
        converted = []
        for value, dtype, index in zip(values, self._slot_dtypes, self._slot_args, strict=False):
            try:
                converted.append(_convert(value, dtype))
            except (OverflowError, TypeError, ValueError) as exc:
                raise self._arg_error(index, f"value {value!r} cannot be passed as {dtype}: {exc}",
                                      hint=f"pass a value that fits {dtype}, or a numpy scalar "
                                           f"of the type you mean (e.g. np.{dtype}(x))") from None
        self._struct.pack_into(self._buffer, 0, *converted)

    def _count_error(self, args: tuple) -> LaunchError:
        name = f"'{self.kernel}'" if self.kernel else "the kernel"
        return LaunchError(f"{name} takes {self._nargs} argument(s) but {len(args)} were given",
                           function=self.kernel)

    def _arg_error(self, index: int, message: str, hint: str | None = None) -> LaunchError:
        return LaunchError(f"argument {index + 1} {message}", hint=hint, function=self.kernel)


class PackedParams:
    """A launch's packed parameters copied out of its packer: the slots' bytes and a void*[] of
    their addresses (`address`), read by a CUDA graph's kernel node when it is made or updated
    and by the CPU target's replay at each launch."""

    __slots__ = ("buffer", "pointers", "address")

    def __init__(self, buffer, offsets: tuple):
        self.buffer = type(buffer).from_buffer_copy(buffer)
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        self.address = ctypes.addressof(self.pointers) if offsets else 0

    def raw(self) -> bytes:
        """The slots' bytes (what a test compares)."""
        return bytes(self.buffer)


def _copied_argument_error(kernel: str | None):
    from gpunb.foundation.errors import GraphError

    return GraphError(
        "an argument that gpunb copies for each launch (a host numpy array on the GPU, "
        "cuda.In/Out, a record, a DLPack import) cannot be captured in a graph", function=kernel,
        hint="pass device arrays (cuda.to_device(a), CuPy or PyTorch arrays) made before the "
             "capture; a record goes in a device array of records")


_pointers: dict = {}  # id(array) -> (weakref to it, nbytes, data pointer)


def _data_pointer(array: np.ndarray) -> int:
    """A numpy array's data address, remembered per live array object.

    `array.ctypes.data` costs about 0.9 us; a repeated launch with the same arrays then pays
    ~0.1 us. An array's data moves only if `ndarray.resize` changes its size in place, so the
    size is checked too; the entry is dropped when the array dies (its id may then be reused).
    """
    key = id(array)
    entry = _pointers.get(key)
    if entry is not None and entry[0]() is array and entry[1] == array.nbytes:
        return entry[2]
    pointer = array.ctypes.data
    _pointers[key] = (weakref.ref(array, lambda _, key=key: _pointers.pop(key, None)),
                      array.nbytes, pointer)
    return pointer


def _slot_ctype(slot: str, target: str):
    """The ctypes field of a parameter slot: a TMA descriptor is its 128 bytes on the GPU, a
    pointer to them on the CPU target."""
    if slot == "tmap":
        return ctypes.c_uint8 * 128 if target == "cuda" else ctypes.c_uint64
    return _CTYPES[slot]


def _slot_formats(ty: t.Type, target: str = "cuda") -> list:
    """(struct format, numpy dtype) of each slot of a value of type `ty` (see compiler/abi.py)."""
    if isinstance(ty, TensorMap):
        return [("128s", None)] if target == "cuda" else [("Q", np.dtype(np.uint64))]
    if isinstance(ty, t.Array):
        return [("Q", np.dtype(np.uint64))] + [("q", np.dtype(np.int64))] * (2 * ty.ndim)
    if isinstance(ty, t.Tuple):
        return [f for item in ty.items for f in _slot_formats(item, target)]
    if isinstance(ty, (t.Record, Pointer)):
        return [("Q", np.dtype(np.uint64))]
    if isinstance(ty, t.Complex):
        part = ty.component
        return [(_FLOAT[part.bitwidth], t.to_dtype(part))] * 2
    if isinstance(ty, t.Boolean):
        return [("?", np.dtype(np.bool_))]
    if isinstance(ty, t.Integer):
        table = _SIGNED if ty.signed else _UNSIGNED
        return [(table[ty.bitwidth], t.to_dtype(ty))]
    if isinstance(ty, t.Float):
        return [(_FLOAT[ty.bitwidth], t.to_dtype(ty))]
    if isinstance(ty, t.BFloat16):
        return [("H", np.dtype(np.uint16))]
    if isinstance(ty, t.FP8):
        return [("B", np.dtype(np.uint8))]
    if isinstance(ty, (enum_types.EnumMember, t.DateTime)):  # class position; count of units
        return [("q", np.dtype(np.int64))]
    raise LaunchError(f"cannot pass a value of type {ty} to a kernel")


def _complex_parts(value) -> tuple:
    return (value.real, value.imag)


def _flatten_tuple(getters: list, value, index: int, kernel) -> list:
    if not isinstance(value, tuple) or len(value) != len(getters):
        raise LaunchError(f"argument {index + 1}: expected a tuple of {len(getters)} items, got "
                          f"{value!r}", function=kernel)
    out = []
    for get, item in zip(getters, value, strict=False):
        if get is None:
            out.append(item)
        else:
            out.extend(get(item))
    return out


def _interface_slots(desc: dict) -> tuple:
    from gpunb.runtime import arrayview as av
    from gpunb.runtime.devicearray import cai_dtype
    from gpunb.runtime.streams import sync_producer_stream

    shape = tuple(desc["shape"])
    strides = desc.get("strides")
    if strides is None:
        strides = av.c_strides(shape, cai_dtype(desc).itemsize)
    sync_producer_stream(desc.get("stream"))
    return (desc["data"][0] or 0,) + shape + tuple(strides)


def _checked(slots: tuple, expected: int, index: int, packer: ArgPacker) -> tuple:
    if len(slots) != expected:
        raise packer._arg_error(index, f"has {(len(slots) - 1) // 2} dimensions, but the kernel "
                                f"was compiled for {(expected - 1) // 2}")
    return slots


def _store_record(target, source) -> None:
    """Write a record's fields back into the caller's np.void (a view into their array)."""
    if isinstance(target, np.void) and target.dtype.names:
        for name in target.dtype.names:
            target[name] = source[name]
