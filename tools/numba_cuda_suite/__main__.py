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

from . import report, runner, scope, source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.numba_cuda_suite")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the suite and write results.json and summary.txt")
    run.add_argument("--src", help="numba-cuda checkout or wheel (default: $"
                     f"{runner.ENV_SRC}, else numba-cuda {source.PINNED_VERSION}'s wheel from "
                     "the package index, cached)")
    run.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "numba-cuda-parity"),
                     help="output directory (default: $TMPDIR/numba-cuda-parity)")
    run.add_argument("--target", default="cpu", choices=("cpu", "cuda", "auto"))
    run.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    run.add_argument("--cpu-threads", type=int, default=2,
                     help="GPUNB_CPU_THREADS for each session (0: gpunb's default)")
    run.add_argument("--test-timeout", type=float, default=300.0)
    run.add_argument("--file-timeout", type=float, default=1800.0)
    run.add_argument("--all", action="store_true", help="also run out-of-scope tests")
    run.add_argument("--resume", action="store_true",
                     help="keep the files already in OUT/results.json; run only the others")
    run.add_argument("--check", action="store_true",
                     help="exit 1 unless the targets hold (pass rate, wrong results, "
                          "internal errors: report.TARGETS)")
    run.add_argument("--subdir", default="cudapy",
                     help="which directory of numba-cuda's tests: cudapy (default), cudadrv, "
                          "doc_examples")
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
    cudapy = tests_dir / args.subdir
    names = args.files or sorted(p.name for p in cudapy.glob("test_*.py"))
    names = [n if n.endswith(".py") else f"{n}.py" for n in names]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    opts = runner.RunOptions(tests_dir=tests_dir, out_dir=out, target=args.target,
                             test_timeout=args.test_timeout, file_timeout=args.file_timeout,
                             run_all=args.all, cpu_threads=args.cpu_threads)
    results = {"files": {}, "tests": {}}
    results_path = out / "results.json"
    if args.resume and results_path.exists():
        results = json.loads(results_path.read_text())
        done = set(results["files"])
        print(f"resuming: {len(done)} files already in {results_path}")
        names = [n for n in names if n not in done]
    started = time.time()
    meta = {
        "numba_cuda_tests": str(tests_dir),
        "numba_cuda_commit": _git_head(tests_dir),
        "numba_cuda_version": source.version_of(tests_dir),
        "gpunb_commit": _git_head(runner.REPO),
        "target": args.target,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "python": sys.version.split()[0],
        "argv": sys.argv[1:],
    }

    def save(partial: dict) -> None:  # after every file: an interrupted run keeps what it did
        results["files"].update(partial["files"])
        results["tests"].update(partial["tests"])
        for name, info in results["files"].items():
            verdict = scope.FILES.get(name)
            info["scope"] = verdict[0] if verdict else scope.IN
        results["meta"] = {**results.get("meta", {}), **meta,
                           "seconds": round(time.time() - started, 1)}
        results["summary"] = report.summarize(results)
        tmp = results_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(results, indent=1, sort_keys=True))
        tmp.replace(results_path)

    runner.run_all([cudapy / n for n in names], opts, args.jobs, on_file=save)
    for name in names:  # files with nothing at all (e.g. only out-of-scope, not run)
        results["files"].setdefault(name, {})
    save({"files": {}, "tests": {}})
    text = report.render(results)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    print(f"\nwrote {results_path} and {out / 'summary.txt'}")
    if args.check:
        problems = report.check_targets(results)
        for line in problems:
            print(f"FAIL: {line}")
        return 1 if problems else 0
    return 0


def _git_head(path: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


if __name__ == "__main__":
    sys.exit(main())
