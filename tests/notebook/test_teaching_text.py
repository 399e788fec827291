"""What the teaching notebooks say, read from their sources (no kernel started): the corrections
a GPU-programming instructor asked for stay made, coalescing comes before tiling, every
notebook ends with graded exercises, every performance notebook shows the H100 table, and the
course page in the README lists every notebook in order."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbhelpers import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PERFORMANCE = ("06", "07", "08", "09", "12", "13", "14", "15", "16")


def _text(name: str, kind: str | None = None) -> str:
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    return "\n".join(c.source for c in nb.cells if kind is None or c.cell_type == kind)


def test_01_says_click_and_the_ptx_it_really_shows():
    text = _text("01_first_kernels", "markdown")
    assert "hover" not in text.lower() and "click a source line" in text
    assert "ld.global.f32" not in text and "`ld.global.b32`" in text
    assert "st.global.f32" not in text and "`st.global.b32`" in text


def test_02_teaches_coalescing_before_tiling_and_maps_x_to_the_column():
    text = _text("02_shared_memory_and_barriers")
    assert text.index("## 1. How a warp reads memory") < text.index("## 2. Tiled matrix")
    kernel = text[text.index("def matmul_tiled"):text.index("A = rng.random((70, 50)")]
    assert "col, row = cuda.grid(2)" in kernel
    assert "sA[ty, tx] = A[row, k + tx]" in kernel and "acc += sA[ty, j] * sB[j, tx]" in kernel
    assert "count as arrived, as on current GPUs" not in text
    assert "guard the **work**, not the barrier" in text
    rotate = text[text.index("def rotate_first_48"):]
    assert "return" not in rotate.split("out = np.zeros")[0]


def test_04_and_the_warp_mask_hints_do_not_advise_activemask():
    summary = _text("04_warps_and_cooperative_groups", "markdown").split("## Summary")[1]
    assert "(`cuda.activemask()`)" not in summary and "cuda.ballot_sync(FULL, i < n)" in summary
    source = (REPO / "gpunb" / "backends" / "cpu" / "executor.py").read_text()
    assert "mask = cuda.activemask()" not in source


def test_09_no_longer_claims_the_kernel_of_notebook_02():
    text = _text("09_tiled_matmul", "markdown")
    assert "the kernel of numba's documentation and of notebook 02" not in text
    assert "about 60 TFLOP/s" not in text and "fast_matmul" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_lesson_ends_with_its_exercises(path):
    nb = nbformat.read(path, as_version=4)
    headings = [c.source.splitlines()[0] for c in nb.cells
                if c.cell_type == "markdown" and c.source.startswith("## ")]
    assert headings[-1] == "## Exercises", headings
    checks = re.findall(r'puzzles\.check\("(\w+)"', _text(path.stem, "code"))
    assert 2 <= len(checks) <= 3, checks


@pytest.mark.parametrize("lesson", PERFORMANCE)
def test_every_performance_notebook_records_and_shows_its_gpu_figures(lesson):
    path = next(p for p in NOTEBOOKS if p.stem.startswith(lesson))
    code = _text(path.stem, "code")
    assert f'figures.table("{lesson}")' in code
    assert f'figures.record("{lesson}"' in code or 'figures.record("08"' in code
    assert "ON_GPU" in code


def test_the_readme_course_page_lists_every_notebook_in_order_with_its_puzzles():
    readme = (REPO / "README.md").read_text()
    page = readme[readme.index("## Course"):]
    page = page[:page.index("\n## ", 4)]
    rows = re.findall(r"^\| (\d+) \| `(\w+)`", page, re.M)
    assert [int(n) for n, _ in rows] == list(range(1, len(rows) + 1))
    assert {name for _, name in rows} >= {p.stem for p in NOTEBOOKS}
    from gpunb import puzzles

    for name in list(puzzles.list()) + list(puzzles.exercises()):
        assert f"`{name}`" in page, name
