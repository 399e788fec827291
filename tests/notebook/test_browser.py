"""JupyterLab in a real browser (opt-in: GPUNB_BROWSER_TESTS=1): inspector, explorer, side panel.

Starts JupyterLab on 127.0.0.1 with the built labextension on JUPYTER_PATH, drives Debian's
chromium through Playwright, and checks that the PTX tab shows PTX, that moving the block-size
slider changes the occupancy shown, and that %%gpuprofile timings reach the gpunb side panel.
Screenshots go to test-artifacts/. Needs: pip install jupyterlab playwright; apt-get install
chromium; `npm ci && npm run build` in labextension/.
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
from nbhelpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("GPUNB_BROWSER_TESTS", "") != "1",
    reason="browser test is opt-in: GPUNB_BROWSER_TESTS=1 (needs jupyterlab, playwright, "
           "chromium and the built labextension)")]

ARTIFACTS = REPO / "test-artifacts"
TOKEN = "gpunb-browser-test"

CELLS = [
    "%load_ext gpunb\nimport numpy as np",
    "%%gpukernel\ndef saxpy(out, x, y, a):\n    i = cuda.grid(1)\n    if i < out.size:\n"
    "        out[i] = a * x[i] + y[i]\n\nn = 4096\nx = np.ones(n, np.float32)\n"
    "out = np.zeros_like(x)\nsaxpy[16, 256](out, x, x, 2.0)\nprint('ok', out[:2])",
    "saxpy.inspect()",
    "from gpunb.notebook import launch_explorer\nlaunch_explorer(saxpy, 1 << 20, block=256)",
    "%%gpuprofile\nfor _ in range(3):\n    saxpy[16, 256](out, x, x, 2.0)",
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
def lab(tmp_path):
    """A JupyterLab server on localhost with gpunb's labextension and a test notebook."""
    from gpunb.notebook import labext

    if not labext.is_built():
        pytest.skip("labextension not built: cd labextension && npm ci && npm run build")
    share = tmp_path / "share" / "jupyter"
    labext.install(prefix=str(tmp_path))  # -> tmp/share/jupyter/labextensions/gpunb-...
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    work = tmp_path / "work"
    work.mkdir()
    nbformat.write(nb, work / "browser.ipynb")
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
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _run_all_cells(page) -> None:
    page.locator(".jp-Notebook .jp-Cell").first.click()
    for _ in CELLS:
        page.keyboard.press("Shift+Enter")
        page.wait_for_timeout(300)
    # wait until no cell is still queued or running ("[*]")
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.jp-InputPrompt')]"
        ".some(p => p.textContent.includes('*'))", timeout=180_000)


def _percent(text: str) -> float:
    import re

    return float(re.search(r"occupancy ([0-9.]+)%", text).group(1))


def _occupancy_text(page) -> str:
    return page.locator(".gpunb-launch-explorer .widget-html-content").first.inner_text()


def test_inspector_explorer_and_panel_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    base, tmp = lab
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(),
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            page.goto(f"{base}/lab/tree/browser.ipynb?token={TOKEN}")
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
            page.wait_for_selector(".jp-KernelStatus, .jp-Notebook-ExecutionIndicator",
                                   timeout=60_000)
            page.wait_for_timeout(3000)  # kernel start
            _run_all_cells(page)

            inspector = page.locator(".gpunb-inspector").first
            inspector.wait_for(timeout=60_000)
            inspector.locator(".lm-TabBar-tab", has_text="PTX").click()
            page.wait_for_timeout(500)
            visible_ptx = inspector.locator(".widget-tab-contents").inner_text()
            assert ".visible .entry saxpy" in visible_ptx

            explorer = page.locator(".gpunb-launch-explorer").first
            explorer.scroll_into_view_if_needed()
            before = _occupancy_text(page)
            readout = explorer.locator(".widget-readout").first
            readout.click()
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

            panel_tab = page.locator(".lm-TabBar-tab[title*='gpunb']").first
            panel_tab.click()
            panel = page.locator("#gpunb-panel")
            panel.wait_for(timeout=30_000)
            page.wait_for_function(
                "() => document.querySelector('#gpunb-panel .gpunb-launches') &&"
                " document.querySelector('#gpunb-panel .gpunb-launches')"
                ".innerText.includes('saxpy')", timeout=30_000)
            launches = panel.locator(".gpunb-launches").inner_text()
            assert "saxpy" in launches
        finally:
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-gpunb.png"), full_page=True)
            (ARTIFACTS / "jupyterlab-lab.log").write_text(
                (tmp / "lab.log").read_text(errors="replace")[-20000:])
            browser.close()
    summary = {"before": before, "after": after, "launches": launches}
    (ARTIFACTS / "jupyterlab-gpunb.json").write_text(json.dumps(summary, indent=2))
