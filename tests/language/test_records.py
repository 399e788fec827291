"""numpy record (structured) arrays in kernels: field reads and writes by attribute and by
string subscript, records passed by value, packed and aligned layouts, and sub-array fields
(`('v', np.float32, (3,))`) read and written through a view of the record's bytes, as numba.cuda
does. Each test runs on every available target and compares with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

POINT = np.dtype([("x", np.float32), ("y", np.float64), ("n", np.int16), ("ok", np.bool_)])
POINT_ALIGNED = np.dtype(POINT.descr, align=True)
PARTICLE = np.dtype([("pos", np.float32, (3,)), ("m", np.float64), ("ids", np.int32, (2, 2))])


@cuda.jit
def field_arithmetic(out, recs):
    i = cuda.grid(1)
    if i < recs.size:
        r = recs[i]
        out[i] = r.x * 2 + recs[i]["y"] + r.n + (1 if r.ok else 0)


@cuda.jit
def field_writes(recs):
    i = cuda.grid(1)
    if i < recs.size:
        recs[i].x = i * 0.5
        recs[i]["y"] = recs[i].x + 1.0
        r = recs[i]
        r.n += 3
        r["ok"] = i % 2 == 0


@pytest.mark.parametrize("dtype", [POINT, POINT_ALIGNED], ids=["packed", "aligned"])
def test_scalar_fields_read(target, dtype):
    recs = np.zeros(5, dtype)
    recs["x"] = np.arange(5) * 1.5
    recs["y"] = np.arange(5) - 10.25
    recs["n"] = [-3, 0, 7, 100, -32768]
    recs["ok"] = [True, False, True, True, False]
    out = np.zeros(5)
    field_arithmetic[1, 8](out, recs)
    expected = recs["x"].astype(np.float64) * 2 + recs["y"] + recs["n"] + recs["ok"]
    np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize("dtype", [POINT, POINT_ALIGNED], ids=["packed", "aligned"])
def test_scalar_fields_written_through_device_array(target, dtype):
    recs = np.zeros(6, dtype)
    recs["n"] = np.arange(6)
    d = cuda.to_device(recs)
    field_writes[2, 4](d)
    got = d.copy_to_host()
    np.testing.assert_allclose(got["x"], np.arange(6) * 0.5)
    np.testing.assert_allclose(got["y"], np.arange(6) * 0.5 + 1.0)
    assert got["n"].tolist() == [3, 4, 5, 6, 7, 8]
    assert got["ok"].tolist() == [True, False, True, False, True, False]


@cuda.jit
def scale_record(rec, factor):
    rec.x *= factor
    rec.n = 9


def test_record_by_value_is_written_back(target):
    recs = np.zeros(2, POINT)
    recs[1]["x"] = 3.0
    scale_record[1, 1](recs[1], 4.0)
    assert recs[1]["x"] == 12.0 and recs[1]["n"] == 9
    assert recs[0]["x"] == 0.0


@cuda.jit
def centre_of_mass(out, parts):
    # one thread: sums m * pos over the particles, reading sub-array fields
    if cuda.grid(1) == 0:
        total = 0.0
        for i in range(parts.size):
            p = parts[i]
            for k in range(p.pos.size):
                out[k] += p.m * p.pos[k]
            total += p.m
        for k in range(3):
            out[k] /= total


@cuda.jit
def sub_array_writes(parts):
    i = cuda.grid(1)
    if i < parts.size:
        p = parts[i]
        for k in range(p.pos.shape[0]):
            p.pos[k] = i * 10 + k
        ids = p["ids"]
        for a in range(ids.shape[0]):
            for b in range(ids.shape[1]):
                ids[a, b] = i * 100 + a * 10 + b
        p.m = ids.ndim + ids.size


def test_sub_array_fields_read(target):
    parts = np.zeros(4, PARTICLE)
    parts["pos"] = np.arange(12, dtype=np.float32).reshape(4, 3)
    parts["m"] = [1.0, 2.0, 3.0, 4.0]
    out = np.zeros(3)
    centre_of_mass[1, 1](out, parts)
    expected = (parts["m"][:, None] * parts["pos"]).sum(axis=0) / parts["m"].sum()
    np.testing.assert_allclose(out, expected)


def test_sub_array_fields_written(target):
    parts = np.zeros(3, PARTICLE)
    d = cuda.to_device(parts)
    sub_array_writes[1, 4](d)
    got = d.copy_to_host()
    for i in range(3):
        assert got[i]["pos"].tolist() == [i * 10 + k for k in range(3)]
        assert got[i]["ids"].tolist() == [[i * 100 + a * 10 + b for b in range(2)]
                                          for a in range(2)]
        assert got[i]["m"] == 2 + 4


@cuda.jit
def sum_record_pos(out, p):
    out[0] = p.pos[0] + p.pos[1] + p.pos[2]


def test_sub_array_field_of_a_record_passed_by_value(target):
    parts = np.zeros(1, PARTICLE)
    parts[0]["pos"] = [1.5, 2.5, 4.0]
    out = np.zeros(1, np.float32)
    sum_record_pos[1, 1](out, parts[0])
    assert out[0] == 8.0


@cuda.jit(device=True)
def norm2(v):
    s = 0.0
    for k in range(v.size):
        s += v[k] * v[k]
    return s


@cuda.jit
def norms(out, parts):
    i = cuda.grid(1)
    if i < parts.size:
        out[i] = norm2(parts[i].pos)


def test_sub_array_field_passed_to_a_device_function(target):
    parts = np.zeros(3, PARTICLE)
    parts["pos"] = np.arange(9, dtype=np.float32).reshape(3, 3)
    out = np.zeros(3, np.float32)
    norms[1, 3](out, parts)
    np.testing.assert_allclose(out, (parts["pos"].astype(np.float64) ** 2).sum(axis=1))


def test_sub_array_index_checked_with_debug_on_cpu():
    @cuda.jit(debug=True)
    def past_the_end(parts):
        parts[0].pos[3] = 1.0

    gpunb.set_target("cpu")
    try:
        with pytest.raises(IndexError, match="past_the_end"):
            past_the_end[1, 1](np.zeros(2, PARTICLE))
    finally:
        gpunb.set_target(None)


def test_assigning_a_whole_sub_array_field_copies_it_and_checks_the_type():
    """numba copies an array into a record's array field (tests/language/
    test_record_array_fields.py runs it); an array that cannot convert is refused."""

    @cuda.jit
    def whole(parts, other):
        parts[0].pos = other

    whole.compile((gpunb.types.from_dtype(PARTICLE)[::1], gpunb.types.float32[::1]))
    with pytest.raises(gpunb.CompileError, match="cannot assign"):
        whole.compile((gpunb.types.from_dtype(PARTICLE)[::1], gpunb.types.complex128[::1]))


def test_unknown_field_is_a_compile_error_naming_the_fields():
    @cuda.jit
    def missing(parts):
        parts[0]["velocity"] = 1.0

    with pytest.raises(gpunb.CompileError, match="no field 'velocity'") as info:
        missing.compile((gpunb.types.from_dtype(PARTICLE)[::1],))
    assert "pos, m, ids" in str(info.value)


def test_record_kernels_ptx_is_accepted_by_ptxas(ptxas):
    sig = (gpunb.types.float32[::1], gpunb.types.from_dtype(PARTICLE)[::1])
    ptxas(norms.inspect_ptx(sig))
    ptxas(field_arithmetic.inspect_ptx(
        (gpunb.types.float64[::1], gpunb.types.from_dtype(POINT_ALIGNED)[::1])))


def test_record_type_round_trips_to_numpy():
    for dtype in (POINT, POINT_ALIGNED, PARTICLE):
        assert gpunb.types.to_dtype(gpunb.types.from_dtype(dtype)) == dtype


def test_two_layouts_of_the_same_fields_are_two_cache_entries(target):
    """Packed and aligned layouts of the same field names and types once shared a cache key (the
    signature's text left out the offsets): the second layout ran the first's code."""
    for dtype in (POINT, POINT_ALIGNED, POINT):
        recs = np.zeros(3, dtype)
        recs["x"], recs["y"], recs["n"] = [1, 2, 3], [0.5, 0.25, 0.125], [4, 5, 6]
        out = np.zeros(3)
        field_arithmetic[1, 4](out, recs)
        np.testing.assert_allclose(out, recs["x"] * 2.0 + recs["y"] + recs["n"])
    assert str(gpunb.types.from_dtype(POINT)) != str(gpunb.types.from_dtype(POINT_ALIGNED))


def test_dtypes_numpy_calls_equal_give_equal_types():
    """The launch fast path keys numpy arrays by dtype (numpy equality); typeof must agree."""
    aligned = np.dtype([("a", "i1"), ("b", "f4")], align=True)
    explicit = np.dtype({"names": ["a", "b"], "formats": ["i1", "f4"], "offsets": [0, 4],
                         "itemsize": 8})
    assert aligned == explicit and aligned.alignment != explicit.alignment
    assert gpunb.types.from_dtype(aligned) == gpunb.types.from_dtype(explicit)
    assert gpunb.types.from_dtype(aligned).align == 4
    assert gpunb.types.from_dtype(POINT).align == 1  # packed: y sits at offset 4


def _global_loads(ptx: str) -> set:
    import re

    return set(re.findall(r"\bld\.global\.(\w+)", ptx))


def test_packed_records_are_read_with_accesses_a_gpu_can_make():
    """numpy's default (packed) layout puts a float64 at offset 4 and records at multiples of
    15 bytes: natural-width loads there fault on a GPU (CUDA_ERROR_MISALIGNED_ADDRESS). The
    PTX for a packed record reads bytes; an aligned layout keeps full-width loads."""
    f64 = gpunb.types.float64[::1]
    packed = field_arithmetic.inspect_ptx((f64, gpunb.types.from_dtype(POINT)[::1]))
    aligned = field_arithmetic.inspect_ptx((f64, gpunb.types.from_dtype(POINT_ALIGNED)[::1]))
    assert _global_loads(packed) == {"b8"}
    assert {"b64", "b32"} <= _global_loads(aligned)
    sub = norms.inspect_ptx((gpunb.types.float32[::1], gpunb.types.from_dtype(PARTICLE)[::1]))
    assert _global_loads(sub) == {"b8"}  # the f4[3] view of a packed record is unaligned too


@cuda.jit
def double_all(out, a):
    for i in range(a.size):
        out[i] = a[i] * 2


def test_a_misaligned_field_view_from_numpy_is_typed_unaligned(target):
    recs = np.zeros(4, POINT)
    recs["y"] = [1.5, 2.5, 3.5, 4.5]
    view = recs["y"]  # float64 at offsets 4, 19, 34, ...: numpy says not aligned
    assert not view.flags.aligned
    from gpunb.runtime.typeof import typeof

    assert not typeof(view).aligned and str(typeof(view)).startswith("unaligned")
    out = np.zeros(4)
    double_all[1, 1](out, view)
    assert out.tolist() == [3.0, 5.0, 7.0, 9.0]
    ptx = double_all.inspect_ptx((gpunb.types.float64[::1], typeof(view)))
    assert "b64" not in _global_loads(ptx)


def test_under_aligned_float_stores_go_through_an_integer_instruction():
    """CUDA 13.0's ptxas (measured on the H100) stores the low byte of `st.b8 [p], %r` wrongly
    when %r comes straight from a float instruction: a packed record's x = 12.0 came back
    12.000011. Each under-aligned float store's bits pass through an integer mov first."""
    ptx = field_writes.inspect_ptx((gpunb.types.from_dtype(POINT)[::1],))
    assert "mov.b32" in ptx and "mov.b64" in ptx  # the float32 x and the float64 y
    aligned = field_writes.inspect_ptx((gpunb.types.from_dtype(POINT_ALIGNED)[::1],))
    assert "begin inline asm" not in aligned  # natural alignment: plain stores


INNER = np.dtype([("x", np.float64), ("y", np.int32)], align=True)
OUTER = np.dtype([("a", np.int32), ("inner", INNER)])  # inner at offset 4, records every 20 B


@cuda.jit
def nested_record_fields(out, recs):
    i = cuda.grid(1)
    if i < recs.size:
        out[i] = recs[i].inner.x + recs[i].inner.y
        recs[i].inner.x = 12.0


def test_an_aligned_record_inside_a_packed_one_is_accessed_as_its_place_allows(target):
    recs = np.zeros(3, OUTER)
    recs["inner"]["x"] = [1.5, 2.5, 3.5]
    recs["inner"]["y"] = [1, 2, 3]
    out = np.zeros(3)
    nested_record_fields[1, 4](out, recs)
    assert out.tolist() == [2.5, 4.5, 6.5]
    assert recs["inner"]["x"].tolist() == [12.0] * 3
    ptx = nested_record_fields.inspect_ptx((gpunb.types.float64[::1],
                                            gpunb.types.from_dtype(OUTER)[::1]))
    assert _global_loads(ptx) == {"b8"}  # x sits at 4 + 20 i: never 8-byte aligned


@cuda.jit
def write_scalar_field(recs):
    recs[0].x = 1.0


@cuda.jit
def write_sub_array_field(parts):
    p = parts[0]
    p.pos[0] = 1.0


@cuda.jit
def read_fields(out, parts):
    out[0] = parts[1].m + parts[1].pos[2]


def test_records_of_a_read_only_array_can_be_read_not_written(target):
    parts = np.zeros(2, PARTICLE)
    parts[1]["m"], parts[1]["pos"] = 2.0, [0, 0, 5.0]
    parts.flags.writeable = False
    out = np.zeros(1)
    read_fields[1, 1](out, parts)
    assert out[0] == 7.0
    points = np.zeros(1, POINT)
    points.flags.writeable = False
    with pytest.raises(gpunb.CompileError, match="read-only"):
        write_scalar_field[1, 1](points)
    with pytest.raises(gpunb.CompileError, match="read-only"):
        write_sub_array_field[1, 1](parts)
    assert not points["x"].any() and parts[0]["pos"].tolist() == [0.0, 0.0, 0.0]


def test_a_declared_signature_takes_an_unaligned_array_as_numba_does(target):
    """numba's typeof calls every numpy array aligned, so `void(float64[:], float64[:])` takes
    a view at an odd offset (numba-cuda's test_gpu_array_strided); gpunb compiles the declared
    signature with that argument unaligned: its loads are as wide as the alignment allows."""
    @cuda.jit("void(float64[:], float64[:])")
    def copy_declared(out, a):
        for i in range(a.size):
            out[i] = a[i] * 2

    recs = np.zeros(3, POINT)
    recs["y"] = [1.5, 2.5, 3.5]
    out = np.zeros(3)
    copy_declared[1, 1](out, recs["y"])
    assert out.tolist() == [3.0, 5.0, 7.0]
    x = np.arange(10, dtype=np.float64)  # numba-cuda's case: 9 doubles at byte offset 4
    z = np.ndarray(9, buffer=np.ndarray(80, buffer=x, dtype=np.byte)[4:-4], dtype=np.float64)
    expect = z * 2
    copy_declared[1, 1](out := np.zeros(9), z)
    assert out.tolist() == expect.tolist()
    from gpunb.runtime.typeof import typeof

    unaligned = typeof(z)
    assert not unaligned.aligned
    ptx = copy_declared.inspect_ptx((gpunb.types.float64[:], unaligned))
    assert "b64" not in _global_loads(ptx)  # byte loads of the unaligned argument
    with pytest.raises(gpunb.LaunchError, match="No matching definition"):
        copy_declared[1, 1](out, np.zeros(3, np.float32))  # other mismatches still refused


@cuda.jit
def pick_then_double(out, aligned, unaligned, which):
    a = aligned
    if which:
        a = unaligned  # a is either: its type must not claim alignment
    for i in range(a.size):
        out[i] = a[i] * 2


def test_a_variable_holding_aligned_or_unaligned_arrays_is_unaligned(target):
    recs = np.zeros(3, POINT)
    recs["y"] = [1.0, 2.0, 3.0]
    out = np.zeros(3)
    pick_then_double[1, 1](out, np.ones(3), recs["y"], True)
    assert out.tolist() == [2.0, 4.0, 6.0]
    from gpunb.runtime.typeof import typeof

    ptx = pick_then_double.inspect_ptx((typeof(out), typeof(np.ones(3)), typeof(recs["y"]),
                                        gpunb.types.boolean))
    assert "b64" not in _global_loads(ptx)


_BY_POSITION = np.dtype([("a", np.int32), ("b", np.float64)], align=True)


@cuda.jit
def fields_by_position(r, out):
    out[0] = r[0][0]  # numba: an integer constant selects a field by its position
    out[1] = r[0][-1]
    r[1][1] = 7.5
    r[1][0] = 3


def test_fields_by_position(target):
    r = np.zeros(2, _BY_POSITION)
    r[0] = (4, 2.5)
    out = np.zeros(2)
    fields_by_position[1, 1](r, out)
    assert out.tolist() == [4.0, 2.5]
    assert r[1].tolist() == (3, 7.5)


def test_field_position_out_of_range():
    @cuda.jit
    def f(r, out):
        out[0] = r[0][2]

    with pytest.raises(gpunb.CompileError, match="record index 2 out of range"):
        f[1, 1](np.zeros(1, _BY_POSITION), np.zeros(1))


NESTED = np.dtype([("p", np.int16), ("q", np.float64)])
FIELD_VIEWS = np.dtype([("a", np.int8), ("b", np.float64), ("c", np.float32, (2, 3)),
                        ("n", NESTED), ("size", np.int32)])


def _field_views(recs, out):
    b = recs.b  # numba's recs.x: a view of field x of every record, the record strides kept
    c = recs.c
    for i in range(recs.shape[0]):
        for j in range(recs.shape[1]):
            out[i, j] = b[i, j] + c[i, j, 1, 2] + recs.n[i, j].q + recs.a[i, j] + recs.size
            recs.b[i, j] = i * 10 + j
            recs.c[i, j, 0, 1] = 5
    out[0, 0] += c.shape[2] * 100 + c.ndim * 1000


@pytest.mark.parametrize("aligned", [False, True], ids=["packed", "aligned"])
def test_field_of_a_record_array_is_a_view(target, aligned):
    # gpunb said "has no attribute 'b'"; numba's njit and numba-cuda give a strided view
    from numba import njit

    dtype = np.dtype({"names": FIELD_VIEWS.names,
                      "formats": [FIELD_VIEWS.fields[n][0] for n in FIELD_VIEWS.names]},
                     align=aligned)
    recs = np.zeros((3, 4), dtype)
    recs["a"] = 1
    recs["b"] = np.arange(12).reshape(3, 4)
    recs["c"][..., 1, 2] = 0.5
    recs["n"]["q"] = 2
    expected_recs, expected = recs.copy(), np.zeros((3, 4))
    njit(_field_views)(expected_recs, expected)
    out = np.zeros((3, 4))
    cuda.jit(_field_views)[1, 1](recs, out)
    np.testing.assert_array_equal(out, expected)
    assert out[0, 0] == 0 + 0.5 + 2 + 1 + 12 + 200 + 4000  # .size is the array's, as in numba
    for name in ("a", "b", "c"):
        np.testing.assert_array_equal(recs[name], expected_recs[name])


def test_field_view_of_a_read_only_record_array_is_read_only():
    gpunb.set_target("cpu")

    @cuda.jit
    def write(recs):
        recs.b[1] = 3

    recs = np.zeros(3, FIELD_VIEWS)
    recs.flags.writeable = False
    with pytest.raises(gpunb.CompileError, match="read-only"):
        write[1, 1](recs)

    @cuda.jit
    def unknown(recs):
        recs.zz[1] = 3

    with pytest.raises(gpunb.CompileError, match="its records' fields .* are a, b, c, n, size"):
        unknown[1, 1](np.zeros(3, FIELD_VIEWS))


def test_field_view_ptx_passes_ptxas(ptxas):
    from gpunb.foundation.types import float64, from_dtype

    recs_t = from_dtype(FIELD_VIEWS)[:, :]
    ptx, _ = cuda.compile_ptx(_field_views, (recs_t, float64[:, :]))
    ptxas(ptx)
