"""Figures that need a new process each time: cold compile, disk-cache hit, import time.

Every sample is a fresh `python -m benchmarks.fresh` process with its own temporary cache
directories, so nothing compiled or imported by an earlier sample (or by this process) helps it.
Context creation and array allocation happen before the clock starts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.common import (
    Cell,
    Options,
    Row,
    attempt,
    cell,
    fresh_process,
    gpu_missing,
    median,
    missing_module,
    na,
    numba_python_missing,
    verdict_at_most,
)

QUIET = {"NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0", "GPUNB_NOTICES": "0"}


def _samples(task: str, tool: str, env_for, count: int, python: str | None = None,
             populate: bool = False) -> tuple[list[float], set]:
    """Seconds from `count` fresh processes (after one populating run when `populate`)."""
    seconds, events = [], set()
    with tempfile.TemporaryDirectory(prefix="gpunb-bench-") as tmp:
        workdir = Path(tmp)
        env = {**QUIET, **env_for(workdir)}
        if populate:
            fresh_process(task, tool, workdir, env, python)
        for _ in range(count):
            result = fresh_process(task, tool, workdir, env, python)
            if result.get("ok") is False:
                raise RuntimeError(f"{tool}: wrong result in the fresh process")
            seconds.append(result["seconds"])
            events.add(result.get("event") or ", ".join(result.get("touched", [])) or "-")
    return seconds, events


def _seconds_cell(task: str, tool: str, env_for, count: int, fmt: str, scale: float = 1.0,
                  python: str | None = None, populate: bool = False) -> Cell:
    seconds, events = _samples(task, tool, env_for, count, python, populate)
    note = f"median of {count} new processes; " + "; ".join(sorted(events))
    return cell(median(seconds) * scale, fmt, note)


def _gpunb_env(target: str, cache: bool, shared: bool = False):
    """The environment of a gpunb sample; `shared`: a shared cache whose entries are
    authenticated with a team key (README "Cache security"), as a cluster's cache is."""
    def env(workdir: Path) -> dict:
        out = {"GPUNB_TARGET": target, "GPUNB_CACHE": "1" if cache else "0",
               "GPUNB_CACHE_DIR": str(workdir / "gpunb-cache")}
        if shared:
            out.update(GPUNB_CACHE_SHARED="1", GPUNB_CACHE_KEY_FILE=_team_key(workdir))
        return out
    return env


def _team_key(workdir: Path) -> str:
    from gpunb.cache import auth

    path = workdir / "keys" / "cache.key"
    if not path.exists():
        auth.generate(str(path))
    return str(path)


def _numba_env(workdir: Path) -> dict:
    return {"NUMBA_CACHE_DIR": str(workdir / "numba-cache"), "NUMBA_ENABLE_CUDASIM": "0"}


def _cupy_env(workdir: Path) -> dict:
    return {"CUPY_CACHE_DIR": str(workdir / "cupy-cache")}


def cold_compile_row(opts: Options) -> Row:
    count = 2 if opts.quick else 5
    if opts.suite == "cpu":
        gp = attempt(lambda: _seconds_cell("cold", "gpunb-cpu", _gpunb_env("cpu", False), count,
                                           "{:.3f} s"))
        why = "the simulator interprets Python: it compiles nothing"
        return Row("CPU: cold compile + 1st launch", "s", gp, na(why),
                   na("CuPy has no CPU target"), "<= 0.2 s (issue 3)",
                   verdict_at_most(gp.value, 0.2, "s"),
                   ("small kernel, fresh process, disk cache off",))
    no_gpu = gpu_missing()
    nb_absent = no_gpu or missing_module("numba.cuda", "numba-cuda")
    gp = attempt(lambda: _seconds_cell("cold", "gpunb", _gpunb_env("cuda", False), count,
                                       "{:.3f} s"), no_gpu)
    nb = attempt(lambda: _seconds_cell("cold", "numba", _numba_env, count, "{:.3f} s"), nb_absent)
    cp = attempt(lambda: _seconds_cell("cold", "cupy", _cupy_env, count, "{:.3f} s"),
                 no_gpu or missing_module("cupy", "cupy-cuda12x"))
    return Row("cold compile + 1st launch", "s", gp, nb, cp, "<= 0.15 s; numba 1.3, CuPy 0.037",
               verdict_at_most(gp.value, 0.15, "s"),
               ("small kernel, fresh process each, context created before the clock; "
                "anchors from DESIGN (CuPy: NVRTC RawKernel)",))


def disk_hit_row(opts: Options) -> Row:
    count = 2 if opts.quick else 5
    if opts.suite == "cpu":
        gp = attempt(lambda: _seconds_cell("diskhit", "gpunb-cpu", _gpunb_env("cpu", True), count,
                                           "{:.1f} ms", 1e3, populate=True))
        return Row("CPU: disk-cache hit, new process", "ms", gp,
                   na("the simulator has no cache"), na("CuPy has no CPU target"),
                   "<= 30 ms (the GPU target's)", verdict_at_most(gp.value, 30.0, "ms"),
                   ("first launch of a kernel compiled by an earlier process into the same "
                    "GPUNB_CACHE_DIR; the note on the gpunb cell shows the cache event",))
    no_gpu = gpu_missing()
    gp = attempt(lambda: _seconds_cell("diskhit", "gpunb", _gpunb_env("cuda", True), count,
                                       "{:.1f} ms", 1e3, populate=True), no_gpu)
    nb = attempt(lambda: _seconds_cell("diskhit", "numba", _numba_env, count, "{:.1f} ms", 1e3,
                                       populate=True),
                 no_gpu or missing_module("numba.cuda", "numba-cuda"))
    return Row("disk-cache hit, new process", "ms", gp, nb,
               na("not measured: not one of DESIGN's figures for CuPy"),
               "<= 30 ms; numba 640-880", verdict_at_most(gp.value, 30.0, "ms"),
               ("first launch of a kernel compiled by an earlier process into the same cache "
                "dir (numba-cuda: cache=True, NUMBA_CACHE_DIR); context created before the "
                "clock; cell notes show each tool's own hit/miss report",))


def shared_disk_hit_row(opts: Options, private_ms: float | None = None) -> Row:
    """The disk hit of a shared cache: every entry's MAC is checked before it is loaded. On the
    GPU the target is issue 23's 5 ms; on the CPU target (whose disk hit loads LLVM's host
    object machinery) it is the private disk hit measured in the same run, plus 10%."""
    count = 2 if opts.quick else 5
    target, name = ("cpu", "gpunb-cpu") if opts.suite == "cpu" else ("cuda", "gpunb")
    no_gpu = None if opts.suite == "cpu" else gpu_missing()
    gp = attempt(lambda: _seconds_cell("diskhit", name, _gpunb_env(target, True, shared=True),
                                       count, "{:.1f} ms", 1e3, populate=True), no_gpu)
    if opts.suite == "cpu":
        limit = None if private_ms is None else private_ms * 1.1
        anchor = (f"<= the private hit + 10% ({limit:.1f} ms)" if limit is not None
                  else "the private hit + 10%")
        verdict = verdict_at_most(gp.value, limit, "ms") if limit is not None else "n/a"
    else:
        anchor, verdict = "<= 5 ms (issue 23)", verdict_at_most(gp.value, 5.0, "ms")
    prefix = "CPU: " if opts.suite == "cpu" else ""
    return Row(f"{prefix}disk-cache hit, shared cache (authenticated)", "ms", gp,
               na("numba's cache has no shared mode"), na("not one of DESIGN's figures"),
               anchor, verdict,
               ("as the disk-cache hit row, with GPUNB_CACHE_SHARED=1 and a team key: the "
                "entry's keyed-BLAKE2b MAC is verified before its code is loaded",))


def import_row(opts: Options) -> Row:
    count = 3 if opts.quick else 7
    gp = attempt(lambda: _seconds_cell("import", "gpunb", lambda _: {}, count, "{:.3f} s"),
                 missing_module("IPython", "ipython"))
    python = opts.numba_python
    nb = attempt(lambda: _seconds_cell("import", "numba", lambda _: {"NUMBA_ENABLE_CUDASIM": "0"},
                                       count, "{:.3f} s", python=python),
                 numba_python_missing(python))
    return Row("import gpunb + %load_ext", "s", gp, nb, na("not one of DESIGN's figures"),
               "<= 0.25 s; numba.cuda 1.13", verdict_at_most(gp.value, 0.25, "s"),
               ("numba-cuda column: `import numba.cuda`; IPython's shell exists before the "
                "clock starts; the gpunb cell note lists heavy modules the import loaded "
                "('-' = none: no CUDA driver, no LLVM)",))


def run(opts: Options) -> list[Row]:
    private = disk_hit_row(opts)
    return [import_row(opts), cold_compile_row(opts), private,
            shared_disk_hit_row(opts, private.gpunb.value)]
