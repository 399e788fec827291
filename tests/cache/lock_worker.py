"""Subprocess worker for the compile-once tests: kernels through the real dispatcher (CPU target).

    python lock_worker.py run  MODULE_DIR [--go GO_FILE] MODULE:KERNEL ...
    python lock_worker.py hold MODULE_DIR MODULE:KERNEL

`run`: import everything; with --go print READY and wait until GO_FILE exists (so that all
workers look up at once); then for each kernel specialise (fingerprint, lookup, compile or wait or
load) and launch on arange(16); print one JSON line each {kind, source, reason, detail,
waited_ms, time_ms, outcome, out, key, pid}.
`hold`: claim the key as a real miss would, print `HOLDING <pid>`, then hang inside the
compiler (as a long compile would) until killed.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time


def _kernel_and_args(module_dir: str, spec: str):
    import numpy as np

    from gpunb.runtime.typeof import typeof

    if module_dir not in sys.path:
        sys.path.insert(0, module_dir)
    module_name, kernel_name = spec.split(":")
    kern = getattr(importlib.import_module(module_name), kernel_name)
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    return kern, (out, x), tuple(typeof(a) for a in (out, x))


def run(kern, out, x, argtypes) -> dict:
    specialization = kern.specialization_for(argtypes, "cpu")
    kern[1, 16](out, x)
    event = specialization.cache_event
    return {"kind": event.kind, "source": event.source, "reason": event.reason,
            "detail": event.detail, "waited_ms": event.waited_ms, "time_ms": event.time_ms,
            "outcome": event.outcome, "out": out.tolist(), "key": event.key,
            "pid": os.getpid()}


def hold(module_dir: str, spec: str) -> None:
    import gpunb

    def hang(_event):
        print(f"HOLDING {os.getpid()}", flush=True)
        while True:
            time.sleep(60)

    # subscribers run in the compiling thread: the compile that follows a miss never ends
    gpunb.events.subscribe("compile_started", hang)
    kern, _, argtypes = _kernel_and_args(module_dir, spec)
    kern.specialization_for(argtypes, "cpu")


def _warm_up() -> None:
    """What a process does once before its first lookup (host arch, toolchain identity), done
    before READY so that the workers' lookups start together."""
    from gpunb.cache import cache_dir, host_arch, toolchain_identity

    host_arch()
    toolchain_identity("cpu", cache_dir(), write=False)


def main(argv: list[str]) -> int:
    import gpunb

    gpunb.set_target("cpu")
    mode, module_dir, specs = argv[0], argv[1], argv[2:]
    if mode == "hold":
        hold(module_dir, specs[0])
        return 1
    go_file = None
    if specs[0] == "--go":
        go_file, specs = specs[1], specs[2:]
    kernels = [_kernel_and_args(module_dir, spec) for spec in specs]
    if go_file:
        _warm_up()
        print("READY", flush=True)
    while go_file and not os.path.exists(go_file):
        time.sleep(0.002)
    for kern, (out, x), argtypes in kernels:
        print(json.dumps(run(kern, out, x, argtypes)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
