"""Where a profiled launch's extra microseconds go: plain launches against the same launches
recorded by `gpunb.profile()`, taken apart step by step.

    python -m benchmarks.profile_overhead          # on a GPU machine (CUPTI when installed)
    python -m benchmarks.profile_overhead --cpu    # the CPU target (host clock), any machine

Figures are host time per launch, the best of several interleaved loops (robust to a busy
host): a plain launch (the native launcher); one inside `gpunb.profile(timer="host")` (gpunb's
own recording, no CUPTI: on a GPU the difference from the CUPTI row is CUPTI's cost); one inside
`gpunb.profile()` (CUPTI on a GPU); one with a LAUNCH_AFTER subscriber (the Python path, which
publishes: what a profile used to take); the recording hooks' own parts (the argument shapes,
the entry); an empty profile block (enter + exit) and the first launch of a block (the
configuration binds a recording launcher on its native plan), also right after a profile was
read (on a GPU, CUPTI then asks for a new activity buffer). Last, 100 launches + sync, plain against
profiled blocks back to back, as `bench_profile`'s row (issue 10's target: <= 1.5x).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import profile_launch
from benchmarks.bench_profile import _cupti_idle
from benchmarks.kernelsrc import load_kernels

_sync = profile_launch._sync  # one synchronise hook for both scripts' timers


def best_us(fn, calls: int = 500, loops: int = 15) -> float:
    """profile_launch.best_us, with shorter bursts by default."""
    return profile_launch.best_us(fn, calls, loops)


def interleaved_us(fns: dict, calls: int = 500, rounds: int = 9) -> dict:
    """best_us of each fn, measured in turns so that a slow spell of the host hits them all."""
    out = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            out[name] = min(out[name], best_us(fn, calls, loops=1))
    return out


def main(argv: list[str]) -> int:
    import gpunb
    from gpunb import cuda
    from gpunb.foundation import events

    target = "cpu" if "--cpu" in argv else "cuda"
    gpunb.set_target(target)
    # bench_launch's kernel, from a module of its own: a kernel defined inside this function
    # would read `cuda` from a closure cell, which keeps it off the native launchers
    scale3 = load_kernels("gpunb", Path(tempfile.mkdtemp(prefix="gpunb-bench-"))).scale3
    x, out = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32)
    a = np.float32(2.0)
    config = scale3[1, 32]
    args = (out, x, a)

    def launch():
        config(out, x, a)

    deadline = time.monotonic() + 10.0  # a cache hit loads llvmlite in the background first
    while config.launcher is None and time.monotonic() < deadline:
        launch()
        time.sleep(0.001)
    if target == "cuda":
        _sync[0] = cuda.synchronize
    sync = _sync[0]
    if config.launcher is None:
        print("no native launcher was bound (llvmlite missing?): the figures would not be "
              "the fast path's")
        return 1
    with gpunb.profile() as first:  # loads CUPTI, measures the peaks on the first read
        launch()
    first.launches  # noqa: B018 - a read
    timer = first.timer
    rows: list = []

    def inside(kind: str | None):
        """A loop body measured inside one long profile block of this kind."""
        def run_inside():
            cm = gpunb.profile(timer=kind) if kind else gpunb.profile()
            with cm:
                launch()
                figure = best_us(launch)
            return figure
        return run_inside

    per_launch = interleaved_us({"plain": launch}, calls=500)
    rows.append(("launch, plain (native launcher)", per_launch["plain"]))
    host_rec = min(inside("host")() for _ in range(5))
    rows.append(("launch inside gpunb.profile(timer='host')", host_rec))
    if target == "cuda":
        default = min(inside(None)() for _ in range(5))
        rows.append((f"launch inside gpunb.profile() ({timer})", default))
    with events.subscribe("launch_after", lambda event: None):
        launch()
        rows.append(("launch with a LAUNCH_AFTER subscriber (observed)", best_us(launch)))

    # a recording launcher's parts, on the configuration's own native launcher (bound again
    # now: the profiles and the subscriber above stopped the earlier ones)
    for _ in range(3):
        launch()
    plain = config.launcher
    if plain.call(args) == -1:
        print("the native launcher declined: the hook rows would time a decline")
        return 1

    def direct():
        status = plain.call(args)
        if status:  # the CPU target: packed, run the grid
            plain.finish(status)
    rows.append(("  native launcher called directly", best_us(direct)))
    with events.record_launches([]):  # the configuration binds a recording launcher: its
        launch()  # native part with recording hooks around it (recorded into a list of its own)
        recording = config.launcher
        hooks = recording.hooks
        rows.append(("  the same with recording hooks (Launcher.run)",
                     best_us(lambda: recording.run(args))))
    rows.append(("  argument shapes, every argument (the Python path)",
                 best_us(lambda: tuple([getattr(v, "shape", ()) for v in args]), calls=5000)))
    rows.append(("  argument shapes, the arrays' (a recording launcher)",
                 best_us(lambda: hooks.shapes_of(args), calls=5000)))
    rows.append(("  time.perf_counter_ns()", best_us(time.perf_counter_ns, calls=5000)))

    def empty():
        with gpunb.profile():
            pass

    rows.append(("empty gpunb.profile() block (enter + exit)", best_us(empty, calls=20)))

    def first_in_block():
        with gpunb.profile():
            sync()
            started = time.perf_counter()
            launch()
            spent = time.perf_counter() - started
        return spent * 1e6

    firsts = sorted(first_in_block() for _ in range(21))
    rows.append(("first launch in a block (median; binds a recording launcher)", firsts[10]))

    def first_after_read():
        with gpunb.profile() as prof:
            launch()
        prof.launches  # noqa: B018 - a read: on a GPU, CUPTI's buffer is flushed
        return first_in_block()

    firsts = sorted(first_after_read() for _ in range(21))
    rows.append(("first launch in a block after a profile was read (median)", firsts[10]))

    def hundred():
        for _ in range(100):
            launch()
        sync()

    def hundred_profiled():
        with gpunb.profile():
            for _ in range(100):
                launch()
            sync()

    # plain figures only once CUPTI has gone idle after the blocks before (enabled, it costs
    # launches outside profiles too); groups alternate, so a slow spell hits both sides
    plains, profileds = [], []
    for _ in range(3):
        _cupti_idle()
        plains.append(best_us(hundred, calls=5, loops=5))
        profileds.append(best_us(hundred_profiled, calls=5, loops=5))
    blocks = {"plain": min(plains), "profiled": min(profileds)}
    for name, us in rows:
        print(f"{name:58s} {us:10.2f} us")
    ratio = blocks["profiled"] / blocks["plain"]
    print(f"{'100 launches + sync, plain':58s} {blocks['plain']:10.2f} us")
    print(f"{'100 launches + sync inside gpunb.profile()':58s} {blocks['profiled']:10.2f} us"
          f"   {ratio:.2f}x (target <= 1.5x; {target} target, timer {timer})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
