"""The side panel's model (labextension/src/model.ts) under node: what it keeps and summarises.

model.ts is plain data and pure functions (no DOM), so it is compiled alone with the
labextension's TypeScript and run by node; the test skips where `npm ci` has not been run in
labextension/ (CI's browser step runs it)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[2] / "labextension"
TSC = LABEXTENSION / "node_modules" / "typescript" / "bin" / "tsc"

CHECK = r"""
import { launchRows, PanelModel } from './model.js';
const out = {};
// an older gpunb's message: one record per launch, more than Math.min(...list) can take
const many = [];
for (let i = 0; i < 300000; i++) {
  many.push({ kernel: 'k', grid: '(1,)', block: '(32,)', ms: 1 + (i % 7), compiled: i === 0 });
}
out.perLaunch = launchRows(many);
out.summaries = launchRows([
  { kernel: 'k', launches: 5, compiling: 1, mean_ms: 2, min_ms: 1, max_ms: 3 },
  { kernel: 'c', launches: 1, compiling: 1, mean_ms: null, min_ms: null, max_ms: null }
]);
const model = new PanelModel();
for (let i = 0; i < 2000; i++) {
  model.handle('nb', { type: 'kernels', kernels: [{ id: 'k' + i, name: 'k' + i }] });
}
for (let i = 0; i < 300; i++) {
  model.handle('nb', { type: 'launches', launches: [
    { kernel: 'k' + i, launches: 1, compiling: 0, mean_ms: 1, min_ms: 1, max_ms: 1 }] });
}
model.handle('nb', { type: 'launches', launches: many });
for (let i = 0; i < 50; i++) {
  model.handle('nb', { type: 'profile', profile: { title: 't' + i } });
}
const s = model.state('nb');
out.kept = { kernels: s.kernels.size, newest: [...s.kernels.keys()].pop(),
             launchRows: s.launchRows.length, firstRow: s.launchRows[0],
             profiles: s.profiles.length };
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def model_results(tmp_path_factory):
    node = shutil.which("node")
    if node is None or not TSC.is_file():
        pytest.skip("needs node and `npm ci` in labextension/")
    out = tmp_path_factory.mktemp("panel-model")
    subprocess.run([node, str(TSC), "--outDir", str(out), "--target", "ES2020", "--module",
                    "ES2020", "--strict", "--lib", "ES2020",
                    str(LABEXTENSION / "src" / "model.ts")],
                   check=True, capture_output=True, timeout=300)
    (out / "package.json").write_text('{"type": "module"}')
    (out / "check.js").write_text(CHECK)
    proc = subprocess.run([node, str(out / "check.js")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_many_launch_records_are_summarised_without_a_range_error(model_results):
    """300 000 per-launch records (what an older gpunb sent): Math.min(...warm) threw
    RangeError past ~120 000; the summary is folded in one loop."""
    (row,) = model_results["perLaunch"]
    assert row == {"kernel": "k", "launches": 300000, "compiling": 1, "meanMs": row["meanMs"],
                   "minMs": "1.000", "maxMs": "7.000"}
    assert 3.9 < float(row["meanMs"]) < 4.1


def test_per_kernel_summaries_become_rows(model_results):
    rows = {r["kernel"]: r for r in model_results["summaries"]}
    assert rows["k"] == {"kernel": "k", "launches": 5, "compiling": 1, "meanMs": "2.000",
                         "minMs": "1.000", "maxMs": "3.000"}
    assert rows["c"] == {"kernel": "c", "launches": 1, "compiling": 1, "meanMs": "",
                         "minMs": "", "maxMs": ""}


def test_the_panel_keeps_a_bounded_history(model_results):
    kept = model_results["kept"]
    assert kept["kernels"] == 500 and kept["newest"] == "k1999"  # the newest 500
    assert kept["launchRows"] == 200 and kept["firstRow"]["launches"] == 300000
    assert kept["profiles"] == 20
