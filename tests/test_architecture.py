"""The layers of ARCHITECTURE.md, enforced: import-linter's contracts and small modules.

`lint-imports` (import-linter, configured in pyproject.toml) checks that imports point down the
layer list - demo > notebook > cuda > fusion | random > jit > cache > runtime > backends >
compiler > foundation - and that no package's modules import each other in a cycle, function-level
(lazy) imports included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def test_imports_point_down_and_form_no_cycles():
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or \
        shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed: pip install -e '.[test]'")
    result = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Contracts: \d+ kept, 0 broken", result.stdout)


def test_modules_stay_small():
    large = {}
    for path in sorted((REPO / "gpunb").rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            large[path.relative_to(REPO).as_posix()] = lines
    assert large == {}, f"modules over {MAX_LINES} lines (split them by responsibility)"


def test_test_files_have_unique_names():
    """pytest imports test files without packages by their base name: two test_x.py in
    different directories fail collection ("import file mismatch") for the whole run."""
    seen: dict = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    assert not {name: paths for name, paths in seen.items() if len(paths) > 1}
