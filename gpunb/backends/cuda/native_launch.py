"""A native cuLaunchKernel trampoline: a few machine instructions JIT-compiled by llvmlite and
called from Python as a METH_FASTCALL builtin.

Why: launch overhead is a headline target (DESIGN.md: <= 5 us). cuda.bindings' Python wrapper
around cuLaunchKernel costs well over a microsecond above the driver (each argument's class is
checked and converted through its wrapper type, the result becomes a tuple of an enum member),
and a ctypes call with eleven converted arguments is slower still. The trampoline takes ten
Python ints, converts each with one C-API call, releases the GIL around the driver call like the
bindings do, and returns the CUresult as an int.

It is built only when llvmlite is already loaded in the process (any compile loads it), so a
process that only loads kernels from the disk cache keeps its fast start; until then launches go
through cuda.bindings. `GPUNB_NATIVE_LAUNCH=0` turns it off. Nothing here knows about CUDA beyond
the C signature `int f(u64, u32 x 6, u32, u64, u64, u64)`: `build` takes the address of the
function to call, so the tests drive it with a recording callback on machines without a GPU.
"""

from __future__ import annotations

import ctypes
import sys
import threading

METH_FASTCALL = 0x0080

# the C-API functions the trampoline calls, by address (no symbol resolution in the JIT)
_C_API = ("PyLong_AsUnsignedLongLong", "PyErr_Occurred", "PyLong_FromLong", "PyEval_SaveThread",
          "PyEval_RestoreThread", "PyErr_SetString")


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


class Trampoline:
    """A callable `f(*ten_ints) -> int` calling the C function at `target` with those values
    (the first as u64, six u32 dimensions, a u32 byte count, then u64 stream and parameter
    addresses, and for `extra` a u64 trailing argument fixed at 0). Keeps alive what it needs."""

    def __init__(self, target: int, name: str, with_extra: bool):
        import llvmlite.binding as llvm

        self.name = name.encode()
        self._error_text = ctypes.create_string_buffer(
            f"{name} takes 10 integers (dimensions and byte counts below 2**32)".encode())
        ir_text = _ir(target, with_extra, ctypes.addressof(self._error_text))
        module = llvm.parse_assembly(ir_text)
        module.verify()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # a generic machine at -O0: the code is a straight line of calls, and probing the host
        # CPU's features costs ~100 ms (MCJIT owns the machine it is given: a fresh one)
        machine = llvm.Target.from_default_triple().create_target_machine(opt=0)
        self._engine = llvm.create_mcjit_compiler(module, machine)
        self._engine.finalize_object()
        address = self._engine.get_function_address("gpunb_trampoline")
        self._def = _MethodDef(self.name, address, METH_FASTCALL, None)
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
        # the builtin's __self__ is this object: whoever holds `call` keeps the machine code
        # and the method table it points into alive
        self.call = new(ctypes.addressof(self._def), self, None)


def _ir(target: int, with_extra: bool, error_text: int) -> str:
    api = {name: ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
           for name in _C_API}
    # the value of the C variable PyExc_TypeError: the address of the TypeError class object
    type_error = ctypes.c_void_p.in_dll(ctypes.pythonapi, "PyExc_TypeError").value
    widths = ["i64"] + ["i32"] * 7 + ["i64", "i64"]  # function, grid, block, shared, stream, params
    lines = [
        "define ptr @gpunb_trampoline(ptr %self, ptr %args, i64 %nargs) {",
        "entry:",
        "  %ok = icmp eq i64 %nargs, 10",
        "  br i1 %ok, label %a0, label %bad_count",
        "bad_count:",
        f"  %set = inttoptr i64 {api['PyErr_SetString']} to ptr",
        f"  %exc = inttoptr i64 {type_error} to ptr",  # the exception object itself
        f"  %text = inttoptr i64 {error_text} to ptr",
        "  call void %set(ptr %exc, ptr %text)",
        "  ret ptr null",
        "fail:",
        "  ret ptr null",
    ]
    as_u64 = api["PyLong_AsUnsignedLongLong"]
    for k, width in enumerate(widths):
        lines += [
            f"a{k}:",
            f"  %p{k} = getelementptr ptr, ptr %args, i64 {k}",
            f"  %o{k} = load ptr, ptr %p{k}",
            f"  %conv{k} = inttoptr i64 {as_u64} to ptr",
            f"  %v{k} = call i64 %conv{k}(ptr %o{k})",
            f"  %maybe{k} = icmp eq i64 %v{k}, -1",  # -1 is both an error and a valid u64
            f"  br i1 %maybe{k}, label %check{k}, label %range{k}",
            f"check{k}:",
            f"  %occurred_fn{k} = inttoptr i64 {api['PyErr_Occurred']} to ptr",
            f"  %occurred{k} = call ptr %occurred_fn{k}()",
            f"  %raised{k} = icmp ne ptr %occurred{k}, null",
            f"  br i1 %raised{k}, label %fail, label %range{k}",
            f"range{k}:",
        ]
        if width == "i32":  # a dimension past 32 bits is the caller's bug: refuse, never wrap
            lines += [f"  %fits{k} = icmp ule i64 %v{k}, 4294967295",
                      f"  br i1 %fits{k}, label %narrow{k}, label %bad_count",
                      f"narrow{k}:",
                      f"  %x{k} = trunc i64 %v{k} to i32"]
        else:
            lines += [f"  %x{k} = add i64 %v{k}, 0"]
        lines += [f"  br label %a{k + 1}"]
    args = ", ".join(f"{w} %x{k}" for k, w in enumerate(widths))
    if with_extra:
        args += ", i64 0"
    lines += [
        f"a{len(widths)}:",
        f"  %save = inttoptr i64 {api['PyEval_SaveThread']} to ptr",
        "  %state = call ptr %save()",
        f"  %fn = inttoptr i64 {target} to ptr",
        f"  %err = call i32 %fn({args})",
        f"  %restore = inttoptr i64 {api['PyEval_RestoreThread']} to ptr",
        "  call void %restore(ptr %state)",
        "  %err64 = sext i32 %err to i64",
        f"  %box = inttoptr i64 {api['PyLong_FromLong']} to ptr",
        "  %result = call ptr %box(i64 %err64)",
        "  ret ptr %result",
        "}",
    ]
    return "\n".join(lines) + "\n"


# ---- the process's trampolines for the CUDA driver ---------------------------------------------

_lock = threading.Lock()
_driver_trampolines: tuple | None = None  # (launch, cooperative launch) callables, once built
_tried = False


def driver_trampolines() -> tuple | None:
    """(launch, cooperative_launch) calling libcuda directly, or None where that cannot be had:
    llvmlite not loaded yet (retried later), turned off, or building it failed (not retried)."""
    global _driver_trampolines, _tried
    if _driver_trampolines is not None or _tried:
        return _driver_trampolines
    from gpunb.foundation import config

    if "llvmlite.binding" not in sys.modules or not config.native_launch_enabled():
        return None
    with _lock:
        if _tried:
            return _driver_trampolines
        from gpunb.backends.llvm_lock import LLVM_LOCK

        try:
            library = ctypes.CDLL("libcuda.so.1")
            # cuda.bindings sends stream 0 to the per-thread default stream under this switch
            suffix = "_ptsz" if config.per_thread_default_stream() else ""
            launch = ctypes.cast(getattr(library, "cuLaunchKernel" + suffix),
                                 ctypes.c_void_p).value
            cooperative = ctypes.cast(getattr(library, "cuLaunchCooperativeKernel" + suffix),
                                      ctypes.c_void_p).value
            with LLVM_LOCK:
                _driver_trampolines = (
                    Trampoline(launch, "cuLaunchKernel", True),
                    Trampoline(cooperative, "cuLaunchCooperativeKernel", False))
        except Exception:  # noqa: BLE001 - no native path is only slower: bindings still launch
            _driver_trampolines = None
        _tried = True
    return _driver_trampolines


_launch_address: list = []  # [address or None] once looked up


def driver_launch_address() -> int | None:
    """libcuda's cuLaunchKernel (its per-thread-default-stream twin under that switch), called
    directly by native launchers (runtime/native_pack.py); None unless this process drives the
    real driver through cuda.bindings (a stand-in driver has no libcuda behind it)."""
    from gpunb.backends.cuda import driver
    from gpunb.foundation import config

    if getattr(driver._cu, "__name__", None) != "cuda.bindings.driver" or \
            not config.native_launch_enabled():
        return None
    if not _launch_address:
        suffix = "_ptsz" if config.per_thread_default_stream() else ""
        try:
            library = ctypes.CDLL("libcuda.so.1")
            address = ctypes.cast(getattr(library, "cuLaunchKernel" + suffix),
                                  ctypes.c_void_p).value
        except (OSError, AttributeError):
            address = None
        _launch_address.append(address)
    return _launch_address[0]
