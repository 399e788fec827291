"""gpunb's CPU target vs numba's simulator (NUMBA_ENABLE_CUDASIM=1), same kernels, same sizes.

gpunb runs each figure here, compiled, over the whole grid: median of several launches after a
warm-up that compiles. The simulator runs in a fresh process (see cpu_figures.simulate); when it
times only the first blocks of the grid under the budget, its whole-grid time is that time scaled
by blocks (the simulator runs blocks one after another) and the cell says so.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from benchmarks.common import (
    Cell,
    Options,
    Row,
    attempt,
    cell,
    fresh_process,
    median,
    na,
    numba_python_missing,
)
from benchmarks.cpu_figures import QUICK_SIZES, SIZES, TITLES, prepare, size_text, timed

TARGET_RATIO = 1000.0


def _gpunb(figure: str, n: int, workdir: Path, repeats: int) -> Cell:
    import gpunb
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    gpunb.set_target("cpu")
    problem = prepare(figure, cuda, load_kernels("gpunb", workdir), n)
    compile_s = timed(lambda: problem.launch(problem.total), cuda.synchronize)
    if not problem.check():
        raise AssertionError(f"gpunb CPU target: wrong result for {figure}")
    seconds = median([timed(lambda: problem.launch(problem.total), cuda.synchronize)
                      for _ in range(repeats)])
    return cell(seconds * 1e3, "{:.2f} ms",
                f"median of {repeats} launches; first launch incl. compile {compile_s:.2f} s")


def _simulator(figure: str, n: int, workdir: Path, opts: Options) -> Cell:
    args = {"figure": figure, "n": n, "budget_s": opts.sim_budget_s, "full": opts.sim_full}
    result = fresh_process("sim", "numba", workdir, {"NUMBA_ENABLE_CUDASIM": "1",
                                                     "BENCH_ARGS": json.dumps(args)},
                           python=opts.numba_python, timeout=24 * 3600)
    if result["ok"] is False:
        raise AssertionError(f"numba simulator: wrong result for {figure}")
    if result["units"] == result["total"]:
        note = f"whole grid ({result['blocks_total']} blocks) timed"
    else:
        note = (f"est.: {result['blocks_timed']} of {result['blocks_total']} blocks timed "
                f"({result['seconds']:.1f} s), scaled by blocks")
    return cell(result["estimate"] * 1e3, "{:.0f} ms", note)


def _ratio_verdict(gp: Cell, sim: Cell) -> str:
    if gp.value is None or sim.value is None:
        return "n/a"
    ratio = sim.value / gp.value
    if ratio >= TARGET_RATIO:
        return f"met: {ratio:,.0f}x faster"
    return f"MISSED: only {ratio:,.0f}x faster"


def run(opts: Options) -> list[Row]:
    sizes = QUICK_SIZES if opts.quick else SIZES
    repeats = 3 if opts.quick else 7
    sim_absent = numba_python_missing(opts.numba_python)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpunb-bench-") as tmp:
        workdir = Path(tmp)
        for figure, n in sizes.items():
            gp = attempt(lambda f=figure, n=n: _gpunb(f, n, workdir, repeats))
            sim = attempt(lambda f=figure, n=n: _simulator(f, n, workdir, opts), sim_absent)
            title = TITLES[figure].format(size=size_text(figure, n))
            rows.append(Row(f"CPU vs sim: {title}", "ms", gp,
                            sim, na("CuPy has no CPU target"),
                            f"sim/gpunb >= {TARGET_RATIO:,.0f}x", _ratio_verdict(gp, sim),
                            ("numba-cuda column: numba's simulator (NUMBA_ENABLE_CUDASIM=1), one "
                             "launch; gpunb: its CPU target, whole grid",)))
    return rows
