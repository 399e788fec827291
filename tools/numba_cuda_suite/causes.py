"""Root causes of failures: (label, node-id pattern, regex), first match wins.

The regex is searched in the failure's message and the test line that raised, joined by a
newline. Built by reading the failures of a run (each label names what gpunb lacks or does
differently); a failure nothing matches is grouped by its status and message, so new kinds show
up in the summary as `[unsorted]`.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

ANY = "*"

CAUSES: list[tuple[str, str, str]] = [
    # --- wrong results (values), most specific first ---
    ("wrong result: concurrent launches of one kernel from several threads race",
     "test_multithreads.py::*::test_concurrent_compiling", r"Arrays are not equal"),
    ("wrong result: concurrent launches of one kernel from several threads race",
     "test_dispatcher.py::*::test_lock", r"!="),
    ("wrong result: concurrent launches of one kernel from several threads race",
     "test_multithreads.py::*::test_spawn_concurrent_compilation", r"Arrays are not equal"),
    ("wrong result: cmath functions at infinities (C99 Annex G special values)",
     "test_complex.py::*", r"when comparing"),
    ("wrong result: cuda.activemask() in divergent branches returns the full warp",
     "test_warp_ops.py::*::test_activemask", r"Arrays are not equal"),
    ("wrong result: overload choice among explicit signatures",
     "test_dispatcher.py::*::test_explicit_signatures_*", r"when comparing|!= "),
    ("wrong result: round(x, ndigits) on floats", "test_intrinsics.py::*::test_round_to_*",
     r"!=|comparing"),
    ("wrong result: math.modf(+-inf) gives nan", "test_math.py::*::test_math_modf", r"."),
    ("wrong result: declared return type of a signature ignored",
     "test_compiler.py::*::test_device_function", r"Integer\(bitwidth"),
    ("wrong result: declared return type of a signature ignored",
     "test_compiler.py::*::test_c_abi_device_function*", r"func_retval0"),
    ("compile_ptx PTX differs from numba's (no fma contraction without fastmath)",
     "test_compiler.py::*::test_fastmath", r"fma\.rn"),
    ("wrong result: device_array_like of a non-contiguous view: strides",
     "test_array.py::*::test_array_like_2d_view_f", r"Tuples differ"),
    # --- the CPU target's device facts ---
    ("cuda.get_current_device()/compute capability raise on the CPU target", ANY,
     r"CudaUnavailableError|CUDA driver could not be loaded"),
    # --- missing modules / functions of the API ---
    ("cuda.libdevice missing", ANY, r"numba\.cuda\.libdevice|<Missing> has no attribute"),
    ("cuda.vectorize / cuda.guvectorize missing", ANY,
     r"\bg?u?vectorize is not provided|has no attribute 'g?u?vectorize'"),
    ("bfloat16 / fp8 types and intrinsics missing", ANY,
     r"is_bfloat16_supported|is_fp8_supported|bfloat16|\bfp8"),
    ("cuda.declare_device missing", ANY, r"declare_device is not provided"),
    ("cuda.reduce / cuda.Reduce missing", ANY, r"numba\.cuda\.[Rr]educe"),
    ("cuda.compile / compile_all / compile_for_current_device missing", ANY,
     r"numba\.cuda\.compile(_all|_for_current_device)? is not provided"),
    ("literal_unroll missing", ANY, r"literal_unroll"),
    ("numba type names missing from gpunb.types (domains, C aliases, CPointer, UniTuple, ...)",
     ANY, r"numba\.cuda\.types\.\w+ is not provided"),
    ("vector types (float64x4, short2, ...) missing", ANY,
     r"float64x4|vector_types\.vector_types"),
    ("cache-hint loads/stores (ldcs, stcg, ...) missing", ANY, r"numba\.cuda\.(ld|st)\w\w\b"),
    ("cuda.current_context / cuda.gpus / managed_array missing", ANY,
     r"numba\.cuda\.(current_context|gpus|managed_array) is not provided"),
    ("cuda.transpose missing", ANY, r"kernels\.transpose|from_array_like"),
    ("numba-cuda internals used by an in-scope test", ANY, r"numba-cuda internals"),
    # --- dispatcher and device-array API ---
    ("Dispatcher.overloads / extensions / get_*() kernel properties missing", ANY,
     r"'Dispatcher' object has no attribute"),
    ("Dispatcher.specialize(*types) differs from numba's", ANY,
     r"cannot make an array of|specialize\(\) takes|truth value of an array"),
    ("DeviceNDArray API missing (flags, view, auto_device, ...)", ANY,
     r"'HostDeviceArray' object has no attribute|numba\.cuda\.devicearray"),
    ("jit/compile options missing (launch_bounds, lto, forceinline, carveout, abi_info, cc 'a')",
     ANY, r"unknown option|unexpected keyword argument|is not a compute capability|"
          r"pre_launch_callbacks"),
    ("real numba types/signatures passed to gpunb (from numba import types/typeof)", ANY,
     r"as a signature"),
    # --- kernel language ---
    ("pickling a dispatcher of a local function (numba pickles it by value)", ANY,
     r"Can't pickle"),
    ("functions without source text (exec, python -c) cannot be compiled", ANY,
     r"Command '\[.*-c'|cannot read the source|is not a def|process failed with code"),
    ("device arrays captured as globals", ANY, r"<HostDeviceArray> cannot be indexed"),
    ("records: whole array-field assignment / indexed field access", ANY,
     r"record's array field cannot be assigned|record field is selected"),
    ("self-recursive device functions", ANY, r"recursive call of GPU function"),
    ("first-class functions (inner function passed as a value)", ANY,
     r"is used as a value"),
    ("strings, datetime64 and Enum values in kernels", ANY,
     r"dtype (<U|\|S|datetime64|timedelta64)|datetime64|pass a \w+ to a kernel|"
     r"cannot compare <|'>' not supported between instances of 'int' and 'Signature'"),
    ("array methods/attributes in kernels (reshape, copy, view, dtype, ctypes)", ANY,
     r"has no attribute '(reshape|copy|view|dtype|ctypes)' in GPU code"),
    ("namedtuple attribute access in kernels", ANY, r"\) has no attribute '\w+' in GPU code"),
    ("int.bit_count() in kernels", ANY, r"bit_count"),
    ("Optional values (None or T) and 'is' between non-None values", ANY,
     r"returns both|'is' only tests for None|holds \w+ and is assigned"),
    ("zip(enumerate(...)) in kernels", ANY, r"enumerate\(\) in GPU code"),
    ("types, intrinsics and constants passed as device-function arguments", ANY,
     r"cannot pass <\w+> to a GPU function"),
    ("tuple variables as array indices (a[idx] with idx = cuda.grid(2))", ANY,
     r"index with a tuple of integers directly"),
    # (a test that expects numba's error text for an invalid shape is an error-message case)
    ("array shape from a local variable (N = 100; cuda.shared.array(N, ...))", ANY,
     r"\A(?![\s\S]*not found in)[\s\S]*must be a compile-time constant"),
    ("complex: Complex.underlying_float, array .real/.imag, cmath.log(x, base), *args", ANY,
     r"underlying_float|has no attribute '(real|imag)'|cmath\.log\(\) takes|\*args is not"),
    ("user-defined exception classes in kernels", ANY, r"cannot raise"),
    ("Python int out of range for a declared intN parameter (numba wraps)", ANY,
     r"out of bounds for int"),
    ("debug=True: ZeroDivisionError / tuple IndexError not raised", ANY,
     r"(ZeroDivisionError|IndexError) not raised"),
    ("range() with a zero step hangs (numba raises ValueError)",
     "test_flow_control.py::*::test_for_loop8*", r"longer than"),
    # --- errors and warnings users see ---
    ("signatures compile lazily: errors numba raises at decoration come at launch or never",
     ANY, r"CompileError not raised"),
    ("numba's warnings not emitted (host-array copies, occupancy, debug+opt)", ANY,
     r"DID NOT WARN|Warning.*not triggered"),
    ("error type or message differs from numba's", ANY,
     r"not raised|does not match|not found in|is a GPU function: launch it|"
     r"cannot be launched|task count must not be negative|accepts \(|"
     r"a kernel cannot return a value"),
]


def cause_of(nodeid: str, result: dict) -> str:
    message = result.get("message", "") or ""
    text = message + "\n" + (result.get("test_line", "") or "")
    for label, pattern, regex in CAUSES:
        if fnmatchcase(nodeid, pattern) and re.search(regex, text):
            return label
    first = message.splitlines()[0] if message else result["status"]
    first = re.sub(r"0x[0-9a-f]+|\d+", "N", first)
    return f"[unsorted] {result['status']}: {first[:150]}"
