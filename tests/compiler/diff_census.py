"""Counts for the differential test against numba's njit (test_numba_diff.py) over a range of
seeds of diff_programs.Builder: how many programs agree, how many both refuse, how many numba
cannot run (a run-time exception a GPU thread cannot raise), and every mismatch in full.

    PYTHONPATH=. python tests/compiler/diff_census.py 0 500      # seeds 0..499
"""

from __future__ import annotations

import faulthandler
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_programs import Builder  # noqa: E402 - after the path
from numba_oracle_support import compare  # noqa: E402


def main() -> None:
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    verdicts, started = Counter(), time.perf_counter()
    for seed in range(first, first + count):
        faulthandler.dump_traceback_later(300, exit=True)  # a hang names where it hangs
        verdict, report = compare(Builder(seed).program())
        faulthandler.cancel_dump_traceback_later()
        verdicts[verdict] += 1
        if verdict == "mismatch":
            print(f"==== seed {seed}\n{report}\n", flush=True)
    print(dict(verdicts), f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
