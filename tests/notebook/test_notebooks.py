"""Real notebooks on a real ipykernel (nbclient), CPU target: magics, errors, cache, widgets."""

from __future__ import annotations

import re

import pytest
from nbhelpers import REPO, html_text, outputs_text, widget_states

pytestmark = pytest.mark.slow
WIDGET = "application/vnd.jupyter.widget-view+json"

SAXPY = """%%gpukernel --show ptx
def scale(x, a):
    return x * a

def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = scale(x[i], a) + y[i]

n = 1000
x = np.arange(n, dtype=np.float32)
y = np.ones(n, dtype=np.float32)
out = np.zeros_like(x)
saxpy[(n + 255) // 256, 256](out, x, y, 2.0)
print("saxpy:", out[:3].tolist())
"""

REDEFINE = """%%gpukernel
def scale(x, a):
    return x * a * 2.0

saxpy[(n + 255) // 256, 256](out, x, y, 2.0)
print("redefined:", out[:3].tolist())
"""

BAD = """%%gpukernel
def bad(out):
    out[0] = undefined_name + 1

bad[1, 1](out)
"""


def _models(nb, model_name: str) -> list[dict]:
    return [s for s in widget_states(nb).values() if s.get("_model_name") == model_name]


@pytest.fixture(scope="module")
def saxpy_notebook(tmp_path_factory):
    """One executed notebook shared by the assertions below (kernels start slowly)."""
    import os

    import nbformat
    from nbclient import NotebookClient

    tmp = tmp_path_factory.mktemp("nb")
    env = {"GPUNB_TARGET": "cpu", "GPUNB_CACHE_DIR": str(tmp / "cache"), "GPUNB_NOTICES": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                         if p)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    cells = [
        "%load_ext gpunb\nimport numpy as np",
        SAXPY,
        "%gpucache status",
        REDEFINE,
        "%gpucache status",
        BAD,
        "from gpunb.notebook import inspector_for\n"
        "insp = inspector_for(saxpy)\ninsp.widget().link.value = 8\ninsp",
        "from gpunb.notebook import launch_explorer\n"
        "explorer = launch_explorer(saxpy, 1_000_000)\nexplorer",
        "explorer.widget().block.value = 1024\nexplorer.apply()\nprint(saxpy.launch_config)\n"
        "a, b = np.zeros_like(out), np.zeros_like(out)\n"
        "saxpy[saxpy.launch_config](a, x, y, 1.0)\nsaxpy[4, 256](b, x, y, 1.0)\n"
        "print('applied:', a[:2].tolist(), np.array_equal(a, b))",
        "%gpuinfo",
        "%%gpuprofile\nfor _ in range(3):\n    saxpy[4, 256](out, x, y, 2.0)",
        "%gpucache status --live",
        "%%gpukernel\ndef twice(v):\n    i = cuda.grid(1)\n    if i < v.size:\n"
        "        v[i] *= 2\n\nv = np.ones(64, np.float32)\ntwice[1, 64](v)\nprint(v.sum())",
        "from gpunb.notebook import hooks_for\nfrom gpunb.notebook.progress import CompileWatcher\n"
        "hooks_for(get_ipython()).progress = CompileWatcher(threshold_s=0.01, interval_s=0.005)",
        "%%gpukernel\ndef thrice(v):\n    i = cuda.grid(1)\n    if i < v.size:\n"
        "        v[i] *= 3\n\nthrice[1, 64](v)\nprint(v.sum())",
        "saxpy.inspect()",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                       store_widget_state=True,
                       resources={"metadata": {"path": str(tmp)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def _no_errors(nb, *indices):
    for i in indices:
        errors = [o for o in nb.cells[i].outputs if o["output_type"] == "error"]
        assert not errors, f"cell {i} failed:\n" + "\n".join(errors[0]["traceback"])


def test_gpukernel_defines_and_launches(saxpy_notebook):
    _no_errors(saxpy_notebook, 0, 1)
    assert "saxpy: [1.0, 3.0, 5.0]" in outputs_text(saxpy_notebook.cells[1])


def test_show_ptx_displays_the_inspector_after_the_first_compile(saxpy_notebook):
    text = outputs_text(saxpy_notebook.cells[1])
    assert ".visible .entry saxpy" in text  # the static HTML carries the PTX
    views = [o for o in saxpy_notebook.cells[1].outputs
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, "the inspector widget was not displayed"


def test_gpucache_status_lists_kernels_with_their_cell(saxpy_notebook):
    _no_errors(saxpy_notebook, 2, 4)
    first = outputs_text(saxpy_notebook.cells[2])
    assert "saxpy" in first and "float32" in first and "Cell In[2], line 5" in first
    second = outputs_text(saxpy_notebook.cells[4])
    assert "scale" in second and "Cell In[4], line 2" in second  # the redefinition's cell


def test_redefinition_in_a_later_cell_recompiles_the_caller(saxpy_notebook):
    _no_errors(saxpy_notebook, 3)
    assert "redefined: [1.0, 5.0, 9.0]" in outputs_text(saxpy_notebook.cells[3])


def test_errors_point_at_the_cell_without_compiler_frames(saxpy_notebook):
    errors = [o for o in saxpy_notebook.cells[5].outputs if o["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CompileError"
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0]["traceback"]))
    assert "Cell In[6], line 3" in text
    assert "undefined_name" in text and "^" in text
    assert "Traceback" not in text and "gpunb/compiler" not in text and "File " not in text


def test_inspector_widget_state_has_ptx_and_line_map(saxpy_notebook):
    _no_errors(saxpy_notebook, 6)
    html = [s["value"] for s in _models(saxpy_notebook, "HTMLModel")]
    assert any(".visible .entry saxpy" in html_text(v) for v in html)
    maps = [s["value"] for s in _models(saxpy_notebook, "TextareaModel")
            if s.get("description") == "line map"]
    assert maps and all(maps), "line map missing or empty"
    assert re.search(r"^8: \d+", maps[-1], re.M)  # source line 8 produced PTX
    # the pinned source line highlighted its PTX lines in the rendered split view
    assert any('class="gl mapped t sel" data-l="8"' in v for v in html)


def test_launch_explorer_state_has_occupancy(saxpy_notebook):
    _no_errors(saxpy_notebook, 7, 8)
    bars = [s for s in _models(saxpy_notebook, "FloatProgressModel")
            if s.get("description") == "occupancy"]
    assert bars and 0 < bars[-1]["value"] <= 100
    sliders = [s for s in _models(saxpy_notebook, "IntSliderModel")
               if s.get("description") == "block size"]
    assert sliders and sliders[-1]["value"] == 1024
    text = outputs_text(saxpy_notebook.cells[8])
    assert "LaunchChoice(grid=977, block=1024, stream=0, shared=0)" in text
    assert "applied: [" in text and "True" in text


def test_gpuinfo_and_gpuprofile(saxpy_notebook):
    _no_errors(saxpy_notebook, 9, 10)
    assert "target in use: cpu" in outputs_text(saxpy_notebook.cells[9])
    profile = outputs_text(saxpy_notebook.cells[10])
    assert "saxpy" in profile and re.search(r"saxpy\s+3\s+0", profile)


def _static_and_widget(cell) -> tuple[dict, dict]:
    """A live view's two outputs: its static copy (HTML and text) and the widget's view."""
    static, widget = cell.outputs[-2], cell.outputs[-1]
    assert static["output_type"] == widget["output_type"] == "display_data"
    assert set(static["data"]) == {"text/plain", "text/html"}
    assert WIDGET in widget["data"] and "text/html" not in widget["data"]
    return static["data"], widget["data"][WIDGET]


def test_live_cache_panel_updates_after_later_cells(saxpy_notebook):
    _no_errors(saxpy_notebook, 11, 12)
    assert "128.0" in outputs_text(saxpy_notebook.cells[12])
    static, live = _static_and_widget(saxpy_notebook.cells[11])
    state = widget_states(saxpy_notebook)[live["model_id"]]
    assert "twice" in html_text(state["value"])  # defined and launched after the panel was shown
    # the static copy (what nbconvert shows) followed the refresh too
    assert "twice" in html_text(static["text/html"]) and "twice" in static["text/plain"]


def test_inspect_as_the_last_line_shows_the_inspector_widget(saxpy_notebook):
    _no_errors(saxpy_notebook, 15)
    static, live = _static_and_widget(saxpy_notebook.cells[15])
    assert live["model_id"] in widget_states(saxpy_notebook)
    assert ".visible .entry saxpy" in html_text(static["text/html"])
    assert static["text/plain"].startswith("saxpy ")


def test_static_copies_follow_later_changes(saxpy_notebook):
    """The explorer was changed (block 1024, Apply) in the cell after the one showing it: its
    static copy shows that state, not the one at display time; the widget hides the copy."""
    static, live = _static_and_widget(saxpy_notebook.cells[7])
    page = static["text/html"]
    assert "applied: <code>LaunchChoice(grid=977, block=1024" in page
    assert '<tr class="best"><td>▶ 1024</td>' in page
    key = re.search(r'<div class="(gpunb-static-[0-9a-f]+)">', page).group(1)
    table = [s["value"] for s in _models(saxpy_notebook, "HTMLModel") if key in s["value"]]
    assert table and f".{key}," in table[0] and "{display:none}" in table[0]
    # the inspector shown with line 8 pinned: its static copy has that selection
    inspector_static, _ = _static_and_widget(saxpy_notebook.cells[6])
    assert 'class="gl mapped t sel" data-l="8"' in inspector_static["text/html"]


def test_compile_progress_is_shown_for_slow_compiles(saxpy_notebook):
    _no_errors(saxpy_notebook, 13, 14)
    # the threshold was lowered to 10 ms, so compiling `thrice` counts as slow
    views = [o for o in saxpy_notebook.cells[14].outputs
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, "no progress view in the compiling cell"
    state = widget_states(saxpy_notebook)[
        views[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]]
    assert "gpunb: compiled thrice in" in html_text(state["value"])


@pytest.mark.slow
def test_the_cpu_fallback_notice_is_plain_output_not_an_error_box(execute_notebook,
                                                                   monkeypatch):
    """In a Jupyter kernel without a usable GPU, `--target auto` says once that kernels run on
    the CPU target - on stdout (a plain output line), not stderr (JupyterLab's red box)."""
    from gpunb.runtime.target import NOTICE

    monkeypatch.setenv("GPUNB_TARGET", "auto")
    monkeypatch.setenv("GPUNB_NOTICES", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU, also on a GPU machine
    nb = execute_notebook(["%load_ext gpunb",
                           "%%gpukernel\ndef one(v):\n    v[0] = 1.0\n\nimport numpy as np\n"
                           "v = np.zeros(1, np.float32)\none[1, 1](v)\nprint(v[0])"])
    streams = [o for o in nb.cells[1].outputs if o["output_type"] == "stream"]
    assert any(NOTICE in o["text"] and o["name"] == "stdout" for o in streams), streams
    assert not any(o["name"] == "stderr" for o in streams), streams
    assert "1.0" in outputs_text(nb.cells[1])
