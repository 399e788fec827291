"""On a GPU machine: every teaching notebook runs top to bottom on the device (GPUNB_TARGET=cuda),
with the large sizes the notebooks choose there, and its checks against numpy hold.

With GPUNB_RECORD_FIGURES=notebooks/figures/h100.json (a path relative to the repository is
made absolute here, since the notebooks run in a temporary folder) the performance notebooks
record what they measure into that file, the one they show on every machine. Run one notebook at
a time (-n 0) so that no two measure at once:

    GPUNB_RECORD_FIGURES=notebooks/figures/h100.json python -m pytest -m gpu -n 0 \
        tests/notebook/test_gpu_teaching_notebooks.py
"""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path

import pytest
from nbhelpers import REPO, outputs_text

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

NOTEBOOKS = sorted(p for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOTEBOOKS.append(REPO / "notebooks" / "puzzles.ipynb")


PERFORMANCE = ("06", "07", "08", "09", "12", "13", "14", "15", "16")


def _record_file() -> Path | None:
    value = os.environ.get("GPUNB_RECORD_FIGURES")
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() else REPO / path


def _execute_on_gpu(path, cpu_env, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("GPUNB_TARGET", "cuda")
    if _record_file() is not None:
        monkeypatch.setenv("GPUNB_RECORD_FIGURES", str(_record_file()))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(cpu_env)}}).execute()
    return nb


def _text(nb) -> str:
    plain = re.compile(r"\x1b\[[0-9;]*m")
    return "\n".join(plain.sub("", outputs_text(c)) for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.exists()],
                         ids=[p.name for p in NOTEBOOKS if p.exists()])
def test_notebook_runs_on_the_gpu(path, cpu_env, monkeypatch):
    nb = _execute_on_gpu(path, cpu_env, monkeypatch)
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
        tagged = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        assert tagged or not errors, cell.source
    text = _text(nb)
    if path.stem[:2] in ("06", "07", "08", "09", "10"):
        assert "target: cuda" in text
    if path.stem == "06_memory_coalescing":
        assert re.search(r"stride 32: [\d.]+ ms, \d+ GB/s", text)
        assert re.search(r"transpose_padded +[\d.]+ ms, \d+ GB/s", text)
    if path.stem == "07_atomics_and_histograms":
        assert re.search(r"histogram_private +[\d.]+ ms, [\d.]+ G values/s", text)
    if path.stem == "10_profiling_and_debugging":
        assert "timing: host" not in text  # device timings
        memcheck = text[text.index("compute-sanitizer memcheck:"):]
        assert "no problems found" not in memcheck.splitlines()[0], memcheck
        assert "shift_left" in memcheck or "Cell In[" in memcheck, memcheck
        racecheck = text[text.index("compute-sanitizer racecheck:"):]
        assert "no problems found" not in racecheck.splitlines()[0], racecheck
    if path.stem == "08_reductions_and_scans":
        assert "N = 16777216" in text and "matches np.cumsum exactly" in text
        assert re.search(r"sum_shuffle: [\d.]+ ms, \d+ GB/s", text)
    if path.stem == "09_tiled_matmul":
        for step in ("naive", "shared tiles", "register tiles"):
            assert re.search(rf"{step}: matches numpy; [\d.]+ ms  [\d.]+ TFLOP/s", text), step
        print(text[text.index("step "):])  # the TFLOP/s table, for the lead's log (pytest -s)
    if path.stem == "11_tensor_cores":
        for step in ("wmma, global", "wmma, shared pipeline", "mma.sync + ldmatrix + cp.async",
                     "TMA + wgmma, one consumer", "TMA + wgmma, hopper_gemm"):
            assert re.search(rf"{re.escape(step)}: matches numpy; [\d.]+ ms  [\d.]+ TFLOP/s",
                             text), step
        print(text[text.index("step "):])  # the TFLOP/s table, for the lead's log (pytest -s)
    if path.stem[:2] in ("12", "13", "14", "15", "16"):
        assert "target: cuda" in text
    if path.stem == "12_transfers_and_streams":
        assert re.search(r"host to device, pinned +[\d.]+ ms +[\d.]+ GB/s", text)
        assert re.search(r"pipelined over 4 streams +[\d.]+ ms +[\d.]+ GB/s end to end", text)
    if path.stem == "13_divergence":
        assert re.search(r"by_lane +[\d.]+ ms +[\d.]+ G elements/s", text)
    if path.stem == "14_softmax":
        assert re.search(r"softmax_online  matches numpy; reads the row 2 times; [\d.]+ ms +\d+ "
                         r"GB/s", text)
    if path.stem == "15_attention":
        assert "fused: matches numpy" in text and "TFLOP/s" in text
    if path.stem == "16_convolution":
        assert re.search(r"conv_tiled +matches numpy; [\d.]+ ms +\d+ GB/s", text)
    record = _record_file()
    if record is not None and path.stem[:2] in PERFORMANCE:
        entry = json.loads(record.read_text())["notebooks"][path.stem[:2]]
        assert entry["date"] == datetime.date.today().isoformat() and entry["rows"]
        assert all(row["value"] > 0 for row in entry["rows"])
