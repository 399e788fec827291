"""Measured GPU figures shown beside the teaching notebooks' own runs.

On the CPU target a notebook's timings say nothing about a GPU (they can even reverse its
ranking), so each performance notebook also shows `table(lesson)`: the figures measured on an
H100 by the gpu-marked notebook test, read from a committed JSON file (GPUNB_FIGURES, by default
notebooks/figures/h100.json), with the device, the date and the gpunb version - or, while none
were recorded, a sentence saying so. Numbers are never made up here.

On a GPU, the notebooks' timing cells call `record(lesson, label, value, unit, ...)`; when
GPUNB_RECORD_FIGURES names a file (the test sets it), each call stores one row there, the first
call of a lesson in a process replacing that lesson's older rows.
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass
from pathlib import Path

from gpunb.foundation import config

DEFAULT_FILE = Path("notebooks") / "figures" / "h100.json"
# the file of the source checkout gpunb is imported from (what its notebooks show)
REPO_FILE = Path(__file__).resolve().parents[2] / DEFAULT_FILE
RECORD_COMMAND = ("GPUNB_RECORD_FIGURES=notebooks/figures/h100.json python -m pytest -m gpu "
                  "-n 0 tests/notebook/test_gpu_teaching_notebooks.py")
HIGHER_IS_BETTER = ("GB/s", "TFLOP/s", "G values/s", "G elements/s")
_recorded_lessons: set = set()  # lessons this process has started recording


def figures_path() -> Path | None:
    """The figures file to show: GPUNB_FIGURES, else notebooks/figures/h100.json from the
    working directory (or figures/h100.json inside notebooks/), else from the source checkout
    gpunb is imported from; None when there is none."""
    explicit = config.figures_file()
    if explicit:
        return Path(explicit)
    for candidate in (Path.cwd() / DEFAULT_FILE, Path.cwd() / DEFAULT_FILE.relative_to(
            "notebooks"), REPO_FILE):
        if candidate.is_file():
            return candidate
    return None


def load(path: Path | None = None) -> dict:
    """The figures file as a dict ({} when there is none or it cannot be read)."""
    path = path or figures_path()
    if path is None or not Path(path).is_file():
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(lesson: str, label: str, value: float, unit: str, ms: float | None = None,
           reference: bool = False, versus: str = "", note: str = "") -> bool:
    """Store one measured figure of notebook `lesson` (e.g. "09") in GPUNB_RECORD_FIGURES's
    file. A reference row (cuBLAS, CuPy, PyTorch) is what kernels are compared with: `versus`
    names it (by default the lesson's only reference row in the same unit). Does nothing
    (returns False) unless that variable is set and the kernels run on a GPU."""
    target = config.record_figures_file()
    if not target or not _on_gpu():
        return False
    path = Path(target)
    data = load(path) or {"format": 1, "notebooks": {}}
    notebooks = data.setdefault("notebooks", {})
    if lesson not in _recorded_lessons:  # a new run of this notebook replaces its old rows
        _recorded_lessons.add(lesson)
        notebooks[lesson] = {"device": _device_name(), "date": datetime.date.today().isoformat(),
                             "gpunb": _gpunb_version(), "rows": []}
    row = {"label": label, "value": float(value), "unit": unit, "reference": bool(reference)}
    if ms is not None:
        row["ms"] = float(ms)
    if versus:
        row["versus"] = versus
    if note:
        row["note"] = note
    notebooks[lesson]["rows"].append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(scratch, path)
    return True


def _on_gpu() -> bool:
    from gpunb.runtime.target import active_target

    return active_target() == "cuda"


def _device_name() -> str:
    from gpunb import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def _gpunb_version() -> str:
    import gpunb

    return getattr(gpunb, "__version__", "unknown")


@dataclass(frozen=True)
class FigureTable:
    """What table() returns: markdown in a notebook, text elsewhere."""

    lesson: str
    entry: dict

    def _rows(self) -> list[tuple]:
        rows = self.entry.get("rows", [])
        by_label = {r["label"]: r for r in rows if r.get("reference")}
        by_unit: dict = {}
        for r in by_label.values():
            by_unit.setdefault(r["unit"], []).append(r)
        out = []
        for r in rows:
            same_unit = by_unit.get(r["unit"], [])
            ref = by_label.get(r.get("versus", "")) or (same_unit[0] if len(same_unit) == 1
                                                        else None)
            versus = ""
            if ref is not None and not r.get("reference") and r["unit"] in HIGHER_IS_BETTER \
                    and ref["value"]:
                versus = f"{r['value'] / ref['value']:.0%} of {ref['label']}"
            label = r["label"] + (" (reference)" if r.get("reference") else "")
            ms = f"{r['ms']:.3f}" if "ms" in r else ""
            out.append((label, ms, f"{r['value']:.4g} {r['unit']}", versus, r.get("note", "")))
        return out

    def headline(self) -> str:
        if not self.entry:
            return (f"No H100 figures have been recorded for notebook {self.lesson} yet: the "
                    "times above come from this run's target only. On a GPU machine, "
                    f"`{RECORD_COMMAND}` measures and records them.")
        return (f"Measured on {self.entry.get('device', 'a GPU')} on {self.entry.get('date')} "
                f"(gpunb {self.entry.get('gpunb', '?')}) by the gpu-marked notebook test - "
                "these numbers are from that GPU run, not from the cells above")

    def __repr__(self) -> str:
        lines = [self.headline()]
        for label, ms, figure, versus, note in self._rows():
            lines.append(f"  {label:<34} {ms:>10} ms  {figure:>16}  {versus}  {note}".rstrip())
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        if not self.entry:
            return f"**GPU figures:** {self.headline()}"
        body = "\n".join(f"| {label} | {ms} | {figure} | {versus} | {note} |"
                         for label, ms, figure, versus, note in self._rows())
        return (f"**GPU figures.** {self.headline()}.\n\n"
                "| kernel | time (ms) | figure | vs reference | note |\n"
                "|---|---|---|---|---|\n" + body)


def table(lesson: str, path: str | Path | None = None) -> FigureTable:
    """The recorded GPU figures of notebook `lesson` ("06", "09", ...), to show in it."""
    entry = load(Path(path) if path else None).get("notebooks", {}).get(lesson, {})
    return FigureTable(lesson, entry if entry.get("rows") else {})
