"""Where a cold compile's milliseconds go in a new process: a per-phase breakdown.

    python -m benchmarks.profile_cold                    # on a GPU machine
    python -m benchmarks.profile_cold --repeat 7         # median of 7 fresh processes per phase
    python -m benchmarks.profile_cold --fake-driver      # anywhere: the CUDA path's host work,
                                                         # on the runtime tests' simulated driver
    python -m benchmarks.profile_cold --ptx              # anywhere: stop after PTX
    python -m benchmarks.profile_cold --cpu              # the CPU target
    python -m benchmarks.profile_cold --prof             # and the 25 costliest functions (cProfile)
    python -m benchmarks.profile_cold --no-warmup        # GPUNB_WARMUP=0: no warm-up thread

Each run is a fresh child process (package byte-compiled first) with the disk cache off. The
child creates the CUDA context (or nothing, for --ptx/--cpu) and its arrays and imports the
kernel's module before the clock starts, as benchmarks/bench_startup.py's "cold compile + 1st
launch" row does; then it launches a small kernel once and prints the time of each phase
(benchmarks/breakdown.py: fingerprint, cache lookup, compile setup and each compile stage,
loading the program, the argument packer, the rest), the imports inside each phase and the
garbage collector's pauses. `--prof` runs the child under cProfile (its overhead inflates every
figure). `--noprof` is accepted for older command lines (no profiler is the default).
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

KERNEL = textwrap.dedent("""
    from gpunb import cuda

    @cuda.jit
    def scale(out, x, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a
""")

CHILD = textwrap.dedent("""
    import cProfile, json, pstats, sys
    import numpy as np
    import gpunb
    from gpunb import cuda
    from benchmarks import breakdown

    mode, profile, as_json, fake = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", \\
        sys.argv[4] == "1"
    breakdown.install(fake_driver=fake)
    if mode == "cuda":
        gpunb.set_target("cuda")
        from gpunb.backends.cuda import driver
        driver.current_device()
    elif mode == "cpu":
        gpunb.set_target("cpu")
    x = cuda.to_device(np.ones(1024, np.float32))
    out = cuda.device_array(1024, np.float32)
    cuda.synchronize()
    import kernels_mod  # decorated, nothing compiled yet (as in bench_startup)
    profiler = cProfile.Profile()

    def first_launch():
        if profile:
            profiler.enable()
        if mode == "ptx":
            cuda.compile_ptx(kernels_mod.scale, "void(float32[::1], float32[::1], float32)")
        else:
            kernels_mod.scale[4, 256](out, x, np.float32(2.0))
            cuda.synchronize()
        profiler.disable()

    breakdown.measure(first_launch)
    data = breakdown.as_dict()
    from gpunb.backends import warmup
    from gpunb.backends.cuda import preload
    data["warmup"] = ", ".join(warmup.done) or "nothing"
    data["preload"] = ", ".join(preload.done) or "nothing"
    if mode != "ptx":
        data["event"] = str(kernels_mod.scale.cache_info()[0]["event"]).split(" scale")[0]
    if as_json:
        print(json.dumps(data))
    else:
        what = "cold compile to PTX" if mode == "ptx" else "cold compile + first launch"
        breakdown.report(f"{what} ({mode}{', simulated driver' if fake else ''})", data)
        print(f"  warm-up thread finished: {data['warmup']}; preload: {data['preload']}")
    if profile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
""")


def child_env(tmp: str, cache: bool, warmup: bool) -> dict:
    env = dict(os.environ, GPUNB_CACHE="1" if cache else "0", GPUNB_NOTICES="0",
               GPUNB_CACHE_DIR=os.path.join(tmp, "cache"),
               PYTHONPATH=os.pathsep.join(p for p in (tmp, REPO, os.environ.get("PYTHONPATH"))
                                          if p))
    if not warmup:
        env["GPUNB_WARMUP"] = "0"
    return env


def median_report(title: str, runs: list, report) -> None:
    """One breakdown whose every figure is the median over `runs` (dicts of as_dict())."""
    names = []
    for run in runs:
        names.extend(n for n in run["phases"] if n not in names)

    def med(values):
        return statistics.median(values) if values else 0.0

    phases = {}
    for name in names:
        entries = [run["phases"].get(name, {"ms": 0.0, "import_ms": 0.0, "modules": 0})
                   for run in runs]
        phases[name] = {k: med([e[k] for e in entries]) for k in ("ms", "import_ms", "modules")}
    data = {"total_ms": med([r["total_ms"] for r in runs]), "phases": phases,
            "cpu_ms": med([r["cpu_ms"] for r in runs]),
            **{k: med([r[k] for r in runs]) for k in ("gc_count", "gc_ms", "import_ms",
                                                      "modules")}}
    totals = ", ".join(f"{r['total_ms']:.1f}" for r in runs)
    report(f"{title}, median of {len(runs)} processes (totals: {totals})", data)
    events = sorted({r.get("event", "") for r in runs} - {""})
    warm = sorted({r.get("warmup", "") for r in runs} - {""})
    preload = sorted({r.get("preload", "") for r in runs} - {""})
    print(f"  cache events: {'; '.join(events) or '-'}; warm-up thread: {'; '.join(warm)}; "
          f"preload: {'; '.join(preload) or '-'}")


def child_runs(mode: str, fake: str, env: dict, repeat: int) -> list:
    """The breakdowns (breakdown.as_dict()) of `repeat` fresh CHILD processes, as JSON."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, mode, "0", "1", fake], env=env,
                             check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return runs


def repeat_option(argv: list) -> int:
    if "--repeat" in argv:
        return max(1, int(argv[argv.index("--repeat") + 1]))
    return 1


def main(argv: list[str]) -> int:
    mode = "ptx" if "--ptx" in argv else "cpu" if "--cpu" in argv else "cuda"
    profile = "1" if "--prof" in argv else "0"
    fake = "1" if "--fake-driver" in argv else "0"
    repeat = repeat_option(argv)
    compileall.compile_dir(os.path.join(REPO, "gpunb"), quiet=1)  # "package byte-compiled"
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernels_mod.py"), "w") as f:
            f.write(KERNEL)
        env = child_env(tmp, cache=False, warmup="--no-warmup" not in argv)
        if repeat == 1:
            subprocess.run([sys.executable, "-c", CHILD, mode, profile, "0", fake], env=env,
                           check=True)
            return 0
        runs = child_runs(mode, fake, env, repeat)
    from benchmarks.breakdown import report

    what = "cold compile to PTX" if mode == "ptx" else "cold compile + first launch"
    median_report(f"{what} ({mode}{', simulated driver' if fake == '1' else ''})", runs, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
