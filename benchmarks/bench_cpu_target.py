"""gpunb's CPU target vs numba @njit(parallel=True), and vs numba's simulator, same kernels.

First rows: the same work written for numba's multicore CPU JIT (njit_figures.py) beside gpunb's
CPU target running the GPU kernel, at the issue-17 sizes (4M-element shared-memory reduction,
256^3 shared-memory tiled matmul, 4M saxpy). Both are timed in this process, alternately, and the
best of several runs is kept (the development machine is shared: the minimum is the figure least
disturbed by other load). The same kernels compiled without bounds checks (GPUNB_BOUNDSCHECK=0)
run in the same alternation, so the note's "without bounds checks" figure is what the checks
cost under the same conditions; so are the kernels compiled without stopping points
(GPUNB_CPU_INTERRUPT=0: the loop back-edge and barrier checks that let Ctrl-C and the watchdog
stop a launch), what the note's "without stopping points" figure gives. The note also gives the
coroutine path's time for the same kernel (cpu_mode="coroutine", what every barrier kernel ran
as before work-group loops). A last row times the densest case for stopping points, per-thread
loops with small bodies, with and without them, alternately.

Then gpunb vs numba's simulator (NUMBA_ENABLE_CUDASIM=1): gpunb runs each figure here, compiled,
over the whole grid: median of several launches after a warm-up that compiles. The simulator runs
in a fresh process (see cpu_figures.simulate); when it times only the first blocks of the grid
under the budget, its whole-grid time is that time scaled by blocks (the simulator runs blocks
one after another) and the cell says so.
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
    missing_module,
    na,
    numba_python_missing,
)
from benchmarks.cpu_figures import QUICK_SIZES, SIZES, TITLES, prepare, size_text, timed

TARGET_RATIO = 1000.0
# figure -> (size, how many times njit's time gpunb may take): issue 17
NJIT_FIGURES = {"reduction": (1 << 22, 5.0), "matmul256": (256, 5.0), "saxpy": (1 << 22, 1.5)}
NJIT_QUICK_SIZES = {"reduction": 1 << 18, "matmul256": 64, "saxpy": 1 << 18}


def _best_ms(run, sync, repeats: int) -> float:
    return min(timed(run, sync) for _ in range(repeats)) * 1e3


def _njit_row(figure: str, n: int, limit: float, workdir: Path, repeats: int) -> Row:
    """gpunb (work-group loops) and njit(parallel=True) on one figure, alternately."""
    import gpunb
    from benchmarks import njit_figures
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda
    from gpunb.foundation import config

    gpunb.set_target("cpu")
    kernels = load_kernels("gpunb", workdir)
    problem = prepare(figure, cuda, kernels, n)
    kernel = {"saxpy": kernels.saxpy, "reduction": kernels.block_sum}.get(
        figure, kernels.fast_matmul)
    problem.launch(problem.total)
    if not problem.check():
        raise AssertionError(f"gpunb CPU target: wrong result for {figure}")
    mode = kernel.cpu_mode()
    nj_run, nj_check = njit_figures.prepare(figure, n)
    if not nj_check():
        raise AssertionError(f"njit reference: wrong result for {figure}")
    # the same kernels without bounds checks, timed in the same alternation: what the checks
    # cost is then the difference of two figures taken under the same conditions
    plain = _variant_problem(figure, n, workdir, {"GPUNB_BOUNDSCHECK": "0"})
    unpolled = _variant_problem(figure, n, workdir, {"GPUNB_CPU_INTERRUPT": "0"})
    gp_ms, nj_ms, plain_ms, unpolled_ms = [], [], [], []
    for _ in range(repeats):
        gp_ms.append(_best_ms(lambda: problem.launch(problem.total), cuda.synchronize, 1))
        nj_ms.append(_best_ms(nj_run, lambda: None, 1))
        plain_ms.append(_best_ms(lambda: plain.launch(plain.total), cuda.synchronize, 1))
        unpolled_ms.append(_best_ms(lambda: unpolled.launch(unpolled.total), cuda.synchronize,
                                    1))
    slow = _variant_problem(figure, n, workdir, {"GPUNB_CPU_MODE": "coroutine"})
    coroutine = _best_ms(lambda: slow.launch(slow.total), cuda.synchronize,
                         max(2, repeats // 3))
    unchecked = min(plain_ms)
    gp, nj = min(gp_ms), min(nj_ms)
    ratio = gp / nj
    verdict = (f"met: {ratio:.2f}x njit" if ratio <= limit else
               f"MISSED: {ratio:.1f}x njit")
    title = TITLES[figure].format(size=size_text(figure, n))
    return Row(f"CPU vs njit: {title}", "ms",
               cell(gp, "{:.2f} ms", f"best of {repeats}; mode: {mode}; coroutine mode: "
                                     f"{coroutine:.1f} ms; without bounds checks: "
                                     f"{unchecked:.2f} ms; without stopping points: "
                                     f"{min(unpolled_ms):.2f} ms; "
                                     f"{config.cpu_threads()} threads"),
               cell(nj, "{:.2f} ms", f"best of {repeats}; {_njit_threads()} threads"),
               na("CuPy has no CPU target"), f"gpunb <= {limit:g}x njit(parallel)", verdict,
               ("numba-cuda column: the same work for numba @njit(parallel=True) "
                "(benchmarks/njit_figures.py), measured alternately with gpunb in this run",))


def _stopping_points_row(workdir: Path, n: int, repeats: int) -> Row:
    """Per-thread loops (a counted loop LLVM vectorises, a while loop) with and without the
    stopping points, alternately: what interruptibility costs where its checks are densest."""
    import numpy as np

    import gpunb
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    gpunb.set_target("cpu")
    threads = 8192
    x = cuda.to_device(np.arange(n, dtype=np.int64))
    out = cuda.device_array(threads, np.int64)
    expected = np.arange(1, threads + 1, dtype=np.int64) * int(np.arange(n).sum())
    variants = {}
    for flag in ("1", "0"):
        kernels = _with_env({"GPUNB_CPU_INTERRUPT": flag},
                            lambda tag=flag: load_kernels("gpunb", workdir / f"polls-{tag}"))
        launches = [lambda k=k: k[threads // 256, 256](out, x, n)
                    for k in (kernels.thread_for_sum, kernels.thread_while_sum)]
        for launch in launches:  # compiled under the variant's environment
            _with_env({"GPUNB_CPU_INTERRUPT": flag}, launch)
            if not np.array_equal(out.copy_to_host(), expected):
                raise AssertionError("gpunb CPU target: wrong per-thread loop sums")
        variants[flag] = launches
    best = {(flag, k): [] for flag in variants for k in range(2)}
    for _ in range(repeats):
        for flag, launches in variants.items():
            for k, launch in enumerate(launches):
                best[(flag, k)].append(_best_ms(launch, cuda.synchronize, 1))
    with_points = sum(min(best[("1", k)]) for k in range(2))
    without = sum(min(best[("0", k)]) for k in range(2))
    ratio = with_points / without
    detail = "; ".join(f"{name}: {min(best[('1', k)]):.2f} vs {min(best[('0', k)]):.2f} ms"
                       for k, name in enumerate(("for", "while")))
    return Row("CPU stopping points: per-thread loops", "ms",
               cell(with_points, "{:.2f} ms", f"best of {repeats}, with vs without: {detail}; "
                                              f"{threads} threads x {n} iterations"),
               cell(without, "{:.2f} ms", "gpunb without stopping points (GPUNB_CPU_INTERRUPT=0)"),
               na("CuPy has no CPU target"), "with <= 1.05x without",
               f"met: {ratio:.3f}x" if ratio <= 1.05 else f"MISSED: {ratio:.2f}x",
               ("numba-cuda column: gpunb's own kernels compiled without stopping points, "
                "timed alternately in this run",))


def _with_env(env: dict, fn):
    import os

    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


def _njit_threads() -> int:
    import numba

    return numba.get_num_threads()


def _variant_problem(figure: str, n: int, workdir: Path, env: dict):
    """The figure with kernels compiled (by a first launch) under `env`:
    GPUNB_CPU_MODE=coroutine (the pre-issue-17 way), GPUNB_BOUNDSCHECK=0 (what the default
    bounds checks cost)."""
    import os

    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        tag = "-".join(f"{k}={v}" for k, v in sorted(env.items()))
        kernels = load_kernels("gpunb", workdir / tag)
        problem = prepare(figure, cuda, kernels, n)
        problem.launch(problem.total)
        if not problem.check():
            raise AssertionError(f"gpunb CPU target ({tag}): wrong result for {figure}")
        return problem
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


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
        absent = missing_module("numba", "numba")
        for figure, (n, limit) in NJIT_FIGURES.items():
            n = NJIT_QUICK_SIZES[figure] if opts.quick else n
            if absent:
                continue
            try:
                rows.append(_njit_row(figure, n, limit, workdir, 3 if opts.quick else 9))
            except Exception as exc:  # noqa: BLE001 - reported in the table
                rows.append(Row(f"CPU vs njit: {figure}", "ms",
                                na(f"error: {type(exc).__name__}: {str(exc)[:300]}"),
                                na("not measured"), na("CuPy has no CPU target"), "", "n/a"))
        try:
            rows.append(_stopping_points_row(workdir, 256 if opts.quick else 2048,
                                             3 if opts.quick else 9))
        except Exception as exc:  # noqa: BLE001 - reported in the table
            rows.append(Row("CPU stopping points: per-thread loops", "ms",
                            na(f"error: {type(exc).__name__}: {str(exc)[:300]}"),
                            na("not measured"), na("CuPy has no CPU target"), "", "n/a"))
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


if __name__ == "__main__":  # python -m benchmarks.bench_cpu_target [--quick] [--sim-budget S]
    import sys

    from benchmarks.run_all import main

    sys.exit(main(["--cpu", "--only", "bench_cpu_target", *sys.argv[1:]]))
