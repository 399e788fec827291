"""`python -m tools.numba_cuda_suite` (from the repo root): run numba-cuda's cudapy tests
against gpunb, or re-render a results file. See README.md."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import report, runner, scope, whatif


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.numba_cuda_suite")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the suite and write results.json and summary.txt")
    run.add_argument("--src", help=f"numba-cuda checkout (default: ${runner.ENV_SRC})")
    run.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "numba-cuda-parity"),
                     help="output directory (default: $TMPDIR/numba-cuda-parity)")
    run.add_argument("--target", default="cpu", choices=("cpu", "cuda", "auto"))
    run.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    run.add_argument("--cpu-threads", type=int, default=2,
                     help="GPUNB_CPU_THREADS for each session (0: gpunb's default)")
    run.add_argument("--test-timeout", type=float, default=120.0)
    run.add_argument("--file-timeout", type=float, default=1800.0)
    run.add_argument("--all", action="store_true", help="also run out-of-scope tests")
    run.add_argument("--what-if", action="store_true",
                     help="exploratory: stand-ins for a few missing names (whatif.py)")
    run.add_argument("files", nargs="*", help="test file names (default: all test_*.py)")
    show = sub.add_parser("report", help="print the summary of a results.json")
    show.add_argument("results")
    args = parser.parse_args(argv)
    if args.command == "report":
        results = json.loads(Path(args.results).read_text())
        report.reclassify(results)
        print(report.render(results))
        return 0
    return _run(args)


def _run(args) -> int:
    tests_dir = runner.find_tests_dir(args.src)
    cudapy = tests_dir / "cudapy"
    names = args.files or sorted(p.name for p in cudapy.glob("test_*.py"))
    files = [cudapy / (n if n.endswith(".py") else f"{n}.py") for n in names]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    opts = runner.RunOptions(tests_dir=tests_dir, out_dir=out, target=args.target,
                             test_timeout=args.test_timeout, file_timeout=args.file_timeout,
                             run_all=args.all, cpu_threads=args.cpu_threads)
    if args.what_if:
        os.environ[whatif.ENV] = "1"
    started = time.time()
    results = runner.run_all(files, opts, args.jobs)
    for name in names:  # files with nothing at all (e.g. only out-of-scope, not run)
        results["files"].setdefault(name, {})
    for name, info in results["files"].items():
        verdict = scope.FILES.get(name)
        info["scope"] = verdict[0] if verdict else scope.IN
    results["meta"] = {
        "numba_cuda_tests": str(tests_dir),
        "numba_cuda_commit": _git_head(tests_dir),
        "gpunb_commit": _git_head(runner.REPO),
        "target": args.target,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "python": sys.version.split()[0],
        "argv": sys.argv[1:],
        "what_if": bool(args.what_if),
    }
    results["summary"] = report.summarize(results)
    (out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    text = report.render(results)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    print(f"\nwrote {out / 'results.json'} and {out / 'summary.txt'}")
    return 0


def _git_head(path: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


if __name__ == "__main__":
    sys.exit(main())
