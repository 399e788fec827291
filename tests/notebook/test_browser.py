"""JupyterLab in a real browser (opt-in: GPUNB_BROWSER_TESTS=1): inspector, explorer, side panel.

Starts JupyterLab on 127.0.0.1 with the built labextension on JUPYTER_PATH, drives Debian's
chromium through Playwright, and checks that the PTX tab shows PTX, that clicking a source line pins
it (its PTX highlighted and scrolled into view, the widget's picker following) and clicking a PTX
line selects its source line, that moving the block-size slider changes the occupancy shown, that
kernels and %%gpuprofile timings reach the gpunb side panel, that a page reload (here also switching
to the dark theme) reconnects the panel to the running kernel, which still receives new events,
that clicking a kernel in the panel jumps to its cell, and that a narrow window stacks the split
view; and that the debugger widget drives a stopped launch (test_debugger_widget_in_jupyterlab).
Screenshots go to test-artifacts/. Needs: pip install jupyterlab playwright (the `browser`
extra); apt-get install chromium; `npm ci && npm run build` in labextension/.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from browser_checks import assert_readable, readability
from nbhelpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("GPUNB_BROWSER_TESTS", "") != "1",
    reason="browser test is opt-in: GPUNB_BROWSER_TESTS=1 (needs jupyterlab, playwright, "
           "chromium and the built labextension)")]

ARTIFACTS = REPO / "test-artifacts"
TOKEN = "gpunb-browser-test"

CELLS = [
    "%load_ext gpunb\nimport numpy as np",
    "%%gpukernel\ndef scale(x, a):\n    return x * a\n\ndef saxpy(out, x, y, a):\n"
    "    i = cuda.grid(1)\n    if i < out.size:\n        out[i] = scale(x[i], a) + y[i]\n\n"
    "n = 4096\nx = np.ones(n, np.float32)\nout = np.zeros_like(x)\n"
    "saxpy[16, 256](out, x, x, 2.0)\nprint('ok', out[:2])",
    "saxpy.inspect()",
    "from gpunb.notebook import launch_explorer\nlaunch_explorer(saxpy, 1 << 20, block=256)",
    "%gpucache status",
    "%%gpuprofile\nfor _ in range(3):\n    saxpy[16, 256](out, x, x, 2.0)",
]
PROFILE_CELL, CACHE_CELL = 5, 4
# run only after the page reload: a new specialisation, so new kernel and cache-event messages
AFTER_RELOAD = "x64 = x.astype(np.float64)\nsaxpy[16, 256](x64.copy(), x64, x64, 2.0)"
# the debugger's notebook (debugger.ipynb, beside browser.ipynb): a --break cell, a look at the
# array after the launch, a --trace cell
DEBUG_CELLS = [
    "%load_ext gpunb\nimport numpy as np",
    "%%gpukernel --break 6 --thread 3\ndef shift(out, x):\n    tile = cuda.shared.array(32, "
    "np.float32)\n    i = cuda.threadIdx.x\n    tile[i] = x[i] * 2\n    j = (i + 1) % 32\n"
    "    out[i] = tile[i] + j\n\nx = np.arange(32, dtype=np.float32)\n"
    "out = np.zeros_like(x)\nshift[1, 32](out, x)",
    "print('out', out[:4].tolist())",
    "shift[1, 32](out, x)  # another debug launch: the open session ends",
    "%%gpukernel --trace --threads 0-1\ndef tr(a):\n    i = cuda.grid(1)\n    x = i * 3\n"
    "    a[i] = x\n\ntr[1, 4](np.zeros(4, np.int64))",
]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (apt-get install chromium)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {seconds} s")


@pytest.fixture
def lab(tmp_path, request):
    """A JupyterLab server on localhost with gpunb's labextension and a test notebook."""
    from gpunb.notebook import labext

    if not labext.is_built():
        pytest.skip("labextension not built: cd labextension && npm ci && npm run build")
    share = tmp_path / "share" / "jupyter"
    labext.install(prefix=str(tmp_path))  # -> tmp/share/jupyter/labextensions/gpunb-...
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                         for c in [*CELLS, AFTER_RELOAD]])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    work = tmp_path / "work"
    work.mkdir()
    nbformat.write(nb, work / "browser.ipynb")
    debug_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                               for c in DEBUG_CELLS])
    debug_nb.metadata["kernelspec"] = nb.metadata["kernelspec"]
    nbformat.write(debug_nb, work / "debugger.ipynb")
    port = _free_port()
    env = dict(os.environ, GPUNB_TARGET="cpu", GPUNB_NOTICES="0", JUPYTER_PATH=str(share),
               GPUNB_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", "--allow-root", f"--ServerApp.token={TOKEN}",
         f"--ServerApp.root_dir={work}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", 90)
        yield f"http://127.0.0.1:{port}", tmp_path
        # one log per test: CI runs them in two workers
        (ARTIFACTS / f"jupyterlab-{request.node.name}.log").write_text(
            (tmp_path / "lab.log").read_text(errors="replace")[-20000:])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _run_cell(page, index: int) -> None:
    """Select cell `index` by its prompt, run it, and wait until it has run ([N] in its prompt):
    a keypress sent before the kernel is ready or while an output takes focus is never lost."""
    prompt = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt")
    for _ in range(3):
        prompt.click()
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function(
                "(i) => { const p = document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
                ".querySelector('.jp-InputPrompt'); return /\\[\\d+\\]/.test(p.textContent); }",
                arg=index, timeout=120_000)
            return
        except Exception:  # noqa: BLE001 - the kernel was not ready: press again
            page.wait_for_timeout(2000)
    raise AssertionError(f"cell {index} did not run")


def _run_all_cells(page) -> None:
    """Run every cell but the last (kept for after the reload) from the Run menu, as a user
    does, and wait until each has run; cells the menu did not reach are run one by one."""
    page.wait_for_function("() => document.body.innerText.includes('Idle')", timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").nth(len(CELLS)).locator(".jp-InputPrompt").click()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Above Selected Cell").first.click()
    try:
        page.wait_for_function(
            "(n) => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].slice(0, n)"
            ".every(c => /\\[\\d+\\]/.test(c.querySelector('.jp-InputPrompt').textContent))",
            arg=len(CELLS), timeout=240_000)
    except Exception:  # noqa: BLE001 - the kernel was not ready for the menu: cell by cell
        for index in range(len(CELLS)):
            _run_cell(page, index)


def _percent(text: str) -> float:
    import re

    return float(re.search(r"occupancy ([0-9.]+)%", text).group(1))


def _occupancy_text(page) -> str:
    return page.locator(".gpunb-launch-explorer .widget-html-content").first.inner_text()


def _put_setting(base: str, plugin: str, values: dict) -> None:
    """Store a JupyterLab setting through its REST API (applies on the next page load)."""
    body = json.dumps({"raw": json.dumps(values)}).encode()
    request = urllib.request.Request(
        f"{base}/lab/api/settings/{plugin}", data=body,
        method="PUT", headers={"Authorization": f"token {TOKEN}",
                               "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30):
        pass


def _set_theme(base: str, theme: str) -> None:
    _put_setting(base, "@jupyterlab/apputils-extension:themes", {"theme": theme})


def _open_notebook(page, base: str, name: str = "browser.ipynb") -> None:
    page.goto(f"{base}/lab/tree/{name}?token={TOKEN}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
    page.wait_for_selector(".jp-KernelStatus, .jp-Notebook-ExecutionIndicator", timeout=60_000)


def _open_panel(page):
    tab = page.locator(".lm-TabBar-tab[title*='gpunb']").first
    if "lm-mod-current" not in (tab.get_attribute("class") or ""):
        tab.click()
    panel = page.locator("#gpunb-panel")
    panel.wait_for(timeout=30_000)
    return panel


def _wait_text(page, selector: str, needle: str, timeout: int = 60_000) -> None:
    page.wait_for_function(
        "([sel, needle]) => { const e = document.querySelector(sel);"
        " return e && e.innerText.includes(needle); }", arg=[selector, needle], timeout=timeout)


PINNED_VISIBLE = """(pane) => {
  const pre = pane.querySelector('pre');
  const first = pre.querySelector('.gl.pin, .gl.sel');
  if (!first) return null;
  const a = pre.getBoundingClientRect(), b = first.getBoundingClientRect();
  return {top: b.top - a.top, height: a.height, scrolled: pre.scrollTop,
          pinned: pre.querySelectorAll('.gl.pin, .gl.sel').length};
}"""


def _check_click_to_pin(page, inspector) -> dict:
    """Click the last source line of the PTX split view: its PTX lines are pinned and the first
    is scrolled into the PTX pane; the widget picker shows the line; a PTX click goes back."""
    split = inspector.locator(".gpunb-split").first
    source_lines = split.locator("[data-side=s] .gl.s[data-l]")
    last = source_lines.last
    line = last.get_attribute("data-l")
    last.click()
    page.wait_for_function(
        "(l) => { const s = document.querySelector('.gpunb-inspector select');"
        " return s && s.options[s.selectedIndex].textContent.startsWith(l + ':'); }",
        arg=line, timeout=30_000)
    page.wait_for_timeout(800)  # the Python side re-renders the tabs with the selection
    split = inspector.locator(".gpunb-split").first
    ptx_pane = split.locator("[data-side=t]")
    seen = ptx_pane.evaluate(PINNED_VISIBLE)
    assert seen is not None and seen["pinned"] > 0, seen
    assert 0 <= seen["top"] < seen["height"], seen  # the first pinned PTX line is in view
    assert seen["scrolled"] > 0, seen  # ... which needed scrolling (saxpy's last line is low)
    # the 'PTX line' box shows the first PTX line of the pinned source line
    first_ptx = split.locator("[data-side=t] .gl.t.sel .ln").first.inner_text()
    _wait_ptx_box(page, first_ptx)
    # reverse link: a PTX line of the first source line selects that source line, and the box
    # shows the PTX line clicked
    first_line = split.locator("[data-side=s] .gl.s[data-l]").first.get_attribute("data-l")
    clicked = split.locator(f"[data-side=t] .gl.t[data-l='{first_line}']").last
    clicked_ptx = clicked.locator(".ln").inner_text()
    clicked.click()
    page.wait_for_function(
        "(l) => { const s = document.querySelector('.gpunb-inspector select');"
        " return s && s.options[s.selectedIndex].textContent.startsWith(l + ':'); }",
        arg=first_line, timeout=30_000)
    _wait_ptx_box(page, clicked_ptx)
    return {"pinned_line": line, "ptx_pane": seen, "reverse_line": first_line,
            "ptx_box": [first_ptx, clicked_ptx]}


def _wait_ptx_box(page, value: str) -> None:
    page.wait_for_function(
        "(v) => { const i = document.querySelector('.gpunb-inspector .gpunb-ptx-line input');"
        " return i && i.value === v; }", arg=value, timeout=30_000)


STATIC_COPIES = """() => [...document.querySelectorAll('.jp-Cell')].map((cell, i) => {
  // a cell's view (the inspector's has code lines), not a slow compile's progress line
  const copies = [...cell.querySelectorAll('[class^="gpunb-static-"]')];
  const copy = copies.find(c => c.querySelector('.gl')) || copies[0];
  if (!copy) return null;
  const child = copy.closest('.jp-OutputArea-child');
  return {cell: i, display: getComputedStyle(child).display,
          pinned: [...copy.querySelectorAll('.gl.s.sel')].map(e => e.dataset.l)};
}).filter(x => x)"""


def _check_static_copy(page, line: str) -> list:
    """Each live view's static copy (what nbconvert shows) is hidden while its widget shows, and
    the inspector's copy follows the line pinned in the widget (re-sent from a comm callback)."""
    page.wait_for_function(
        "([js, l]) => eval(js)().some(c => c.cell === 2 && c.pinned.includes(l))",
        arg=[STATIC_COPIES, line], timeout=30_000)
    copies = page.evaluate(STATIC_COPIES)
    # inspect() and the explorer (and a slow compile's progress line, when there was one)
    assert {c["cell"] for c in copies} >= {2, 3}, copies
    assert all(c["display"] == "none" for c in copies), copies
    return copies


def test_a_newcomer_s_path_through_jupyterlab(lab):
    """Open a notebook, run all, open the panel, profile, inspect and click lines, save, reload
    in the dark theme: at each step the panel and the outputs are checked for clipped text and
    contrast (browser_checks.py), not only for presence. Screenshots: test-artifacts/."""
    from playwright.sync_api import sync_playwright

    base, tmp = lab
    ARTIFACTS.mkdir(exist_ok=True)
    summary: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(),
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        # no "get notified about Jupyter news?" toast over the panel in the screenshots
        _put_setting(base, "@jupyterlab/apputils-extension:notification",
                     {"fetchNews": "false"})
        try:
            _open_notebook(page, base)
            page.wait_for_timeout(3000)  # kernel start
            _run_all_cells(page)
            summary["inspector"] = _inspect_and_click(page)
            summary["explorer"] = _move_the_explorer_slider(page)
            summary["light"] = _check_panel_and_outputs(page, "light")
            summary["jump_to_profile"] = _jump_from_profile(page)
            page.keyboard.press("Control+s")  # outputs kept: a reload shows them again
            page.wait_for_timeout(1500)

            # reload the page, in the dark theme: the panel reconnects to the running kernel,
            # gets its snapshot, and still receives new events
            _set_theme(base, "JupyterLab Dark")
            page.reload()
            _open_notebook(page, base)
            page.wait_for_function(
                "() => document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
            summary["dark"] = _check_panel_and_outputs(page, "dark")
            summary["after_reload"] = _new_events_after_reload(page)
            summary["narrow"] = _inspect_in_a_narrow_window(page)
        finally:
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-gpunb-last.png"), full_page=True)
            browser.close()
            (ARTIFACTS / "jupyterlab-gpunb.json").write_text(json.dumps(summary, indent=2))


def _inspect_and_click(page) -> dict:
    inspector = page.locator(".gpunb-inspector").first
    inspector.wait_for(timeout=60_000)
    inspector.locator(".lm-TabBar-tab", has_text="PTX").click()
    page.wait_for_timeout(500)
    assert ".visible .entry saxpy" in inspector.locator(".widget-tab-contents").inner_text()
    found = _check_click_to_pin(page, inspector)
    found["static_copy"] = _check_static_copy(page, found["reverse_line"])
    inspector.locator(".lm-TabBar-tab", has_text="SASS").click()
    page.wait_for_timeout(500)
    sass = inspector.locator(".widget-tab-contents [data-side=t] pre").first
    # opcodes start near the pane's left edge (not pushed right by nvdisasm's indentation),
    # and no cache path shows
    found["sass"] = sass.evaluate("""(pre) => {
      const g = [...pre.querySelectorAll('.gl')].find(e => /\bSTG\b|\bEXIT\b/.test(
        e.textContent));
      return g ? {text: g.textContent, offset: g.textContent.search(/STG|EXIT/)} : null; }""")
    if found["sass"] is not None:  # nvdisasm present
        assert found["sass"]["offset"] < 20, found["sass"]
    assert "/sources/" not in inspector.inner_text()
    inspector.locator(".lm-TabBar-tab", has_text="PTX").click()
    page.wait_for_timeout(300)
    inspector.screenshot(path=str(ARTIFACTS / "inspector-pinned-light.png"))
    found["readable"] = readability(inspector)
    assert_readable(found["readable"], "inspector (light)")
    return found


def _move_the_explorer_slider(page) -> dict:
    explorer = page.locator(".gpunb-launch-explorer").first
    explorer.scroll_into_view_if_needed()
    before = _occupancy_text(page)
    explorer.locator(".widget-readout").first.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("768")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(old) => { const e = document.querySelector("
        "'.gpunb-launch-explorer .widget-html-content');"
        " return e && e.innerText !== old; }", arg=before, timeout=30_000)
    after = _occupancy_text(page)
    assert "block 768" in after
    # 256 threads: 8 blocks fill the SM; 768 threads: 2 blocks, 48 of 64 warps
    assert _percent(after) != _percent(before), (before, after)
    return {"before": before, "after": after}


def _cell_output(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def _check_panel_and_outputs(page, theme: str) -> dict:
    """The panel at its default width and the profile and %gpucache outputs: present, no text
    clipped, headers whole, contrast at least 4.5:1; screenshots of each."""
    panel = _open_panel(page)
    _wait_text(page, "#gpunb-panel .gpunb-kernels", "saxpy")
    _wait_text(page, "#gpunb-panel .gpunb-profiles", f"Cell In[{PROFILE_CELL + 1}]")
    _wait_text(page, "#gpunb-panel .gpunb-cache-events", "saxpy")
    panel_text = panel.inner_text()
    # the CPU target says why there are no registers; the profile says its launches
    assert "CPU target" in panel_text and "3 launches" in panel_text, panel_text
    assert "gpunb_fp32_peak" not in panel_text  # gpunb's own kernel is not the user's
    details = panel.locator(".gpunb-profile details").first
    if details.get_attribute("open") is None:  # the rest of the profile, expanded
        details.locator("summary").click()
    assert "n/a (CPU target)" in panel.locator(".gpunb-profile dl").first.inner_text()
    found = {"panel": readability(panel)}
    assert found["panel"]["width"] <= 320, found["panel"]  # the sidebar's default width
    panel.screenshot(path=str(ARTIFACTS / f"panel-{theme}.png"))
    assert_readable(found["panel"], f"side panel ({theme})")
    profile = _cell_output(page, PROFILE_CELL)
    profile.scroll_into_view_if_needed()
    roofline = profile.locator("svg.gpunb-roofline")
    roofline.wait_for(timeout=30_000)
    ticks = roofline.locator("text.gpunb-tick").count()
    assert ticks >= 6 and roofline.locator("text.gpunb-point-label").count() == 1, ticks
    assert "1 launches" not in profile.inner_text() and "n/a (CPU target)" in profile.inner_text()
    found["profile"] = readability(profile)
    profile.screenshot(path=str(ARTIFACTS / f"profile-{theme}.png"))
    assert_readable(found["profile"], f"%%gpuprofile output ({theme})")
    status = _cell_output(page, CACHE_CELL)
    found["gpucache"] = readability(status)
    assert "compiled into saxpy" in status.inner_text()
    assert_readable(found["gpucache"], f"%gpucache status ({theme})")
    page.screenshot(path=str(ARTIFACTS / f"jupyterlab-gpunb-{theme}.png"))
    return found


def _jump_from_profile(page) -> bool:
    """The profile's title in the panel jumps to the %%gpuprofile cell."""
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.locator("#gpunb-panel .gpunb-profile .gpunb-link").first.click()
    page.wait_for_function(
        "() => { const c = document.querySelector('.jp-Notebook .jp-Cell.jp-mod-active');"
        " return c && c.innerText.includes('%%gpuprofile'); }", timeout=30_000)
    return True


def _new_events_after_reload(page) -> dict:
    panel = _open_panel(page)
    events_before = panel.locator(".gpunb-cache-events .gpunb-card").count()
    _run_cell(page, len(CELLS))
    # (`a` is float64 in both: the new specialisation's arrays are float64[::1])
    _wait_text(page, "#gpunb-panel .gpunb-cache-events", "float64[::1]")
    _wait_text(page, "#gpunb-panel .gpunb-kernels", "float64[::1]")
    events_after = panel.locator(".gpunb-cache-events .gpunb-card").count()
    assert events_after > events_before, (events_before, events_after)
    # click the newest kernel in the panel: the notebook jumps to the cell that defined saxpy
    page.locator(".jp-Notebook .jp-Cell").first.click()
    panel.locator(".gpunb-kernel-row").first.click()
    page.wait_for_function(
        "() => { const c = document.querySelector('.jp-Notebook .jp-Cell.jp-mod-active');"
        " return c && c.innerText.includes('%%gpukernel'); }", timeout=30_000)
    found = readability(panel)
    assert_readable(found, "side panel after reload (dark)")
    return {"events": [events_before, events_after], "panel": found}


def _inspect_in_a_narrow_window(page) -> dict:
    """Inspect again in the dark theme, then a narrow window: the Source | PTX panes stack."""
    _run_cell(page, 2)
    inspector = page.locator(".gpunb-inspector").first
    inspector.wait_for(timeout=60_000)
    colours = page.evaluate("""() => {
      const cs = e => e && getComputedStyle(e);
      const p = cs(document.querySelector('#gpunb-panel'));
      const pill = cs(document.querySelector('.gpunb .pill'));
      return {panel: [p.color, p.backgroundColor],
              pill: pill ? [pill.color, pill.backgroundColor] : null};
    }""")
    assert colours["panel"][0] != colours["panel"][1], colours
    assert colours["pill"] and colours["pill"][0] != colours["pill"][1], colours
    inspector.screenshot(path=str(ARTIFACTS / "inspector-dark.png"))
    readable = readability(inspector)
    assert_readable(readable, "inspector (dark)")
    # both sidebars collapsed, as one does in a narrow window: the notebook gets it all
    page.locator(".lm-TabBar-tab[title*='gpunb']").first.click()
    left = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if left.count():
        left.first.click()
    page.set_viewport_size({"width": 640, "height": 1000})
    page.wait_for_timeout(1000)
    inspector.scroll_into_view_if_needed()
    inspector.locator(".lm-TabBar-tab", has_text="PTX").click()
    page.wait_for_timeout(500)
    boxes = inspector.locator(".gpunb-split").first.evaluate("""(v) => {
      const [s, t] = v.querySelectorAll('[data-side]');
      const a = s.getBoundingClientRect(), b = t.getBoundingClientRect();
      return {s: [a.left, a.top, a.right], t: [b.left, b.top, b.right],
              width: window.innerWidth};
    }""")
    assert boxes["t"][1] > boxes["s"][1], boxes  # PTX below the source
    assert boxes["t"][2] <= boxes["width"], boxes  # and not off-screen
    page.screenshot(path=str(ARTIFACTS / "jupyterlab-gpunb-narrow-dark.png"), full_page=True)
    return {"colours": colours, "boxes": boxes, "inspector": readable}


def _long_kernel():
    """A kernel whose source is taller than a listing (420 px), one PTX-producing line each."""
    from gpunb import cuda

    body = [f"        v = v * {1.0 + k / 64:.6f} + {k}.5" for k in range(40)]
    source = "\n".join(["def tall(out, x):", "    i = cuda.grid(1)", "    if i < out.size:",
                        "        v = x[i]", *body, "        out[i] = v", ""])
    path = ARTIFACTS / "tall_kernel.py"  # a file, so the inspector can read its source
    ARTIFACTS.mkdir(exist_ok=True)
    path.write_text(source)
    namespace = {"cuda": cuda}
    exec(compile(source, str(path), "exec"), namespace)
    return cuda.jit(namespace["tall"])


SYNC_STATE = """(v) => {
  const [s, t] = [...v.querySelectorAll('[data-side] pre')];
  const top = (pre) => {  // the first linked line at the pane's top, and its offset there
    const g = [...pre.querySelectorAll('.gl[data-l]')]
      .find(e => e.offsetTop + e.offsetHeight > pre.scrollTop);
    return g ? {l: g.dataset.l, at: g.offsetTop - pre.scrollTop} : null;
  };
  const partner = (pre, l) => {
    const g = pre.querySelector('.gl[data-l="' + l + '"]');
    return g ? g.offsetTop - pre.scrollTop : null;
  };
  const ts = top(t), ss = top(s);
  return {s: s.scrollTop, t: t.scrollTop, t_top: ts, s_top: ss,
          s_partner_of_t: ts && partner(s, ts.l), t_partner_of_s: ss && partner(t, ss.l)};
}"""


def test_static_split_view_scrolls_both_panes_together():
    """The inspector's static HTML (what nbconvert shows) in chromium: scrolling the PTX pane
    brings the source line of its first linked instruction level with it, scrolling the source
    pane does the reverse, and the 'sync scroll' box turns it off."""
    from playwright.sync_api import sync_playwright

    import gpunb
    from gpunb.notebook.inspector import inspector_for

    gpunb.set_target("cpu")
    try:
        kernel = _long_kernel()
        insp = inspector_for(kernel, "void(float32[::1], float32[::1])", arch="sm_90")
        page_html = f"<!doctype html><html><body>{insp._repr_html_()}</body></html>"
    finally:
        gpunb.set_target(None)
    assert len(insp.mapped_lines) > 35
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(),
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.set_content(page_html)
            page.wait_for_function("() => window.gpunbInsp && gpunbInsp.v === 3")
            view = page.locator(".gpunb-split").first  # the PTX tab's (open by default)
            line_px = view.evaluate("(v) => v.querySelector('.gl').offsetHeight")
            # scroll the PTX pane to the instructions of a line further down the source
            target_line = insp.mapped_lines[14]  # (the source pane can scroll that far)
            view.evaluate("""(v, l) => { const t = v.querySelector('[data-side=t] pre');
              t.scrollTop = t.querySelector('.gl[data-l="' + l + '"]').offsetTop; }""",
                          target_line)
            page.wait_for_timeout(400)
            state = view.evaluate(SYNC_STATE)
            assert state["s"] > 0, state  # the source pane followed
            assert abs(state["s_partner_of_t"] - state["t_top"]["at"]) <= line_px, state
            # and back: scroll the source pane near its top; the PTX pane follows
            page.wait_for_timeout(300)
            view.evaluate("(v) => { v.querySelector('[data-side=s] pre').scrollTop = 3 * "
                          "v.querySelector('.gl').offsetHeight; }")
            page.wait_for_timeout(400)
            back = view.evaluate(SYNC_STATE)
            assert back["t"] < state["t"], (state, back)
            assert abs(back["t_partner_of_s"] - back["s_top"]["at"]) <= line_px, back
            # sync off: the PTX pane scrolls alone
            view.locator("input.gpunb-sync").uncheck()
            page.wait_for_timeout(300)
            view.evaluate("(v) => { v.querySelector('[data-side=t] pre').scrollTop = 4000; }")
            page.wait_for_timeout(400)
            alone = view.evaluate(SYNC_STATE)
            assert alone["s"] == back["s"] and alone["t"] > back["t"], (back, alone)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "static-split-view-sync.png"))
        finally:
            browser.close()


CHECKED_PAGE = """<!doctype html><html><body style="background:#fff;color:#222">
<div id="good" style="width:250px"><div>a line that wraps between its words as it should</div>
  <table><tr><th>launches</th></tr></table>
  <svg width="100" height="30"><text x="5" y="20" style="fill:#222">ok</text></svg></div>
<div id="bad" style="width:250px">
  <div style="white-space:nowrap;overflow:hidden">a line far too long to fit in two hundred
    and fifty pixels without wrapping</div>
  <table style="width:40px;table-layout:fixed"><tr><th style="overflow-wrap:anywhere">
    launches</th></tr></table>
  <div style="color:#f57c00">miss (new)</div>
  <svg width="100" height="30"><text x="60" y="20" style="fill:#000">outside</text></svg>
</div></body></html>"""


def test_the_readability_checks_catch_clipping_wrapping_and_low_contrast():
    """browser_checks.readability finds each kind of problem (and none on a good region)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(),
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 800, "height": 600})
        try:
            page.set_content(CHECKED_PAGE)
            good = readability(page.locator("#good"))
            assert_readable(good, "good")
            bad = readability(page.locator("#bad"))
        finally:
            browser.close()
    assert [c["text"][:10] for c in bad["clipped"]][:1] == ["a line far"], bad
    assert any(c.get("why") == "outside its SVG" for c in bad["clipped"]), bad
    assert [w["text"] for w in bad["wrapped"]] == ["launches"], bad
    (low,) = bad["low_contrast"]
    assert low["text"] == "miss (new)" and 2.5 < low["ratio"] < 3.2, low  # #f57c00 on white


def _debugger_text(page, selector: str) -> str:
    return page.locator(f".gpunb-debugger {selector}").first.inner_text()


def test_debugger_widget_in_jupyterlab(lab):
    """A --break cell stops thread 3 and the cell returns with the debugger widget: it shows the
    line, the variables and their numba types; Step over moves the thread; the warp table marks
    the lanes elsewhere; Switch focuses another thread; Run to end finishes the launch (the next
    cell sees the whole result); running the cell again abandons the open session, which its
    widget says; a --trace cell's viewer steps through the recorded lines."""
    from playwright.sync_api import sync_playwright

    base, _ = lab
    ARTIFACTS.mkdir(exist_ok=True)
    summary: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(),
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1500, "height": 1200})
        try:
            _open_notebook(page, base, "debugger.ipynb")
            page.wait_for_function("() => document.body.innerText.includes('Idle')",
                                   timeout=120_000)
            _run_cell(page, 0)
            _run_cell(page, 1)
            widget = page.locator(".gpunb-debugger").first
            widget.wait_for(timeout=120_000)
            _wait_text(page, ".gpunb-debugger", "stopped at a breakpoint: thread (3, 0, 0)")
            here = widget.locator(".gl.dbg-here").first
            assert here.get_attribute("data-l") == "6", here.inner_text()
            variables = widget.locator("table.gpunb-table").first.inner_text()
            assert "int32" in variables and "float32[::1]" in variables, variables
            summary["stopped"] = _debugger_text(page, ".dbg-head")
            widget.screenshot(path=str(ARTIFACTS / "debugger-stopped.png"))

            widget.locator(".gpunb-dbg-next").click()
            _wait_text(page, ".gpunb-debugger", "stopped at a step")
            assert widget.locator(".gl.dbg-here").first.get_attribute("data-l") == "7"
            widget.locator(".lm-TabBar-tab", has_text="warp").click()
            table = widget.locator("table.gpunb-dbg-across").first
            table.wait_for(timeout=30_000)
            assert table.locator("tr[data-lane]").count() == 32
            diverged = table.locator("tr.dbg-diverged").count()
            assert diverged == 31, diverged  # lanes 0-2 exited, 4-31 wait on line 6
            summary["warp"] = table.inner_text()[:400]

            widget.locator("input[placeholder='x,y,z']").first.fill("5")
            widget.locator(".gpunb-dbg-switch").click()
            _wait_text(page, ".gpunb-debugger", "focus: thread (5, 0, 0)")
            widget.screenshot(path=str(ARTIFACTS / "debugger-switched.png"))

            widget.locator(".gpunb-dbg-finish").click()
            _wait_text(page, ".gpunb-debugger", "finished")
            _run_cell(page, 2)
            _wait_text(page, ".jp-Notebook", "out [1.0, 4.0, 7.0, 10.0]")

            # the cell again, twice: the second run abandons the open session of the first
            # (the cell's output, its widget, is replaced) and stops again - nothing hangs
            cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
            for _ in range(2):
                cell.locator(".jp-InputPrompt").click()
                page.keyboard.press("Control+Enter")
                page.wait_for_timeout(3000)
            _wait_text(page, ".jp-Notebook .jp-Cell:nth-child(2) .gpunb-debugger",
                       "stopped at a breakpoint: thread (3, 0, 0)")
            # a launch in another cell: the open session's widget (cell 1) says it ended
            page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-InputPrompt").click()
            page.keyboard.press("Control+Enter")
            page.wait_for_function(
                "() => document.querySelectorAll('.gpunb-debugger').length === 2", timeout=60_000)
            _wait_text(page, ".jp-Notebook .jp-Cell:nth-child(2) .gpunb-debugger", "abandoned")
            summary["abandoned"] = page.locator(
                ".jp-Notebook .jp-Cell:nth-child(2) .gpunb-debugger .dbg-error").first.inner_text()

            _run_cell(page, 4)
            trace = page.locator(".gpunb-trace").first
            trace.wait_for(timeout=120_000)
            _wait_text(page, ".gpunb-trace", "step 1 of")
            trace.locator(".gpunb-trace-next").click()
            _wait_text(page, ".gpunb-trace", "step 2 of")
            summary["trace"] = trace.inner_text()[:300]
            trace.screenshot(path=str(ARTIFACTS / "debugger-trace.png"))
        finally:
            page.screenshot(path=str(ARTIFACTS / "debugger-last.png"), full_page=True)
            browser.close()
            (ARTIFACTS / "debugger.json").write_text(json.dumps(summary, indent=2))
