"""A cuLaunchKernel trampoline: a few machine instructions called from Python as a builtin.

Why: the Python path's launches (a configuration's first ones, and kernels that never get a
native launcher: cooperative, raising, host arrays to copy) call the driver from Python.
cuda.bindings' wrapper costs well over a microsecond above the driver (each argument's class is
checked and converted through its wrapper type, the result becomes a tuple of an enum member),
and a ctypes call with eleven converted arguments is slower still. The trampoline takes ten
Python ints, converts each with one C-API call, releases the GIL around the call like the
bindings do, and returns the CUresult as an int.

Nothing here knows about CUDA beyond the C signature `int f(u64, u32 x 6, u32, u64, u64, u64)`:
`Trampoline` takes the address of the function to call, so the tests drive it with a recording
callback on machines without a GPU (backends/cuda/launch.py finds libcuda's).
"""

from __future__ import annotations

import ctypes

from gpunb.backends.native_launch.builtins import CompiledFunction

# the C-API functions the trampoline calls, by address (no symbol resolution in the JIT)
_C_API = ("PyLong_AsUnsignedLongLong", "PyErr_Occurred", "PyLong_FromLong", "PyEval_SaveThread",
          "PyEval_RestoreThread", "PyErr_SetString")
_WIDTHS = ["i64"] + ["i32"] * 7 + ["i64", "i64"]  # function, grid, block, shared, stream, params


class Trampoline:
    """`call(*ten_ints) -> int` calls the C function at `target` with those values (the first
    as u64, six u32 dimensions, a u32 byte count, then u64 stream and parameter addresses, and
    with `with_extra` a u64 trailing argument fixed at 0). `call`'s `self` is this object, so
    whoever holds `call` keeps the machine code alive."""

    def __init__(self, target: int, name: str, with_extra: bool):
        self._error_text = ctypes.create_string_buffer(
            f"{name} takes 10 integers (dimensions and byte counts below 2**32)".encode())
        ir_text = _ir(target, with_extra, ctypes.addressof(self._error_text))
        self._function = CompiledFunction(ir_text, "gpunb_trampoline", name, fastcall=True)
        self.call = self._function.builtin(self)


def _ir(target: int, with_extra: bool, error_text: int) -> str:
    api = {name: ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
           for name in _C_API}
    # the value of the C variable PyExc_TypeError: the address of the TypeError class object
    type_error = ctypes.c_void_p.in_dll(ctypes.pythonapi, "PyExc_TypeError").value
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
    for k, width in enumerate(_WIDTHS):
        lines += _convert(k, width, api)
    args = ", ".join(f"{w} %x{k}" for k, w in enumerate(_WIDTHS))
    if with_extra:
        args += ", i64 0"
    lines += [
        f"a{len(_WIDTHS)}:",
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


def _convert(k: int, width: str, api: dict) -> list:
    """Block a{k}: argument k as an unsigned integer (a u32 must fit: refused, never wrapped)."""
    lines = [
        f"a{k}:",
        f"  %p{k} = getelementptr ptr, ptr %args, i64 {k}",
        f"  %o{k} = load ptr, ptr %p{k}",
        f"  %conv{k} = inttoptr i64 {api['PyLong_AsUnsignedLongLong']} to ptr",
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
    if width == "i32":
        lines += [f"  %fits{k} = icmp ule i64 %v{k}, 4294967295",
                  f"  br i1 %fits{k}, label %narrow{k}, label %bad_count",
                  f"narrow{k}:",
                  f"  %x{k} = trunc i64 %v{k} to i32"]
    else:
        lines += [f"  %x{k} = add i64 %v{k}, 0"]
    return lines + [f"  br label %a{k + 1}"]
