"""Which CUPTI field says which profile block launched a kernel, and what each costs.

A device experiment (python3 -m benchmarks.cupti_attribution [--out DIR]): the scenario of
test_profile_gpu.py::test_records_read_late_hold_the_blocks_launches_only (block A: 5 launches,
3 launches outside, block B: 1 launch) repeated, with CUPTI kept enabled and re-enabled per
repetition, and with a second process keeping the GPU busy. Per kernel record it prints
correlation_id, queued, submitted, start against the blocks' since/until and the cuLaunchKernel
driver record's CPU start/end of the same correlation id; then the time of 100 short launches
plain and with each candidate CUPTI configuration enabled (the bench_profile way).
This script owns CUPTI's buffer callbacks: it does not use gpunb.profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

BUSY = """
import time, numpy as np, gpunb
from gpunb import cuda
gpunb.set_target('cuda')
@cuda.jit
def spin(out, x):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i]
        for k in range(200):
            v = v * 1.0001 + 0.5
        out[i] = v
n = 1 << 24
x = cuda.to_device(np.ones(n, np.float32)); out = cuda.device_array(n, np.float32)
end = time.monotonic() + float(__import__('sys').argv[1])
while time.monotonic() < end:
    for _ in range(20):
        spin[n // 256, 256](out, x)
    cuda.synchronize()
"""


MODE = "driver_launch+driver_all+latency"  # the scenario's CUPTI configuration


class Collector:
    def __init__(self, cupti):
        self.cupti = cupti
        self.lock = threading.Lock()
        self.kernels: list = []
        self.apis: list = []
        self.externals: list = []
        cupti.activity_register_callbacks(lambda: (8 << 20, 0), self._completed)

    def _completed(self, activities):
        k = self.cupti.ActivityKind
        kernels, apis, ext = [], [], []
        for a in activities:
            if a.kind in (k.CONCURRENT_KERNEL, k.KERNEL):
                kernels.append(dict(name=a.name, corr=a.correlation_id, start=a.start,
                                    end=a.end, queued=a.queued, submitted=a.submitted))
            elif a.kind in (k.DRIVER, k.RUNTIME):
                apis.append(dict(kind=int(a.kind), cbid=a.cbid, corr=a.correlation_id,
                                 start=a.start, end=a.end, thread=a.thread_id))
            elif a.kind == k.EXTERNAL_CORRELATION:
                ext.append(dict(corr=a.correlation_id, ext=a.external_id))
        with self.lock:
            self.kernels += kernels
            self.apis += apis
            self.externals += ext

    def take(self):
        self.cupti.activity_flush_all(1)
        with self.lock:
            out = self.kernels, self.apis, self.externals
            self.kernels, self.apis, self.externals = [], [], []
        return out


def _saxpy_setup():
    import gpunb
    from gpunb import cuda

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "profiling"))
    import profiling_kernels as pk

    gpunb.set_target("cuda")
    n = 1 << 20
    x = cuda.to_device(np.ones(n, np.float32))
    y = cuda.to_device(np.full(n, 2.0, np.float32))
    out = cuda.device_array(n, np.float32)
    config = pk.saxpy[(n + 255) // 256, 256]

    def launch():
        config(out, x, y, np.float32(2.0))

    for _ in range(5):
        launch()
    cuda.synchronize()
    return launch, cuda.synchronize


def scenario(cupti, col, launch, sync, reps: int, reenable: bool, label: str, log) -> dict:
    """Block A (5 launches), 3 outside, block B (1): per record, which signals say A."""
    kinds = _enable(cupti, MODE)
    failures = {"start_window": 0, "corr_driver": 0, "queued_window": 0, "missing": 0}
    for rep in range(reps):
        if reenable and rep:
            _disable(cupti, kinds)
            time.sleep(0.05)
            kinds = _enable(cupti, MODE)
        a_since = cupti.get_timestamp()
        for _ in range(5):
            launch()
        a_until = cupti.get_timestamp()
        for _ in range(3):
            launch()
        b_since = cupti.get_timestamp()
        launch()
        b_until = cupti.get_timestamp()
        sync()
        kernels, apis, _ = col.take()
        drv = {a["corr"]: a for a in apis}
        kernels.sort(key=lambda r: r["corr"])
        # the old rule: first 5 records (by GPU start) starting >= since are A's
        by_start = sorted((r for r in kernels if r["start"] >= a_since), key=lambda r: r["start"])
        old_a = {r["corr"] for r in by_start[:5]}
        drv_a = {r["corr"] for r in kernels if r["corr"] in drv
                 and a_since <= drv[r["corr"]]["start"] <= drv[r["corr"]]["end"] <= a_until}
        q_a = {r["corr"] for r in kernels if a_since <= r["queued"] <= a_until}
        true_a = {r["corr"] for r in kernels[-9:-4]} if len(kernels) >= 9 else set()
        if len(kernels) != 9:
            failures["missing"] += 1
        failures["start_window"] += old_a != true_a
        failures["corr_driver"] += drv_a != true_a
        failures["queued_window"] += q_a != true_a
        if rep < 3 or old_a != true_a or drv_a != true_a or q_a != true_a:
            log(f"[{label} rep {rep}] A since={a_since} until={a_until} "
                f"B since={b_since} until={b_until}; {len(kernels)} kernels, "
                f"{len(apis)} api records (cbids {sorted({a['cbid'] for a in apis})})")
            for r in kernels:
                d = drv.get(r["corr"])
                log(f"   corr={r['corr']} queued-A.since={r['queued'] - a_since} "
                    f"submitted-A.since={r['submitted'] - a_since} "
                    f"start-A.since={r['start'] - a_since} start-B.since={r['start'] - b_since} "
                    f"drv.start-A.since={d['start'] - a_since if d else None} "
                    f"drv.end-A.until={d['end'] - a_until if d else None}")
    _disable(cupti, kinds)
    col.take()
    log(f"[{label}] wrong attributions out of {reps}: {failures}")
    return failures


def _cbids(cupti):
    names = ("cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
             "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz")
    return [int(getattr(cupti.DriverApiTraceCbid, n)) for n in names
            if hasattr(cupti.DriverApiTraceCbid, n)]


def _enable(cupti, config: str) -> list:
    k = cupti.ActivityKind
    kinds = [k.CONCURRENT_KERNEL]
    if "latency" in config:
        cupti.activity_enable_latency_timestamps(1)
    if "driver_launch" in config:
        for cbid in _cbids(cupti):
            cupti.activity_enable_driver_api(cbid, 1)
    if "driver_all" in config:
        kinds.append(k.DRIVER)
    if "external" in config:
        kinds.append(k.EXTERNAL_CORRELATION)
    for kind in kinds:
        cupti.activity_enable(kind)
    return kinds


def _disable(cupti, kinds: list) -> None:
    for kind in kinds:
        cupti.activity_disable(kind)
    try:
        for cbid in _cbids(cupti):
            cupti.activity_enable_driver_api(cbid, 0)
    except Exception as exc:  # noqa: BLE001
        print("disable driver api:", exc)
    cupti.activity_enable_latency_timestamps(0)


def which_records(cupti, col, launch, sync, log) -> None:
    """Which API records each way of asking gives, for launches and other driver calls."""
    from gpunb import cuda

    for config in ("driver_launch", "driver_all", "driver_launch+driver_all",
                   "driver_launch+external"):
        kinds = _enable(cupti, config)
        ext = "external" in config
        if ext:
            cupti.activity_push_external_correlation_id(cupti.ExternalCorrelationKind.CUSTOM0, 77)
        for _ in range(4):
            launch()
        cuda.device_array(16, np.float32)
        sync()
        if ext:
            cupti.activity_pop_external_correlation_id(cupti.ExternalCorrelationKind.CUSTOM0)
        _disable(cupti, kinds)
        kernels, apis, exts = col.take()
        hist: dict = {}
        for a in apis:
            hist[a["cbid"]] = hist.get(a["cbid"], 0) + 1
        log(f"[records {config}] kernels={len(kernels)} api cbid counts={hist} "
            f"external={len(exts)} kernel corrs={[r['corr'] for r in kernels]} "
            f"api corrs={[a['corr'] for a in apis][:12]} ext={exts[:6]}")


def costs(cupti, col, launch_short, sync, log, repeats=7, groups=3) -> dict:
    """100 short launches + sync, plain and with each configuration enabled (medians)."""
    configs = ["plain", "kernel", "kernel+latency", "driver_launch", "driver_all",
               "driver_launch+driver_all", "driver_launch+driver_all+latency",
               "driver_launch+external", "driver_launch+driver_all+external"]
    samples: dict = {c: [] for c in configs}
    for _ in range(groups):
        for config in configs:
            kinds = [] if config == "plain" else _enable(cupti, config)
            ext = "external" in config
            for _ in range(2):  # warm: the first launches after enable set CUPTI up
                launch_short()
            sync()
            for _ in range(repeats):
                t = time.perf_counter()
                if ext:
                    cupti.activity_push_external_correlation_id(
                        cupti.ExternalCorrelationKind.CUSTOM0, 5)
                for _ in range(100):
                    launch_short()
                sync()
                if ext:
                    cupti.activity_pop_external_correlation_id(
                        cupti.ExternalCorrelationKind.CUSTOM0)
                samples[config].append(time.perf_counter() - t)
            if kinds:
                _disable(cupti, kinds)
            col.take()
    out = {c: float(np.median(v)) * 1e6 / 100 for c, v in samples.items()}
    plain = out["plain"]
    for c, us in out.items():
        log(f"[cost] {c:26s} {us:7.2f} us/launch  ({us / plain:.2f}x plain)")
    return out


def _short_launch(workdir: Path):
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    kernel = load_kernels("gpunb", workdir).scale3
    x, out = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32)
    a = np.float32(2.0)

    def launch():
        kernel[1, 32](out, x, a)

    deadline = time.monotonic() + 10.0
    launch()
    while kernel[1, 32].launcher is None and time.monotonic() < deadline:
        launch()
        time.sleep(0.001)
    cuda.synchronize()
    return launch


def main() -> None:
    out_dir = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else Path(".")
    lines: list = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    from cupti import cupti

    launch, sync = _saxpy_setup()
    col = Collector(cupti)
    results: dict = {}
    steps = [
        ("records", lambda: which_records(cupti, col, launch, sync, log)),
        ("idle", lambda: scenario(cupti, col, launch, sync, 40, False, "idle gpu", log)),
        ("idle_reenable", lambda: scenario(cupti, col, launch, sync, 40, True,
                                           "idle gpu, re-enabled", log)),
    ]
    for name, step in steps:
        try:
            results[name] = step()
        except Exception as exc:  # noqa: BLE001
            log(f"[{name}] FAILED {type(exc).__name__}: {exc}")
    busy = subprocess.Popen([sys.executable, "-c", BUSY, "25"])
    time.sleep(4.0)  # its compile and first launches
    for name, step in [
        ("busy", lambda: scenario(cupti, col, launch, sync, 60, False, "busy gpu", log)),
        ("busy_reenable", lambda: scenario(cupti, col, launch, sync, 60, True,
                                           "busy gpu, re-enabled", log)),
    ]:
        try:
            results[name] = step()
        except Exception as exc:  # noqa: BLE001
            log(f"[{name}] FAILED {type(exc).__name__}: {exc}")
    busy.wait()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            results["costs"] = costs(cupti, col, _short_launch(Path(tmp)), sync, log)
        except Exception as exc:  # noqa: BLE001
            log(f"[costs] FAILED {type(exc).__name__}: {exc}")
    (out_dir / "cupti_attribution.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "cupti_attribution.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
