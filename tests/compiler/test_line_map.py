"""Source line -> PTX line map: inlined device functions count for their call line (DWARF
inlinedAt), helpers from another cell never collide with the kernel's own line numbers, and no
line 0 entry (code that belongs to no line) appears."""

import linecache
import re
import uuid

import numpy as np

from gpunb import cuda
from gpunb.backends.cuda.linemap import inlined_call_lines, ptx_line_map


def _cell(text: str, ns: dict) -> str:
    """Run `text` as a notebook cell does: its own file name, its lines in linecache."""
    filename = f"/tmp/ipykernel_test/{uuid.uuid4().hex[:12]}.py"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - what IPython does with a cell
    return filename


def _line(source: str, needle: str, first: int = 1) -> int:
    for number, text in enumerate(source.splitlines(), start=first):
        if needle in text:
            return number
    raise AssertionError(needle)


def _ptx_lines(kernel, arch="sm_90"):
    report = kernel.inspect("void(float32[::1], float32[::1], float32)", arch=arch)
    return report, report.ptx.splitlines()


HELPER_CELL = """\
from gpunb import cuda

@cuda.jit(device=True)
def twice_plus_one(v):
    w = v / 3.0  # a division: an a * b + c here would contract into one fma on one line
    return w + 1.0
"""

KERNEL_CELL = """\
@cuda.jit
def apply(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = twice_plus_one(x[i]) * a
"""


def test_call_line_includes_instructions_of_a_helper_from_another_cell():
    ns: dict = {"__name__": "__main__"}
    _cell(HELPER_CELL, ns)
    _cell(KERNEL_CELL, ns)
    apply = ns["apply"]
    report, ptx = _ptx_lines(apply)
    call = _line(KERNEL_CELL, "twice_plus_one(x[i])")
    assert 0 not in report.line_map
    # only the kernel cell's lines: the helper's lines 5 and 6 are another file's
    assert set(report.line_map) <= set(range(1, len(KERNEL_CELL.splitlines()) + 1))
    call_ptx = "\n".join(ptx[n - 1] for n in report.line_map[call])
    assert "0f3F800000" in call_ptx, call_ptx  # the helper's `+ 1.0`
    assert "ld.global" in call_ptx  # x[i] itself


def test_call_line_includes_inlined_callee_of_the_same_cell_and_callee_keeps_its_own():
    ns: dict = {"__name__": "__main__"}
    text = HELPER_CELL + "\n" + KERNEL_CELL
    _cell(text, ns)
    report, ptx = _ptx_lines(ns["apply"])
    call = _line(text, "twice_plus_one(x[i])")
    body = _line(text, "w = v / 3.0")
    assert body in report.line_map, report.line_map
    # every instruction of the callee's line is also the call line's
    assert set(report.line_map[body]) <= set(report.line_map[call])
    # the reverse link goes to the most specific line (the callee's own)
    assert report.ptx_to_source()[report.line_map[body][0]] == body
    assert 0 not in report.line_map


def test_ptx_line_map_reads_inlined_at_chains_from_ir():
    ir = "\n".join([
        '!3 = !DIFile(filename: "k.py", directory: "/cells")',
        '!4 = distinct !DISubprogram(name: "k", scope: !3, file: !3, line: 1, unit: !2)',
        '!5 = !DIFile(filename: "h.py", directory: "/cells")',
        '!6 = distinct !DISubprogram(name: "h", scope: !5, file: !5, line: 1, unit: !2)',
        '!7 = distinct !DISubprogram(name: "g", scope: !5, file: !5, line: 8, unit: !2)',
        "!8 = distinct !DILocation(line: 4, column: 9, scope: !4)",
        "!9 = distinct !DILocation(line: 3, column: 5, scope: !6, inlinedAt: !8)",
        "!10 = !DILocation(line: 9, column: 5, scope: !7, inlinedAt: !9)",
    ])
    assert inlined_call_lines(ir, "/cells/k.py") == {("/cells/h.py", 3): {4},
                                                     ("/cells/h.py", 9): {4}}
    ptx = "\n".join([
        ".visible .entry k(", ")", "{",
        "\t.loc\t1 2 0", "\tld.global.f32 \t%f1, [%rd1];",
        "\t.loc\t2 9 5", "\tmul.f32 \t%f2, %f1, %f1;",
        "\t.loc\t1 0 5", "\tmov.u32 \t%r1, 0;",
        "\t.loc\t1 4 9", "\tst.global.f32 \t[%rd2], %f2;",
        "\tret;", "}",
        '\t.file\t1 "/cells/k.py"', '\t.file\t2 "/cells/h.py"'])
    mapping = dict(ptx_line_map(ptx, "/cells/k.py", ir))
    assert mapping == {2: (5,), 4: (7, 11, 12)}  # no line 0, h.py's 9 only through line 4


def test_kernel_line_map_has_no_line_zero():
    @cuda.jit
    def clamp(out, x, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = min(max(x[i], 0.0), a)

    out = np.zeros(8, np.float32)
    clamp[1, 8](out, np.arange(8, dtype=np.float32), np.float32(3.0))
    mapping = clamp.line_map()
    assert mapping and 0 not in mapping and min(mapping) > 0
    assert all(re.search(r"\S", "x") for _ in mapping)


def test_ptx_of_a_cell_names_a_file_holding_the_cells_text(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(tmp_path))
    ns: dict = {"__name__": "__main__"}
    text = HELPER_CELL + "\n" + KERNEL_CELL + "\n# written for ncu and nvdisasm\n"
    _cell(text, ns)
    report, _ptx = _ptx_lines(ns["apply"])
    files = re.findall(r'^\s*\.file\s+\d+\s+"([^"]+)"', report.ptx, re.M)
    assert files, report.ptx[-400:]
    path = files[0]
    assert path.startswith(str(tmp_path / "sources")) and path.endswith(".py")
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == text  # the cell's text, so line L of the PTX is line L here
    assert report.line_map  # the line map still matches the kernel's own (renamed) file
