"""Cold compile of everyday kernels, one fresh process per compile, split into stages.

    python -m benchmarks.compile_spread                      # PTX and CPU target, 5 runs each
    python -m benchmarks.compile_spread --repeat 9 --only ptx
    python -m benchmarks.compile_spread --kernels saxpy,histogram --numba
    python -m benchmarks.compile_spread --json out.json
    python -m benchmarks.compile_spread --against /path/to/other/checkout   # before/after

Each figure is the median over `--repeat` fresh processes (package byte-compiled first, disk
cache off, GPUNB_CACHE_DIR empty) of one kernel of benchmarks/everyday_kernels.py compiled for
its signature: `ptx` is cuda.compile_ptx (no GPU needed), `cpu` is the CPU target's
dispatcher.compile (host code built and loaded). The clock starts after `import gpunb` and the
kernels' module import, so the first compile's own imports are counted, as a user's first
cell pays them. `cpu_ms` is the process's CPU time (all threads, user + system) over the
compile, the figure to compare on a shared, noisy machine; `wall_ms` beside it; `stages` are
the STAGE_FINISHED events' ms. `--numba` adds numba.cuda.compile_ptx of the same source where
numba's CUDA target can compile (NVVM found), else says why not. `--against DIR` measures the
gpunb of another checkout too (DIR/gpunb, e.g. `git worktree add /tmp/before main`), its runs
interleaved with this tree's so that the machine's load drifts over both alike.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import json, sys, time
    tool, mode, name, workdir, bench = sys.argv[1:6]
    sys.path.insert(0, bench)  # this checkout's benchmarks, whichever gpunb is measured
    from everyday_kernels import SIGNATURES, load_kernels
    stages = {}
    if tool == "gpunb":
        import gpunb
        from gpunb import cuda
        from gpunb.foundation import events

        def on_stage(event):
            stages[str(event.stage)] = stages.get(str(event.stage), 0.0) + event.ms

        events.subscribe(events.EventKind.STAGE_FINISHED, on_stage)
        if mode == "cpu":
            gpunb.set_target("cpu")
    else:
        from numba import cuda
    kernel = getattr(load_kernels(tool, workdir), name)
    sig = SIGNATURES[name]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if mode == "ptx":
        ptx = cuda.compile_ptx(kernel, sig, cc=(8, 0))[0]
        size = len(ptx.splitlines())
    else:
        kernel.compile(sig)
        size = 0
    cpu_ms = (time.process_time() - cpu0) * 1e3
    wall_ms = (time.perf_counter() - wall0) * 1e3
    print(json.dumps({"cpu_ms": cpu_ms, "wall_ms": wall_ms, "stages": stages, "lines": size,
                      "gpunb": sys.modules["gpunb"].__file__ if tool == "gpunb" else ""}))
""")


def child_env(tmp: str, tree: str) -> dict:
    return dict(os.environ, GPUNB_CACHE="0", GPUNB_NOTICES="0",
                GPUNB_CACHE_DIR=os.path.join(tmp, "cache"),
                PYTHONPATH=os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p))


def one_run(tool: str, mode: str, name: str, tmp: str, tree: str = REPO) -> dict:
    work = tempfile.mkdtemp(dir=tmp)
    bench = os.path.join(REPO, "benchmarks")
    done = subprocess.run([sys.executable, "-c", CHILD, tool, mode, name, work, bench],
                          env=child_env(work, tree), capture_output=True, text=True,
                          cwd=work)  # (not this checkout: `-c` puts the cwd first on sys.path)
    if done.returncode:
        lines = [ln for ln in done.stderr.splitlines() if "Error" in ln] or ["?"]
        return {"error": lines[-1].strip()[:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(runs: list) -> dict:
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": runs[0]["error"]}
    names = sorted({s for r in good for s in r["stages"]})
    return {"cpu_ms": statistics.median(r["cpu_ms"] for r in good),
            "wall_ms": statistics.median(r["wall_ms"] for r in good),
            "stages": {s: statistics.median(r["stages"].get(s, 0.0) for r in good)
                       for s in names},
            "lines": good[0]["lines"], "runs": len(good)}


def option(argv: list, name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv: list[str]) -> int:
    from benchmarks.everyday_kernels import SIGNATURES

    repeat = int(option(argv, "--repeat", "5"))
    modes = option(argv, "--only", "ptx,cpu").split(",")
    names = option(argv, "--kernels", ",".join(SIGNATURES)).split(",")
    tools = ["gpunb", "numba"] if "--numba" in argv else ["gpunb"]
    trees = {"gpunb": REPO}
    if "--against" in argv:
        trees["before"] = os.path.abspath(option(argv, "--against", ""))
        tools.insert(1, "before")
    for tree in set(trees.values()):
        compileall.compile_dir(os.path.join(tree, "gpunb"), quiet=1)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            for name in names:
                measured = [tool for tool in tools if tool != "numba" or mode == "ptx"]
                runs: dict = {tool: [] for tool in measured}
                for _ in range(repeat):  # the tools' runs interleaved: load drifts alike
                    for tool in measured:
                        lib = "numba" if tool == "numba" else "gpunb"
                        runs[tool].append(one_run(lib, mode, name, tmp, trees.get(tool, REPO)))
                for tool in measured:
                    result = results[f"{tool}:{mode}:{name}"] = median_of(runs[tool])
                    print(format_row(tool, mode, name, result), flush=True)
        summary(results, modes, tools)
    if "--json" in argv:
        with open(option(argv, "--json", ""), "w") as f:
            json.dump(results, f, indent=1)
    return 0


def format_row(tool: str, mode: str, name: str, r: dict) -> str:
    if "error" in r:
        return f"{tool:6} {mode:3} {name:16} failed: {r['error']}"
    stages = " ".join(f"{k}={v:.0f}" for k, v in r["stages"].items())
    return (f"{tool:6} {mode:3} {name:16} cpu {r['cpu_ms']:7.1f} ms  wall {r['wall_ms']:7.1f} ms"
            f"  [{stages}]")


def summary(results: dict, modes: list, tools: list) -> None:
    for mode in modes:
        for tool in tools:
            values = [r["cpu_ms"] for k, r in results.items()
                      if k.startswith(f"{tool}:{mode}:") and "error" not in r]
            if values:
                print(f"median over kernels, {tool} {mode}: cpu {statistics.median(values):.1f} "
                      f"ms ({len(values)} kernels)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
