"""Bad tensor-core and inline-PTX code: a typed gpunb error at the line (and column) of the
mistake, saying what is supported. Each kernel marks the line the error must name with `# <-`."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.cuda import wmma
from gpunb.foundation.errors import LaunchError, WarpMaskError

F16_2D = "void(float32[:, ::1], float16[:, ::1], float16[:, ::1])"


def _marked_line(func, marker: str = "# <-") -> int:
    lines, first = inspect.getsourcelines(getattr(func, "py_func", func))
    return first + next(k for k, line in enumerate(lines) if marker in line)


def _compile_error(kernel, sig=F16_2D, cc=(9, 0), match="", marker="# <-"):
    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(kernel, sig, cc=cc)
    assert re.search(match, str(info.value), re.DOTALL), str(info.value)
    assert info.value.loc is not None and \
        info.value.loc.line == _marked_line(kernel, marker), str(info.value)
    return info.value


# ---- unsupported shapes and types ------------------------------------------------------------

@cuda.jit
def _bad_wmma_shape(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 8, np.float16, wmma.row_major)  # <-
    wmma.fill_fragment(fa, 0)


@cuda.jit
def _bad_wmma_dtype(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float32, wmma.row_major)  # <-
    wmma.fill_fragment(fa, 0)


@cuda.jit
def _bad_mma_shape(c, a, b):
    x = a[0, 0]
    d = cuda.mma_sync("m16n8k4", (x, x), (x,), (0.0, 0.0, 0.0, 0.0))  # <-
    c[0, 0] = d[0]


@cuda.jit
def _bad_mma_types(c, a, b):
    x = a[0, 0]
    y = np.int8(1)
    zero = (0.0, 0.0, 0.0, 0.0)
    d = cuda.mma_sync("m16n8k16", (x, x, x, x, x, x, x, x), (y, y, y, y), zero)  # <-
    c[0, 0] = d[0]


@cuda.jit
def _bad_mma_count(c, a, b):
    x = a[0, 0]
    d = cuda.mma_sync("m16n8k16", (x, x, x, x), (x, x, x, x), (0.0, 0.0, 0.0, 0.0))  # <-
    c[0, 0] = d[0]


@pytest.mark.parametrize("kernel, match", [
    (_bad_wmma_shape, "m16n16k8 with float16 is not a WMMA shape.*supported"),
    (_bad_wmma_dtype, "not an element type of a matrix_a fragment"),
    (_bad_mma_shape, "'m16n8k4' is not an mma.sync shape.*supported: m16n8k8"),
    (_bad_mma_types, "does not multiply float16 by int8"),
    (_bad_mma_count, "takes A as 8 float16 values per lane, got 4"),
])
def test_unsupported_combinations(kernel, match):
    _compile_error(kernel, match=match)


# ---- layouts ---------------------------------------------------------------------------------

@cuda.jit
def _missing_fragment_layout(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16)  # <-
    wmma.fill_fragment(fa, 0)


@cuda.jit
def _missing_load_layout(c, a, b):
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.load_matrix_sync(acc, c[0:16, 0:16])  # <-


@cuda.jit
def _missing_store_layout(c, a, b):
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(acc, 0)
    wmma.store_matrix_sync(c[0:16, 0:16], acc)  # <-


@pytest.mark.parametrize("kernel, match", [
    (_missing_fragment_layout, "a matrix_a fragment needs a layout"),
    (_missing_load_layout, "loading an accumulator needs the memory layout"),
    (_missing_store_layout, r"store_matrix_sync\(tile, frag, layout\) takes 3"),
])
def test_missing_layouts(kernel, match):
    _compile_error(kernel, match=match)


# ---- tiles -------------------------------------------------------------------------------------

@cuda.jit
def _tile_too_short(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    r = cuda.blockIdx.x * 16
    wmma.load_matrix_sync(fa, a[r:r + 8, 0:16])  # <-


@cuda.jit
def _tile_with_gaps(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    wmma.load_matrix_sync(fa, a[0:16, 0:32:2])  # <-


@cuda.jit
def _tile_wrong_dtype(c, a, b):
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float16)
    wmma.fill_fragment(acc, 0)
    wmma.store_matrix_sync(c[0:16, 0:16], acc, wmma.mem_row_major)  # <-


@cuda.jit
def _tile_fortran_order(c, a, b):
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    wmma.load_matrix_sync(fb, b)  # <-


def test_tile_of_the_wrong_shape():
    err = _compile_error(_tile_too_short, match="this view selects 8 rows; the fragment's "
                         "tile is 16 x 16")
    assert err.loc.col > 30  # the caret is under the slice, not the call


def test_tile_with_a_step_along_its_rows():
    _compile_error(_tile_with_gaps, match="must be contiguous along axis 1")


def test_tile_of_the_wrong_element_type():
    _compile_error(_tile_wrong_dtype, match="the tile holds float32, the fragment float16")


def test_tile_in_the_wrong_order():
    _compile_error(_tile_fortran_order, "void(float32[:, ::1], float16[:, ::1], float16[::1, :])",
                   match="Fortran-ordered.*col_major")


@cuda.jit
def _runtime_tile(c, a, b, n):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    wmma.load_matrix_sync(fa, a[0:n, 0:16])  # <-
    c[cuda.laneid, 0] = fa.x[0]


def test_tile_checked_at_run_time_on_the_cpu():
    import gpunb

    gpunb.set_target("cpu")
    try:
        a = np.zeros((16, 16), np.float16)
        with pytest.raises(ValueError, match="the tile must be a 16 x 16 view") as info:
            _runtime_tile[1, 32](np.zeros((32, 1), np.float32), a, a, 12)
        assert isinstance(info.value, LaunchError)
        assert info.value.loc.line == _marked_line(_runtime_tile)
        # each hint says what to change, not only why the check exists
        assert info.value.hint.startswith("pass a view of exactly the fragment's tile")
        misaligned = np.zeros((16, 20), np.float16)  # rows of 40 bytes
        with pytest.raises(ValueError, match="multiple of 16 bytes") as info:
            _runtime_tile[1, 32](np.zeros((32, 1), np.float32), misaligned, a, 16)
        assert "a multiple of 16 bytes long - 8 float16" in info.value.hint
        with pytest.raises(LaunchError, match="needs all 32 lanes") as info:
            _runtime_tile[1, 16](np.zeros((32, 1), np.float32), a, a, 16)
        assert info.value.hint.startswith("launch blocks of a multiple of 32 threads")
    finally:
        gpunb.set_target(None)


# ---- mismatched fragments ----------------------------------------------------------------------

@cuda.jit
def _mixed_shapes(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 32, 8, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.mma_sync(acc, fa, fb, acc)  # <-


@cuda.jit
def _swapped_fragments(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.mma_sync(acc, fb, fa, acc)  # <-


def test_fragments_of_different_shapes():
    _compile_error(_mixed_shapes, match=r"different shapes \(acc: m16n16k16, fa: m16n16k16, "
                   r"fb: m32n8k16")


def test_fragments_in_the_wrong_places():
    _compile_error(_swapped_fragments, match="needs a matrix_a fragment here, got a matrix_b")


# ---- architecture --------------------------------------------------------------------------------

@cuda.jit
def _uses_mma_m16n8k16(c, a, b):
    lane = cuda.laneid
    x = a[lane, 0]
    d = cuda.mma_sync("m16n8k16", (x, x, x, x, x, x, x, x), (x, x, x, x),  # <-
                      (0.0, 0.0, 0.0, 0.0))
    c[lane, 0] = d[0]


@cuda.jit
def _uses_stmatrix(c, a, b):
    tile = cuda.shared.array((32, 8), np.float16)
    x = a[0, 0]
    cuda.stmatrix(tile, (cuda.laneid, 0), (x, x))  # <-


@cuda.jit
def _uses_fp8(c, a, b):
    x = cuda.fp8.fp8_e4m3(a[0, 0])
    a16 = (x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x)
    d = cuda.mma_sync("m16n8k32", a16, a16[:8], (0.0, 0.0, 0.0, 0.0))  # <-
    c[0, 0] = d[0]


@cuda.jit
def _uses_bf16_wmma(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, cuda.bf16.bfloat16, wmma.row_major)
    wmma.load_matrix_sync(fa, a[0:16, 0:16])  # <-


@pytest.mark.parametrize("kernel, cc, sig, match", [
    (_uses_mma_m16n8k16, (7, 5), F16_2D, "mma.sync m16n8k16 with float16 needs sm_80 or newer; "
     "this kernel compiles for sm_75"),
    (_uses_stmatrix, (8, 9), F16_2D, "stmatrix needs sm_90 or newer; this kernel compiles for "
     "sm_89"),
    (_uses_fp8, (8, 0), F16_2D, "m16n8k32 with fp8_e4m3 needs sm_89"),
    (_uses_bf16_wmma, (7, 5), "void(float32[:, ::1], bfloat16[:, ::1], bfloat16[:, ::1])",
     "needs sm_80 or newer; this kernel compiles for sm_75"),
])
def test_features_above_the_architecture(kernel, cc, sig, match):
    _compile_error(kernel, sig, cc=cc, match=match)


# ---- ldmatrix / stmatrix operands --------------------------------------------------------------

@cuda.jit
def _ldmatrix_global(c, a, b):
    regs = cuda.ldmatrix(a, (cuda.laneid, 0))  # <-
    c[0, 0] = regs[0]


@cuda.jit
def _ldmatrix_count(c, a, b):
    tile = cuda.shared.array((32, 8), np.float16)
    regs = cuda.ldmatrix(tile, (cuda.laneid, 0), 3)  # <-
    c[0, 0] = regs[0]


@cuda.jit
def _ldmatrix_f32(c, a, b):
    tile = cuda.shared.array((32, 8), np.float32)
    regs = cuda.ldmatrix(tile, (cuda.laneid, 0))  # <-
    c[0, 0] = regs[0]


@pytest.mark.parametrize("kernel, match", [
    (_ldmatrix_global, "works on shared memory; 'a' is an argument of the kernel"),
    (_ldmatrix_count, "loads 1, 2 or 4 8x8 matrices, not 3"),
    (_ldmatrix_f32, "moves 16-bit elements"),
])
def test_ldmatrix_operands(kernel, match):
    _compile_error(kernel, match=match)


@cuda.jit
def _ldmatrix_outside(c, a, b):
    tile = cuda.shared.array((32, 8), np.float16)
    regs = cuda.ldmatrix(tile, (cuda.laneid, 4))  # <-
    c[cuda.laneid, 0] = regs[0]


@cuda.jit(device=True)
def _rows_of(tile):
    return cuda.ldmatrix(tile, (cuda.laneid % 16, 0), 2)  # <-


@cuda.jit
def _ldmatrix_via_device_function(c, a, b):
    regs = _rows_of(a)  # a global array reaches ldmatrix through a device function
    c[cuda.laneid, 0] = regs[0]


@cuda.jit
def _ldmatrix_alias(c, a, b):
    rows = a  # an alias of the kernel argument
    regs = cuda.ldmatrix(rows, (cuda.laneid % 16, 0), 2)  # <-
    c[cuda.laneid, 0] = regs[0]


@cuda.jit
def _ldmatrix_local(c, a, b):
    tile = cuda.local.array((16, 8), np.float16)
    for i in range(16):
        for j in range(8):
            tile[i, j] = i
    regs = cuda.ldmatrix(tile, (cuda.laneid % 16, 0), 2)  # <-
    c[cuda.laneid, 0] = regs[0]


@cuda.jit
def _stmatrix_global(c, a, b):
    rows = a
    one = np.float16(1)
    cuda.stmatrix(rows, (cuda.laneid % 16, 0), (one, one, one, one))  # <-


@cuda.jit
def _ldmatrix_shared(c, a, b):
    tile = cuda.shared.array((16, 8), np.float16)
    tile[cuda.laneid % 16, cuda.laneid // 16] = cuda.laneid
    cuda.syncwarp()
    regs = cuda.ldmatrix(tile, (cuda.laneid % 16, 0), 2)
    c[cuda.laneid, 0] = regs[0]


def test_ldmatrix_and_stmatrix_rows_outside_shared_memory_are_reported_on_the_cpu():
    import gpunb

    gpunb.set_target("cpu")
    try:
        c = np.zeros((64, 1), np.float32)
        a = np.zeros((16, 16), np.float16)
        for kernel, where in ((_ldmatrix_via_device_function, _rows_of),
                              (_ldmatrix_alias, _ldmatrix_alias),
                              (_ldmatrix_local, _ldmatrix_local)):
            with pytest.raises(ValueError, match="cuda.ldmatrix reaches shared memory only, and "
                               "the row a lane addresses in '(tile|rows)' is not in this "
                               "block's shared memory") as info:
                kernel[1, 32](c, a, a)
            assert info.value.loc.line == _marked_line(where), kernel
        with pytest.raises(ValueError, match="cuda.stmatrix reaches shared memory only") as info:
            _stmatrix_global[1, 32](c, a, a)
        assert info.value.loc.line == _marked_line(_stmatrix_global)
        assert (a == 0).all()  # nothing was written
        _ldmatrix_shared[1, 32](c, a, a)  # the same instruction on a shared tile: fine
        # lane l gets element (l // 4, 2 (l % 4)) of matrix 0: tile row l // 4, column 2 (l % 4)
        lanes = np.arange(32)
        rows, cols = lanes // 4, 2 * (lanes % 4)
        np.testing.assert_array_equal(c[:32, 0], np.where(cols == 0, rows, 0))
    finally:
        gpunb.set_target(None)


# ---- warps ---------------------------------------------------------------------------------------

@cuda.jit
def _wmma_partial_warp(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(fa, 1)
    wmma.fill_fragment(fb, 1)
    wmma.fill_fragment(acc, 0)
    wmma.mma_sync(acc, fa, fb, acc)  # <-
    c[cuda.threadIdx.x, 0] = acc.x[0]


@cuda.jit
def _wmma_divergent(c, a, b):
    fa = wmma.fragment(wmma.matrix_a, 16, 16, 16, np.float16, wmma.row_major)
    fb = wmma.fragment(wmma.matrix_b, 16, 16, 16, np.float16, wmma.row_major)
    acc = wmma.fragment(wmma.accumulator, 16, 16, 16, np.float32)
    wmma.fill_fragment(fa, 1)
    wmma.fill_fragment(fb, 1)
    wmma.fill_fragment(acc, 0)
    if cuda.laneid < 16:
        wmma.mma_sync(acc, fa, fb, acc)  # <-
    c[cuda.threadIdx.x, 0] = acc.x[0]


def test_misuse_found_by_the_cpu_target():
    import gpunb

    gpunb.set_target("cpu")
    try:
        c = np.zeros((64, 1), np.float32)
        a = np.zeros((16, 16), np.float16)
        with pytest.raises(RuntimeError, match="wmma.mma_sync needs all 32 lanes") as info:
            _wmma_partial_warp[1, 48](c, a, a)
        assert info.value.loc.line == _marked_line(_wmma_partial_warp)
        with pytest.raises(WarpMaskError, match="wmma.mma_sync") as info:
            _wmma_divergent[1, 32](c, a, a)
        assert info.value.loc.line == _marked_line(_wmma_divergent)
        with pytest.raises(IndexError, match="cuda.ldmatrix: the 8-element row") as info:
            _ldmatrix_outside[1, 32](c, a, a)
        assert info.value.loc.line == _marked_line(_ldmatrix_outside)
        _wmma_partial_warp[1, 64](c, a, a)  # whole warps: fine
        assert (c[:, 0] == 16).all()
    finally:
        gpunb.set_target(None)


# ---- inline PTX ----------------------------------------------------------------------------------

@cuda.jit
def _ptx_typo(c, a, b):
    c[0, 0] = cuda.inline_ptx("add.s33 %0, %1, %1;", "=r,r", 1)  # <-


@cuda.jit
def _ptx_multiline_typo(c, a, b):
    c[0, 0] = cuda.inline_ptx("""{
        .reg .b32 t;
        mov.b32 t, %1;
        add.u32 %0, t, nonsense;
    }""", "=r,r", 1)  # <-


@cuda.jit
def _ptx_bad_constraint(c, a, b):
    c[0, 0] = cuda.inline_ptx("mov.b32 %0, %1;", "=r,q", 1)  # <-


@cuda.jit
def _ptx_operand_count(c, a, b):
    c[0, 0] = cuda.inline_ptx("add.s32 %0, %1, %2;", "=r,r,r", 1)  # <-


@cuda.jit
def _ptx_operand_range(c, a, b):
    c[0, 0] = cuda.inline_ptx("add.s32 %0, %1, %3;", "=r,r,r", 1, 2)  # <-


@pytest.mark.parametrize("kernel, match", [
    (_ptx_bad_constraint, "unknown constraint 'q'"),
    (_ptx_operand_count, r"name 2 input\(s\); the call passes 1"),
    (_ptx_operand_range, r"names %3, but there are 3 operand\(s\)"),
])
def test_malformed_inline_ptx(kernel, match):
    _compile_error(kernel, match=match)


def test_inline_ptx_checked_by_ptxas(ptxas):
    _compile_error(_ptx_typo, match="ptxas rejects this inline PTX: Unknown modifier '.s33'")
    err = _compile_error(_ptx_multiline_typo, match=r"line 4 of the template",
                         marker="nonsense")
    assert err.loc.col == 8  # the template line's first character


@cuda.jit
def _ptx_on_cpu(c, a, b):
    c[0, 0] = cuda.inline_ptx("mov.u32 %0, %%laneid;", "=r")  # <-


def test_inline_ptx_on_the_cpu_target():
    import gpunb

    gpunb.set_target("cpu")
    try:
        a = np.zeros((16, 16), np.float16)
        with pytest.raises(CompileError, match="inline PTX runs only on the CUDA target") as info:
            _ptx_on_cpu[1, 1](np.zeros((1, 1), np.float32), a, a)
        assert info.value.loc.line == _marked_line(_ptx_on_cpu)
    finally:
        gpunb.set_target(None)
