"""What gpunb's few hand-written stand-ins for libraries save, in new processes.

    python -m benchmarks.library_costs

gpunb uses the maintained library wherever one serves, except where the library costs what a
user would notice on the cold path: `import gpunb` + `%load_ext`, a process's first launch from
the disk cache (target <= 10 ms) and its first compile (target <= 50 ms). Each row times, in
fresh processes that have imported gpunb as a disk hit would, the library's way against gpunb's:

- platformdirs' user cache folder against foundation/config.py's two-case Linux shortcut;
- hashlib's blake2b (which loads OpenSSL) against `_blake2.blake2b`, the same C code
  (cache/encode.py, foundation/linkable.py);
- the compiler's twenty frozen slotted record classes made with `@dataclass(frozen=True,
  slots=True)` against foundation/records.py's `record` (the same classes, half the generated
  code), timed as the import of the modules that define them.

Each figure is the median of several processes; the verdicts say whether the stand-in still
saves enough to keep.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from benchmarks.common import REPO

# what a process doing a disk hit has imported before it looks for its cache folder or hashes
_PRELUDE = "import time, json, numpy, gpunb; from gpunb import cuda\n"

_CASES = {
    "platformdirs user_cache_dir": (
        "import platformdirs; platformdirs.user_cache_dir('gpunb', appauthor=False)",
        "from gpunb.foundation import config; config._linux_user_cache_dir()"),
    "blake2b (hashlib vs _blake2)": (
        "from hashlib import blake2b; blake2b(b'x').digest()",
        "from _blake2 import blake2b; blake2b(b'x').digest()"),
    "compiler record classes (dataclass vs record)": (
        "import dataclasses\n"
        "from gpunb.foundation import records\n"
        "def as_dataclass(cls=None, /, *, eq=True):\n"
        "    wrap = lambda c: dataclasses.dataclass(c, frozen=True, slots=True, eq=eq)\n"
        "    return wrap if cls is None else wrap(cls)\n"
        "records.record = as_dataclass\n"
        "started = time.perf_counter()\n"
        "import gpunb.compiler.typed, gpunb.compiler.values, gpunb.compiler.frontend, "
        "gpunb.backends.pipeline, gpunb.profiling.records\n",
        "started = time.perf_counter()\n"
        "import gpunb.compiler.typed, gpunb.compiler.values, gpunb.compiler.frontend, "
        "gpunb.backends.pipeline, gpunb.profiling.records\n"),
}


def _seconds(code: str) -> float:
    """Seconds `code` takes in a new process after the prelude (`started` may be set by it)."""
    program = (_PRELUDE + "started = time.perf_counter()\n" + code +
               "\nprint(json.dumps(time.perf_counter() - started))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), GPUNB_NOTICES="0")
    out = subprocess.run([sys.executable, "-c", program], cwd=REPO, env=env, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    samples = int(argv[0]) if argv else 7
    print(f"library costs, median of {samples} new processes each (after import gpunb)")
    for name, (library, gpunb_way) in _CASES.items():
        lib = [_seconds(library) for _ in range(samples)]
        own = [_seconds(gpunb_way) for _ in range(samples)]
        lib_ms, own_ms = statistics.median(lib) * 1e3, statistics.median(own) * 1e3
        print(f"  {name:<48} library {lib_ms:7.2f} ms   gpunb {own_ms:7.2f} ms   "
              f"saves {lib_ms - own_ms:6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
