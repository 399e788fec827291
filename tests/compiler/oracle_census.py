"""Counts for the differential typing oracle (test_numba_oracle.py) over a fixed budget: how many
generated kernels agree with numba's @njit, how many valid ones gpunb refuses, how many numba
refuses and gpunb accepts, and how many give another type or value. The test stops at the first
mismatch; this runs on and prints every one, for the numbers issue 26 asks for.

    PYTHONPATH=. python tests/compiler/oracle_census.py 500        # 500 programs, seed 0
    PYTHONPATH=. python tests/compiler/oracle_census.py 500 7      # another 500, seed 7
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from numba_oracle_support import compare  # noqa: E402 - after the path
from test_numba_oracle import draws  # noqa: E402

KINDS = {"numba refuses this code; gpunb accepts it": "accepts invalid",
         "numba accepts this code; gpunb does not": "refuses valid"}


def census(count: int, seed_value: int = 0) -> tuple[Counter, list]:
    verdicts, mismatches = Counter(), []
    for number, case in enumerate(draws(count, seed_value)):
        verdict, report = compare(case)
        if verdict == "mismatch":
            verdict = KINDS.get(report.splitlines()[0], "different type or value")
            mismatches.append((number, verdict, report))
        verdicts[verdict] += 1
    return verdicts, mismatches


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seed_value = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    started = time.perf_counter()
    verdicts, mismatches = census(count, seed_value)
    for number, verdict, report in mismatches:
        print(f"--- program {number}: {verdict}\n{report}\n")
    print(f"{sum(verdicts.values())} distinct programs (seed {seed_value}) in "
          f"{time.perf_counter() - started:.0f} s:")
    for verdict, n in verdicts.most_common():
        print(f"  {n:5d}  {verdict}")


if __name__ == "__main__":
    main()
