"""gpunb.notebook.tensorcore_layout: the lane layout views (HTML, text, widget) of mma.sync,
WMMA and ldmatrix, and the README's Tensor cores snippet run as written (CPU target)."""

from __future__ import annotations

import re

import pytest
from nbhelpers import REPO

from gpunb.notebook import tensorcore_layout


def test_mma_layout_text_and_html():
    view = tensorcore_layout("m16n8k16", "float16")
    text = view.text().splitlines()
    assert text[0] == "A (16 x 16)"
    assert text[1].split()[:4] == ["0", "0", "1", "1"]  # a0, a1 of lanes 0, 1: row 0
    html = view._repr_html_()
    assert html.count("<table") == 3 and "T31" in html and "a7" in html and "c3" in html


def test_wmma_and_ldmatrix_views():
    assert "wmma" in tensorcore_layout("m8n32k16", "bfloat16", api="wmma")._repr_html_()
    html = tensorcore_layout("ldmatrix", trans=True, num=2)._repr_html_()
    assert html.count("<table") == 2 and "v3" in html and ".trans" in html


def test_unsupported_combination_says_what_is_supported():
    with pytest.raises(ValueError, match="no m16n8k32 with float16; supported: m16n8k8"):
        tensorcore_layout("m16n8k32", "float16")


def test_widget_redraws():
    pytest.importorskip("ipywidgets")
    box = tensorcore_layout().widget()
    shape, dtype = box.children[0].children
    shape.value = "m16n8k32"
    dtype.value = "int8"
    assert "m16n8k32" in box.children[1].value
    dtype.value = "float16"
    assert "supported" in box.children[1].value


def test_readme_tensor_core_snippet_runs():
    import gpunb

    text = (REPO / "README.md").read_text()
    section = text.split("## Tensor cores\n", 1)[1].split("\n## ", 1)[0]
    snippet = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    gpunb.set_target("cpu")
    try:
        exec(compile(snippet, "<README Tensor cores>", "exec"), {})
    finally:
        gpunb.set_target(None)
