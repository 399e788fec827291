"""Audit of the open issues (2-6): promised behaviour that does not work yet, one test per gap.

Not named test_*, so CI does not collect it. Run it explicitly:

    .venv/bin/python -m pytest -q tests/audit_gaps.py

Every test here fails today (CPU target) and should pass once its gap is closed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpunb
from gpunb import cuda

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


# ---- issue 6: complex numbers and cmath -------------------------------------------------------


# ---- issue 6: enumerate/zip, records ----------------------------------------------------------


NESTED = np.dtype([("v", np.float32, (3,)), ("n", np.int64)])


@cuda.jit
def _record_nested_array_field(out, recs):
    i = cuda.grid(1)
    if i < recs.size:
        out[i] = recs[i].v[0] + recs[i].v[2] + recs[i].n


def test_record_with_nested_array_field():
    """Issue 6 (numpy record arrays with field access): a structured dtype with an array field
    (numba.cuda supports these) is refused at launch: "numpy dtype ('<f4', (3,)) is not
    supported in GPU kernels"."""
    recs = np.zeros(2, NESTED)
    recs["v"] = [[1, 2, 3], [4, 5, 6]]
    recs["n"] = [10, 20]
    out = np.zeros(2)
    _record_nested_array_field[1, 2](out, recs)
    assert out.tolist() == [14.0, 30.0]


# ---- issue 6: gpunb.random bit-compatibility --------------------------------------------------


# ---- issue 3: integer semantics identical to the GPU ------------------------------------------


# ---- issue 2: kernel language -----------------------------------------------------------------


# ---- issues 2, 3, 4: benchmark results, issue 5: browser test in CI ---------------------------


