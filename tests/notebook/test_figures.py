"""gpunb.notebook.figures: the GPU figures the performance notebooks show - a table read from the
committed file with its device and date, a plain sentence when nothing was recorded, and nothing
recorded off a GPU."""

from __future__ import annotations

import datetime
import json

import pytest

from gpunb.notebook import figures


def _write(path, notebooks):
    path.write_text(json.dumps({"format": 1, "notebooks": notebooks}))
    return path


def test_no_figures_yet_is_said_plainly(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUNB_FIGURES", str(_write(tmp_path / "h100.json", {})))
    table = figures.table("09")
    assert not table.entry
    text = repr(table)
    assert text.startswith("No H100 figures have been recorded for notebook 09 yet")
    assert figures.RECORD_COMMAND in text and "TFLOP" not in text
    assert table._repr_markdown_().startswith("**GPU figures:** No H100 figures")


def test_a_recorded_table_names_device_date_and_compares_with_its_reference(tmp_path,
                                                                             monkeypatch):
    rows = [{"label": "shared tiles", "value": 10.0, "unit": "TFLOP/s", "ms": 13.7},
            {"label": "cuBLAS SGEMM", "value": 40.0, "unit": "TFLOP/s", "ms": 3.4,
             "reference": True},
            {"label": "scan", "value": 5.0, "unit": "G elements/s", "versus": "cupy.cumsum"},
            {"label": "cupy.cumsum", "value": 10.0, "unit": "G elements/s", "reference": True}]
    path = _write(tmp_path / "h100.json", {"09": {"device": "NVIDIA H100 80GB HBM3",
                                                  "date": "2026-11-28", "gpunb": "0.1.0",
                                                  "rows": rows}})
    table = figures.table("09", path)
    markdown = table._repr_markdown_()
    assert "Measured on NVIDIA H100 80GB HBM3 on 2026-11-28 (gpunb 0.1.0)" in markdown
    assert "| shared tiles | 13.700 | 10 TFLOP/s | 25% of cuBLAS SGEMM |  |" in markdown
    assert "| cuBLAS SGEMM (reference) | 3.400 | 40 TFLOP/s |  |  |" in markdown
    assert "| scan |  | 5 G elements/s | 50% of cupy.cumsum |  |" in markdown
    assert "not from the cells above" in repr(table)
    assert not figures.table("06", path).entry  # another notebook: nothing recorded


def test_an_unreadable_file_is_no_figures(tmp_path):
    bad = tmp_path / "h100.json"
    bad.write_text("{ not json")
    assert figures.load(bad) == {} and not figures.table("09", bad).entry


def test_nothing_is_recorded_off_a_gpu(tmp_path, monkeypatch):
    target = tmp_path / "recorded.json"
    monkeypatch.setenv("GPUNB_RECORD_FIGURES", str(target))
    monkeypatch.setenv("GPUNB_TARGET", "cpu")
    assert figures.record("09", "naive", 1.0, "TFLOP/s", ms=1.0) is False
    assert not target.exists()


def test_the_committed_file_is_readable():
    data = figures.load(figures.REPO_FILE)
    assert data.get("format") == 1 and isinstance(data.get("notebooks"), dict)


@pytest.mark.gpu
def test_on_a_gpu_a_record_names_the_device_and_replaces_a_lessons_old_rows(tmp_path,
                                                                             monkeypatch):
    target = _write(tmp_path / "recorded.json", {"99": {"rows": [{"label": "old"}]}})
    monkeypatch.setenv("GPUNB_RECORD_FIGURES", str(target))
    monkeypatch.setenv("GPUNB_TARGET", "cuda")
    assert figures.record("99", "a kernel", 123.0, "GB/s", ms=0.5)
    assert figures.record("99", "a reference", 246.0, "GB/s", ms=0.25, reference=True)
    entry = json.loads(target.read_text())["notebooks"]["99"]
    assert [r["label"] for r in entry["rows"]] == ["a kernel", "a reference"]
    from gpunb import cuda

    name = cuda.get_current_device().name
    assert entry["device"] == (name.decode() if isinstance(name, bytes) else name)
    assert entry["date"] == datetime.date.today().isoformat()
    assert "50% of a reference" in repr(figures.table("99", target))
