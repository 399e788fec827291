"""numpy's fixed-width strings in kernels (numba-cuda's test_const_string): constant str / bytes
stored into `<U` / `S` arrays and record fields, cut to the width and zero-padded as numpy
assigns them (numpy's own assignment is the oracle); string elements copied between arrays of
one width; clear errors for what GPU code cannot do with strings."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.cuda.np.numpy_support import from_dtype


def _expected(dtype, n: int, value):
    out = np.zeros(n, dtype=dtype)
    out[:-1] = value  # numpy: cut to the width, padded with zeros
    return out


@pytest.mark.parametrize("dtype,value", [("<U12", "XYZ"), ("S12", b"XYZ"), ("S4", "ab"),
                                         ("<U3", "ABCDEF"), ("S2", b"ABCDEF"), ("<U5", "héllo")])
def test_constant_strings_into_arrays(target, dtype, value):
    @cuda.jit
    def assign(arr):
        i = cuda.grid(1)
        if i < len(arr) - 1:
            arr[i] = VALUE

    global VALUE
    VALUE = value
    arr = np.zeros(9, dtype=dtype)
    assign[1, 16](arr)
    np.testing.assert_array_equal(arr, _expected(dtype, 9, value))


VALUE = None


def test_constant_strings_into_record_fields(target):
    @cuda.jit
    def fill(a, b):
        a[0]["x"] = 1
        a[0]["y"] = "ABC"
        a[1]["x"] = 2
        a[1].y = "XYZ"
        b[0]["y"] = b"ABC"
        b[1].y = b"XYZXYZXYZXYZXYZ"

    a_dt = np.dtype([("x", np.int32), ("y", np.dtype("<U12"))])
    b_dt = np.dtype([("x", np.float32), ("y", np.dtype("S12"))])
    a, b = np.zeros(2, a_dt), np.zeros(2, b_dt)
    fill[1, 1](a, b)
    np.testing.assert_array_equal(a, np.asarray([(1, "ABC"), (2, "XYZ")], dtype=a_dt))
    expected_b = np.zeros(2, b_dt)
    expected_b[0]["y"], expected_b[1]["y"] = b"ABC", b"XYZXYZXYZXYZXYZ"
    np.testing.assert_array_equal(b, expected_b)


def test_string_elements_copy_between_arrays(target):
    @cuda.jit
    def copy(src, dst):
        i = cuda.grid(1)
        if i < src.size:
            dst[src.size - 1 - i] = src[i]

    src = np.array(["alpha", "beta", "", "gamma delta"], dtype="<U11")
    dst = np.zeros_like(src)
    copy[1, 8](src, dst)
    np.testing.assert_array_equal(dst, src[::-1])


def test_string_types_come_from_dtypes():
    assert str(from_dtype(np.dtype("<U12"))) == "[unichr x 12]"
    assert str(from_dtype(np.dtype("S5"))) == "[char x 5]"
    assert from_dtype(np.dtype("S5")).size == 5 and from_dtype(np.dtype("<U5")).size == 20


@pytest.mark.parametrize("source,dtype,message", [
    ("arr[0] = 'é'", "S4", "non-ASCII string"),
    ("arr[0] = b'a'", "<U4", "cannot store bytes"),
    ("arr[0] = 5", "<U4", "cannot store int64"),
    ("s = 'a'\n    arr[0] = s", "<U4", "strings cannot be stored in variables"),
    ("print(arr[0])", "<U4", "cannot print"),
    ("arr[0] = arr[0] + 'a'", "<U4", "unsupported operand"),
    ("arr[0] = other[0]", "<U4", "cannot store"),
])
def test_what_gpu_code_cannot_do_with_strings_is_a_clear_error(source, dtype, message):
    namespace: dict = {}
    exec(f"def kernel(arr, other):\n    {source}\n", namespace)
    sig = (from_dtype(np.dtype(dtype))[::1], from_dtype(np.dtype("<U9"))[::1])
    with pytest.raises(CompileError, match=message):
        cuda.compile_ptx(namespace["kernel"], sig)


@pytest.mark.gpu
def test_strings_in_device_arrays_on_a_gpu():
    import gpunb

    @cuda.jit
    def assign(arr):
        i = cuda.grid(1)
        if i < arr.size:
            arr[i] = "gpu"

    gpunb.set_target("cuda")
    try:
        darr = cuda.to_device(np.zeros(40, dtype="<U8"))
        assign[1, 64](darr)
        assert darr.copy_to_host().tolist() == ["gpu"] * 40
    finally:
        gpunb.set_target(None)


MODE = "fast"


def test_constant_strings_compare_at_compile_time(target):
    """numba-cuda's test_string_device_function_arg_compiles_quickly: a literal string passed
    to a device function is a compile-time constant; comparisons of constant strings prune."""
    @cuda.jit(device=True, forceinline=True)
    def pick(x, how):
        if how == "double":
            return x * 2
        elif how != "triple":
            return x
        return x * 3

    @cuda.jit
    def kernel(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = pick(a[i], "double") + pick(a[i], "triple") + pick(a[i], MODE) + ("ab" < "b") + \
                (b"x" != b"y")

    a = np.ones(4, np.float32)
    kernel[1, 4](a)
    assert a.tolist() == [8.0] * 4  # 2 + 3 + 1 + True + True


def test_a_string_compared_with_a_number_is_a_clear_error():
    with pytest.raises(CompileError, match="cannot compare int64 with str"):
        cuda.compile_ptx(lambda x: x == "a", (from_dtype(np.dtype(np.int64)),), device=True)
    with pytest.raises(CompileError, match="cannot compare"):
        cuda.compile_ptx(lambda x: "a" < b"a" and x, (from_dtype(np.dtype(np.int64)),),
                         device=True)
