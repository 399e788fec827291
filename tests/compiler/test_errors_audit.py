"""An audit of bad inputs: each gives a typed gpunb error that names this file, the line (with a
caret under the code at fault) and a hint - never an internal compiler error or a raw traceback.

Kernels mark the line the error must point at with `# <- error WORD`: the caret must sit under
the first occurrence of WORD on that line (`# <- error 2:WORD`: under the second).
"""

import inspect

import numpy as np
import pytest

import gpunb
from gpunb import cuda, float32

# ---- kernels whose compilation must fail -------------------------------------------------------


@cuda.jit
def assign_module_attribute(out):
    cuda.warpsize = 3  # <- error cuda.warpsize


@cuda.jit
def augassign_array_attribute(out):
    out.size += 1  # <- error out.size


@cuda.jit
def assign_array_shape(out):
    out.shape = 3  # <- error out.shape


@cuda.jit
def annotation_mismatch(out):
    x: float32 = out  # <- error out
    out[0] = x


@cuda.jit
def not_of_array(out):
    out[0] = not out  # <- error 2:out


@cuda.jit
def huge_literal(out):
    out[0] = 123456789012345678901234567890  # <- error 1234


HUGE = 2**70


@cuda.jit
def huge_global(out):
    out[0] = HUGE  # <- error HUGE


@cuda.jit
def starred_assignment(out):
    a, *b = (1, 2, 3)  # <- error *b
    out[0] = a + b[0]


@cuda.jit(device=True)
def add2(a, b):
    return a + b


@cuda.jit
def call_numpy_sort(out):
    np.sort(out)  # <- error np.sort


@cuda.jit
def call_numpy_random(out):
    out[0] = np.random.rand()  # <- error np.random


@cuda.jit
def call_thread_idx(out):
    out[0] = cuda.threadIdx()  # <- error cuda.threadIdx


def plain_python(x):
    return x + 1


@cuda.jit
def call_plain_python(out):
    out[0] = plain_python(1)  # <- error plain_python


@cuda.jit
def array_method(out):
    out[0] = out.argsort()  # <- error out.argsort


@cuda.jit(device=True)
def no_return(x):
    x = x + 1


@cuda.jit
def store_none(out):
    out[0] = no_return(1)  # <- error no_return


@cuda.jit
def too_many_indices(out):
    out[0, 1, 2] = 1  # <- error out[0


@cuda.jit
def grid_four(out):
    i = cuda.grid(4)  # <- error 4
    out[0] = i


@cuda.jit
def shared_negative(out):
    s = cuda.shared.array(-1, float32)  # <- error -1
    out[0] = s[0]


@cuda.jit
def match_statement(out):
    match out[0]:  # <- error match
        case 1:
            out[0] = 2


@cuda.jit
def set_comprehension(out):
    s = {k for k in range(3)}  # <- error {k
    out[0] = len(s)


I64 = "void(int64[::1])"

CASES = [
    # kernel, signature, words the message must contain, words the hint must contain
    (assign_module_attribute, I64, ["cannot assign", "'warpsize'"], ["record fields"]),
    (augassign_array_attribute, I64, ["cannot assign", "'size'"], ["read-only"]),
    (assign_array_shape, I64, ["cannot assign", "'shape'"], ["read-only"]),
    (annotation_mismatch, I64, ["int64[::1]", "annotated float32"], ["annotat"]),
    (not_of_array, I64, ["int64[::1]", "truth value"], ["compare"]),
    (huge_literal, I64, ["123456789012345678901234567890", "64 bits"], ["float"]),
    (huge_global, I64, [str(2**70), "64 bits"], ["int64 or uint64"]),
    (starred_assignment, I64, ["starred assignment"], ["unpack every item"]),
    (call_numpy_sort, I64, ["cannot call sort"], ["write a loop", "gpunb.fuse"]),
    (call_numpy_random, I64, ["cannot call"], ["gpunb.random"]),
    (call_thread_idx, I64, ["cuda.threadIdx"], ["cuda.threadIdx.x"]),
    (call_plain_python, I64, ["cannot call plain_python"], ["@cuda.jit"]),
    (array_method, I64, ["no attribute 'argsort'"], ["shape", "write a loop"]),
    (store_none, I64, ["cannot store none"], ["return value"]),
    (too_many_indices, I64, ["too many indices: 3"], ["at most 1 integer"]),
    (grid_four, I64, ["1, 2 or 3, not 4"], ["at most 3 dimensions"]),
    (shared_negative, "void(float32[::1])", ["non-negative"], ["(16, 16)"]),
    (match_statement, I64, ["Match"], ["if/elif"]),
    (set_comprehension, I64, ["SetComp"], ["write a loop"]),
]


def _mark(kernel):
    """(line number, caret column within the stripped line, stripped code) of the error mark."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    for offset, text in enumerate(lines):
        if "# <- error " in text:
            word = text.split("# <- error ")[1].split()[0]
            nth, sep, rest = word.partition(":")
            nth, word = (nth, rest) if sep and nth.isdigit() else ("1", word)
            code = text.split("# <- error")[0].rstrip()
            indent = len(code) - len(code.lstrip())
            col = -1
            for _ in range(int(nth)):
                col = code.index(word, col + 1)
            return first + offset, col - indent, code.strip()
    raise AssertionError("no error mark")


def check_points_at_mark(err: gpunb.GpunbError, kernel) -> None:
    """The error names this file and the marked line, with a caret under the marked word."""
    line, col, code = _mark(kernel)
    text = str(err)
    assert "internal compiler error" not in text, text
    assert err.loc is not None and err.loc.line == line, text
    assert err.loc.filename == __file__
    assert f'File "{__file__}", line {line}' in text, text
    rows = text.splitlines()
    k = next(i for i, row in enumerate(rows) if row.strip() == code.split("  #")[0].strip()
             or row.strip().startswith(code.split("#")[0].strip()))
    source, caret = rows[k], rows[k + 1]
    assert caret.strip().startswith("^"), text
    assert caret.index("^") - (len(source) - len(source.lstrip())) == col, text


@pytest.mark.parametrize("kernel,sig,words,hint", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_error(kernel, sig, words, hint):
    with pytest.raises(gpunb.CompileError) as info:
        cuda.compile_ptx(kernel, sig)
    err = info.value
    check_points_at_mark(err, kernel)
    for w in words:
        assert w in err.message, f"{w!r} not in:\n{err}"
    assert err.hint is not None and all(h in err.hint for h in hint), str(err)
    assert err.__cause__ is None


@pytest.mark.parametrize("kernel", [assign_module_attribute, not_of_array, huge_literal],
                         ids=lambda k: k.__name__)
def test_compile_error_at_launch_on_the_cpu_target(target, kernel):
    out = np.zeros(2, np.int64)
    with pytest.raises(gpunb.CompileError) as info:
        kernel[1, 1](out)
    check_points_at_mark(info.value, kernel)
    assert not out.any()


# ---- what numba accepts, gpunb accepts ---------------------------------------------------------


@cuda.jit
def float_into_int_array(out, x):
    out[0] = x * 1.75  # numba converts on store (truncating toward zero)


@cuda.jit
def largest_integers(out):
    out[0] = 18446744073709551615  # 2**64 - 1: a uint64, as numba types it
    out[1] = -9223372036854775808


def test_float_stored_into_int_array_converts_as_numba(target):
    out = np.zeros(1, np.int64)
    float_into_int_array[1, 1](out, -3.0)
    assert out[0] == -5


def test_largest_64_bit_literals_compile(target):
    out = np.zeros(2, np.uint64)
    largest_integers[1, 1](out)
    assert out[0] == 2**64 - 1 and out[1] == np.uint64(2**63)


# ---- cuda.jit, compile_ptx and set_target arguments --------------------------------------------


def check_points_at_this_line(err: gpunb.GpunbError, marker: str) -> None:
    """The error names this file and the line holding `marker`, caret under the call."""
    text = str(err)
    lines, _ = inspect.getsourcelines(inspect.getmodule(check_points_at_this_line))
    line = next(i + 1 for i, row in enumerate(lines) if marker in row and "check_points" not in row)
    assert err.loc is not None and err.loc.filename == __file__, text
    assert err.loc.line == line, text
    assert f'File "{__file__}", line {line}' in text, text
    rows = text.splitlines()
    k = next(i for i, row in enumerate(rows) if marker in row)
    assert rows[k + 1].strip().startswith("^"), text


def body(out, x):
    out[0] = x


@pytest.mark.parametrize("sig,words", [
    ("void(float99[::1], float64)", ["float99", "not defined"]),
    ("void(float64[::1], float64", ["never closed"]),
    ("void(float64[::2], float64)", ["'::1'"]),
    ("void(float64[::1]; float64)", ["invalid syntax"]),
    ("void(1, 2)", ["does not list argument types"]),
])
def test_bad_signature_string(sig, words):
    with pytest.raises(gpunb.SignatureError) as info:
        cuda.jit(sig)(body)  # <- bad decorator signature
    err = info.value
    assert isinstance(err, gpunb.CompileError) and isinstance(err, TypeError)
    check_points_at_this_line(err, "<- bad decorator signature")
    assert all(w in err.message for w in words), str(err)
    assert "float32[::1]" in err.hint
    with pytest.raises(gpunb.SignatureError) as info:
        cuda.compile_ptx(body, sig)  # <- bad compile_ptx signature
    check_points_at_this_line(info.value, "<- bad compile_ptx signature")


def test_signature_that_is_not_a_string():
    with pytest.raises(gpunb.SignatureError) as info:
        cuda.compile_ptx(body, 5)  # <- int signature
    check_points_at_this_line(info.value, "<- int signature")
    assert "5 (int)" in info.value.message


@pytest.mark.parametrize("option,value,words", [
    ("max_registers", "x", ["1 to 255"]),
    ("max_registers", -5, ["1 to 255"]),
    ("max_registers", 1000, ["1 to 255"]),
    ("fastmath", "yes", ["True or False"]),
    ("fastmath", {"bogus"}, ["unknown fastmath flag", "bogus", "nnan"]),
    ("opt", 7, ["True or False"]),
    ("lineinfo", "x", ["True or False"]),
    ("debug", 3, ["True or False"]),
    ("cache", "x", ["True or False"]),
    ("boundscheck", "x", ["True or False"]),
    ("inline", "sometimes", ["'always'"]),
    ("device", "x", ["True or False"]),
    ("bogus", 1, ["unknown option", "bogus"]),
    ("target", "gpu", ["'cpu', 'cuda', 'auto'"]),
])
def test_bad_jit_option(option, value, words):
    with pytest.raises(gpunb.JitOptionError) as info:
        cuda.jit(**{option: value})(body)  # <- bad option
    err = info.value
    assert isinstance(err, gpunb.CompileError)
    check_points_at_this_line(err, "<- bad option")
    assert all(w in err.message for w in words), str(err)
    assert err.hint


@pytest.mark.parametrize("option,value", [
    ("max_registers", 64), ("max_registers", np.int32(32)), ("fastmath", {"nnan", "contract"}),
    ("opt", 0), ("opt", 3), ("inline", "always"), ("debug", np.bool_(False)),
])
def test_good_jit_option_values_are_accepted(target, option, value):
    kernel = cuda.jit(**{option: value})(body)
    out = np.zeros(1)
    kernel[1, 1](out, 2.5)
    assert out[0] == 2.5


def test_opt_zero_turns_optimisation_off_as_numba_cuda():
    assert cuda.jit(opt=0)(body).options["opt"] is False


def test_unknown_option_is_still_a_type_error_and_bad_target_a_value_error():
    with pytest.raises(TypeError, match="unknown option"):
        cuda.jit(lunch_bounds=256)(body)  # a misspelt option
    with pytest.raises(ValueError, match="expected one of") as info:
        gpunb.set_target("gpu")  # <- bad set_target
    assert isinstance(info.value, gpunb.JitOptionError)
    check_points_at_this_line(info.value, "<- bad set_target")


@pytest.mark.parametrize("cc", [(1, 0), (3, 5), "sm_90", (9,), (9, "0")])
def test_bad_compute_capability(cc):
    with pytest.raises(gpunb.JitOptionError) as info:
        cuda.compile_ptx(body, "void(float64[::1], float64)", cc=cc)  # <- bad cc
    check_points_at_this_line(info.value, "<- bad cc")
    assert "sm_50" in info.value.hint


def _partial():
    import functools

    return functools.partial(body, np.zeros(1))


@pytest.mark.parametrize("make,words", [
    (lambda: len, ["builtin_function_or_method", "'len'"]),
    (lambda: type("Holder", (), {}), ["type 'Holder'"]),
    (_partial, ["partial"]),
    (lambda: 5, ["5 (int)"]),
])
def test_jit_of_something_that_is_not_a_function(make, words):
    obj = make()
    with pytest.raises(gpunb.CompileError) as info:
        cuda.jit(obj) if callable(obj) else cuda.compile_ptx(obj, "void(int64)")  # <- not a def
    check_points_at_this_line(info.value, "<- not a def")
    assert all(w in info.value.message for w in words), str(info.value)
    assert info.value.hint


# ---- launches ----------------------------------------------------------------------------------


@cuda.jit
def fill(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x


def test_keyword_arguments_at_launch(target):
    out = np.zeros(4)
    with pytest.raises(gpunb.LaunchError) as info:
        fill[1, 4](out, x=1.0)  # <- keyword launch
    check_points_at_this_line(info.value, "<- keyword launch")
    assert "keyword" in info.value.message and "fill[grid, block](out, x)" in info.value.hint
    assert not out.any()


def test_launch_errors_point_at_the_launch_line(target):
    out = np.zeros(4)
    with pytest.raises(gpunb.LaunchError) as info:
        fill[0, 4](out, 1.0)  # <- empty grid
    check_points_at_this_line(info.value, "<- empty grid")
    with pytest.raises(gpunb.LaunchError) as info:
        fill[1](out, 1.0)  # <- malformed config
    check_points_at_this_line(info.value, "<- malformed config")


class FakeDeviceArray:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


class RaisingInterface:
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("exporter is broken")


GOOD_CAI = {"shape": (4,), "typestr": "<f8", "data": (0, False), "version": 3}


@pytest.mark.parametrize("value,words", [
    (FakeDeviceArray({}), ["missing 'shape', 'typestr', 'data'"]),
    (FakeDeviceArray(5), ["expected a dict"]),
    (FakeDeviceArray({**GOOD_CAI, "shape": "x"}), ["'shape'"]),
    (FakeDeviceArray({**GOOD_CAI, "strides": (8, 8)}), ["'strides'"]),
    (FakeDeviceArray({**GOOD_CAI, "data": 1234}), ["'data'"]),
    (FakeDeviceArray({**GOOD_CAI, "typestr": "zz"}), ["dtype"]),
    (RaisingInterface(), ["RuntimeError", "exporter is broken"]),
    ("text", ["argument 1 ('out')", "str"]),
    (np.zeros(4, dtype=object), ["object"]),
    (np.zeros(4, dtype=">f8"), ["byte order"]),
])
def test_bad_array_arguments(target, value, words):
    with pytest.raises(gpunb.LaunchError) as info:
        fill[1, 4](value, 1.0)  # <- bad argument
    err = info.value
    check_points_at_this_line(err, "<- bad argument")
    assert all(w in err.message for w in words), str(err)
    assert "__cuda_array_interface__" in err.hint


# ---- read-only arrays: readable, never written (numba: "Cannot modify readonly array") ---------


@cuda.jit(device=True)
def first_two(a):
    return a[0] + a[1]


@cuda.jit
def sum_readonly(out, x):
    s = 0.0
    for e in x:
        s += e
    tail = x[1:]
    out[0] = s + tail[0] + first_two(x)


@cuda.jit
def write_into(x, value):
    x[0] = value  # <- error x[0]


@cuda.jit
def atomic_into(x):
    cuda.atomic.add(x, 0, 1.0)  # <- error x,


@cuda.jit
def write_through_view(x):
    v = x[1:]
    v[0] = 2.0  # <- error v[0]


def _readonly(values):
    arr = np.array(values, np.float64)
    arr.setflags(write=False)
    return arr


def test_read_only_arrays_can_be_read(target):
    out = np.zeros(1)
    sum_readonly[1, 1](out, _readonly([0, 1, 2, 3]))
    assert out[0] == 6 + 1 + 1
    sum_readonly[1, 1](out, np.arange(4.0))  # and a writeable one after it, same result
    assert out[0] == 8


@pytest.mark.parametrize("kernel,args", [(write_into, (7.0,)), (atomic_into, ()),
                                         (write_through_view, ())],
                         ids=["store", "atomic", "view"])
def test_read_only_arrays_are_never_written(target, kernel, args):
    ro = _readonly([0, 0, 0])
    with pytest.raises(gpunb.CompileError) as info:
        kernel[1, 1](ro, *args)
    check_points_at_mark(info.value, kernel)
    assert "read-only" in info.value.message and "np.array(ary)" in info.value.hint
    assert not ro.any()
    writeable = np.zeros(3)
    kernel[1, 1](writeable, *args)  # the same kernel still writes into writeable arrays
    assert writeable.any()


def test_writing_a_read_only_mapping_does_not_crash(run_script):
    """A kernel storing into a read-only mmap segfaulted the process on the CPU target."""
    proc = run_script("""
        import mmap, os, tempfile
        import numpy as np
        import gpunb
        from gpunb import cuda

        gpunb.set_target("cpu")

        @cuda.jit
        def store(x):
            x[0] = 7.0

        fd, path = tempfile.mkstemp()
        os.write(fd, bytes(4096))
        os.close(fd)
        with open(path, "rb") as f:
            view = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.float64)
            try:
                store[1, 1](view)
            except gpunb.CompileError as exc:
                print("refused:", exc.message)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "refused: cannot store into a read-only array" in proc.stdout


def test_declared_signature_refuses_read_only_arrays(target):
    @cuda.jit("void(float64[::1], float64[::1])")
    def copy_first(out, x):
        out[0] = x[0]

    with pytest.raises(gpunb.LaunchError) as info:
        copy_first[1, 1](np.zeros(1), _readonly([1.0]))  # <- declared readonly
    check_points_at_this_line(info.value, "<- declared readonly")
    assert "readonly float64[::1]" in info.value.message and "writeable copy" in info.value.hint


TABLE = np.arange(4.0)


@cuda.jit
def write_global(out):
    TABLE[0] = 100.0  # <- error TABLE
    out[0] = TABLE[0]


@cuda.jit
def read_global(out):
    out[0] = TABLE[3]


def test_global_arrays_are_read_only_constants(target):
    """A store into a global array compiled and was silently lost; numba refuses it."""
    out = np.zeros(1)
    with pytest.raises(gpunb.CompileError) as info:
        write_global[1, 1](out)
    check_points_at_mark(info.value, write_global)
    assert "read-only" in info.value.message and "global array" in info.value.hint
    read_global[1, 1](out)
    assert out[0] == 3.0 and TABLE[0] == 0.0


@cuda.jit
def constant_zero_step(out):
    v = out[::0]  # <- error 0]
    out[0] = v.size


def test_zero_slice_step():
    with pytest.raises(gpunb.CompileError) as info:
        cuda.compile_ptx(constant_zero_step, "void(int64[::1])")
    check_points_at_mark(info.value, constant_zero_step)
    assert "step cannot be zero" in info.value.message and info.value.hint


def test_zero_slice_step_at_run_time_gives_an_empty_view(run_script):
    """A step of 0 known only at run time divided by zero: SIGFPE killed the process."""
    proc = run_script("""
        import numpy as np
        import gpunb
        from gpunb import cuda

        gpunb.set_target("cpu")

        @cuda.jit
        def runtime_step(out, step):
            v = out[::step]
            out[0] = v.size + 1

        out = np.zeros(4, np.int64)
        runtime_step[1, 1](out, 0)
        print("size+1:", out[0])
        runtime_step[1, 1](out, 2)
        print("size+1:", out[0])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["size+1:", "1", "size+1:", "3"]
