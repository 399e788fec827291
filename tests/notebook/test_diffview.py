"""The diff view: a kernel's PTX/SASS against the version shown before a redefinition of a device
function it calls, and against another arch (CPU target; PTX through the CUDA backend)."""

from __future__ import annotations

import gc
import linecache
import re
import weakref

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.cache import fingerprint
from gpunb.foundation.errors import CompileError
from gpunb.foundation.sources import register_cell
from gpunb.jit import versions
from gpunb.notebook import diffview
from gpunb.notebook.diffview import DiffView, comparable, diff_view
from gpunb.notebook.inspector import inspector_for

SIG = "void(float32[::1], float32[::1], float32[::1], float32)"


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    diffview._history.clear()
    versions.forget()
    yield
    gpunb.set_target(None)
    diffview._history.clear()
    versions.forget()


def _saxpy():
    """A kernel reading the module global `scale` (redefined by the tests)."""
    @cuda.jit
    def saxpy(out, x, y, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = scale(x[i], a) + y[i]

    return saxpy


@cuda.jit(device=True)
def scale(x, a):
    return x * a


@pytest.mark.slow
def test_diff_against_the_version_shown_before_a_redefinition(cpu):
    global scale
    kernel = _saxpy()
    before = inspector_for(kernel, SIG).report  # shown: remembered as the earlier version
    with pytest.raises(CompileError, match="no earlier version of saxpy's PTX"):
        diff_view(kernel, signature=SIG)  # nothing changed since it was shown

    original = scale

    @cuda.jit(device=True)
    def scale(x, a):  # noqa: F811 - the redefinition under test
        return x * a * 2.0 + 1.0

    try:
        view = diff_view(kernel, signature=SIG)
    finally:
        scale = original
    assert view.before is before and view.after.ptx != before.ptx
    added = [r for r in view.rows() if r[0] in ("insert", "replace") and r[3]]
    removed = [r for r in view.rows() if r[0] in ("delete", "replace") and r[1]]
    assert view.added == len(added) > 0 and view.removed == len(removed) > 0
    # the new helper's multiply-add shows as added; the old fused fma as removed
    assert any("0f40000000" in r[4] for r in added)  # the literal 2.0
    assert any("fma.rn.f32" in r[2] for r in removed)
    # numbers are the PTX tab's own (debug lines left out of the comparison, not renumbered)
    for kind, ln, left, rn, right in view.rows():
        if kind != "fold" and ln:
            assert before.ptx.splitlines()[ln - 1].rstrip() == left
        if kind != "fold" and rn:
            assert view.after.ptx.splitlines()[rn - 1].rstrip() == right
    assert not any(".loc" in r[2] or ".loc" in r[4] for r in view.rows())
    text = view.text()
    assert text.startswith(f"PTX of saxpy {before.signature}, shown before → now: "
                           f"+{view.added} −{view.removed} line(s)")
    assert "\n--- shown before\n+++ now\n@@ " in text
    html = view._repr_html_()
    assert html.count('<td class="add">') == view.added
    assert html.count('<td class="del">') == view.removed
    assert re.search(r'<tr class="fold"><td></td><td colspan="3">… \d+ unchanged', html)


@pytest.mark.slow
def test_diff_against_another_arch_compares_sass_without_addresses(cpu):
    from gpunb.backends.cuda.toolchain import find_tool

    if find_tool("nvdisasm") is None or find_tool("ptxas") is None:
        pytest.skip("needs ptxas and nvdisasm")
    kernel = _saxpy()
    view = diff_view(kernel, "sm_75", signature=SIG, arch="sm_90", tab="sass")
    assert (view.before.arch, view.after.arch) == ("sm_75", "sm_90")
    assert view.names == ("sm_75", "sm_90") and view.added + view.removed > 0
    assert not any(re.search(r"/\*[0-9a-f]{4}\*/|//##", r[2] + r[4]) for r in view.rows())
    same = diff_view(kernel, "sm_90", signature=SIG, arch="sm_90", tab="sass")
    assert same.added == same.removed == 0 and "no difference" in same.summary()


def test_comparable_lines_and_bad_tab(cpu):
    ptx = "\t.loc\t1 5 3\n\tadd.s32 %r1, %r2, 1;\n\n\t.file\t1 \"x.py\"\n"
    assert comparable(ptx, "ptx") == [(2, "\tadd.s32 %r1, %r2, 1;")]
    sass = '\t//## File "x", line 5\n        /*0010*/   S2R R0, SR_TID.X ;  /* 0x000000 */\n'
    assert comparable(sass, "sass") == [(2, "        S2R R0, SR_TID.X ;")]
    with pytest.raises(CompileError, match="compares one of ptx, sass, llvm"):
        diff_view(_saxpy(), tab="types")
    report = inspector_for(_saxpy(), SIG).report
    assert DiffView(report, report).added == 0


CELL = """\
@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = {body}
"""


def _run_cell(ns: dict, number: int, body: str):
    """Run a kernel cell as a notebook does: its text in linecache under a cell's file name."""
    text = CELL.format(body=body)
    filename = f"/tmp/ipykernel_diffview/cell{number}_{abs(hash(text))}.py"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    register_cell(filename, number)
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - a notebook cell, as IPython runs it
    return ns["saxpy"]


@pytest.mark.slow
def test_diff_against_the_previous_definition_without_inspecting_it(cpu):
    """A kernel cell edited and run again: diff_view compares with the definition it replaced,
    which nobody inspected and which no longer exists (compiled again from its cell)."""
    ns = {"cuda": cuda, "__name__": "__main__"}
    first = _run_cell(ns, 3, "x[i] * a + y[i]")
    x = np.arange(8, dtype=np.float32)
    first[1, 8](np.zeros_like(x), x, x, np.float32(2.0))  # launched, never inspected
    ref = weakref.ref(first)
    _run_cell(ns, 4, "x[i] * a + y[i]")  # the cell run again unchanged: not a version
    second = _run_cell(ns, 5, "x[i] * x[i] * a - y[i]")
    del first
    for memo in fingerprint._fp_memo:  # (bounded memos of recent fingerprints hold the function)
        memo.clear()
    fingerprint._plain_fp_memo.clear()
    gc.collect()
    assert ref() is None  # the earlier definitions' dispatchers (and their code) are gone
    assert [d.where for d in versions.earlier_definitions(second)] == ["Cell In[4], line 1"]
    view = diff_view(second, signature=SIG)
    assert view.names == ("previous definition (Cell In[4], line 1)", "now")
    assert view.before.source != view.after.source
    assert "x[i] * a + y[i]" in view.before.source
    assert "x[i] * x[i] * a - y[i]" in view.after.source
    added = [r[4] for r in view.rows() if r[0] in ("insert", "replace") and r[3]]
    removed = [r[2] for r in view.rows() if r[0] in ("delete", "replace") and r[1]]
    assert any("sub.f32" in line or "neg.f32" in line for line in added), added
    assert any("fma.rn.f32" in line for line in removed), removed
    assert view.summary().startswith("PTX of saxpy void(float32[::1], float32[::1], "
                                     "float32[::1], float32), previous definition (Cell In[4], "
                                     "line 1) → now: +")
    # an arch's SASS too, and the LLVM tab; a third definition compares with the second
    third = _run_cell(ns, 6, "x[i] + y[i]")
    assert diff_view(third, signature=SIG).names[0] == "previous definition (Cell In[5], line 1)"
    assert diff_view(third, signature=SIG, tab="llvm").removed > 0


def test_earlier_definitions_are_bounded_and_skip_unchanged_reruns(cpu):
    ns = {"cuda": cuda, "__name__": "__main__"}
    kernels = [_run_cell(ns, 10 + k, f"x[i] * a + {k}.0") for k in range(versions.KEEP + 3)]
    earlier = versions.earlier_definitions(kernels[-1])
    assert len(earlier) == versions.KEEP
    assert [d.where for d in earlier] == [f"Cell In[{10 + k}], line 1" for k in
                                          range(len(kernels) - 2, len(kernels) - 2 - versions.KEEP,
                                                -1)]
    # an older definition still held by the user compares with the ones before it
    assert versions.earlier_definitions(kernels[-2])[0].where == \
        f"Cell In[{10 + len(kernels) - 3}], line 1"
    rerun = _run_cell(ns, 40, f"x[i] * a + {len(kernels) - 1}.0")  # same code as the last
    assert versions.earlier_definitions(rerun)[0].where == earlier[0].where
    for k in range(versions.NAMES + 1):  # names beyond NAMES: the oldest are forgotten
        exec(f"@cuda.jit\ndef k{k}(v):\n    v[0] = {k}\n", ns)  # noqa: S102
    assert versions.earlier_definitions(rerun) == []


def test_a_kernel_never_redefined_has_no_previous_definition(cpu):
    ns = {"cuda": cuda, "__name__": "__main__"}
    kernel = _run_cell(ns, 50, "x[i] * a + y[i]")
    with pytest.raises(CompileError, match="was not redefined, and no other version was shown"):
        diff_view(kernel, signature=SIG)


def _run_text(ns: dict, number: int, text: str) -> None:
    filename = f"/tmp/ipykernel_diffview/cell{number}_{abs(hash(text))}.py"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    register_cell(filename, number)
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - a notebook cell, as IPython runs it


HELPER = "@cuda.jit(device=True)\ndef scale(x, a):\n    return {body}\n"
CALLER = """\
@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = scale(x[i], a) + y[i]
"""


@pytest.mark.slow
def test_diff_after_a_device_function_it_calls_is_redefined(cpu):
    """The kernel's cell unchanged, a device function it calls redefined in a later cell, never
    inspected: the kernel compiled against the helper's previous definition is the 'before'."""
    ns = {"cuda": cuda, "__name__": "__main__"}
    _run_text(ns, 20, HELPER.format(body="x * a"))
    _run_text(ns, 21, CALLER)
    kernel = ns["saxpy"]
    x = np.arange(8, dtype=np.float32)
    kernel[1, 8](np.zeros_like(x), x, x, np.float32(2.0))
    with pytest.raises(CompileError, match="was not redefined"):
        diff_view(kernel, signature=SIG)  # nothing redefined yet
    _run_text(ns, 22, HELPER.format(body="x * a * 2.0 + 1.0"))
    new_scale = ns["scale"]
    out = np.zeros_like(x)
    kernel[1, 8](out, x, x, np.float32(2.0))
    assert out[1] == 1 * 2 * 2 + 1 + 1  # the new helper runs
    view = diff_view(kernel, signature=SIG)
    assert view.names == ("before scale was redefined (Cell In[20], line 1)", "now")
    assert view.before.source == view.after.source  # the kernel's own code did not change
    added = [r[4] for r in view.rows() if r[0] in ("insert", "replace") and r[3]]
    assert any("0f40000000" in line for line in added)  # the new helper's literal 2.0
    assert ns["scale"] is new_scale and ns["saxpy"] is kernel  # the user's names untouched
    kernel[1, 8](out, x, x, np.float32(2.0))
    assert out[1] == 6  # and the kernel still runs the new helper


def test_a_helper_redefined_before_the_kernel_existed_is_not_its_earlier_version(cpu):
    ns = {"cuda": cuda, "__name__": "__main__"}
    _run_text(ns, 30, HELPER.format(body="x * a"))
    _run_text(ns, 31, HELPER.format(body="x * a + 1.0"))
    _run_text(ns, 32, CALLER)
    with pytest.raises(CompileError, match="was not redefined"):
        diff_view(ns["saxpy"], signature=SIG)


def test_an_arch_typo_is_an_error_not_an_empty_side(cpu):
    """diff_view(k, 'sm_999') compared an empty PTX (LLVM warned on stderr) with the real one."""
    from gpunb.foundation.errors import JitOptionError

    k = _saxpy()
    k.compile(SIG)
    with pytest.raises(JitOptionError, match="sm_999 is not an architecture gpunb writes PTX"):
        diff_view(k, "sm_999")


@pytest.mark.parametrize("args", [(42,), ("saxpy",), ("K", 3.5)])
def test_what_is_not_a_kernel_is_refused(cpu, args):
    """diff_view(42) / diff_view(k, 3.5) were AttributeErrors from inside diff_view."""
    from gpunb.foundation.errors import JitOptionError

    k = _saxpy()
    k.compile(SIG)
    args = tuple(k if a == "K" else a for a in args)
    with pytest.raises(JitOptionError, match="diff_view needs a GPU function"):
        diff_view(*args)
