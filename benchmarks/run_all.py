"""Print one table of gpunb beside numba-cuda and CuPy, measured in this run on this machine.

    python -m benchmarks.run_all --gpu [--json out.json]    # on a CUDA machine
    python -m benchmarks.run_all --cpu [--json out.json]    # anywhere: CPU target vs simulator

Columns: figure, gpunb, numba-cuda, CuPy, anchor/target, verdict. A tool that is absent or fails
shows "n/a" and the reason below the table; nothing is ever filled in from elsewhere.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from importlib import metadata

from benchmarks.common import Options, Row

GPU_MODULES = ("bench_launch", "bench_startup", "bench_saxpy", "bench_sgemm",
               "bench_sgemm_registers", "bench_laplace", "bench_fuse", "bench_profile",
               "bench_graphs", "bench_torch_op")
CPU_MODULES = ("bench_startup", "bench_cpu_target", "bench_fuse", "bench_profile",
               "bench_graphs", "bench_debugger")
COLUMNS = ("#", "figure", "gpunb", "numba-cuda", "CuPy", "anchor / target", "verdict")
WIDTHS = (2, 32, 13, 13, 13, 34, 26)


DISTS = ("gpunb", "llvmlite", "numpy", "numba", "numba-cuda", "cupy-cuda12x", "cupy-cuda13x",
         "cuda-bindings", "torch", "triton")


def versions(numba_python: str) -> dict:
    """Versions of what was measured; numba's from the interpreter that ran it."""
    out = {"python": platform.python_version()}
    for dist in DISTS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    if os.path.abspath(numba_python) != os.path.abspath(sys.executable):
        code = ("import importlib.metadata as m\nfor d in ('numba', 'numba-cuda'):\n"
                "    try: print(d, m.version(d))\n    except Exception: pass")
        try:
            proc = subprocess.run([numba_python, "-c", code], capture_output=True, text=True,
                                  timeout=60)
            for line in proc.stdout.splitlines():
                dist, version = line.split()
                out[dist] = f"{version} ({numba_python})"
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
    return out


def device() -> str:
    if os.environ.get("BENCH_DEVICE"):
        return os.environ["BENCH_DEVICE"]
    try:
        from benchmarks import bare_driver

        return bare_driver.device_name()
    except Exception:  # noqa: BLE001 - no GPU: describe the host instead
        return f"host CPU, {os.cpu_count()} cores ({platform.processor() or platform.machine()})"


def fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def _line(cells) -> str:
    return "  ".join(fit(c, w).ljust(w) for c, w in zip(cells, WIDTHS, strict=True)).rstrip()


def render(rows: list[Row]) -> str:
    """The table, then notes keyed by row number; a note shared by several rows prints once."""
    lines = [_line(COLUMNS), "  ".join("-" * w for w in WIDTHS)]
    notes: dict[str, list[int]] = {}
    for number, row in enumerate(rows, 1):
        lines.append(_line((str(number), row.figure, row.gpunb.text, row.numba.text,
                            row.cupy.text, row.anchor, row.verdict)))
        texts = [f"{name}: {c.note}" for name, c in
                 (("gpunb", row.gpunb), ("numba-cuda", row.numba), ("CuPy", row.cupy)) if c.note]
        if len(row.figure) > WIDTHS[1] or len(row.anchor) > WIDTHS[5] or \
                len(row.verdict) > WIDTHS[6]:
            texts.append(f"in full: {row.figure} | {row.anchor} | {row.verdict}")
        for text in (*texts, *row.notes):
            notes.setdefault(text, []).append(number)
    lines += ["", "notes:"]
    for text, numbers in notes.items():
        key = ",".join(map(str, numbers))
        lines.append(textwrap.fill(text, 118, initial_indent=f"  [{key}] ",
                                   subsequent_indent="      "))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run_all", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    suite = parser.add_mutually_exclusive_group(required=True)
    suite.add_argument("--gpu", action="store_true", help="the GPU figures (needs a CUDA GPU)")
    suite.add_argument("--cpu", action="store_true", help="CPU target vs simulator, startup")
    parser.add_argument("--json", help="also write the rows and run facts to this path")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke)")
    parser.add_argument("--only", help="comma-separated module names, e.g. bench_saxpy")
    parser.add_argument("--numba-python", default=os.environ.get("BENCH_NUMBA_PYTHON",
                                                                 sys.executable),
                        help="interpreter with numba-cuda, for the simulator and import figures")
    parser.add_argument("--sim-budget", type=float, default=None,
                        help="seconds the simulator may spend per figure (default 30; quick 2)")
    parser.add_argument("--sim-full", action="store_true", help="simulate whole grids")
    args = parser.parse_args(argv)

    opts = Options(suite="gpu" if args.gpu else "cpu", quick=args.quick,
                   numba_python=args.numba_python,
                   sim_budget_s=args.sim_budget or (2.0 if args.quick else 30.0),
                   sim_full=args.sim_full)
    names = GPU_MODULES if args.gpu else CPU_MODULES
    if args.only:
        names = tuple(n for n in names if n in args.only.split(","))
    started, rows = time.perf_counter(), []
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        rows.extend(module.run(opts))
    elapsed = time.perf_counter() - started
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "suite": opts.suite, "quick": opts.quick, "device": device(),
            "host": f"{platform.node()}, {os.cpu_count()} cores",
            "versions": versions(opts.numba_python),
            "numba_python": opts.numba_python, "seconds": round(elapsed, 1)}
    print(f"gpunb benchmarks, {opts.suite} suite{' (quick)' if opts.quick else ''} - "
          f"{meta['date']} - {meta['device']}")
    print(", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + "\n")
    print(render(rows))
    print(f"\n({elapsed:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": [r.as_json() for r in rows]}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
