"""How the CPU target's issue-17 figures scale with host threads, with and without bounds checks.

    python -m benchmarks.cpu_scaling [--figures matmul256,reduction,saxpy] [--threads 1,2,4,8,16]

For each thread count (GPUNB_CPU_THREADS for gpunb, numba.set_num_threads for njit, both read at
every launch), the checked kernels, the same kernels compiled with GPUNB_BOUNDSCHECK=0, and
njit(parallel=True) take turns, launch by launch; each cell is the best wall time, and beside it
the process CPU time of that launch (every thread of the process, so time spent spinning or
waiting on a contended cache line shows there even when the wall time hides it). A figure whose
wall time stops falling while its CPU time grows with the threads is contending for something
shared; one whose CPU time stays flat but whose wall time does not fall is not getting the
threads at all.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.cpu_figures import prepare

SIZES = {"matmul256": 256, "reduction": 1 << 22, "saxpy": 1 << 22}


def _problem(figure: str, workdir: Path, boundscheck: bool):
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    os.environ["GPUNB_BOUNDSCHECK"] = "1" if boundscheck else "0"
    try:
        kernels = load_kernels("gpunb", workdir / f"bc{int(boundscheck)}")
        problem = prepare(figure, cuda, kernels, SIZES[figure])
        problem.launch(problem.total)
        if not problem.check():
            raise AssertionError(f"gpunb: wrong result for {figure}")
        return problem
    finally:
        os.environ.pop("GPUNB_BOUNDSCHECK")


def _time(run) -> tuple[float, float]:
    """(wall ms, process CPU ms) of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    run()
    return (time.perf_counter() - w0) * 1e3, (time.process_time() - c0) * 1e3


def measure(figure: str, threads: list[int], rounds: int) -> list[tuple]:
    """Rows (threads, checked, unchecked, njit), each a (wall, cpu) pair: best wall of `rounds`."""
    import numba

    import gpunb
    from benchmarks import njit_figures

    gpunb.set_target("cpu")
    workdir = Path(tempfile.mkdtemp(prefix="gpunb-scaling-"))
    checked, plain = _problem(figure, workdir, True), _problem(figure, workdir, False)
    nj_run, nj_check = njit_figures.prepare(figure, SIZES[figure])
    if not nj_check():
        raise AssertionError(f"njit: wrong result for {figure}")
    rows = []
    for count in threads:
        os.environ["GPUNB_CPU_THREADS"] = str(count)
        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
        runs = (lambda: checked.launch(checked.total), lambda: plain.launch(plain.total),
                nj_run)
        for run in runs:  # a warm-up at this thread count (pools grow on first use)
            run()
        samples: list[list] = [[], [], []]
        for _ in range(rounds):
            for k, run in enumerate(runs):
                samples[k].append(_time(run))
        rows.append((count, *(min(s) for s in samples)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", default="matmul256,reduction,saxpy")
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    print(f"{os.cpu_count()} CPUs; each cell: best wall ms (process CPU ms of that launch)")
    for figure in args.figures.split(","):
        print(f"\n{figure} ({SIZES[figure]})")
        print(f"{'threads':>7}  {'checked':>17}  {'unchecked':>17}  {'njit(parallel)':>17}  "
              f"{'checked/njit':>12}  {'checks cost':>11}")
        for count, checked, plain, nj in measure(figure, threads, args.rounds):
            cells = "  ".join(f"{w:7.2f} ({c:7.2f})" for w, c in (checked, plain, nj))
            print(f"{count:>7}  {cells}  {checked[0] / nj[0]:>11.2f}x  "
                  f"{checked[0] / plain[0]:>10.2f}x")


if __name__ == "__main__":
    main()
