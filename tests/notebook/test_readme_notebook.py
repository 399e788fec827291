"""README.md's "In a notebook" cells, pasted into a fresh notebook, run as written (CPU target);
nbconvert's HTML of the executed notebook shows every view with content, with and without the
saved widget state."""

from __future__ import annotations

import re

import pytest
from nbhelpers import REPO, html_text, outputs_text


def readme_notebook_cells() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## In a notebook\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip("\n") for block in re.findall(r"```python\n(.*?)```", section, re.S)]


@pytest.fixture(scope="module")
def readme_executed(tmp_path_factory):
    import os

    import nbformat
    from nbclient import NotebookClient

    tmp = tmp_path_factory.mktemp("readme")
    env = {"GPUNB_TARGET": "cpu", "GPUNB_CACHE_DIR": str(tmp / "cache"), "GPUNB_NOTICES": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", ""))
                                         if p)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in readme_notebook_cells()]
        NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                       resources={"metadata": {"path": str(tmp)}}).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


def test_readme_notebook_cells_run_as_written(readme_executed):
    cells = readme_executed.cells
    assert len(cells) == 5 and cells[0].source == "%load_ext gpunb"
    for cell in cells:
        assert not [o for o in cell.outputs if o["output_type"] == "error"], outputs_text(cell)
    assert ".visible .entry saxpy" in outputs_text(cells[1])  # --show ptx after the launch
    assert "saxpy" in outputs_text(cells[2]) and "PTX" in outputs_text(cells[2])
    assert "occupancy" in outputs_text(cells[3])
    assert "saxpy" in outputs_text(cells[4]) and "miss (new)" in outputs_text(cells[4])


def _html(nb, with_state: bool) -> str:
    import copy

    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    if not with_state:
        nb.metadata.pop("widgets", None)
    body, _ = HTMLExporter().from_notebook_node(nb)
    return body


def _visible_text(page: str) -> str:
    """What a browser without network shows: no <script> content (widget state, widget views)."""
    return html_text(re.sub(r"<script\b.*?</script>", "", page, flags=re.S))


@pytest.mark.parametrize("with_state", [pytest.param(False, id="no-widget-state"),
                                        pytest.param(True, id="widget-state")])
def test_nbconvert_html_shows_the_views(readme_executed, with_state):
    """Offline, a saved widget view renders as nothing (its loader comes from a CDN): each view's
    static copy, an output of its own, is what the page shows."""
    pytest.importorskip("nbconvert")
    page = _html(readme_executed, with_state)
    if with_state:  # the widget views are in the page too, for a browser that can load them
        assert page.count('type="application/vnd.jupyter.widget-view+json"') >= 3
    text = _visible_text(page)
    # the inspector's and the explorer's static HTML are in the page, with content
    assert ".visible .entry saxpy" in text
    assert "occupancy by block size" in text
    assert "miss (new)" in text
