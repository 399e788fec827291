"""Counts for the differential typing oracle (test_numba_oracle.py) over a fixed budget: how many
generated kernels agree with numba's @njit, how many valid ones gpunb refuses, how many numba
refuses and gpunb accepts, and how many give another type or value. The test stops at the first
mismatch; this runs on and prints every one, for the numbers issue 26 asks for.

    PYTHONPATH=. python tests/compiler/oracle_census.py 500        # seeds 0..499
    PYTHONPATH=. python tests/compiler/oracle_census.py 500 1000   # seeds 1000..1499
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from numba_oracle_support import compare  # noqa: E402 - after the path
from test_numba_oracle import _draw  # noqa: E402

KINDS = {"numba refuses this code; gpunb accepts it": "accepts invalid",
         "numba accepts this code; gpunb does not": "refuses valid"}


def census(count: int, first_seed: int = 0) -> tuple[Counter, list]:
    verdicts, mismatches = Counter(), []
    for seed_value in range(first_seed, first_seed + count):
        case = _draw(seed_value)
        verdict, report = compare(case)
        if verdict == "mismatch":
            verdict = KINDS.get(report.splitlines()[0], "different type or value")
            mismatches.append((seed_value, verdict, report))
        verdicts[verdict] += 1
    return verdicts, mismatches


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    started = time.perf_counter()
    verdicts, mismatches = census(count, first)
    for seed_value, verdict, report in mismatches:
        print(f"--- seed {seed_value}: {verdict}\n{report}\n")
    print(f"{count} programs (seeds {first}..{first + count - 1}) in "
          f"{time.perf_counter() - started:.0f} s:")
    for verdict, n in verdicts.most_common():
        print(f"  {n:5d}  {verdict}")


if __name__ == "__main__":
    main()
