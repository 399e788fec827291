"""Where the upstream tests come from: a checkout, a numba-cuda wheel, or (by default) the pinned
release's wheel fetched from the package index with pip, so CI needs no network beyond PyPI.

Only `numba_cuda/numba/cuda/tests/` and `libdevicefuncs.py` (a table the tests read) are taken
from the wheel, into a cache directory; the numba-cuda package itself is never installed. The
extracted tree is checked against a digest, so every run measures the same tests.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PINNED_VERSION = "0.30.4"
# sha256 over (member name, NUL, bytes, NUL) of the extracted members in name order: the same for
# every platform's wheel of the release (the tests are pure Python)
PINNED_TREE_SHA256 = "f5fac6bc02fce65e7b050730e63e07e4a10f25827a2b2f809b04739151f894f1"
_PREFIX = "numba_cuda/numba/cuda/"
_MEMBERS = ("tests/", "libdevicefuncs.py")
ENV_CACHE = "NUMBA_CUDA_SUITE_CACHE"


def cache_root() -> Path:
    value = os.environ.get(ENV_CACHE)
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpunb" / "numba-cuda-suite"


def _wanted(name: str) -> bool:
    if not name.startswith(_PREFIX) or name.endswith("/"):
        return False
    rest = name[len(_PREFIX):]
    return any(rest == m or (m.endswith("/") and rest.startswith(m)) for m in _MEMBERS)


def tree_digest(wheel: zipfile.ZipFile) -> str:
    digest = hashlib.sha256()
    for name in sorted(n for n in wheel.namelist() if _wanted(n)):
        digest.update(name.encode() + b"\0" + wheel.read(name) + b"\0")
    return digest.hexdigest()


def extract_wheel(wheel_path: Path, dest: Path, expect: str | None = None) -> Path:
    """The wheel's tests under `dest` (atomically: a half-written tree is never used); returns
    the `numba/cuda/tests` directory. `expect`: the tree digest it must have."""
    tests = dest / "numba_cuda/numba/cuda/tests"
    if (tests / "cudapy").is_dir():
        return tests
    with zipfile.ZipFile(wheel_path) as wheel:
        found = tree_digest(wheel)
        if expect and found != expect:
            raise SystemExit(f"{wheel_path.name}: its tests differ from the pinned numba-cuda "
                             f"{PINNED_VERSION} (digest {found[:16]}..., expected "
                             f"{expect[:16]}...)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=dest.parent))
        for name in wheel.namelist():
            if _wanted(name):
                wheel.extract(name, staging)
    try:
        staging.rename(dest)
    except OSError:  # another run extracted it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return tests


def pinned_tests_dir() -> Path:
    """The pinned release's tests: from the cache, else downloaded with pip (the index only)."""
    dest = cache_root() / PINNED_VERSION
    tests = dest / "numba_cuda/numba/cuda/tests"
    if (tests / "cudapy").is_dir():
        return tests
    with tempfile.TemporaryDirectory(prefix="numba-cuda-wheel-") as tmp:
        # any platform's wheel holds the same tests; this one exists for every release we pin
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary", ":all:", "--python-version", "3.12",
               "--platform", "manylinux_2_28_x86_64", f"numba-cuda=={PINNED_VERSION}",
               "--dest", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("numba_cuda-*.whl"))
        if done.returncode != 0 or not wheels:
            raise SystemExit(f"could not download numba-cuda {PINNED_VERSION} with pip:\n"
                             f"{done.stderr.strip()[-2000:]}\ngive a checkout or wheel "
                             "with --src instead")
        return extract_wheel(wheels[0], dest, PINNED_TREE_SHA256)


def wheel_tests_dir(wheel_path: Path) -> Path:
    """A wheel named on the command line: extracted beside the pinned one, keyed by its name."""
    dest = cache_root() / wheel_path.stem
    expect = PINNED_TREE_SHA256 if f"-{PINNED_VERSION}-" in wheel_path.name else None
    return extract_wheel(wheel_path, dest, expect)


def version_of(tests_dir: Path) -> str | None:
    """numba-cuda's version of a tests directory: its VERSION file (checkout) or, for a wheel
    we extracted, the pinned version when the tree digest matches."""
    for candidate in (tests_dir.parent / "VERSION", tests_dir.parents[2] / "VERSION"):
        if candidate.is_file():
            return candidate.read_text().strip()
    if f"{os.sep}{PINNED_VERSION}{os.sep}" in str(tests_dir):
        return PINNED_VERSION
    return None
