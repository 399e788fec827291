"""README's `gpunb.fuse` example, pasted as written, runs (CPU target) and gives numpy's results."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import gpunb

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_fuse_example_runs_as_pasted():
    section = README.read_text().split("## Fusing numpy code: `gpunb.fuse`\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    gpunb.set_target("cpu")
    try:
        namespace: dict = {"__name__": "readme_fuse"}
        exec(compile(code, "README.md (gpunb.fuse)", "exec"), namespace)  # noqa: S102
    finally:
        gpunb.set_target(None)
    points, mask, out = namespace["points"], namespace["mask"], namespace["out"]
    np.testing.assert_array_equal(out, np.where(mask[:, None], np.inf, points))
    assert namespace["d"].shape == (4, 1000)
