"""Differential testing against numba's njit: programs from diff_programs.Builder (a fixed list of
seeds) and the mismatches that builder found, each kept as a regression case. Every case runs as
a gpunb kernel on the CPU target (one thread, results stored into arrays) and as an
`@njit(error_model="numpy")` function; types and values must agree bit for bit (NaN equals NaN),
or both must refuse the code (numba_oracle_support.compare). The generated kernels are also
compiled to PTX for sm_80 and checked by ptxas, for lowering crashes only CUDA would meet.

A longer search: `PYTHONPATH=. python tests/compiler/diff_census.py 0 500` prints every mismatch
of 500 seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from numba_oracle_support import Case, compare  # noqa: E402 - after the numba check


def _case(body: str, **params) -> Case:
    results = tuple(dict.fromkeys(line.split("=", 1)[0].strip() for line in body.splitlines()
                                  if line.startswith("_r")))
    return Case(body, params, results)


# Each: (what a user saw, the case). One test per class of mismatch.
REGRESSIONS = {
    # np.abs of an 8/16/64-bit integer computed fabs in float64 and stored the double's bits
    # (an internal compiler error for an int8 result; 4617315517961601024 for |-5| in int64)
    "np_abs_keeps_integer_type": _case(
        "_r0 = np.abs(p0)\n_r1 = np.absolute(p1)\n_r2 = np.abs(p2)\n_r3 = np.abs(p3)\n"
        "_r4 = np.abs(p4)", p0=np.int8(-128), p1=np.int16(-7), p2=np.uint8(200),
        p3=np.int64(-5), p4=np.int32(-9)),
    # np.abs of a bool is numpy's '?->?' loop (bool); np.fabs has no integer loop (a float)
    "np_abs_bool_and_fabs_of_int": _case(
        "_r0 = np.abs(p0)\n_r1 = np.fabs(p1)\n_r2 = np.fabs(p2)", p0=True, p1=np.int16(-3),
        p2=np.uint8(7)),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_agrees_with_numba(name):
    verdict, report = compare(REGRESSIONS[name])
    assert verdict in ("match", "both refuse"), report
