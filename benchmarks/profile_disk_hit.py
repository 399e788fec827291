"""Where a disk-cache hit's milliseconds go in a new process: a per-phase breakdown.

    python -m benchmarks.profile_disk_hit                  # on a GPU machine
    python -m benchmarks.profile_disk_hit --repeat 7       # median of 7 fresh processes per phase
    python -m benchmarks.profile_disk_hit --fake-driver    # anywhere: the host's share, on the
                                                           # runtime tests' simulated driver
    python -m benchmarks.profile_disk_hit --cpu            # the CPU target's disk hit
    python -m benchmarks.profile_disk_hit --prof           # and the 30 costliest functions
    python -m benchmarks.profile_disk_hit --shared         # a shared cache: entries carry a MAC
                                                           # (team key), checked before loading

Compiles a small kernel into a fresh cache directory in one process, then, in new processes
with the CUDA context already created and the kernel's module imported (as
benchmarks/bench_startup.py's "disk-cache hit" row does), times the first launch and prints
each phase (benchmarks/breakdown.py: fingerprint, cache lookup with the entry's read, loading
the cubin, the argument packer, the rest), the imports inside each and the garbage
collector's pauses, and the cache's own event (which must say "hit (disk)").
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile

from benchmarks.profile_cold import (
    CHILD,
    KERNEL,
    REPO,
    child_env,
    child_runs,
    median_report,
    repeat_option,
)


def main(argv: list[str]) -> int:
    mode = "cpu" if "--cpu" in argv else "cuda"
    fake = "1" if "--fake-driver" in argv else "0"
    profile = "1" if "--prof" in argv else "0"
    repeat = repeat_option(argv)
    compileall.compile_dir(os.path.join(REPO, "gpunb"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernels_mod.py"), "w") as f:
            f.write(KERNEL)
        env = child_env(tmp, cache=True, warmup="--no-warmup" not in argv)
        if "--shared" in argv:  # README "Cache security": authenticated entries
            from gpunb.cache import auth

            key_file = os.path.join(tmp, "keys", "cache.key")
            auth.generate(key_file)
            env.update(GPUNB_CACHE_SHARED="1", GPUNB_CACHE_KEY_FILE=key_file)
        # the first process compiles and stores the entry (and the toolchain stamp)
        subprocess.run([sys.executable, "-c", CHILD, mode, "0", "1", fake], env=env, check=True,
                       capture_output=True)
        if repeat == 1:
            subprocess.run([sys.executable, "-c", CHILD.replace(
                "cold compile + first launch", "first launch from the disk cache"),
                mode, profile, "0", fake], env=env, check=True)
            return 0
        runs = child_runs(mode, fake, env, repeat)
    from benchmarks.breakdown import report

    median_report(f"first launch from the disk cache ({mode}"
                  f"{', simulated driver' if fake == '1' else ''}"
                  f"{', shared cache, authenticated' if '--shared' in argv else ''})", runs,
                  report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
